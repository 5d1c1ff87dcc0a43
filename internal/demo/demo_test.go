package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/demo"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const token = "demo-test-token"

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestLoadIsIdempotent(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	ctx := context.Background()

	first, err := demo.Load(ctx, st, demo.Options{WorkerURL: "http://127.0.0.1:8090"})
	require.NoError(t, err)
	require.Equal(t, []string{"board", "flow", "trigger"}, first.Created)
	require.Empty(t, first.Warnings)

	again, err := demo.Load(ctx, st, demo.Options{WorkerURL: "http://127.0.0.1:8090/"})
	require.NoError(t, err)
	require.Empty(t, again.Created, "a second load creates nothing")
	require.Equal(t, first.BoardID, again.BoardID)
	require.Equal(t, first.FlowID, again.FlowID)
	require.Equal(t, first.VersionID, again.VersionID)

	boards, err := st.ListBoards(ctx, "")
	require.NoError(t, err)
	require.Len(t, boards, 1)
	require.Equal(t, "Lead qualification", boards[0].Name)
	require.Equal(t, []store.Section{{ID: "new", Name: "New"}, {ID: "enriched", Name: "Enriched"},
		{ID: "qualified", Name: "Qualified"}, {ID: "customers", Name: "Customers"}, {ID: "nurture", Name: "Nurture"}},
		boards[0].Sections)
	flows, err := st.ListFlows(ctx, "")
	require.NoError(t, err)
	require.Len(t, flows, 1)
	require.Equal(t, 1, flows[0].VersionNumber)
	require.Equal(t, first.BoardID, *flows[0].BoardID)
	trig, err := st.TriggerBySlug(ctx, "lead")
	require.NoError(t, err)
	require.Equal(t, first.FlowID, trig.FlowID)
	require.Nil(t, trig.Secret)
	require.JSONEq(t, `{"board_id":"`+first.BoardID+`","type":"lead","name_path":"name","email_path":"email"}`, string(trig.Entity))

	// Another worker address is a new version of the same flow.
	moved, err := demo.Load(ctx, st, demo.Options{WorkerURL: "http://127.0.0.1:9999"})
	require.NoError(t, err)
	require.Equal(t, []string{"flow version"}, moved.Created)
	require.Equal(t, first.FlowID, moved.FlowID)
	f, err := st.GetFlow(ctx, first.FlowID)
	require.NoError(t, err)
	require.Equal(t, 2, f.VersionNumber)
	require.Contains(t, string(f.Graph), "http://127.0.0.1:9999/enrich")

	// A person's edit of the demo flow stays: a later load warns instead.
	edited := *f
	_, created, err := st.UpdateFlow(ctx, first.FlowID, store.UpdateFlowParams{Version: &store.NewVersion{ID: uuid.NewString(),
		Graph: edited.Graph, Execution: edited.Execution, Hash: "edited-by-a-person", Message: "my change"}})
	require.NoError(t, err)
	require.True(t, created)
	kept, err := demo.Load(ctx, st, demo.Options{WorkerURL: "http://127.0.0.1:7777"})
	require.NoError(t, err)
	require.Empty(t, kept.Created)
	require.Len(t, kept.Warnings, 1)
	require.Contains(t, kept.Warnings[0], "was edited (version 3)")
	f, err = st.GetFlow(ctx, first.FlowID)
	require.NoError(t, err)
	require.Equal(t, 3, f.VersionNumber, "no version made over the person's")
	require.NotContains(t, string(f.Graph), "7777")

	// A deleted demo flow is made again, and the slug follows it.
	require.NoError(t, st.DeleteFlow(ctx, first.FlowID))
	reborn, err := demo.Load(ctx, st, demo.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"flow", "trigger"}, reborn.Created)
	require.NotEqual(t, first.FlowID, reborn.FlowID)
	require.Equal(t, first.BoardID, reborn.BoardID)
	trig, err = st.TriggerBySlug(ctx, "lead")
	require.NoError(t, err)
	require.Equal(t, reborn.FlowID, trig.FlowID)
}

func TestConcurrentLoads(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	ctx := context.Background()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := demo.Load(ctx, st, demo.Options{})
			errs <- err
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	boards, err := st.ListBoards(ctx, "")
	require.NoError(t, err)
	require.Len(t, boards, 1, "processes starting at once make one board")
	flows, err := st.ListFlows(ctx, "")
	require.NoError(t, err)
	require.Len(t, flows, 1)
}

// stitchd is a real server with the demo loaded and the demo worker on a
// loopback port.
type stitchd struct {
	t      *testing.T
	app    *app.App
	loaded *demo.Loaded
}

