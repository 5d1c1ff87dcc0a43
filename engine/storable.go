package engine

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/stitchd/stitchd/internal/jsonlimit"
)

// unstorable returns why JSON value v, which an expression, a script or
// a handler made, cannot be stored ("" when it can), what naming it.
// jsonb refuses a NUL character and a lone surrogate escape in a string,
// which json.Marshal writes for a Go string holding one: stored as is,
// the statement failed, the whole transaction with it, and the callback
// or start that caused it answered 500 at every try — a node nobody could
// move on.
func unstorable(what string, v json.RawMessage) string {
	err := jsonlimit.CheckLimits(v, jsonlimit.ResponseLimits())
	switch {
	case err == nil:
		return ""
	case errors.Is(err, jsonlimit.ErrNUL):
		return what + ` holds a NUL character (\u0000), which cannot be stored`
	case errors.Is(err, jsonlimit.ErrInvalidUTF8):
		return what + " is not valid UTF-8, which cannot be stored"
	default:
		return what + " cannot be stored: " + err.Error()
	}
}

// storableText is s as a text column takes it: NUL and invalid UTF-8
// replaced with U+FFFD (a failure's reason may quote what failed).
func storableText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
