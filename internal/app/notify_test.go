package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
)

// receiver is a loopback notification webhook: it records what it is
// sent, answering fail (then 200) to the first fail requests.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []notice
	fail int
}

type notice struct {
	Header http.Header
	Body   []byte
	Note   struct {
		Type     string   `json:"type"`
		ID       string   `json:"id"`
		RunID    string   `json:"run_id"`
		FlowID   string   `json:"flow_id"`
		NodeKey  string   `json:"node_key"`
		Attempt  int      `json:"attempt"`
		Prompt   string   `json:"prompt"`
		Outcomes []string `json:"outcomes"`
		Error    string   `json:"error"`
	}
}

func newReceiver(t *testing.T, fail int) *receiver {
	r := &receiver{fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fail > 0 {
			r.fail--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		rc := notice{Header: req.Header.Clone(), Body: b}
		if err := json.Unmarshal(b, &rc.Note); err != nil {
			t.Errorf("notification is not JSON: %s", b)
		}
		r.got = append(r.got, rc)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) all() []notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notice(nil), r.got...)
}

// ofType waits for n notifications of type typ about run runID.
func (h *harness) notified(r *receiver, runID, typ string, n int) []notice {
	h.t.Helper()
	var out []notice
	h.eventually(func() bool {
		out = nil
		for _, g := range r.all() {
			if g.Note.RunID == runID && g.Note.Type == typ {
				out = append(out, g)
			}
		}
		return len(out) >= n
	}, "%d %s notification(s) of run %s", n, typ, runID)
	return out
}

func TestNotificationsOfApprovalsAndFailedRuns(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 2) // the first two tries fail: retried
	h := newHarness(t, func(c *app.Config) { c.NotifyURL = rcv.srv.URL + "/notify" })
	// Reminded every second; eight seconds leave room for the two the test
	// waits for however slow the sweeps are on a loaded machine.
	flow := h.createFlow([]map[string]any{node("ask", "UX", map[string]any{"prompt": "Send to sales?",
		"remindAfterSeconds": 1, "timeoutSeconds": 8, "onTimeout": "reject"}), wnode(h, "sales")},
		[]map[string]any{redge("ask", "sales", map[string]any{"outcome": "approve"})})
	r := h.startRun(flow, map[string]any{"lead": "ada"})

	req := h.notified(rcv, r.ID, "approval.requested", 1)[0]
	require.Equal(t, "ask", req.Note.NodeKey)
	require.Equal(t, flow, req.Note.FlowID)
	require.Equal(t, "Send to sales?", req.Note.Prompt)
	require.Equal(t, []string{"approve", "reject"}, req.Note.Outcomes)
	require.Equal(t, 1, req.Note.Attempt)
	// Signed as dispatches are, webhook-id the notification's id.
	secret, err := h.app.Store.WebhookSecret(context.Background())
	require.NoError(t, err)
	require.Equal(t, req.Note.ID, req.Header.Get("webhook-id"))
	require.NoError(t, callbacks.VerifyWebhook(secret, req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"),
		req.Header.Get("webhook-signature"), req.Body, time.Now(), 5*time.Minute))

	// Reminded about every second until the timeout takes reject.
	reminders := h.notified(rcv, r.ID, "approval.reminder", 2)
	require.NotEqual(t, reminders[0].Note.ID, reminders[1].Note.ID)
	h.notified(rcv, r.ID, "approval.timed_out", 1)
	// No outcome edge for reject: the node fails, and the run.
	done := h.waitRun(r.ID, "failed")
	failed := h.notified(rcv, r.ID, "run.failed", 1)[0]
	require.Equal(t, *done.Error, failed.Note.Error)

	var n int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND type = 'node.reminder'`, r.ID).
		Row().Scan(&n))
	require.GreaterOrEqual(t, n, 2, "each reminder is an event")

	// Once decided, a node is reminded about no more; nothing is sent
	// twice, however much later (every retry of a notification due).
	h.advance(time.Minute)
	h.sweeps(2)
	var left int
	h.eventually(func() bool {
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM notifications WHERE run_id = ? AND status <> 'delivered'`, r.ID).
			Row().Scan(&left))
		return left == 0
	}, "every notification delivered")
	h.sweeps(2) // and the notifier, polling as often, found nothing to send again
	seen := map[string]bool{}
	for _, g := range rcv.all() {
		require.False(t, seen[g.Note.ID], "notification %s delivered twice", g.Note.ID)
		seen[g.Note.ID] = true
	}
	var remindAt *time.Time
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT remind_at FROM node_states WHERE run_id = ? AND key = 'ask'`, r.ID).
		Row().Scan(&remindAt))
	require.Nil(t, remindAt)
}

func TestNoNotificationsWithoutAWebhook(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("ask", "UX", map[string]any{"remindAfterSeconds": 1})}, nil)
	r := h.startRun(flow, map[string]any{})
	h.eventually(func() bool {
		var reminded int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND type = 'node.reminder'`, r.ID).
			Row().Scan(&reminded))
		return reminded > 0
	}, "a reminder event")
	var notes int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM notifications WHERE run_id = ?`, r.ID).Row().Scan(&notes))
	require.Zero(t, notes)

	var inbox struct {
		Approvals []struct {
			RunID              string   `json:"run_id"`
			RemindAfterSeconds *float64 `json:"remind_after_seconds"`
		} `json:"approvals"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &inbox))
	require.Len(t, inbox.Approvals, 1)
	require.Equal(t, r.ID, inbox.Approvals[0].RunID)
	require.NotNil(t, inbox.Approvals[0].RemindAfterSeconds, "the inbox says the approval is reminded about")
	require.InDelta(t, 1.0, *inbox.Approvals[0].RemindAfterSeconds, 0)
}

