package jsonlimit

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxDepth is the default nesting bound for request bodies.
const MaxDepth = 64

// MaxNumberLen bounds a number's stored form: Postgres keeps a jsonb number
// as numeric and prints it in full, without an exponent, so the 9 bytes
// `1e100000` come back as 100,001 digits and `1e1000000` overflows numeric.
// 64 characters hold every int64 and uint64 and every number of up to 17
// significant digits (float64's) from 1e-45 (float32's smallest) to just
// under 1e63 in magnitude, and keep any answer within 13 times what was
// sent (`1e63,` is 5 bytes stored as 65). A number within the bound is
// also within float64's range.
const MaxNumberLen = 64

// Errors reported by Check.
var (
	ErrInvalidUTF8 = errors.New("body is not valid UTF-8")
	ErrNUL         = errors.New(`body contains a NUL character (\u0000), which cannot be stored`)
	ErrTooDeep     = errors.New("body is nested too deeply")
	ErrNumber      = errors.New("number is out of range")
	ErrSurrogate   = errors.New("body contains a lone UTF-16 surrogate escape, which cannot be stored")
)

// NumberError is a number whose stored form would be longer than
// MaxNumberLen. It matches ErrNumber.
type NumberError struct {
	// Path locates the number: "$" for the whole body, then ".key" or
	// `["key"]` per object key and "[i]" per array index ("$.items[3].x").
	Path string
	// Max is the bound it passed (MaxNumberLen when 0).
	Max int
}

func (e *NumberError) Error() string {
	if e.Max != 0 && e.Max != MaxNumberLen {
		return fmt.Sprintf("%s: the number at %s would be stored as more than %d characters (numbers are stored written out in full)",
			ErrNumber, e.Path, e.Max)
	}
	return fmt.Sprintf("%s: the number at %s would be stored as more than %d characters "+
		"(numbers are stored written out in full: keep them 0 or between 1e-45 and 1e63 in magnitude, "+
		"with at most 17 significant digits)", ErrNumber, e.Path, MaxNumberLen)
}

// Is makes a NumberError an ErrNumber for errors.Is.
func (e *NumberError) Is(target error) bool { return target == ErrNumber }

// SurrogateError is a string holding a \u escape of a UTF-16 surrogate
// (\ud800-\udfff) that is not the high half of a high-low pair
// immediately followed by the low half: valid JSON that decoders mangle
// and Postgres jsonb refuses. It matches ErrSurrogate.
type SurrogateError struct {
	// Path locates the string as NumberError.Path does; for an object key
	// it is the object's path.
	Path string
}

func (e *SurrogateError) Error() string {
	return fmt.Sprintf(`%s: the string at %s has a \u escape between \ud800 and \udfff that is not `+
		`a high surrogate followed by a low one (a character cut in half)`, ErrSurrogate, e.Path)
}

// Is makes a SurrogateError an ErrSurrogate for errors.Is.
func (e *SurrogateError) Is(target error) bool { return target == ErrSurrogate }

// Check reports whether raw is acceptable: valid UTF-8, nesting of objects
// and arrays at most maxDepth, no raw or escaped NUL, no lone surrogate
// escape (a *SurrogateError with its path otherwise), every number's
// stored form at most MaxNumberLen characters (a *NumberError with its
// path otherwise). It does not check that raw is well-formed JSON; the decoder
// does that.
func Check(raw []byte, maxDepth int) error {
	return CheckLimits(raw, Limits{MaxDepth: maxDepth, MaxNumberLen: MaxNumberLen})
}

// Limits are what CheckLimits allows: nesting, and the stored length of a
// number.
type Limits struct {
	MaxDepth, MaxNumberLen int
}

// ResponseLimits are the limits for JSON stitchd did not ask for but must
// store (an HTTP node's response): what Postgres stores, within a bound on
// how much bigger a number gets once stored (a 78-digit integer fits;
// 1e999 would be 1,000 characters).
func ResponseLimits() Limits { return Limits{MaxDepth: 512, MaxNumberLen: 128} }

