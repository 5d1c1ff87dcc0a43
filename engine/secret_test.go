package engine_test

import (
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