func TestRemindAfterSecondsValidated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, ps := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "x", "graph": map[string]any{
		"nodes": []map[string]any{node("ask", "UX", map[string]any{"remindAfterSeconds": 0})}, "edges": []any{}}})
	require.Contains(t, byPath(ps)["nodes[0].data.remindAfterSeconds"], "at least 1")
}

// TestCancelTellsWorkers: cancelling a run sends each running Worker node
// with a cancelUrl a signed worker.cancel notice (the dispatch's names:
// runId, nodeId, attempt), retried like a notification, with no
// notification webhook configured; a worker without a cancelUrl, and a
// step that was not running, get nothing.
func TestCancelTellsWorkers(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 1) // the first try fails: retried
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a", "cancelUrl", rcv.srv.URL+"/cancel"), wnode(h, "b"),
		node("ask", "UX", nil), wnode(h, "later", "cancelUrl", rcv.srv.URL+"/cancel")},
		[]map[string]any{edge("ask", "later", nil)})
	r := h.startRun(flow, map[string]any{})
	h.waitDispatch(r.ID, "a", 1)
	h.waitDispatch(r.ID, "b", 1)
	h.waitNode(r.ID, "ask", "waiting_for_user")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", nil, nil))

	var got notice
	h.eventually(func() bool {
		all := rcv.all()
		if len(all) > 0 {
			got = all[0]
		}
		return len(all) > 0
	}, "the cancel notice")
	var body struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		RunID   string `json:"runId"`
		NodeID  string `json:"nodeId"`
		Attempt int    `json:"attempt"`
		Reason  string `json:"reason"`
	}
	require.NoError(t, json.Unmarshal(got.Body, &body))
	require.Equal(t, "worker.cancel", body.Type)
	require.Equal(t, r.ID, body.RunID)
	require.Equal(t, "a", body.NodeID)
	require.Equal(t, 1, body.Attempt)
	require.Equal(t, "run cancelled", body.Reason)
	secret, err := h.app.Store.WebhookSecret(context.Background())
	require.NoError(t, err)
	require.Equal(t, body.ID, got.Header.Get("webhook-id"))
	require.NoError(t, callbacks.VerifyWebhook(secret, got.Header.Get("webhook-id"), got.Header.Get("webhook-timestamp"),
		got.Header.Get("webhook-signature"), got.Body, time.Now(), 5*time.Minute))

	var rows []struct {
		Type, Status string
		Tries        int
		URL          string
	}
	// The receiver has it; its row is marked delivered once the answer is
	// read.
	h.eventually(func() bool {
		rows = nil
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT type, status, tries, url FROM notifications WHERE run_id = ?`, r.ID).
			Scan(&rows).Error)
		return len(rows) != 1 || rows[0].Status != "sending"
	}, "the notice's row to record its delivery")
	require.Len(t, rows, 1, "a notice for a only: b has no cancelUrl, later never ran")
	require.Equal(t, "worker.cancel", rows[0].Type)
	require.Equal(t, "delivered", rows[0].Status)
	require.Equal(t, 2, rows[0].Tries, "the refused first try was retried")
	require.Equal(t, rcv.srv.URL+"/cancel", rows[0].URL)
}

// TestCancelURLIsChecked: a cancelUrl that is no absolute http(s) URL is
// refused at save, with its path.
func TestCancelURLIsChecked(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var out struct {
		Error struct {
			Details []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"details"`
		} `json:"error"`
	}
	code := h.do("POST", "/api/v1/flows", map[string]any{"name": "bad cancel", "graph": map[string]any{
		"nodes": []map[string]any{wnode(h, "a", "cancelUrl", "ftp://x/y")}, "edges": []any{}}}, &out)
	require.Equal(t, 422, code)
	require.Len(t, out.Error.Details, 1)
	require.Equal(t, "nodes[0].data.cancelUrl", out.Error.Details[0].Path)
	require.Contains(t, out.Error.Details[0].Message, "cancelUrl must be an absolute http or https URL")
}
