package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/syncbuf"
)

// finishedAgo moves a finished run's finish into the past.
func (h *harness) finishedAgo(runID string, ago time.Duration) {
	h.t.Helper()
	require.NoError(h.t, h.app.Store.Gorm().Exec(`UPDATE runs SET finished_at = now() - make_interval(secs => ?) WHERE id = ?`,
		ago.Seconds(), runID).Error)
}

// rowsOf counts a run's rows: the run, its node states and its events.
func (h *harness) rowsOf(runID string) (runs, nodes, events int) {
	h.t.Helper()
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT (SELECT count(*) FROM runs WHERE id = ?),
		(SELECT count(*) FROM node_states WHERE run_id = ?), (SELECT count(*) FROM run_events WHERE run_id = ?)`,
		runID, runID, runID).Row().Scan(&runs, &nodes, &events))
	return runs, nodes, events
}

func TestRetentionDeletesFinishedRunsPastIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.Retention = 24 * time.Hour })
	quick := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "input"})}, nil)
	waiting := h.createFlow([]map[string]any{node("ask", "UX", nil)}, nil)
	old := h.startRun(quick, map[string]any{})
	young := h.startRun(quick, map[string]any{})
	open := h.startRun(waiting, map[string]any{})
	require.Equal(t, "completed", old.Status)
	h.finishedAgo(old.ID, 25*time.Hour)
	h.finishedAgo(young.ID, 23*time.Hour)
	// A run that has not finished is kept however old it is.
	require.NoError(t, h.app.Store.Gorm().Exec(`UPDATE runs SET created_at = now() - interval '90 days' WHERE id = ?`, open.ID).Error)

	h.eventually(func() bool { r, _, _ := h.rowsOf(old.ID); return r == 0 }, "run %s to be deleted", old.ID)
	_, nodes, events := h.rowsOf(old.ID)
	require.Zero(t, nodes, "its node states go with it")
	require.Zero(t, events, "and its events")
	r, nodes, _ := h.rowsOf(young.ID)
	require.Equal(t, 1, r, "a run within the retention stays")
	require.Positive(t, nodes)
	r, _, _ = h.rowsOf(open.ID)
	require.Equal(t, 1, r)
	require.Equal(t, 404, h.do("GET", "/api/v1/runs/"+old.ID, nil, nil))
}

func TestRetentionOfAFlowOverridesTheServers(t *testing.T) {
	t.Parallel()
	h := newHarness(t) // no --retention: only flows that set theirs
	kept := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "1"})}, nil)
	var f flowResp
	require.Equal(t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": "short-lived", "graph": map[string]any{
		"nodes":    []map[string]any{node("t", "Transform", map[string]any{"expression": "1"})},
		"edges":    []any{},
		"settings": map[string]any{"retentionDays": 2}}}, &f))
	a := h.startRun(kept, map[string]any{})
	b := h.startRun(f.ID, map[string]any{})
	c := h.startRun(f.ID, map[string]any{})
	h.finishedAgo(a.ID, 400*24*time.Hour)
	h.finishedAgo(b.ID, 3*24*time.Hour)
	h.finishedAgo(c.ID, 24*time.Hour)
	h.eventually(func() bool { r, _, _ := h.rowsOf(b.ID); return r == 0 }, "run %s to be deleted", b.ID)
	r, _, _ := h.rowsOf(a.ID)
	require.Equal(t, 1, r, "a flow without retention keeps its runs")
	r, _, _ = h.rowsOf(c.ID)
	require.Equal(t, 1, r)

	_, ps := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "x", "graph": map[string]any{
		"nodes": []map[string]any{node("t", "Transform", map[string]any{"expression": "1"})}, "edges": []any{},
		"settings": map[string]any{"retentionDays": 0.5}}})
	require.Contains(t, byPath(ps)["settings.retentionDays"], "whole number of days")
}

func TestRetentionKeepsTheChildOfARunningParent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.Retention = time.Hour })
	child := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "1"})}, nil)
	parent := h.createFlow([]map[string]any{subNode("s", child, nil), node("ask", "UX", nil)},
		[]map[string]any{edge("s", "ask", nil)})
	r := h.startRun(parent, map[string]any{})
	kid := r.Nodes["s"].ChildRunID
	require.NotEmpty(t, kid)
	h.finishedAgo(kid, 2*time.Hour)
	// A deleted run's neighbour in time: deleted while the parent waits.
	other := h.startRun(child, map[string]any{})
	h.finishedAgo(other.ID, 3*time.Hour)
	h.eventually(func() bool { n, _, _ := h.rowsOf(other.ID); return n == 0 }, "run %s to be deleted", other.ID)
	n, _, _ := h.rowsOf(kid)
	require.Equal(t, 1, n, "the child of a run still going is kept")
}

// TestRetentionArchivesBeforeDeleting: with an archive, retention sends
// each batch of expired runs — the run, its node states, events and
// journey — signed, before it deletes them; an archive that refuses keeps
// them (sent again, the same batch id, until it takes them).
func TestRetentionArchivesBeforeDeleting(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	refuse := true
	var got []archived
	archive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, archived{header: r.Header.Clone(), body: b, refused: refuse})
		if refuse {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(archive.Close)
	h := newHarness(t, func(c *app.Config) { c.Retention = 24 * time.Hour; c.ArchiveURL = archive.URL + "/runs" })
	board := h.createBoard("new", "done")
	moves := node("t", "Transform", map[string]any{"expression": `{"n": 1}`,
		"entityMovement": movement("done", "", nil)})
	flow := h.createBoardFlow(board, []map[string]any{moves}, nil)
	ent := h.newEntity(board, "Ada")
	var old runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": ent, "input": map[string]any{"a": 1}}, &old))
	young := h.startRun(flow, map[string]any{})
	h.waitRun(old.ID, "completed")
	h.finishedAgo(old.ID, 25*time.Hour)

	sent := func() []archived {
		mu.Lock()
		defer mu.Unlock()
		return append([]archived(nil), got...)
	}
	h.eventually(func() bool { return len(sent()) >= 2 }, "the refused batch sent again")
	r, nodes, events := h.rowsOf(old.ID)
	require.Equal(t, []int{1, 1}, []int{r, nodes}, "a batch the archive refused is kept")
	require.Positive(t, events)
	all := sent()
	require.Equal(t, all[0].header.Get("webhook-id"), all[1].header.Get("webhook-id"), "the same batch, the same id")

	mu.Lock()
	refuse = false
	mu.Unlock()
	h.eventually(func() bool { r, _, _ := h.rowsOf(old.ID); return r == 0 }, "run %s archived and deleted", old.ID)
	last := sent()[len(sent())-1]
	require.False(t, last.refused)
	secret, err := h.app.Store.WebhookSecret(context.Background())
	require.NoError(t, err)
	require.NoError(t, callbacks.VerifyWebhook(secret, last.header.Get("webhook-id"), last.header.Get("webhook-timestamp"),
		last.header.Get("webhook-signature"), last.body, time.Now(), 5*time.Minute))
	var batch struct {
		Type string `json:"type"`
		Runs []struct {
			Run struct {
				ID       string          `json:"id"`
				Status   string          `json:"status"`
				Input    json.RawMessage `json:"input"`
				EntityID string          `json:"entity_id"`
			} `json:"run"`
			Nodes []struct {
				Key    string          `json:"key"`
				Output json.RawMessage `json:"output"`
			} `json:"nodes"`
			Events []struct {
				Type string `json:"type"`
			} `json:"events"`
			Journey []struct {
				Kind        string  `json:"kind"`
				ToSectionID *string `json:"to_section_id"`
			} `json:"journey"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(last.body, &batch))
	require.Equal(t, "runs.archived", batch.Type)
	require.Len(t, batch.Runs, 1, "only the run past its retention")
	a := batch.Runs[0]
	require.Equal(t, old.ID, a.Run.ID)
	require.Equal(t, "completed", a.Run.Status)
	require.JSONEq(t, `{"a": 1}`, string(a.Run.Input))
	require.Equal(t, ent, a.Run.EntityID)
	require.Len(t, a.Nodes, 1)
	require.JSONEq(t, `{"n": 1}`, string(a.Nodes[0].Output))
	require.Len(t, a.Events, events, "every event of the run")
	require.Equal(t, "run.started", a.Events[0].Type)
	require.NotEmpty(t, a.Journey)
	r, _, _ = h.rowsOf(young.ID)
	require.Equal(t, 1, r, "a run within the retention stays, and is not sent")
	require.Equal(t, "done", *h.entity(ent).SectionID, "the entity stays where the run left it")
}

