package callbacks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/jsonlimit"
)

// CallbackBody is a decoded worker callback.
type CallbackBody struct {
	Status   engine.Status   `json:"status"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`
	Progress json.RawMessage `json:"progress,omitempty"`
	// Retryable false on a failure: the worker knows another attempt
	// would fail too; the node fails at once, whatever its retry policy.
	Retryable *bool `json:"retryable,omitempty"`
}

// DecodeCallback reads and validates a callback body: a JSON object whose
// status is completed, failed or running. Errors from the reader (such as
// a body-limit error) are returned as they are.
func DecodeCallback(r io.Reader) (*CallbackBody, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return ParseCallback(raw)
}

// ParseCallback validates a callback body. What jsonlimit.Check refuses
// (a lone surrogate or a number out of range: *jsonlimit.SurrogateError,
// *jsonlimit.NumberError, with the JSON path) is returned as it is, for the
// caller to answer 400 before anything reaches the database, which would
// fail on it (a 5xx a worker retries forever).
func ParseCallback(raw []byte) (*CallbackBody, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("callback body must be a JSON object")
	}
	if err := jsonlimit.Check(raw, jsonlimit.MaxDepth); err != nil {
		return nil, err
	}
	// encoding/json keeps the last of duplicate keys, matched without
	// regard to case: {"status":"completed","Status":"failed"} must not
	// be read one way here and another way by anyone else.
	if k, err := duplicateKey(raw); err != nil {
		return nil, fmt.Errorf("malformed callback body: %w", err)
	} else if k != "" {
		return nil, fmt.Errorf("malformed callback body: duplicate key %q", k)
	}
	var b CallbackBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("malformed callback body: %w", err)
	}
	if dec.More() {
		return nil, errors.New("malformed callback body: trailing data")
	}
	switch b.Status {
	case engine.StatusCompleted, engine.StatusFailed, engine.StatusRunning:
	default:
		return nil, errors.New(`callback status must be "completed", "failed" or "running"`)
	}
	if b.Retryable != nil && b.Status != engine.StatusFailed {
		return nil, errors.New(`callback retryable is only for "status": "failed"`)
	}
	if b.Status == engine.StatusCompleted && len(b.Output) == 0 {
		b.Output = json.RawMessage("null")
	}
	return &b, nil
}

// duplicateKey returns the first top-level key of the object raw that
// repeats an earlier one (compared case-insensitively), or "".
func duplicateKey(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return "", err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		k, _ := t.(string)
		if seen[strings.ToLower(k)] {
			return k, nil
		}
		seen[strings.ToLower(k)] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", nil
}
