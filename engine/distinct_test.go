package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

func TestDistinctKeys(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`null`:                          true,
		`1`:                             true,
		`"s"`:                           true,
		`{}`:                            true,
		`{"a":1,"b":{"a":2}}`:           true,
		`[{"a":1},{"a":2}]`:             true,
		`{"a":1,"a":2}`:                 false,
		`{"a":1,"\u0061":2}`:            false, // the same key, escaped
		`{"x":{"y":[{"k":1,"k":1}]}}`:   false,
		`[[{"a":{"b":1,"c":2,"b":3}}]]`: false,
	} {
		require.Equal(t, want, distinctKeys(gjson.Parse(in)), in)
	}
}
