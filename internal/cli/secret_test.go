package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/client"
	"github.com/stitchd/stitchd/internal/testkit/instance"
	"github.com/stitchd/stitchd/store/storetest"
)

// runRootIn is runRoot with standard input.
func runRootIn(t *testing.T, env map[string]string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(mapEnv(env), &out, &errb, Params{})
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// TestCLISecret: `secret set` reads the value from standard input (one
// trailing newline dropped) and prints only the name; `secret list`
// prints names, never values; `secret delete` removes one. A server
// without a key refuses `set` with the reason.
func TestCLISecret(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	s := startLive(t, func(c *app.Config) { c.SecretKey = key })
	const value = "tok-cli-7c1e9f"
	out, stderr, err := runRootIn(t, s.env, value+"\n", "secret", "set", "API_TOKEN")
	require.NoError(t, err, stderr)
	require.Equal(t, "API_TOKEN\n", out)
	got, err := s.app.Store.RevealSecrets(context.Background(), s.app.SecretBox, "", []string{"API_TOKEN"})
	require.NoError(t, err)
	require.Equal(t, value, got["API_TOKEN"], "the newline echo adds is not part of the value")
	_, _, err = runRootIn(t, s.env, "other", "secret", "set", "B-2")
	require.NoError(t, err)

	out, _, err = s.cli(t, "secret", "list")
	require.NoError(t, err)
	require.Contains(t, out, "API_TOKEN")
	require.Contains(t, out, "B-2")
	require.NotContains(t, out, value)
	out, _, err = s.cli(t, "secret", "list", "--json")
	require.NoError(t, err)
	require.NotContains(t, out, value)

	_, _, err = s.cli(t, "secret", "delete", "B-2")
	require.NoError(t, err)
	out, _, err = s.cli(t, "secret", "list")
	require.NoError(t, err)
	require.NotContains(t, out, "B-2")
	_, _, err = s.cli(t, "secret", "delete", "B-2")
	require.ErrorContains(t, err, "HTTP 404")

	_, _, err = runRootIn(t, s.env, "", "secret", "set", "EMPTY")
	require.ErrorContains(t, err, "no value on standard input")
	_, _, err = runRootIn(t, s.env, "v", "secret", "set", "bad name")
	require.ErrorContains(t, err, "HTTP 400")

	off := startLive(t)
	_, _, err = runRootIn(t, off.env, "v", "secret", "set", "X")
	require.ErrorContains(t, err, "STITCHD_SECRET_KEY")
	require.ErrorContains(t, err, "HTTP 503")
}

// TestBinaryServeDemoKeepsSecretKey: `serve --demo` without
// STITCHD_SECRET_KEY makes a development key once, in the data
// directory; a restart reads the same key, so a secret stored before it
// still reaches the request of an HTTP node after it.
func TestBinaryServeDemoKeepsSecretKey(t *testing.T) {
	t.Parallel()
	bin := stitchdBinary(t)
	_, dbURL := storetest.IsolatedDB(t)
	dataDir := t.TempDir()
	var mu sync.Mutex
	var auth []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(api.Close)
	start := func() *server {
		return startServeEnv(t, bin, dbURL, []string{"STITCHD_DATA_DIR=" + dataDir}, "--demo", "--demo-worker=false")
	}
	s := start()
	// Stopped before the demo is loaded, serve exits 1: wait for it.
	waitFor(t, "the demo banner", func() bool { return strings.Contains(s.log(), "Fire a lead") })
	keyFile := filepath.Join(dataDir, app.DevSecretKeyName)
	key1, err := os.ReadFile(keyFile)
	require.NoError(t, err, s.log())
	fi, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	code, body := httpDo(t, "POST", s.url+"/api/v1/secrets", "Bearer x", `{"name": "API_TOKEN", "value": "dev-value-1"}`)
	require.Equal(t, http.StatusCreated, code, body)
	require.NotContains(t, s.log(), string(bytes.TrimSpace(key1)), "the key is never logged")
	s.stop(t)

	again := start()
	waitFor(t, "the demo banner", func() bool { return strings.Contains(again.log(), "Fire a lead") })
	key2, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	require.Equal(t, key1, key2)
	c := &client.Client{BaseURL: again.url, Token: "x"}
	graph := `{"nodes": [{"id": "call", "type": "HTTP", "data": {"url": "` + api.URL + `/x",
		"headers": {"Authorization": "Bearer {{ secret \"API_TOKEN\" }}"}}}], "edges": []}`
	f, err := c.CreateFlow(context.Background(), client.FlowSpec{Name: "dev secret", Graph: instance.Graph(t, graph)})
	require.NoError(t, err)
	r, err := c.StartRun(context.Background(), f.Id.String(), json.RawMessage(`{}`))
	require.NoError(t, err)
	waitFor(t, "the run", func() bool {
		got, err := c.GetRun(context.Background(), r.Id.String())
		require.NoError(t, err)
		return client.Finished(got)
	})
	got, err := c.GetRun(context.Background(), r.Id.String())
	require.NoError(t, err)
	require.Equal(t, "completed", string(got.Status), "%+v", got)
	mu.Lock()
	require.Equal(t, []string{"Bearer dev-value-1"}, auth)
	mu.Unlock()
	again.stop(t)
}
