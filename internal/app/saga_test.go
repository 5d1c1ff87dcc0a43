package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store/storetest"
)

// hookAnswer is a hook request's answer.
type hookAnswer struct {
	code   int
	body   string
	header http.Header
	took   time.Duration
}

// callHook POSTs body to the hook at base in the background; the answer
// comes on the channel.
func callHook(h *harness, base, slug, body string) <-chan hookAnswer {
	out := make(chan hookAnswer, 1)
	go func() {
		start := time.Now()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/hooks/"+slug, strings.NewReader(body))
		if err != nil {
			out <- hookAnswer{body: err.Error()}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.client.Do(req)
		if err != nil {
			out <- hookAnswer{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, readAll(resp))
		out <- hookAnswer{code: resp.StatusCode, body: b.String(), header: resp.Header, took: time.Since(start)}
	}()
	return out
}

func readAll(resp *http.Response) string {
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}

// callBackVia posts a dispatch's callback to the process at base (the
// callback URL names the process that dispatched it; any process takes it).
func callBackVia(t *testing.T, h *harness, base string, d dispatch, body string) {
	t.Helper()
	i := strings.Index(d.Payload.CallbackURL, "/callbacks/")
	require.Positive(t, i)
	code, resp := h.post(base+d.Payload.CallbackURL[i:], body)
	require.Equal(t, http.StatusOK, code, resp)
}

// anyDispatch waits for the first dispatch of node key, whatever its run.
func anyDispatch(h *harness, key string) dispatch {
	h.t.Helper()
	return h.worker.Wait(h.t, waitLimit, "a dispatch of "+key, func(d dispatch) bool { return d.Payload.NodeID == key })
}

// waitHook waits for a hook's answer.
func waitHook(t *testing.T, ch <-chan hookAnswer) hookAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(waitLimit):
		t.Fatal("the hook did not answer")
	}
	return hookAnswer{}
}

