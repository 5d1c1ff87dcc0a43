package jsonlimit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	ok64 := strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64)
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"plain", `{"a":[1,{"b":"c"}]}`, nil},
		{"64 levels", ok64, nil},
		{"65 levels", deep, ErrTooDeep},
		{"brackets in strings do not count", `{"a":"` + strings.Repeat("[", 200) + `"}`, nil},
		{"escaped quote", `{"a":"x\"[[[[","b":1}`, nil},
		{"invalid utf-8", "{\"a\":\"\xff\xfe\"}", ErrInvalidUTF8},
		{"escaped NUL", `{"a":"x\u0000y"}`, ErrNUL},
		{"escaped backslash then u0000 text", `{"a":"\\u0000"}`, nil},
		{"raw NUL", "{\"a\":\"\x00\"}", ErrNUL},
	}
	for _, tt := range tests {
		err := Check([]byte(tt.in), MaxDepth)
		if tt.want == nil {
			require.NoError(t, err, tt.name)
		} else {
			require.ErrorIs(t, err, tt.want, tt.name)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"\u0000"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Check(b, 8)
	})
}
