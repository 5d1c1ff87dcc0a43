package jsonlimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf8"
)

// Position is where encoding/json stopped decoding raw with err: the
// 1-based line and column (in characters) of the offending character, or
// of the end of raw when it ran out. ok is false for an error that carries
// no position.
func Position(raw []byte, err error) (line, col int, ok bool) {
	var offset int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = se.Offset
	case errors.As(err, &te):
		offset = te.Offset
	}
	if offset < 0 || offset > int64(len(raw)) {
		return 0, 0, false
	}
	// Offset counts the bytes read, the offending one too: point at it
	// (but at the end of raw when it ran out).
	if r, size := utf8.DecodeLastRune(raw[:offset]); size > 0 && !unicode.IsSpace(r) {
		offset -= int64(size)
	}
	before := raw[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	return line, utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1, true
}