func startDemo(t *testing.T) *stitchd {
	t.Helper()
	_, dbURL := storetest.IsolatedDB(t)
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{Addr: "127.0.0.1:0", DatabaseURL: dbURL, AuthToken: token,
		PollInterval: 50 * time.Millisecond, DispatchTimeout: 2 * time.Second, Logger: quiet()})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
	})
	secret, err := a.Store.WebhookSecret(ctx)
	require.NoError(t, err)
	w := demo.NewWorker(demo.WorkerConfig{Secret: secret, MinDelay: 5 * time.Millisecond, MaxDelay: 40 * time.Millisecond, Logger: quiet()})
	srv := httptest.NewServer(w)
	t.Cleanup(func() { srv.Close(); w.Close() })
	loaded, err := demo.Load(ctx, a.Store, demo.Options{WorkerURL: srv.URL})
	require.NoError(t, err)
	return &stitchd{t: t, app: a, loaded: loaded}
}

func (s *stitchd) do(method, path, body string, out any) int {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.app.URL+path, bytes.NewBufferString(body))
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	if out != nil {
		require.NoError(s.t, json.Unmarshal(b, out), string(b))
	}
	return resp.StatusCode
}

type entity struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	SectionID string `json:"section_id"`
	Journey   []struct {
		Kind string  `json:"kind"`
		To   *string `json:"to_section_id"`
	} `json:"journey"`
}

func (s *stitchd) entity(id string) entity {
	s.t.Helper()
	var e entity
	require.Equal(s.t, 200, s.do("GET", "/api/v1/entities/"+id, "", &e))
	return e
}

type run struct {
	Status string `json:"status"`
	Nodes  map[string]struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
	} `json:"nodes"`
}

// waitFor polls cond until it holds or 20 s pass.
func (s *stitchd) waitFor(what string, cond func() bool) {
	s.t.Helper()
	testkit.Eventually(s.t, 20*time.Second, cond, "%s", what)
}

// sections lists the sections an entity's journey went through.
func (e entity) sections() []string {
	var out []string
	for _, j := range e.Journey {
		if j.To != nil && (len(out) == 0 || out[len(out)-1] != *j.To) {
			out = append(out, *j.To)
		}
	}
	return out
}

func TestDemoLeadJourney(t *testing.T) {
	t.Parallel()
	s := startDemo(t)
	cases := []struct {
		name, decision string
		wantSection    string
		wantType       string
		wantRun        string
	}{
		{"approved", `{"status":"completed","output":{"approved":true}}`, "customers", "customer", "completed"},
		{"rejected", `{"outcome":"reject","comment":"not now"}`, "nurture", "lead", "completed"},
		{"rejected the old way", `{"status":"failed","error":"not now"}`, "nurture", "lead", "completed"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			email := "ada" + strconv.Itoa(i) + "@analytical.example"
			var hook struct {
				RunID    string `json:"run_id"`
				EntityID string `json:"entity_id"`
			}
			// The README's curl: no token, no signature.
			resp := s.postHook(t, `{"name":"Ada Lovelace","email":"`+email+`",
				"contacts":[{"name":"Ada Lovelace","title":"CEO"},{"name":"Charles Babbage","title":"Engineering Manager"},{"name":"Intern","title":"Intern"}]}`)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusAccepted, resp.StatusCode, string(b))
			require.NoError(t, json.Unmarshal(b, &hook))
			require.NotEmpty(t, hook.EntityID)

			var r run
			s.waitFor("the approval", func() bool {
				require.Equal(t, 200, s.do("GET", "/api/v1/runs/"+hook.RunID, "", &r))
				require.NotEqual(t, "failed", r.Status, "run failed: %+v", r)
				return r.Nodes["approve"].Status == "waiting_for_user"
			})
			e := s.entity(hook.EntityID)
			require.Equal(t, "qualified", e.SectionID)
			require.Equal(t, []string{"new", "enriched", "qualified"}, e.sections())
			require.Equal(t, "lead", e.Type)
			require.Equal(t, "Ada Lovelace", e.Name)
			require.Equal(t, email, e.Email)
			for _, k := range []string{"score_0", "score_1", "score_2"} {
				require.Equal(t, "completed", r.Nodes[k].Status, k)
			}
			var q struct {
				Qualified      bool   `json:"qualified"`
				Score          int    `json:"score"`
				ContactsScored int    `json:"contacts_scored"`
				Recommendation string `json:"recommendation"`
				Company        struct {
					Domain string `json:"domain"`
				} `json:"company"`
			}
			require.NoError(t, json.Unmarshal(r.Nodes["qualify"].Output, &q))
			require.True(t, q.Qualified, "a CEO qualifies the lead: %s", r.Nodes["qualify"].Output)
			require.GreaterOrEqual(t, q.Score, 85)
			require.Equal(t, 3, q.ContactsScored)
			require.Equal(t, "send to sales", q.Recommendation)
			require.Equal(t, "analytical.example", q.Company.Domain)

			var approvals struct {
				Approvals []struct {
					RunID string `json:"run_id"`
					Label string `json:"label"`
				} `json:"approvals"`
			}
			require.Equal(t, 200, s.do("GET", "/api/v1/approvals", "", &approvals))
			found := false
			for _, a := range approvals.Approvals {
				if a.RunID == hook.RunID {
					found = true
					require.Equal(t, "Send to sales?", a.Label)
				}
			}
			require.True(t, found, "the run waits in /api/v1/approvals")

			require.Equal(t, 200, s.do("POST", "/api/v1/runs/"+hook.RunID+"/nodes/approve/complete", c.decision, nil))
			s.waitFor("the run to finish", func() bool {
				require.Equal(t, 200, s.do("GET", "/api/v1/runs/"+hook.RunID, "", &r))
				return r.Status == c.wantRun
			})
			taken, skipped := "handoff", "nurture"
			if c.wantSection == "nurture" {
				taken, skipped = skipped, taken
			}
			require.Equal(t, "completed", r.Nodes[taken].Status)
			require.Equal(t, "skipped", r.Nodes[skipped].Status)
			e = s.entity(hook.EntityID)
			require.Equal(t, c.wantSection, e.SectionID)
			require.Equal(t, c.wantType, e.Type)
			require.Equal(t, []string{"new", "enriched", "qualified", c.wantSection}, e.sections())
		})
	}
}