type archived struct {
	header  http.Header
	body    []byte
	refused bool
}

// TestRetentionHoldsNoTransactionWhileArchiving: while the archive takes
// its time over a batch, nothing of stitchd's holds the batch's runs —
// no row lock, no transaction left open — and a run that changed
// meanwhile is not deleted: it is sent again, in its new state, under a
// new batch id.
func TestRetentionHoldsNoTransactionWhileArchiving(t *testing.T) {
	t.Parallel()
	type seen struct {
		id      string
		body    []byte
		lockErr error
		idleTx  int
		err     error
	}
	var (
		mu    sync.Mutex
		got   []seen
		h     *harness
		ready = make(chan struct{})
	)
	archive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		b, _ := io.ReadAll(r.Body)
		var batch struct {
			Runs []struct {
				Run struct {
					ID string `json:"id"`
				} `json:"run"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(b, &batch); err != nil || len(batch.Runs) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		db := h.app.Store.Gorm()
		s := seen{id: r.Header.Get("webhook-id"), body: b}
		// The rows being archived can be locked by another session at once.
		s.lockErr = db.Exec(`SELECT id FROM runs WHERE id = ? FOR UPDATE NOWAIT`, batch.Runs[0].Run.ID).Error
		// No session of this database idles in a transaction holding runs.
		s.err = db.Raw(`SELECT count(*) FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
			WHERE a.datname = current_database() AND a.state LIKE 'idle in transaction%' AND l.relation = 'runs'::regclass`).
			Row().Scan(&s.idleTx)
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 && s.err == nil {
			// The run changes while its first copy is on its way.
			s.err = db.Exec(`UPDATE runs SET updated_at = now() WHERE id = ?`, batch.Runs[0].Run.ID).Error
		}
		got = append(got, s)
	}))
	t.Cleanup(archive.Close)
	h = newHarness(t, func(c *app.Config) { c.Retention = 24 * time.Hour; c.ArchiveURL = archive.URL })
	flow := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "input"})}, nil)
	old := h.startRun(flow, map[string]any{})
	require.Equal(t, "completed", old.Status)
	h.finishedAgo(old.ID, 25*time.Hour)
	close(ready)

	h.eventually(func() bool { r, _, _ := h.rowsOf(old.ID); return r == 0 }, "run %s archived and deleted", old.ID)
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(got), 2, "the run that changed after it was read is kept, and sent again")
	for i, s := range got {
		require.NoError(t, s.err, "send %d", i)
		require.NoError(t, s.lockErr, "send %d: the run is not locked while the archive has it", i)
		require.Zero(t, s.idleTx, "send %d: no transaction is left open on runs during the POST", i)
	}
	require.NotEqual(t, got[0].id, got[1].id, "its new state is another batch")
	require.NotEqual(t, string(got[0].body), string(got[1].body))
}

// TestRetentionOfAFlowKeepsLongerThanTheServers: a flow's own retention
// longer than the server's keeps its runs past the server's, and deletes
// them past its own.
func TestRetentionOfAFlowKeepsLongerThanTheServers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.Retention = 24 * time.Hour })
	plain := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "1"})}, nil)
	var f flowResp
	require.Equal(t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": "long-lived", "graph": map[string]any{
		"nodes":    []map[string]any{node("t", "Transform", map[string]any{"expression": "1"})},
		"edges":    []any{},
		"settings": map[string]any{"retentionDays": 10}}}, &f))
	kept := h.startRun(f.ID, map[string]any{})
	due := h.startRun(f.ID, map[string]any{})
	other := h.startRun(plain, map[string]any{})
	h.finishedAgo(kept.ID, 3*24*time.Hour)
	h.finishedAgo(due.ID, 11*24*time.Hour)
	h.finishedAgo(other.ID, 25*time.Hour)
	h.eventually(func() bool {
		a, _, _ := h.rowsOf(due.ID)
		b, _, _ := h.rowsOf(other.ID)
		return a+b == 0
	}, "runs %s and %s to be deleted", due.ID, other.ID)
	r, _, _ := h.rowsOf(kept.ID)
	require.Equal(t, 1, r, "the flow keeps its runs ten days, past the server's one")
}

// TestRetentionArchiveHeldToTheGuard: in deny mode the archive is held to
// the address guard like every other URL stitchd sends to (issue 43: a
// service on the machine itself is not reachable through it); an exact
// --worker-allow-cidrs entry opens it.
func TestRetentionArchiveHeldToTheGuard(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	archive := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(archive.Close)
	for _, allowed := range []bool{false, true} {
		var log syncbuf.Buffer
		guard := &callbacks.AddressGuard{DenyPrivate: true}
		if allowed {
			guard.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
		}
		h := newHarness(t, withLog(&log), func(c *app.Config) {
			c.Retention, c.ArchiveURL, c.WorkerGuard = 24*time.Hour, archive.URL+"/runs", guard
		})
		flow := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": `{"n": 1}`})}, nil)
		r := h.startRun(flow, map[string]any{})
		h.waitRun(r.ID, "completed")
		h.finishedAgo(r.ID, 25*time.Hour)
		if !allowed {
			h.eventually(func() bool { return strings.Contains(log.String(), "archive unreachable") }, "the archive refused")
			require.Contains(t, log.String(), "refused")
			require.Zero(t, hits.Load(), "nothing reached the archive")
			n, _, _ := h.rowsOf(r.ID)
			require.Equal(t, 1, n, "not archived, not deleted")
			continue
		}
		h.eventually(func() bool { n, _, _ := h.rowsOf(r.ID); return n == 0 }, "archived and deleted")
		require.Positive(t, hits.Load())
	}
}
