package web_test

import (
	"encoding/base64"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/store/storetest"
)

func TestListBoards(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()

	type listed struct {
		Boards []struct {
			ID       string `json:"id"`
			Name     string `json:"name"`
			Sections []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"sections"`
		} `json:"boards"`
	}
	empty := decode[listed](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/boards"}))
	require.NotNil(t, empty.Boards, "an empty list is [], not null")
	require.Empty(t, empty.Boards)

	zeta := decode[map[string]any](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/boards",
		body: `{"name":"Zeta","sections":[{"id":"b","name":"Bee"},{"id":"a","name":"Ay"}]}`}))
	alpha := decode[map[string]any](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/boards",
		body: `{"name":"Alpha","sections":[]}`}))

	got := decode[listed](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/boards"}))
	require.Len(t, got.Boards, 2)
	require.Equal(t, alpha["id"], got.Boards[0].ID, "by name")
	require.Equal(t, "Alpha", got.Boards[0].Name)
	require.NotNil(t, got.Boards[0].Sections)
	require.Empty(t, got.Boards[0].Sections)
	require.Equal(t, zeta["id"], got.Boards[1].ID)
	require.Len(t, got.Boards[1].Sections, 2)
	require.Equal(t, "b", got.Boards[1].Sections[0].ID, "sections keep their order")
	require.Equal(t, "Bee", got.Boards[1].Sections[0].Name)
	require.Equal(t, "a", got.Boards[1].Sections[1].ID)
}

func TestWebhookSecret(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	b := decode[map[string]string](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/webhook-secret"}))
	secret, ok := strings.CutPrefix(b["secret"], "whsec_")
	require.True(t, ok, b["secret"])
	raw, err := base64.StdEncoding.DecodeString(secret)
	require.NoError(t, err)
	want, err := st.WebhookSecret(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, raw, "the secret the dispatcher signs with")
	parsed, err := callbacks.ParseWebhookSecret(b["secret"])
	require.NoError(t, err)
	require.Equal(t, want, parsed)
	require.Equal(t, b["secret"], callbacks.FormatWebhookSecret(want))
	requireError(t, http.StatusUnauthorized, "unauthorized", do(t, h, req{method: "GET", path: "/api/v1/webhook-secret", noAuth: true}))
}

func TestServeOpenAPI(t *testing.T) {
	t.Parallel()
	h := newServer(t, storetest.Store(t)).Handler()
	rec := do(t, h, req{method: "GET", path: "/api/v1/openapi.yaml"})
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/yaml", rec.Header().Get("Content-Type"))
	onDisk, err := os.ReadFile("../openapi.yaml")
	require.NoError(t, err)
	require.Equal(t, string(onDisk), rec.Body.String(), "the embedded document is the file")
	var doc struct {
		OpenAPI string         `yaml:"openapi"`
		Paths   map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(rec.Body.Bytes(), &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Contains(t, doc.Paths, "/api/v1/openapi.yaml")
	// The contract is public (a client generator has no credential yet).
	for _, path := range []string{"/api/v1/openapi.yaml", "/openapi.yaml"} {
		rec = do(t, h, req{method: "GET", path: path, noAuth: true})
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Equal(t, string(onDisk), rec.Body.String(), path)
	}
}
