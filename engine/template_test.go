package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

func TestParseTemplate(t *testing.T) {
	t.Parallel()
	eval := func(src string) (any, error) {
		v, err := engine.CompileValue(src)
		if err != nil {
			return nil, err
		}
		return v.Eval(engine.ValueEnv{Input: map[string]any{"a": 2, "s": "x y", "m": map[string]any{"k": 1}}})
	}
	for _, tc := range []struct {
		src, want, err string
		sole           bool
	}{
		{src: "plain", want: "plain"},
		{src: "{{ input.a }}", want: "2", sole: true},
		{src: "  {{input.s}} ", want: "  x y ", sole: true},
		{src: "n={{ input.a * 2 }}&s={{ input.s }}", want: "n=4&s=x y"},
		{src: `{{ {"b": {"c": 1}} }}`, want: `{"b":{"c":1}}`, sole: true},
		{src: "{{ input.m }}", want: `{"k":1}`, sole: true},
		{src: "{{ input.nothing }}", want: "", sole: true},
		{src: "{{ 1.5 }}", want: "1.5", sole: true},
		{src: "{{ input.a + }}", err: "{{ input.a + }}"},
		{src: "a {{ input.a", err: "not closed"},
		{src: "{{ }}", err: "empty"},
		{src: "{{ output.x }}", err: "unknown name output"},
	} {
		tp, err := engine.ParseTemplate(tc.src)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.src)
			require.ErrorIs(t, err, engine.ErrTemplate)
			continue
		}
		require.NoError(t, err, tc.src)
		got, err := tp.Render(eval, nil)
		require.NoError(t, err, tc.src)
		require.Equal(t, tc.want, got, tc.src)
		_, sole := tp.Sole()
		require.Equal(t, tc.sole, sole, tc.src)
	}
}
