package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stretchr/testify/require"
)

// subNode is a SubFlow node running flow (an id or a name).
func subNode(id, flow string, extra map[string]any) map[string]any {
	data := map[string]any{"flow": flow}
	for k, v := range extra {
		data[k] = v
	}
	return node(id, "SubFlow", data)
}

// kycFlow is a one-step child flow: a worker "check".
func kycFlow(h *harness) string {
	return h.createFlow([]map[string]any{wnode(h, "check")}, nil)
}

// childOf waits for the SubFlow node key of run runID to run a child and
// returns the child run.
func (h *harness) childOf(runID, key string) runJSON {
	h.t.Helper()
	n := h.waitNode(runID, key, "running")
	require.NotEmpty(h.t, n.ChildRunID, "node %s has no child run", key)
	child := h.run(n.ChildRunID)
	require.Equal(h.t, runID, child.ParentRunID)
	require.Equal(h.t, key, child.ParentKey)
	return child
}

func TestSubFlowCompletesItsNodeWithTheChildsOutput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	kyc := kycFlow(h)
	parent := h.createFlow([]map[string]any{subNode("kyc", kyc, nil), node("after", "Transform",
		map[string]any{"expression": `{"verified": input.score > 5}`})}, []map[string]any{edge("kyc", "after", nil)})
	r := h.startRun(parent, map[string]any{"name": "Ada"})
	child := h.childOf(r.ID, "kyc")
	require.Equal(t, "running", child.Status)
	require.JSONEq(t, `{"name":"Ada"}`, string(child.Input), "the child's input is the node's")

	d := h.waitDispatch(child.ID, "check", 1)
	h.complete(d, `{"score": 9}`)
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"score": 9}`, string(done.Nodes["kyc"].Output))
	require.JSONEq(t, `{"verified": true}`, string(done.Output))
	require.Equal(t, "completed", h.run(child.ID).Status)
}

func TestSubFlowFailureFailsTheNodeAndIsRoutable(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	kyc := kycFlow(h)
	parent := h.createFlow([]map[string]any{subNode("kyc", kyc, nil), node("ok", "Transform", map[string]any{"expression": "input"}),
		node("manual", "Transform", map[string]any{"expression": `{"why": input.error}`})},
		[]map[string]any{edge("kyc", "ok", nil), redge("kyc", "manual", map[string]any{"on": "failure"})})
	r := h.startRun(parent, map[string]any{})
	child := h.childOf(r.ID, "kyc")
	d := h.waitDispatch(child.ID, "check", 1)
	code, body := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"document expired"}`)
	require.Equal(t, 200, code, body)

	done := h.waitRun(r.ID, "completed")
	require.Equal(t, "failed", done.Nodes["kyc"].Status)
	require.Equal(t, "skipped", done.Nodes["ok"].Status)
	var out struct {
		Manual struct {
			Why string `json:"why"`
		} `json:"manual"`
	}
	require.NoError(t, json.Unmarshal(done.Output, &out))
	require.Contains(t, out.Manual.Why, "sub-flow run "+child.ID+" failed")
	require.Contains(t, out.Manual.Why, "document expired")
	require.Equal(t, "failed", h.run(child.ID).Status)
}

func TestSubFlowFailedChildFailsTheParentAndARetryStartsANewChild(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	kyc := kycFlow(h)
	parent := h.createFlow([]map[string]any{subNode("kyc", kyc, nil)}, nil)
	r := h.startRun(parent, map[string]any{})
	first := h.childOf(r.ID, "kyc")
	d := h.waitDispatch(first.ID, "check", 1)
	code, body := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"no"}`)
	require.Equal(t, 200, code, body)
	failed := h.waitRun(r.ID, "failed")
	require.Contains(t, *failed.Error, "sub-flow run "+first.ID+" failed")

	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/kyc/retry", nil, nil))
	second := h.childOf(r.ID, "kyc")
	require.NotEqual(t, first.ID, second.ID, "a retry starts a new child")
	require.Equal(t, 2, h.run(r.ID).Nodes["kyc"].Attempt)
	h.complete(h.waitDispatch(second.ID, "check", 1), `{"ok": true}`)
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"ok": true}`, string(done.Output))
}