// CheckLimits is Check with other limits.
func CheckLimits(raw []byte, l Limits) error {
	maxDepth := l.MaxDepth
	if !utf8.Valid(raw) {
		return ErrInvalidUTF8
	}
	if bytes.IndexByte(raw, 0) >= 0 {
		return ErrNUL
	}
	depth, inString, escaped, strStart := 0, false, false, 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch {
			case escaped:
				escaped = false
				if c != 'u' {
					break
				}
				n, err := unicodeEscape(raw, i)
				if errors.Is(err, ErrNUL) {
					return ErrNUL
				} else if err != nil {
					return &SurrogateError{Path: pathAt(raw, strStart)}
				}
				i += n
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString, strStart = true, i
		case c == '{' || c == '[':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("%w (more than %d levels)", ErrTooDeep, maxDepth)
			}
		case c == '}' || c == ']':
			depth--
		case c == '-' || isDigit(c):
			n, end := storedLen(raw, i)
			if n > int64(l.MaxNumberLen) {
				return &NumberError{Path: pathAt(raw, i), Max: l.MaxNumberLen}
			}
			i = end - 1
		}
	}
	return nil
}

// unicodeEscape checks the \u escape whose 'u' is at raw[i]: ErrNUL for
// \u0000, ErrSurrogate for a surrogate that is not a high half followed by
// a \u escape of a low half. It returns how many bytes after the 'u' the
// escape (the pair's both halves) takes. Malformed hex is left to the
// decoder.
func unicodeEscape(raw []byte, i int) (int, error) {
	r, ok := hex4(raw, i+1)
	switch {
	case !ok:
		return 0, nil
	case r == 0:
		return 0, ErrNUL
	case r >= 0xdc00 && r <= 0xdfff: // a low half with no high one before it
		return 0, ErrSurrogate
	case r >= 0xd800 && r <= 0xdbff:
		if i+6 < len(raw) && raw[i+5] == '\\' && raw[i+6] == 'u' {
			if lo, ok := hex4(raw, i+7); ok && lo >= 0xdc00 && lo <= 0xdfff {
				return 10, nil
			}
		}
		return 0, ErrSurrogate
	}
	return 4, nil
}

// hex4 decodes the four hex digits at raw[j:j+4].
func hex4(raw []byte, j int) (rune, bool) {
	if j+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[j : j+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// maxExponent bounds a number's written exponent, whatever its digits.
const maxExponent = 1000

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// storedLen returns how many characters Postgres prints for the JSON number
// starting at raw[start] (as numeric_in and numeric_out do: every digit in
// full, the scale being the written fraction digits less the exponent) and
// where the number ends. It saturates far above MaxNumberLen instead of
// overflowing. Malformed numbers are measured leniently; the decoder
// rejects them.
func storedLen(raw []byte, start int) (n int64, end int) {
	const huge = int64(1) << 40
	i, neg := start, false
	if raw[i] == '-' {
		neg = true
		i++
	}
	intStart := i
	for i < len(raw) && isDigit(raw[i]) {
		i++
	}
	intPart, fracPart := raw[intStart:i], raw[i:i]
	if i < len(raw) && raw[i] == '.' {
		i++
		fracStart := i
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
		fracPart = raw[fracStart:i]
	}
	var exp int64
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		expNeg := false
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			expNeg = raw[i] == '-'
			i++
		}
		for ; i < len(raw) && isDigit(raw[i]); i++ {
			if exp < huge {
				exp = exp*10 + int64(raw[i]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}
	end = i
	// Postgres refuses an exponent of ±1,073,741,823 or more even on a
	// zero; no number within the bound needs one beyond ±maxExponent.
	if exp > maxExponent || exp < -maxExponent {
		return huge, end
	}
	// The leading zeros of the digits (integer part then fraction), and
	// whether every digit is zero.
	lead, zero := int64(0), true
digits:
	for _, part := range [2][]byte{intPart, fracPart} {
		for _, c := range part {
			if c != '0' {
				zero = false
				break digits
			}
			lead++
		}
	}
	intDigits, fracDigits := int64(len(intPart)), int64(len(fracPart))
	scale := fracDigits - exp
	if scale < 0 {
		scale = 0
	}
	whole := int64(1) // "0" when there is no integer part
	if !zero {
		if w := intDigits + exp - lead; w > 1 {
			whole = w
		}
	}
	n = whole
	if scale > 0 {
		n += 1 + scale
	}
	if neg && !zero {
		n++
	}
	return n, end
}
