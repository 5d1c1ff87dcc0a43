package jsonlimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

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
		{"ordinary numbers", `{"a":[0,-1,3.25,1e10,-2.5E-7,18446744073709551615,1.7976931348623157e62]}`, nil},
		{"number that expands", `{"a":1e100000}`, ErrNumber},
		{"number that overflows numeric", `{"a":1e1000000}`, ErrNumber},
		{"number beyond float64", `{"a":1.8e308}`, ErrNumber},
		{"number below float64", `{"a":-1e-400}`, ErrNumber},
		{"huge exponent", `[1e99999999999999999999999999]`, ErrNumber},
		{"zero with a huge negative exponent", `[0e-1000]`, ErrNumber},
		{"zero with a huge exponent", `[0e99999999999999999999]`, ErrNumber},
		{"zero with a large exponent", `[0e1000]`, nil},
		{"zero with an exponent beyond 1000", `[0e1001]`, ErrNumber},
		{"number-like text in a string", `{"a":"1e100000"}`, nil},
		{"long fraction", `[0.` + strings.Repeat("1", 20000) + `]`, ErrNumber},
		{"surrogate pair", `{"a":"caf\ud83d\ude00","b":"\uD83D\uDE00x"}`, nil},
		{"lone high surrogate", `{"a":"\ud800"}`, ErrSurrogate},
		{"high surrogate then text", `{"a":"Zoe \ud83dx"}`, ErrSurrogate},
		{"high surrogate then another high", `["\ud83d\ud83d"]`, ErrSurrogate},
		{"high surrogate then a non-surrogate escape", `["\ud83d\u0041"]`, ErrSurrogate},
		{"high surrogate then an escaped letter", `["\ud83d\n"]`, ErrSurrogate},
		{"lone low surrogate", `["\uDC00"]`, ErrSurrogate},
		{"low then high", `["\ude00\ud83d"]`, ErrSurrogate},
		{"pair then lone high", `["\ud83d\ude00\udbff"]`, ErrSurrogate},
		{"surrogate in a key", `{"\ud800":1}`, ErrSurrogate},
		{"escaped backslash then surrogate text", `["\\ud800"]`, nil},
		{"escapes around the range", `["\ud7ff\ue000\uffff\u0041"]`, nil},
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

// TestStoredLen compares storedLen with what Postgres 15 printed for each
// literal (`SELECT length('<literal>'::jsonb::text)`).
func TestStoredLen(t *testing.T) {
	t.Parallel()
	printed := map[string]int64{
		"0": 1, "-0": 1, "1": 1, "-1": 2, "10": 2, "1e63": 64, "-1e63": 65, "1e62": 63, "-1e62": 64,
		"9.999e63": 64, "1e-45": 47, "1.4e-45": 48, "1.2345678901234567e-45": 63, "-1.2345678901234567e-45": 64,
		"1e-62": 64, "1e-63": 65, "0.5": 3, "0.00": 4, "-0.0e-3": 6, "1.5e-3": 6, "12.5e1": 3, "0e-62": 64,
		"0e-63": 65, "1E2": 3, "1e+2": 3, "1.000e2": 5, "18446744073709551615": 20,
		"-9223372036854775808": 20, "1.7976931348623157e308": 309, "4.9e-324": 327, "0.10e1": 3, "0.010e1": 4,
		"0.001e1": 4, "100e-5": 7, "1e10": 11, "1.50e1": 4, "0e-5": 7, "-0.0": 3, "0.000e3": 1, "100e-2": 4,
		"0.0012e2": 4, "1e-400": 402, "0e1000": 1, "123.456e-1": 7, "0.5e1": 1,
	}
	for lit, want := range printed {
		got, end := storedLen([]byte(lit+","), 0)
		require.Equal(t, want, got, lit)
		require.Equal(t, len(lit), end, lit)
		if want <= MaxNumberLen {
			require.NoError(t, Check([]byte("["+lit+"]"), MaxDepth), lit)
		} else {
			require.ErrorIs(t, Check([]byte("["+lit+"]"), MaxDepth), ErrNumber, lit)
		}
	}
}

func TestNumberErrorPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, path string }{
		{`1e999`, "$"},
		{`[1,2,1e999]`, "$[2]"},
		{`{"a":1,"items":[{"x":1},{"x":2},{"y":[1]},{"x":1e999}]}`, "$.items[3].x"},
		{`{"a b":{"c":"d","e\"f":[0, -1e-999]}}`, `$["a b"]["e\"f"][1]`},
		{`{"k":"v","n":{"x":[],"y":{}},"z":1e999}`, "$.z"},
		{`{"` + strings.Repeat("k", 100) + `":1e999}`, `$["` + strings.Repeat("k", 64) + `…"]`},
		{`{"status":"completed","output":{"rows":[[1,2],[3,4e400]]}}`, "$.output.rows[1][1]"},
	}
	for _, tt := range tests {
		err := Check([]byte(tt.in), MaxDepth)
		var ne *NumberError
		require.ErrorAs(t, err, &ne, "%s: %v", tt.in, err)
		require.Equal(t, tt.path, ne.Path, tt.in)
		require.Contains(t, ne.Error(), tt.path)
	}
}

func TestSurrogateErrorPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, path string }{
		{`"\ud800"`, "$"},
		{`{"name":"Zoe \ud83d","email":"zoe@example.com"}`, "$.name"},
		{`{"status":"completed","output":{"rows":[["ok","caf\udc00"]]}}`, "$.output.rows[0][1]"},
		{`{"a":{"\ud800":1}}`, "$.a"},
		{`{"a b":["\u00e9\ud83d\ude00","x\"\ud800"]}`, `$["a b"][1]`},
	}
	for _, tt := range tests {
		err := Check([]byte(tt.in), MaxDepth)
		var se *SurrogateError
		require.ErrorAs(t, err, &se, "%s: %v", tt.in, err)
		require.Equal(t, tt.path, se.Path, tt.in)
		require.Contains(t, se.Error(), tt.path)
	}
}

func TestCheckDoesNotAllocate(t *testing.T) {
	body := []byte(`{"a":[1,-2.5e-3,{"b":"c\"d\u00e9\ud83d\ude00","e":[true,false,null,1e62]}]}`)
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = Check(body, MaxDepth) }))
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"\u0000"}]}`))
	f.Add([]byte(`{"a":[1,{"b":1e100000}]}`))
	f.Add([]byte(`[-0.000e-70,"x\"",{"k":[1E+5]}]`))
	f.Add([]byte(`{"a":["\ud83d\ude00","\ud800","\\udc00"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Check(b, 8)
		var ne *NumberError
		if errors.As(err, &ne) {
			require.True(t, strings.HasPrefix(ne.Path, "$"), ne.Path)
			return
		}
		var se *SurrogateError
		if errors.As(err, &se) {
			require.True(t, strings.HasPrefix(se.Path, "$"), se.Path)
			return
		}
		if err != nil || !json.Valid(b) {
			return
		}
		// encoding/json decodes a lone surrogate as U+FFFD: an accepted
		// document has one only where it was written.
		if !strings.Contains(strings.ToLower(string(b)), `\ufffd`) && !bytes.ContainsRune(b, utf8.RuneError) {
			require.NotContains(t, decodedStrings(t, b), string(utf8.RuneError), "%q was accepted", b)
		}
		// Every number of an accepted document is within float64's range.
		var v any
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&v))
		walkNumbers(v, func(n json.Number) {
			_, err := n.Float64()
			require.NoError(t, err, "%s was accepted", n)
		})
	})
}

// decodedStrings returns every string and key of the JSON document b,
// decoded and joined.
func decodedStrings(t *testing.T, b []byte) string {
	t.Helper()
	var all strings.Builder
	dec := json.NewDecoder(strings.NewReader(string(b)))
	for {
		tok, err := dec.Token()
		if err != nil {
			return all.String()
		}
		if s, ok := tok.(string); ok {
			all.WriteString(s)
		}
	}
}

func walkNumbers(v any, fn func(json.Number)) {
	switch x := v.(type) {
	case json.Number:
		fn(x)
	case []any:
		for _, e := range x {
			walkNumbers(e, fn)
		}
	case map[string]any:
		for _, e := range x {
			walkNumbers(e, fn)
		}
	}
}