func TestSubFlowRepairedChildRevivesItsParent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	kyc := kycFlow(h)
	parent := h.createFlow([]map[string]any{subNode("kyc", kyc, nil)}, nil)
	r := h.startRun(parent, map[string]any{})
	child := h.childOf(r.ID, "kyc")
	d := h.waitDispatch(child.ID, "check", 1)
	code, body := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"flaky"}`)
	require.Equal(t, 200, code, body)
	h.waitRun(r.ID, "failed")

	// The operator retries the child's node: when the child completes,
	// the parent's node completes with it, and the parent resumes.
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+child.ID+"/nodes/check/retry", nil, nil))
	h.complete(h.waitDispatch(child.ID, "check", 2), `{"fixed": 1}`)
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"fixed": 1}`, string(done.Output))
	require.Equal(t, 1, done.Nodes["kyc"].Attempt)
}

func TestSubFlowCancelAndPausePassToChildren(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	kyc := kycFlow(h)
	middle := h.createFlow([]map[string]any{subNode("inner", kyc, nil)}, nil)
	top := h.createFlow([]map[string]any{subNode("outer", middle, nil)}, nil)
	r := h.startRun(top, map[string]any{})
	mid := h.childOf(r.ID, "outer")
	leaf := h.childOf(mid.ID, "inner")
	h.waitDispatch(leaf.ID, "check", 1)

	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, nil))
	require.Equal(t, "paused", h.run(mid.ID).Status)
	require.Equal(t, "paused", h.run(leaf.ID).Status)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/resume", nil, nil))
	require.Equal(t, "running", h.run(mid.ID).Status)
	require.Equal(t, "running", h.run(leaf.ID).Status)

	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", nil, nil))
	require.Equal(t, "cancelled", h.run(r.ID).Status)
	require.Equal(t, "cancelled", h.run(mid.ID).Status)
	require.Equal(t, "cancelled", h.run(leaf.ID).Status)
	require.Equal(t, "cancelled", h.run(leaf.ID).Nodes["check"].Status)
}

func TestSubFlowNestedTwoLevelsCompletes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	kyc := kycFlow(h)
	middle := h.createFlow([]map[string]any{subNode("inner", kyc, nil), node("wrap", "Transform",
		map[string]any{"expression": `{"inner": input}`})}, []map[string]any{edge("inner", "wrap", nil)})
	top := h.createFlow([]map[string]any{subNode("outer", middle, nil)}, nil)
	r := h.startRun(top, map[string]any{"x": 1})
	mid := h.childOf(r.ID, "outer")
	leaf := h.childOf(mid.ID, "inner")
	require.JSONEq(t, `{"x": 1}`, string(leaf.Input))
	h.complete(h.waitDispatch(leaf.ID, "check", 1), `{"y": 2}`)
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"inner": {"y": 2}}`, string(done.Output))
	require.Equal(t, "completed", h.run(mid.ID).Status)
}

func TestSubFlowThatEndsAtOnceCompletesInTheSameTransaction(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	double := h.createFlow([]map[string]any{node("double", "Transform", map[string]any{"expression": `{"n": input.n * 2}`})}, nil)
	inner := h.createFlow([]map[string]any{subNode("d", double, nil)}, nil)
	parent := h.createFlow([]map[string]any{subNode("a", inner, nil), subNode("b", double, nil)},
		[]map[string]any{edge("a", "b", nil)})
	r := h.startRun(parent, map[string]any{"n": 3})
	// Nothing waits: the answer to the start is the finished run.
	require.Equal(t, "completed", r.Status)
	require.JSONEq(t, `{"n": 12}`, string(r.Output))
	require.NotEmpty(t, r.Nodes["a"].ChildRunID)
	child := h.run(r.Nodes["a"].ChildRunID)
	require.Equal(t, "completed", child.Status)
	require.Equal(t, r.ID, child.ParentRunID)
}

// subFlowFanOut starts a run fanning items 0…n-1 out to a one-worker
// sub-flow each, collected, and waits for the n children's dispatches.
func (h *harness) subFlowFanOut(n int) runJSON {
	h.t.Helper()
	one := h.createFlow([]map[string]any{wnode(h, "work")}, nil)
	parent := h.createFlow([]map[string]any{node("split", "Splitter", map[string]any{"arrayPath": "items"}),
		subNode("each", one, nil), node("join", "Collector", nil)},
		[]map[string]any{edge("split", "each", nil), edge("each", "join", nil)})
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	r := h.startRun(parent, map[string]any{"items": items})
	h.eventually(func() bool { return len(h.worker.All()) >= n }, "%d dispatches", n)
	return r
}

// waitCollected waits for run runID to complete with the outputs
// {"i": 0} … {"i": n-1}, in order.
func (h *harness) waitCollected(runID string, n int) {
	h.t.Helper()
	done := h.waitRun(runID, "completed")
	var out []struct {
		I int `json:"i"`
	}
	require.NoError(h.t, json.Unmarshal(done.Output, &out))
	require.Len(h.t, out, n)
	for i, o := range out {
		require.Equal(h.t, i, o.I, "item %d in order", i)
	}
}

func TestSubFlowPerItemInAFanOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const n = 300
	r := h.subFlowFanOut(n)
	seen := map[string]bool{}
	for _, d := range h.worker.All() {
		require.False(t, seen[d.Payload.RunID], "child run %s dispatched twice", d.Payload.RunID)
		seen[d.Payload.RunID] = true
		var in int
		require.NoError(t, json.Unmarshal(d.Payload.Input, &in))
		h.complete(d, fmt.Sprintf(`{"i": %d}`, in))
	}
	h.waitCollected(r.ID, n)
	var children int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(DISTINCT parent_key) FROM runs WHERE parent_run_id = ?`, r.ID).Row().Scan(&children))
	require.Equal(t, n, children, "one child per item, none twice")
}

