package credential_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/credential"
)

// TestParseSaysWhatIsWrong: data of the wrong shape is refused in words,
// naming the field, not in the decoder's (it said "cannot unmarshal array
// into Go value of type credential.Data").
func TestParseSaysWhatIsWrong(t *testing.T) {
	for _, c := range []struct{ typ, data, want string }{
		{credential.TypeBasic, `["admin", "secret"]`, "data must be an object, not an array (the basic credential's fields)"},
		{credential.TypeBearer, `"tok"`, "data must be an object, not a string (the bearer credential's fields)"},
		{credential.TypeBasic, `{"username": 7, "password": "p"}`, "data.username must be a string, not a number"},
		{credential.TypeBearer, `{"token": "t", "tokn": "t"}`, `data has no field "tokn" for a bearer credential`},
		// Go refuses such an Authorization header at every send, which was
		// retried as a network failure.
		{credential.TypeBearer, `{"token": "ab\u0001cd"}`, "data.token cannot be sent in a header: it holds a control character"},
		{credential.TypeBearer, `{"token": "ab\u007fcd"}`, "data.token cannot be sent in a header: it holds a control character"},
	} {
		_, err := credential.Parse(c.typ, json.RawMessage(c.data))
		require.EqualError(t, err, c.want, c.data)
		require.NotContains(t, err.Error(), "Go value")
	}
	_, err := credential.Parse(credential.TypeBearer, json.RawMessage(`{"token": "t"}`))
	require.NoError(t, err)
}
