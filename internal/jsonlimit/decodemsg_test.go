package jsonlimit_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/jsonlimit"
)

// TestDecodeMessage: a value of the wrong kind is said in JSON's words,
// with where it is; any other error as it is.
func TestDecodeMessage(t *testing.T) {
	t.Parallel()
	var v struct {
		Nodes []json.RawMessage `json:"nodes"`
		Name  string            `json:"name"`
		N     int               `json:"n"`
		On    bool              `json:"on"`
		Obj   struct {
			A int `json:"A"`
		} `json:"obj"`
	}
	for body, want := range map[string]string{
		`{"nodes": {}}`:         "nodes must be an array, not an object",
		`{"name": 7}`:           "name must be a string, not a number",
		`{"n": "x"}`:            "n must be a whole number, not a string",
		`{"n": 1.5}`:            "n must be a whole number, not the number 1.5",
		`{"on": []}`:            "on must be true or false, not an array",
		`{"obj": true}`:         "obj must be an object, not a boolean",
		`{"obj": {"A": 1e400}}`: "obj.A must be a whole number, not the number 1e400",
	} {
		err := json.Unmarshal([]byte(body), &v)
		require.Error(t, err, body)
		require.Equal(t, want, jsonlimit.DecodeMessage(err), body)
	}
	require.Equal(t, "other", jsonlimit.DecodeMessage(errors.New("other")))
	// A time that does not parse: not Go's layout string.
	var at struct {
		At time.Time `json:"at"`
	}
	err := json.Unmarshal([]byte(`{"at": "yesterday"}`), &at)
	require.Error(t, err)
	require.Equal(t, "yesterday is not a time: give one in RFC 3339, as 2026-11-28T09:00:00Z", jsonlimit.DecodeMessage(err))
}