func TestSubFlowPinsLatestWhenSaved(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	child := h.createFlow([]map[string]any{node("v", "Transform", map[string]any{"expression": `"one"`})}, nil)
	parent := h.createFlow([]map[string]any{subNode("c", child, map[string]any{"version": "latest"})}, nil)
	graph := map[string]any{"nodes": []map[string]any{node("v", "Transform", map[string]any{"expression": `"two"`})}, "edges": []any{}}
	require.Equal(t, 200, h.do("PUT", "/api/v1/flows/"+child, map[string]any{"graph": graph}, nil))
	require.JSONEq(t, `"one"`, string(h.startRun(parent, map[string]any{}).Output), "the parent's version runs the child version it pinned")

	// Saving the same drawing again pins the new latest: a new version.
	var flow struct {
		Graph          json.RawMessage `json:"graph"`
		VersionCreated bool            `json:"version_created"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+parent, nil, &flow))
	require.Equal(t, 200, h.do("PUT", "/api/v1/flows/"+parent, map[string]any{"graph": flow.Graph}, &flow))
	require.True(t, flow.VersionCreated)
	require.JSONEq(t, `"two"`, string(h.startRun(parent, map[string]any{}).Output))

	pinned := h.createFlow([]map[string]any{subNode("c", child, map[string]any{"version": 1})}, nil)
	require.JSONEq(t, `"one"`, string(h.startRun(pinned, map[string]any{}).Output))
}

func TestSubFlowRefusedAtSave(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := kycFlow(h)
	b := h.createFlow([]map[string]any{subNode("a", a, nil)}, nil)
	c := h.createFlow([]map[string]any{subNode("b", b, nil)}, nil)
	var before struct {
		Version struct{ Number int } `json:"version"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+a, nil, &before))

	graph := func(nodes ...map[string]any) map[string]any {
		return map[string]any{"graph": map[string]any{"nodes": nodes, "edges": []any{}}}
	}
	_, ps := h.refused(422, "PUT", "/api/v1/flows/"+a, graph(subNode("loop", c, nil)))
	require.Contains(t, byPath(ps)["nodes[0].data.flow"], "cannot contain itself")
	_, ps = h.refused(422, "PUT", "/api/v1/flows/"+a, graph(subNode("me", a, nil)))
	require.Contains(t, byPath(ps)["nodes[0].data.flow"], "runs this flow itself")
	var after struct {
		Version struct{ Number int } `json:"version"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+a, nil, &after))
	require.Equal(t, 1, before.Version.Number)
	require.Equal(t, before.Version.Number, after.Version.Number, "nothing stored")

	_, ps = h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "x", "graph": graph(subNode("s", "no such flow", nil))["graph"]})
	require.Contains(t, byPath(ps)["nodes[0].data.flow"], `there is no flow "no such flow"`)
	_, ps = h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "x", "graph": graph(subNode("s", a, map[string]any{"version": 7}))["graph"]})
	require.Contains(t, byPath(ps)["nodes[0].data.version"], "has no version 7")
	_, ps = h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "x", "graph": graph(subNode("s", a, map[string]any{"version": "newest"}))["graph"]})
	require.Contains(t, byPath(ps)["nodes[0].data.version"], `"latest"`)
	_, ps = h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "x", "graph": graph(node("s", "SubFlow", nil))["graph"]})
	require.Contains(t, byPath(ps)["nodes[0].data.flow"], "needs a flow")
	_, ps = h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "x", "graph": graph(subNode("s", a, map[string]any{"passEntity": "yes"}))["graph"]})
	require.Contains(t, byPath(ps)["nodes[0].data.passEntity"], "true or false")
}

func TestSubFlowByName(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var f flowResp
	name := "double " + t.Name()
	require.Equal(t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": name, "graph": map[string]any{
		"nodes": []map[string]any{node("d", "Transform", map[string]any{"expression": "input.n * 2"})}, "edges": []any{}}}, &f))
	parent := h.createFlow([]map[string]any{subNode("s", name, nil)}, nil)
	require.JSONEq(t, `8`, string(h.startRun(parent, map[string]any{"n": 4}).Output))

	// A second flow of the same name makes the name ambiguous.
	require.Equal(t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": name, "graph": map[string]any{
		"nodes": []map[string]any{node("d", "Transform", map[string]any{"expression": "1"})}, "edges": []any{}}}, &f))
	_, ps := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "y", "graph": map[string]any{
		"nodes": []map[string]any{subNode("s", name, nil)}, "edges": []any{}}})
	require.Contains(t, byPath(ps)["nodes[0].data.flow"], "several flows are named")
}

// TestSubFlowOrphansOfACancelledRunAreCancelled: a process that cancelled
// a run and stopped before passing the cancel on (it does so after the
// commit) leaves the children running; the sweeper cancels them.
func TestSubFlowOrphansOfACancelledRunAreCancelled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	kyc := kycFlow(h)
	parent := h.createFlow([]map[string]any{subNode("kyc", kyc, nil)}, nil)
	r := h.startRun(parent, map[string]any{})
	child := h.childOf(r.ID, "kyc")
	// The parent's cancel, as committed, without what follows it.
	require.NoError(t, h.app.Store.Gorm().Exec(`UPDATE runs SET status = 'cancelled' WHERE id = ?`, r.ID).Error)
	h.waitRun(child.ID, "cancelled")
}

// TestSubFlowEndsCompletedTogether: the children of a fan-out that end at
// once have their nodes completed together — the runs locked with one
// statement and the nodes completed with another (engine's
// completeTogether) — and the parent still takes each child's output
// once, in order. A stale callback among them (another attempt) is
// refused and changes nothing.
func TestSubFlowEndsCompletedTogether(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const n = 64
	r := h.subFlowFanOut(n)
	byItem := make([]dispatch, n)
	for _, d := range h.worker.All() {
		var in int
		require.NoError(t, json.Unmarshal(d.Payload.Input, &in))
		byItem[in] = d
	}

	// Holding the parent's row, every child's end waits to tell it: the
	// callbacks queue up, and the groups after those waiting take many.
	lock := h.app.Store.Gorm().Begin()
	require.NoError(t, lock.Error)
	require.NoError(t, lock.Exec(`SELECT 1 FROM runs WHERE id = ? FOR UPDATE`, r.ID).Error)
	before := h.app.Engine.CompletedTogether()
	codes := make([]int, n)
	var wg sync.WaitGroup
	send := func(i int, url, body string) {
		defer wg.Done()
		resp, err := clientPost(t.Context(), h.client, url, "application/json", strings.NewReader(body))
		if err != nil {
			codes[i] = -1
			return
		}
		_ = resp.Body.Close()
		codes[i] = resp.StatusCode
	}
	wg.Add(n)
	// Item 0's callback is for an attempt the node is not at.
	stale := h.mint(byItem[0].Payload.RunID, byItem[0].Payload.NodeID, 2, time.Now().Add(time.Hour))
	go send(0, stale, `{"status":"completed","output":{"i":-1}}`)
	// The callbacks go one at a time until every shared transaction is
	// taken (each waits for the parent's row), then all the rest: those
	// queue. All at once, a burst may be taken by the shared
	// transactions whole, and none would queue.
	lockWaits := func() int {
		var w int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Row().Scan(&w))
		return w
	}
	i := 1
	for ; i < n && h.app.Engine.Waiting() == 0; i++ {
		held := lockWaits()
		go send(i, byItem[i].Payload.CallbackURL, fmt.Sprintf(`{"status":"completed","output":{"i":%d}}`, i))
		h.eventually(func() bool { return lockWaits() > held || h.app.Engine.Waiting() > 0 }, "callback %d held by the parent's lock", i)
	}
	for ; i < n; i++ {
		go send(i, byItem[i].Payload.CallbackURL, fmt.Sprintf(`{"status":"completed","output":{"i":%d}}`, i))
	}
	h.eventually(func() bool { return h.app.Engine.Waiting() >= 8 }, "callbacks queued behind the parent's lock")
	queued := h.app.Engine.Waiting()
	require.NoError(t, lock.Rollback().Error)
	wg.Wait()
	require.Equal(t, http.StatusConflict, codes[0], "the stale callback")
	for i := 1; i < n; i++ {
		require.Equal(t, http.StatusOK, codes[i], "item %d's callback", i)
	}
	together := h.app.Engine.CompletedTogether() - before
	// One left alone by the groups that take them goes on its own.
	require.GreaterOrEqual(t, together, int64(queued/2), "the callbacks queued at the release (%d) were completed together", queued)
	require.LessOrEqual(t, together, int64(n-1), "none twice, not the stale one")
	require.Equal(t, "running", h.run(r.ID).Status, "item 0 is still to come")
	require.Equal(t, "running", h.run(byItem[0].Payload.RunID).Status, "the stale callback changed nothing")

	h.complete(byItem[0], `{"i": 0}`)
	h.waitCollected(r.ID, n)
	var finished int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE parent_run_id = ? AND status = 'completed'`,
		r.ID).Row().Scan(&finished))
	require.Equal(t, n, finished, "every child completed once")
}

