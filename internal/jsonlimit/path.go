package jsonlimit

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxKeyInPath bounds each object key quoted in a path, so that an error
// about a body with a huge key stays small.
const maxKeyInPath = 64

type pathFrame struct {
	array    bool
	index    int
	key      []byte // the current key, quotes included
	afterKey bool   // an object's key has been read; its value follows
}

// pathAt returns the location of the value that starts at raw[off], in the
// form "$", "$.key", `$["odd key"]`, "$.items[3].x" (for an object's key,
// the object's path). It is only called to
// report an error, so it may allocate. Malformed JSON gives a best-effort
// path, never a panic.
func pathAt(raw []byte, off int) string {
	var stack []pathFrame
	for i := 0; i < off && i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			end := stringEnd(raw, i)
			if n := len(stack); n > 0 && !stack[n-1].array && !stack[n-1].afterKey {
				stack[n-1].key = raw[i:end]
			}
			i = end - 1
		case ':':
			if n := len(stack); n > 0 && !stack[n-1].array {
				stack[n-1].afterKey = true
			}
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].array {
					stack[n-1].index++
				} else {
					stack[n-1].afterKey, stack[n-1].key = false, nil
				}
			}
		case '{', '[':
			stack = append(stack, pathFrame{array: c == '['})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	var b strings.Builder
	b.WriteString("$")
	for _, f := range stack {
		switch {
		case f.array:
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		case f.key != nil: // none while off is at a key: the object's path
			writeKey(&b, f.key)
		}
	}
	return b.String()
}

// stringEnd returns the index just past the string that starts at raw[i]
// (a '"'), or len(raw) if it is not closed.
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// writeKey appends ".key" when the key is a plain identifier (as the
// compiler's paths do), `["key"]` otherwise, cut to maxKeyInPath bytes.
func writeKey(b *strings.Builder, quoted []byte) {
	var key string
	if json.Unmarshal(quoted, &key) != nil {
		key = strings.Trim(string(quoted), `"`)
	}
	if len(key) > maxKeyInPath {
		cut := maxKeyInPath
		for cut > 0 && !utf8.RuneStart(key[cut]) {
			cut--
		}
		key = key[:cut] + "…"
	}
	if isIdentifier(key) {
		b.WriteString("." + key)
		return
	}
	q, _ := json.Marshal(key)
	b.WriteString("[" + string(q) + "]")
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}
