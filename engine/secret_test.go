package engine_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestSecretTemplates: {{ secret "NAME" }} and {{ secret("NAME") }} are
// secret parts, listed by Secrets; any other use of secret — a computed
// name, a call inside an expression, a bad name — is refused with a
// message that says how secret is used; input.secret is an ordinary
// field.
func TestSecretTemplates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src   string
		names []string
		err   string
	}{
		{src: `Bearer {{ secret "API_TOKEN" }}`, names: []string{"API_TOKEN"}},
		{src: `{{secret("a-b_1")}}:{{ secret 'K' }}/{{ secret("a-b_1") }}`, names: []string{"a-b_1", "K"}},
		{src: "{{ secret `X` }}", names: []string{"X"}},
		{src: `{{ input.secret }}`},
		{src: `{{ secretary }}`, err: "unknown name secretary"},
		{src: `{{ secret(input.name) }}`, err: "secret must stand alone"},
		{src: `{{ secret("A") + "x" }}`, err: "secret must stand alone"},
		{src: `{{ upper(secret("A")) }}`, err: "secret must stand alone"},
		{src: `{{ secret }}`, err: "secret must stand alone"},
		{src: `{{ secret "A" + "B" }}`, err: "secret must stand alone"},
		{src: `{{ secret "1abc" }}`, err: "is not a secret name"},
		{src: `{{ secret "a b" }}`, err: "is not a secret name"},
	} {
		tp, err := engine.ParseTemplate(tc.src)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.src)
			continue
		}
		require.NoError(t, err, tc.src)
		require.Equal(t, tc.names, tp.Secrets(), tc.src)
	}
}

// TestSecretFill: placeholders are filled in by where they fall — escaped
// in a URL's path and query, as they are in headers and a text body,
// JSON-escaped in a JSON body; a header value with a line break is
// refused; a placeholder of another marker (input crafted to look like
// one) is left alone.
func TestSecretFill(t *testing.T) {
	t.Parallel()
	use, err := engine.NewSecretUse()
	require.NoError(t, err)
	other, err := engine.NewSecretUse()
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
	require.ErrorIs(t, err, engine.ErrSecret)
	require.NotContains(t, err.Error(), "x\r\ny")
	_, _, _, err = use.Fill("https://h.example/"+use.Placeholder("GONE"), nil, nil, values)
	require.ErrorIs(t, err, engine.ErrSecret)
	require.ErrorContains(t, err, `"GONE" is not set`)
}

// TestSecretRedactor: every form a value is sent in is replaced, the
// longest first; text without it is untouched.
func TestSecretRedactor(t *testing.T) {
	t.Parallel()
	v := `p@ss/w"rd<1>`
	r := engine.NewRedactor([]string{v, "short"})
	for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v), `p@ss/w\"rd\u003c1\u003e`, `p@ss/w\"rd<1>`} {
		got := r.String("x " + form + " y")
		require.Equal(t, "x [redacted] y", got, form)
	}
	require.Equal(t, "[redacted]-[redacted]", r.String("short-short"))
	require.Equal(t, `{"echo":"Bearer [redacted]"}`, string(r.Bytes([]byte(`{"echo":"Bearer p@ss/w\"rd\u003c1\u003e"}`)))) //nolint:testifylint // the exact bytes the redactor writes
	plain := []byte("nothing here")
	require.Equal(t, plain, r.Bytes(plain))
	var none *engine.Redactor
	require.Equal(t, "as is", none.String("as is"))
	require.Nil(t, engine.NewRedactor([]string{""}))
	require.True(t, strings.HasPrefix(engine.Redacted, "["))
}