func TestDemoLeadWithoutContacts(t *testing.T) {
	t.Parallel()
	s := startDemo(t)
	var hook struct {
		RunID string `json:"run_id"`
	}
	resp := s.postHook(t, `{"name":"Grace","email":"grace@navy.example"}`)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&hook))
	resp.Body.Close()
	var r run
	s.waitFor("the approval", func() bool {
		require.Equal(t, 200, s.do("GET", "/api/v1/runs/"+hook.RunID, "", &r))
		return r.Nodes["approve"].Status == "waiting_for_user"
	})
	var enriched struct {
		Contacts []demo.Contact `json:"contacts"`
	}
	require.NoError(t, json.Unmarshal(r.Nodes["enrich"].Output, &enriched))
	require.GreaterOrEqual(t, len(enriched.Contacts), 2, "enrichment finds contacts")
	require.Equal(t, "completed", r.Nodes["score_"+strconv.Itoa(len(enriched.Contacts)-1)].Status)
}

func TestWorkerRefusesBadDispatches(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte{7}, 32)
	w := demo.NewWorker(demo.WorkerConfig{Secret: secret, Logger: quiet()})
	t.Cleanup(w.Close)
	srv := httptest.NewServer(w)
	t.Cleanup(srv.Close)
	body := []byte(`{"runId":"r","nodeId":"enrich","attempt":1,"config":{},"input":{},"callbackUrl":"http://127.0.0.1:1/cb"}`)
	now := time.Now().Unix()
	sign := func(key []byte, ts int64) string { return callbacks.SignWebhook(key, "msg_1", ts, body) }
	cases := []struct {
		name, path, sig string
		ts              int64
		want            int
	}{
		{"unknown job", "/nope", sign(secret, now), now, http.StatusNotFound},
		{"no signature", "/enrich", "", now, http.StatusUnauthorized},
		{"wrong key", "/enrich", sign(bytes.Repeat([]byte{8}, 32), now), now, http.StatusUnauthorized},
		{"stale timestamp", "/enrich", sign(secret, now-3600), now - 3600, http.StatusUnauthorized},
		{"good", "/enrich", sign(secret, now), now, http.StatusAccepted},
		{"redelivery", "/enrich", sign(secret, now), now, http.StatusAccepted},
	}
	for _, c := range cases {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+c.path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("webhook-id", "msg_1")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(c.ts, 10))
		req.Header.Set("webhook-signature", c.sig)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, c.want, resp.StatusCode, c.name)
	}
}

// TestDemoHookRefusesALeadWithoutEmail: the demo trigger's input_schema
// keeps a body without a name or email from making a nameless card.
func TestDemoHookRefusesALeadWithoutEmail(t *testing.T) {
	t.Parallel()
	s := startDemo(t)
	for _, body := range []string{`{}`, `{"name":"Ada"}`, `{"name":"Ada","email":"not an email"}`, `{"name":"","email":"a@b.example","contacts":3}`} {
		resp := s.postHook(t, body)
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Details []struct {
					Code    string `json:"code"`
					Path    string `json:"path"`
					Message string `json:"message"`
				} `json:"details"`
			} `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		require.Equal(t, "invalid_request", e.Error.Code)
		require.NotEmpty(t, e.Error.Details, body)
		for _, d := range e.Error.Details {
			require.Equal(t, "input_invalid", d.Code)
			require.True(t, strings.HasPrefix(d.Path, "$"), d.Path)
		}
	}
	var runs struct {
		Runs []any `json:"runs"`
	}
	require.Equal(t, 200, s.do("GET", "/api/v1/runs", "", &runs))
	require.Empty(t, runs.Runs, "no run started")
}

// postHook POSTs body as JSON to the demo's /hooks/lead, as the README's
// curl does: no token, no signature.
func (s *stitchd) postHook(t *testing.T, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.app.URL+"/hooks/lead", bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}