// TestHookAnswersTheCallerAcrossProcesses: docs/triggers.md, Answering the
// caller — a webhook trigger with respond {"mode": "wait"} holds the
// request on process A while the run goes on; its worker's callback is
// taken by process B, on the same database, and B's commit wakes A's
// request (LISTEN/NOTIFY): 200 with the output when the run completes,
// 200 with the error when it fails, 202 "running" past the timeout, and
// a Respond node's own status and body as soon as it fires, the run
// going on after it.
func TestHookAnswersTheCallerAcrossProcesses(t *testing.T) {
	t.Parallel()
	_, dbURL := storetest.IsolatedDB(t)
	// The waiting process reads the run again only when a notification
	// says it changed: what B commits must reach A through Postgres.
	a := newHarnessOn(t, dbURL, func(c *app.Config) { c.HookRecheck = time.Hour })
	b := newHarnessOn(t, dbURL)
	hook := func(slug string, timeout int, nodes []map[string]any, edges []map[string]any) {
		flow := a.createFlow(nodes, edges)
		require.Equal(t, http.StatusCreated, a.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": slug,
			"respond": map[string]any{"mode": "wait", "timeout_seconds": timeout}}, nil))
	}
	hook("order-completed", 30, []map[string]any{wnode(a, "charge"), node("receipt", "Transform", map[string]any{"expression": `{"paid": input.amount}`})},
		[]map[string]any{edge("charge", "receipt", nil)})
	hook("order-failed", 30, []map[string]any{wnode(a, "pay")}, nil)
	hook("order-slow", 1, []map[string]any{wnode(a, "wait")}, nil)
	hook("order-respond", 30, []map[string]any{wnode(a, "check"),
		node("ack", "Respond", map[string]any{"status": 201, "body": map[string]any{"accepted": "{{ input.order }}", "id": "{{ input.order }}-{{ input.ok }}"}}),
		wnode(a, "ship")}, []map[string]any{edge("check", "ack", nil), edge("ack", "ship", nil)})

	t.Run("completed", func(t *testing.T) {
		ch := callHook(a, a.app.URL, "order-completed", `{"amount":12}`)
		d := anyDispatch(a, "charge")
		select {
		case ans := <-ch:
			t.Fatalf("answered before the run ended: %d %s", ans.code, ans.body)
		case <-time.After(200 * time.Millisecond):
		}
		callBackVia(t, a, b.app.URL, d, `{"status":"completed","output":{"amount":12}}`)
		ans := waitHook(t, ch)
		require.Equal(t, http.StatusOK, ans.code, ans.body)
		require.JSONEq(t, fmt.Sprintf(`{"run_id":%q,"status":"completed","output":{"paid":12}}`, d.Payload.RunID), ans.body)
	})
	t.Run("failed", func(t *testing.T) {
		ch := callHook(a, a.app.URL, "order-failed", `{}`)
		d := anyDispatch(a, "pay")
		callBackVia(t, a, b.app.URL, d, `{"status":"failed","error":"card declined"}`)
		ans := waitHook(t, ch)
		require.Equal(t, http.StatusOK, ans.code, ans.body)
		require.JSONEq(t, fmt.Sprintf(`{"run_id":%q,"status":"failed","error":"node pay failed: card declined"}`, d.Payload.RunID), ans.body)
	})
	t.Run("timed out", func(t *testing.T) {
		ans := waitHook(t, callHook(a, a.app.URL, "order-slow", `{"slow":true}`))
		require.Equal(t, http.StatusAccepted, ans.code, ans.body)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(ans.body), &got))
		require.Equal(t, "running", got["status"])
		require.NotEmpty(t, got["run_id"])
		require.GreaterOrEqual(t, ans.took, time.Second)
		require.Less(t, ans.took, 10*time.Second)
	})
	t.Run("a Respond node answers early", func(t *testing.T) {
		ch := callHook(a, a.app.URL, "order-respond", `{"order":"o-7","ok":true}`)
		d := anyDispatch(a, "check")
		callBackVia(t, a, b.app.URL, d, `{"status":"completed","output":{"order":"o-7","ok":true}}`)
		ans := waitHook(t, ch)
		require.Equal(t, http.StatusCreated, ans.code, ans.body)
		require.JSONEq(t, `{"accepted":"o-7","id":"o-7-true"}`, ans.body)
		require.Equal(t, d.Payload.RunID, ans.header.Get("Stitchd-Run-Id"))
		// The run goes on after the answer.
		ship := a.waitDispatch(d.Payload.RunID, "ship", 1)
		require.Equal(t, "running", a.run(d.Payload.RunID).Status)
		callBackVia(t, a, b.app.URL, ship, `{"status":"completed","output":{}}`)
		a.waitRun(d.Payload.RunID, "completed")
	})
}

// TestHookRespondSetting: a trigger's respond is checked when created
// (mode "wait", timeout_seconds 1 to 60, 30 when left out), shown, and
// changed or removed with PATCH; without it the hook answers 202 at once.
func TestHookRespondSetting(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "w")}, nil)
	var e apiErrorJSON
	require.Equal(t, http.StatusBadRequest, h.do("POST", "/api/v1/flows/"+flow+"/triggers",
		map[string]any{"slug": "bad", "respond": map[string]any{"mode": "wait", "timeout_seconds": 61}}, &e))
	require.Contains(t, e.Error.Message, "timeout_seconds")
	require.Equal(t, http.StatusBadRequest, h.do("POST", "/api/v1/flows/"+flow+"/triggers",
		map[string]any{"slug": "bad", "respond": map[string]any{"mode": "later"}}, &e))
	var tr map[string]any
	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/flows/"+flow+"/triggers",
		map[string]any{"slug": "sync", "respond": map[string]any{"mode": "wait"}}, &tr))
	require.Equal(t, map[string]any{"mode": "wait", "timeout_seconds": float64(30)}, tr["respond"])
	id, ok := tr["id"].(string)
	require.True(t, ok)
	require.Equal(t, http.StatusOK, h.do("PATCH", "/api/v1/triggers/"+id, map[string]any{"respond": nil}, &tr))
	require.Nil(t, tr["respond"])
	start := time.Now()
	code, body := h.post(h.app.URL+"/hooks/sync", `{}`)
	require.Equal(t, http.StatusAccepted, code, body)
	// At once, not after the 30 s the removed respond would have waited:
	// the bound sits between the two, well clear of a loaded machine.
	require.Less(t, time.Since(start), 25*time.Second)
	require.Equal(t, http.StatusOK, h.do("PATCH", "/api/v1/triggers/"+id,
		map[string]any{"respond": map[string]any{"mode": "wait", "timeout_seconds": 5}}, &tr))
	require.Equal(t, map[string]any{"mode": "wait", "timeout_seconds": float64(5)}, tr["respond"])
	require.Equal(t, http.StatusBadRequest, h.do("PATCH", "/api/v1/triggers/"+id, map[string]any{"slug": "other"}, &e))
}

