package jsonlimit

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxDepth is the default nesting bound for request bodies.
const MaxDepth = 64

// Errors reported by Check.
var (
	ErrInvalidUTF8 = errors.New("body is not valid UTF-8")
	ErrNUL         = errors.New(`body contains a NUL character (\u0000), which cannot be stored`)
	ErrTooDeep     = errors.New("body is nested too deeply")
)

// Check reports whether raw is acceptable: valid UTF-8, nesting of objects
// and arrays at most maxDepth, no raw or escaped NUL. It does not check
// that raw is well-formed JSON; the decoder does that.
func Check(raw []byte, maxDepth int) error {
	if !utf8.Valid(raw) {
		return ErrInvalidUTF8
	}
	if bytes.IndexByte(raw, 0) >= 0 {
		return ErrNUL
	}
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch {
			case escaped:
				escaped = false
				if c == 'u' && i+4 < len(raw) && string(raw[i+1:i+5]) == "0000" {
					return ErrNUL
				}
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("%w (more than %d levels)", ErrTooDeep, maxDepth)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
