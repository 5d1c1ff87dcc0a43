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
	// Only what Postgres refuses: any number a step can make (a float64
	// written out, 1e308, is 309 digits) is within numeric's range, and
	// nesting is bounded by the server's stack, far deeper than an
	// expression's memory allows.
	err := jsonlimit.CheckLimits(v, jsonlimit.Limits{MaxDepth: 10_000, MaxNumberLen: 131_072})
	switch {
	case err == nil:
		return ""
	case errors.Is(err, jsonlimit.ErrNUL):
		return what + ` holds a NUL character (\u0000), which cannot be stored`
	case errors.Is(err, jsonlimit.ErrInvalidUTF8):
		return what + " is not valid UTF-8, which cannot be stored"
	case errors.Is(err, jsonlimit.ErrSurrogate):
		return what + " holds half of a UTF-16 surrogate pair, which cannot be stored"
	default:
		return what + " cannot be stored: " + err.Error()
	}
}

// storableText is s as a text column takes it: NUL and invalid UTF-8
// replaced with U+FFFD (a failure's reason may quote what failed).
func storableText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