// fanOutOfFanOuts: a parent fanning out items, each a sub-flow run that
// fans out items of its own (items × items Transforms in all).
func fanOutOfFanOuts(h *harness, items int) string {
	child := h.createFlow([]map[string]any{
		node("g", "Transform", map[string]any{"expression": fmt.Sprintf(`{"xs": map(1..%d, {#})}`, items)}),
		node("split", "Splitter", map[string]any{"arrayPath": "xs"}),
		node("x", "Transform", map[string]any{"expression": `input * 2`}), node("gather", "Collector", nil)},
		[]map[string]any{edge("g", "split", nil), edge("split", "x", nil), edge("x", "gather", nil)})
	return h.createFlow([]map[string]any{
		node("g", "Transform", map[string]any{"expression": fmt.Sprintf(`{"xs": map(1..%d, {#})}`, items)}),
		node("split", "Splitter", map[string]any{"arrayPath": "xs"}), subNode("sub", child, nil), node("gather", "Collector", nil)},
		[]map[string]any{edge("g", "split", nil), edge("split", "sub", nil), edge("sub", "gather", nil)})
}

// TestSubFlowFanOutOfFanOutsStartsInChunks: 40 items each starting a
// sub-flow of 40 items is 1,600 instances and 40 child runs; with at most
// 300 rows a transaction, the start answers with the children started so
// far (the run still running) and the rest start in later transactions,
// to the same end. Without the bound every child started inside the
// start request.
func TestSubFlowFanOutOfFanOutsStartsInChunks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.MaxRows = 300 })
	flow := fanOutOfFanOuts(h, 40)
	r := h.startRun(flow, map[string]any{})
	require.Equal(t, "running", r.Status)
	fin := h.waitRun(r.ID, "completed")
	// A run's created_at is its transaction's start: the children created
	// in the start's transaction are those created with the parent.
	var inStart, all int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FILTER (WHERE c.created_at = p.created_at), count(*)
		FROM runs c JOIN runs p ON p.id = c.parent_run_id WHERE p.id = ?`, r.ID).Row().Scan(&inStart, &all))
	require.Equal(t, 40, all)
	require.Less(t, inStart, 40, "not every child started in the start's transaction")
	t.Logf("%d of 40 children started in the start's transaction", inStart)
	var out [][]int
	require.NoError(t, json.Unmarshal(fin.Output, &out))
	require.Len(t, out, 40)
	for _, o := range out {
		require.Len(t, o, 40)
		require.Equal(t, 80, o[39])
	}
}

// TestSubFlowRunTreeLimit: a run tree's node instances are bounded across
// sub-flows (--max-run-nodes), which --max-fanout-items, per Splitter,
// does not do: past the bound the fan-out or sub-flow that would pass it
// fails its node, naming the limit.
func TestSubFlowRunTreeLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.MaxRunNodes = 500 })
	r := h.startRun(fanOutOfFanOuts(h, 25), map[string]any{}) // 25 + 25×4 + 25×25 = 750
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Error, "run_tree_limit")
	require.Contains(t, *fin.Error, "past 500 node instances (--max-run-nodes)")
	var count int64
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT nodes FROM run_trees WHERE root_run_id = ?`, r.ID).Row().Scan(&count))
	require.LessOrEqual(t, count, int64(500))
	// Within the bound, the same tree completes.
	r = h.startRun(fanOutOfFanOuts(h, 10), map[string]any{})
	h.waitRun(r.ID, "completed")
}
