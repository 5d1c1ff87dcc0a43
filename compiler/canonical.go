package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"unicode/utf8"
)

// Canonical returns the canonical JSON form of any JSON document: object
// keys sorted (bytewise on their UTF-8 text), no insignificant whitespace,
// numbers exactly as written, strings with minimal escaping (only '"', '\\'
// and control characters are escaped; invalid UTF-8 becomes U+FFFD). When an
// object repeats a key, the last value wins, as with encoding/json.
//
// Two documents that differ only in key order or whitespace have the same
// canonical form; any change of value (a moved node, an edited label) gives
// a different one. Invalid JSON is an error.
func Canonical(raw []byte) ([]byte, error) {
	var c canonicalizer
	return c.canonical(raw)
}

// canonical is Canonical reusing c's buffers between documents.
func (c *canonicalizer) canonical(raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New("error canonicalizing JSON: invalid JSON")
	}
	c.src, c.pos, c.depth = raw, 0, 0
	out := c.value(make([]byte, 0, len(raw)))
	c.src = nil
	return out, nil
}

// canonicalizer rewrites a document already checked by json.Valid (which
// also bounds its nesting depth), so it does not re-check the syntax.
type canonicalizer struct {
	src     []byte
	pos     int
	depth   int
	entries [][]objectEntry // reusable per nesting depth
	scratch []byte
}

// objectEntry is one member already written to the output: its decoded key
// and the [start, end) range of `"key":value` in the output.
type objectEntry struct {
	key        []byte
	start, end int
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(out []byte) []byte {
	c.skipSpace()
	switch c.src[c.pos] {
	case '{':
		return c.object(out)
	case '[':
		return c.array(out)
	case '"':
		out, _ = c.str(out)
		return out
	case 't':
		c.pos += len("true")
		return append(out, "true"...)
	case 'f':
		c.pos += len("false")
		return append(out, "false"...)
	case 'n':
		c.pos += len("null")
		return append(out, "null"...)
	default: // number, kept as written
		start := c.pos
		for c.pos < len(c.src) && isNumberByte(c.src[c.pos]) {
			c.pos++
		}
		return append(out, c.src[start:c.pos]...)
	}
}

func (c *canonicalizer) array(out []byte) []byte {
	c.pos++ // '['
	out = append(out, '[')
	c.skipSpace()
	if c.src[c.pos] == ']' {
		c.pos++
		return append(out, ']')
	}
	for {
		out = c.value(out)
		c.skipSpace()
		if c.src[c.pos] == ',' {
			c.pos++
			out = append(out, ',')
			continue
		}
		c.pos++ // ']'
		return append(out, ']')
	}
}

func (c *canonicalizer) object(out []byte) []byte {
	c.pos++ // '{'
	start := len(out)
	out = append(out, '{')
	c.skipSpace()
	if c.src[c.pos] == '}' {
		c.pos++
		return append(out, '}')
	}
	d := c.depth
	c.depth++
	if len(c.entries) <= d {
		c.entries = append(c.entries, nil)
	}
	ents := c.entries[d][:0]
	for {
		c.skipSpace()
		entStart := len(out)
		var key []byte
		out, key = c.str(out)
		c.skipSpace()
		c.pos++ // ':'
		out = append(out, ':')
		out = c.value(out)
		ents = append(ents, objectEntry{key: key, start: entStart, end: len(out)})
		c.skipSpace()
		if c.src[c.pos] == ',' {
			c.pos++
			out = append(out, ',')
			continue
		}
		c.pos++ // '}'
		break
	}
	c.depth--
	c.entries[d] = ents

	sorted := true
	for i := 1; i < len(ents); i++ {
		if bytes.Compare(ents[i-1].key, ents[i].key) >= 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(ents, func(a, b objectEntry) int { return bytes.Compare(a.key, b.key) })
		body := append(c.scratch[:0], out[start:]...)
		out = out[:start+1]
		first := true
		for i, e := range ents {
			if i+1 < len(ents) && bytes.Equal(ents[i+1].key, e.key) {
				continue // a later duplicate wins
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = append(out, body[e.start-start:e.end-start]...)
		}
		c.scratch = body[:0]
	}
	return append(out, '}')
}

// str writes the canonical form of the string at c.pos and returns its
// decoded bytes.
func (c *canonicalizer) str(out []byte) ([]byte, []byte) {
	start := c.pos
	i := start + 1
	simple, ascii := true, true
	for ; i < len(c.src); i++ {
		b := c.src[i]
		if b == '"' {
			break
		}
		if b == '\\' {
			simple = false
			i++
			continue
		}
		if b >= utf8.RuneSelf {
			ascii = false
		}
	}
	c.pos = i + 1
	body := c.src[start+1 : i]
	if simple && (ascii || utf8.Valid(body)) {
		return append(out, c.src[start:i+1]...), body
	}
	var s string
	_ = json.Unmarshal(c.src[start:i+1], &s) // valid by construction
	return appendQuoted(out, s), []byte(s)
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s (valid UTF-8) as a JSON string with minimal
// escaping.
func appendQuoted(out []byte, s string) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '"':
			out = append(out, '\\', '"')
		case b == '\\':
			out = append(out, '\\', '\\')
		case b == '\n':
			out = append(out, '\\', 'n')
		case b == '\r':
			out = append(out, '\\', 'r')
		case b == '\t':
			out = append(out, '\\', 't')
		case b == '\b':
			out = append(out, '\\', 'b')
		case b == '\f':
			out = append(out, '\\', 'f')
		case b < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
		default:
			out = append(out, b)
		}
	}
	return append(out, '"')
}

func isNumberByte(b byte) bool {
	return (b >= '0' && b <= '9') || b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E'
}
