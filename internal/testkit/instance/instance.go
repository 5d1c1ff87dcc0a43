package instance

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/client"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// AdminToken is the instance's admin token (--auth-token).
const AdminToken = "instance-admin-token"

// Stitchd is a running stitchd.
type Stitchd struct {
	App *app.App
	// URL is its base URL (http://127.0.0.1:port).
	URL string
	// Client speaks its API with the admin token.
	Client *client.Client
	// WebhookSecret signs its dispatches (whsec_…).
	WebhookSecret string
	t             testing.TB
}

// Start starts a stitchd on a new database (storetest.IsolatedDB; the
// test binary's TestMain must call storetest.Main), sweeping every 50 ms
// and stopped at the test's end.
func Start(t testing.TB) *Stitchd {
	t.Helper()
	_, dbURL := storetest.IsolatedDB(t)
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{Addr: "127.0.0.1:0", DatabaseURL: dbURL, AuthToken: AdminToken,
		PollInterval: 50 * time.Millisecond, DispatchTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
	})
	c := &client.Client{BaseURL: a.URL, Token: AdminToken}
	secret, err := c.WebhookSecret(ctx)
	require.NoError(t, err)
	return &Stitchd{App: a, URL: a.URL, Client: c, WebhookSecret: secret, t: t}
}

// WorkerToken makes a token of role worker (what POST /api/v1/tokens
// {"role": "worker"} makes for a signed-in admin): it may poll task
// queues and nothing else.
func (s *Stitchd) WorkerToken(name string) string {
	s.t.Helper()
	ctx := context.Background()
	email := name + "-" + uuid.NewString()[:8] + "@example.com"
	u, err := s.App.Store.CreateUser(ctx, store.CreateUserParams{ID: uuid.NewString(), Email: email, Name: name,
		Role: store.RoleAdmin, Now: time.Now()})
	require.NoError(s.t, err)
	tok := "stp_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	sum := sha256.Sum256([]byte(tok))
	role := store.RoleWorker
	require.NoError(s.t, s.App.Store.CreateToken(ctx, store.APIToken{ID: uuid.NewString(), UserID: u.ID, Name: name,
		CreatedAt: time.Now(), Role: &role}, sum[:]))
	return tok
}

// Flow creates a flow of one Worker node, id "work", with data, and
// returns its id.
func (s *Stitchd) Flow(name string, data map[string]any) string {
	s.t.Helper()
	raw, err := json.Marshal(map[string]any{"nodes": []map[string]any{{"id": "work", "type": "Worker", "data": data}},
		"edges": []any{}})
	require.NoError(s.t, err)
	graph, err := client.ParseGraph(raw)
	require.NoError(s.t, err)
	f, err := s.Client.CreateFlow(context.Background(), client.FlowSpec{Name: name, Graph: graph})
	require.NoError(s.t, err)
	return f.Id.String()
}

// StartRun starts a run of flow with input (a JSON-encodable value).
func (s *Stitchd) StartRun(flow string, input any) string {
	s.t.Helper()
	b, err := json.Marshal(input)
	require.NoError(s.t, err)
	r, err := s.Client.StartRun(context.Background(), flow, b)
	require.NoError(s.t, err)
	return r.Id.String()
}

// Run reads a run with its nodes.
func (s *Stitchd) Run(id string) *client.Run {
	s.t.Helper()
	r, err := s.Client.GetRun(context.Background(), id)
	require.NoError(s.t, err)
	return r
}

// WaitRun waits (up to a minute) for run id to finish and returns it.
func (s *Stitchd) WaitRun(id string) *client.Run {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		r := s.Run(id)
		if client.Finished(r) {
			return r
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s did not finish in a minute: %s", id, r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Queue reads GET /api/v1/queues' entry of queue (zero when absent).
func (s *Stitchd) Queue(name string) store.QueueStats {
	s.t.Helper()
	var qs []store.QueueStats
	require.NoError(s.t, s.Client.Do(context.Background(), "GET", "/api/v1/queues", nil, &qs))
	for _, q := range qs {
		if q.Name == name {
			return q
		}
	}
	return store.QueueStats{}
}

// Events reads a finished run's events, oldest first, up to its last
// (run.completed, run.failed or run.cancelled).
func (s *Stitchd) Events(runID string) []client.Event {
	s.t.Helper()
	var out []client.Event
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(s.t, s.Client.RunEvents(ctx, runID, 0, func(e client.Event) error {
		out = append(out, e)
		switch e.Type {
		case "run.completed", "run.failed", "run.cancelled":
			return client.ErrStop
		}
		return nil
	}))
	return out
}

// JSON is v (a run's output, an event's payload: any JSON the client
// read) encoded again, for require.JSONEq and substring checks.
func JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Graph reads a flow's graph from JSON (client.FlowSpec's Graph).
func Graph(t testing.TB, raw string) client.Graph {
	t.Helper()
	g, err := client.ParseGraph([]byte(raw))
	require.NoError(t, err)
	return g
}