// TestJoinAnyCancelsTheOtherBranches: end to end, with a real worker —
// the first of three branches to arrive fires the join; the running
// worker of another is cancelled and told at its cancelUrl (the notice
// reaches it, signed), its late callback is a 409, and a pending node of
// the third is skipped.
func TestJoinAnyCancelsTheOtherBranches(t *testing.T) {
	t.Parallel()
	cancels := testkit.NewWorker(t, testkit.WorkerOptions{Status: http.StatusOK})
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("start", "Condition", nil),
		wnode(h, "fast"), wnode(h, "slow", "cancelUrl", cancels.URL+"/cancel"), wnode(h, "b1"), wnode(h, "b2"),
		node("join", "Transform", map[string]any{"expression": "input", "join": "any"}), wnode(h, "after")},
		[]map[string]any{edge("start", "fast", nil), edge("start", "slow", nil), edge("start", "b1", nil), edge("b1", "b2", nil),
			edge("fast", "join", nil), edge("slow", "join", nil), edge("b2", "join", nil), edge("join", "after", nil)})
	r := h.startRun(flow, map[string]any{"order": 1})
	fast := h.waitDispatch(r.ID, "fast", 1)
	slow := h.waitDispatch(r.ID, "slow", 1)
	h.waitDispatch(r.ID, "b1", 1)
	h.complete(fast, `{"winner":"fast"}`)
	after := h.waitDispatch(r.ID, "after", 1)
	require.JSONEq(t, `{"winner":"fast"}`, string(after.Payload.Input))
	run := h.run(r.ID)
	require.Equal(t, "cancelled", run.Nodes["slow"].Status)
	require.Equal(t, "cancelled", run.Nodes["b1"].Status)
	require.Equal(t, "skipped", run.Nodes["b2"].Status)

	notice := cancels.Wait(t, waitLimit, "the cancel notice", func(d testkit.Dispatch) bool { return d.Path == "/cancel" })
	var n map[string]any
	require.NoError(t, json.Unmarshal(notice.Body, &n))
	require.Equal(t, "worker.cancel", n["type"])
	require.Equal(t, "slow", n["nodeId"])
	require.Equal(t, r.ID, n["runId"])
	require.Equal(t, "another branch reached join first", n["reason"])
	require.NotEmpty(t, notice.Header.Get("webhook-signature"))

	code, body := h.post(slow.Payload.CallbackURL, `{"status":"completed","output":{"late":true}}`)
	require.Equal(t, http.StatusConflict, code, body)
	h.complete(after, `{"done":true}`)
	h.waitRun(r.ID, "completed")
}

// sagaRun is a run as the API shows its compensation.
type sagaRun struct {
	Status             string `json:"status"`
	Error              string `json:"error"`
	Compensated        bool   `json:"compensated"`
	CompensationFailed string `json:"compensation_failed"`
	Compensation       *struct {
		Reason string `json:"reason"`
		State  string `json:"state"`
		Steps  []struct {
			Step string `json:"step"`
			Undo string `json:"undo"`
		} `json:"steps"`
	} `json:"compensation"`
	Nodes map[string]nodeJSON `json:"nodes"`
}

func (h *harness) sagaRun(id string) sagaRun {
	h.t.Helper()
	var r sagaRun
	require.Equal(h.t, http.StatusOK, h.do("GET", "/api/v1/runs/"+id, nil, &r))
	return r
}

