package enginetype

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecretFill: placeholders are filled in by where they fall — escaped
// in a URL's path and query, as they are in headers and a text body,
// JSON-escaped in a JSON body; a header value with a line break is
// refused; a placeholder of another marker (input crafted to look like
// one) is left alone.
func TestSecretFill(t *testing.T) {
	t.Parallel()
	use, err := NewSecretUse()
	require.NoError(t, err)
	other, err := NewSecretUse()
	require.NoError(t, err)
	p := use.Placeholder("T")
	require.Equal(t, p, url.QueryEscape(p), "a placeholder passes through escaping unchanged")
	require.Equal(t, p, url.PathEscape(p))
	values := map[string]string{"T": `a/b c&"d"`, "NL": "x\r\ny"}
	forged := other.Placeholder("T")
	use.BodyJSON = true
	u, h, b, err := use.Fill("https://h.example/p/"+p+"?k="+p+"&f="+forged,
		map[string]string{"Authorization": "Bearer " + p, "Accept": "*/*"}, []byte(`{"t":"`+p+`"}`), values)
	require.NoError(t, err)
	require.Equal(t, "https://h.example/p/a%2Fb%20c&%22d%22?k=a%2Fb+c%26%22d%22&f="+forged, u)
	require.Equal(t, map[string]string{"Authorization": `Bearer a/b c&"d"`, "Accept": "*/*"}, h)
	var body map[string]string
	require.NoError(t, json.Unmarshal(b, &body), "%s", b)
	require.Equal(t, values["T"], body["t"])

	use.BodyJSON = false
	_, _, b, err = use.Fill("https://h.example/", nil, []byte("token="+p), values)
	require.NoError(t, err)
	require.Equal(t, `token=a/b c&"d"`, string(b))

	nl := use.Placeholder("NL")
	_, _, _, err = use.Fill("https://h.example/", map[string]string{"X": nl}, nil, values)
	require.ErrorIs(t, err, ErrSecret)
	require.NotContains(t, err.Error(), "x\r\ny")
	_, _, _, err = use.Fill("https://h.example/"+use.Placeholder("GONE"), nil, nil, values)
	require.ErrorIs(t, err, ErrSecret)
	require.ErrorContains(t, err, `"GONE" is not set`)
}