// TestCompensationThroughTheAPI: the run's compensation as the API shows
// it — under way (running, compensation compensating, the order of its
// undo nodes), compensated or failed naming the undo node — and a cancel
// with {"compensate": true}.
func TestCompensationThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	undo := func(step string) map[string]any { return redge(step, "undo_"+step, map[string]any{"on": "compensate"}) }
	flow := h.createFlow([]map[string]any{wnode(h, "reserve"), wnode(h, "charge"), wnode(h, "notify"), wnode(h, "ship"),
		wnode(h, "undo_reserve"), wnode(h, "undo_charge")},
		[]map[string]any{edge("reserve", "charge", nil), edge("charge", "notify", nil), edge("notify", "ship", nil),
			undo("reserve"), undo("charge")})

	t.Run("a failing fourth step", func(t *testing.T) {
		r := h.startRun(flow, map[string]any{"order": 9})
		for _, k := range []string{"reserve", "charge", "notify"} {
			h.complete(h.waitDispatch(r.ID, k, 1), fmt.Sprintf(`{%q:true}`, k))
		}
		ship := h.waitDispatch(r.ID, "ship", 1)
		code, body := h.post(ship.Payload.CallbackURL, `{"status":"failed","error":"no courier"}`)
		require.Equal(t, http.StatusOK, code, body)
		uc := h.waitDispatch(r.ID, "undo_charge", 1)
		require.JSONEq(t, `{"output":{"charge":true},"input":{"reserve":true},"error":"node ship failed: no courier"}`, string(uc.Payload.Input))
		got := h.sagaRun(r.ID)
		require.Equal(t, "running", got.Status)
		require.Equal(t, "compensating", got.Compensation.State)
		require.Len(t, got.Compensation.Steps, 2)
		require.Equal(t, "undo_charge", got.Compensation.Steps[0].Undo)
		require.Equal(t, "undo_reserve", got.Compensation.Steps[1].Undo)
		require.Equal(t, "pending", got.Nodes["undo_reserve"].Status)
		h.complete(uc, `{}`)
		ur := h.waitDispatch(r.ID, "undo_reserve", 1)
		code, body = h.post(ur.Payload.CallbackURL, `{"status":"failed","error":"already released"}`)
		require.Equal(t, http.StatusOK, code, body)
		h.waitRun(r.ID, "failed")
		got = h.sagaRun(r.ID)
		require.False(t, got.Compensated)
		require.Equal(t, "undo_reserve", got.CompensationFailed)
		require.Equal(t, "node ship failed: no courier", got.Error)
		var e apiErrorJSON
		require.Equal(t, http.StatusConflict, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/ship/retry", nil, &e))
		require.Contains(t, e.Error.Message, "compensat")
	})
	t.Run("cancel with compensate", func(t *testing.T) {
		r := h.startRun(flow, map[string]any{})
		h.complete(h.waitDispatch(r.ID, "reserve", 1), `{"held":1}`)
		h.waitDispatch(r.ID, "charge", 1)
		var got sagaRun
		require.Equal(t, http.StatusOK, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", map[string]any{"compensate": true}, &got))
		require.Equal(t, "running", got.Status)
		require.Equal(t, "cancelled", got.Nodes["charge"].Status)
		require.Equal(t, "cancelled", got.Compensation.Reason)
		ur := h.waitDispatch(r.ID, "undo_reserve", 1)
		require.JSONEq(t, `{"output":{"held":1},"input":{"order":null},"error":"cancelled"}`,
			strings.Replace(string(ur.Payload.Input), `"input":{}`, `"input":{"order":null}`, 1))
		h.complete(ur, `{}`)
		h.waitRun(r.ID, "cancelled")
		got = h.sagaRun(r.ID)
		require.True(t, got.Compensated)
		require.Equal(t, "compensated", got.Compensation.State)
		var e apiErrorJSON
		require.Equal(t, http.StatusConflict, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", map[string]any{"compensate": true}, &e))
	})
}
