package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/contracttest"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/internal/testsignal"
	"github.com/stitchd/stitchd/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const token = "test-token"

// harness is a real stitchd on an isolated database with a real loopback
// worker.
type harness struct {
	t      *testing.T
	app    *app.App
	dbURL  string
	worker *testkit.Worker
	// client checks every exchange with the API against openapi.yaml
	// (internal/contracttest); a request refused by the contract but
	// meant to be accepted sets contracttest.InvalidRequestHeader.
	client *http.Client
	// clock is the process's clock (app.Config.Clock), unless an option
	// set another.
	clock *testkit.Clock
}

// dispatch is one delivery the harness's worker received.
type dispatch = testkit.Dispatch

// waitDispatch waits until a dispatch for run and key (and attempt, if >
// 0) arrived.
func (h *harness) waitDispatch(runID, key string, attempt int) dispatch {
	h.t.Helper()
	return h.worker.Wait(h.t, waitLimit, fmt.Sprintf("dispatch of %s attempt %d", key, attempt), func(d dispatch) bool {
		return d.Payload.RunID == runID && d.Payload.NodeID == key && (attempt == 0 || d.Payload.Attempt == attempt)
	})
}

func (h *harness) dispatchCount(runID, key string) int {
	n := 0
	for _, d := range h.worker.All() {
		if d.Payload.RunID == runID && d.Payload.NodeID == key {
			n++
		}
	}
	return n
}

func newHarness(t *testing.T, opts ...func(*app.Config)) *harness {
	t.Helper()
	_, dbURL := storetest.IsolatedDB(t)
	return newHarnessOn(t, dbURL, opts...)
}

// newHarnessOn is newHarness on the database at dbURL.
func newHarnessOn(t *testing.T, dbURL string, opts ...func(*app.Config)) *harness {
	t.Helper()
	ctx := context.Background()
	clock := &testkit.Clock{}
	cfg := app.Config{Addr: "127.0.0.1:0", DatabaseURL: dbURL, AuthToken: token, Clock: clock,
		// A loopback worker answers at once, but the full suite (-race, the
		// browser and failover soaks beside it) can hold an answer up for
		// seconds: with a 2 s limit a delivery timed out, its node failed,
		// and the test's callback then met a failed node (409, once in
		// TestJoinOf100ConcurrentCallbacks). Tests of the limit set their own.
		// Polls every 200 ms, not 50: an idle process's pollers (sweeper,
		// dispatcher, scheduler, notifier, retainer) cost 1.8 s of CPU in
		// 10 s (Go and Postgres) at 50 ms, 0.6 s at 200, and four tests
		// share two cores; what a test waits for comes at most 150 ms later.
		PollInterval: 200 * time.Millisecond, DispatchTimeout: 10 * time.Second,
		PasswordParams: testkit.CheapPasswords(), Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := app.New(ctx, cfg)
	require.NoError(t, err)
	a.TestSignals.Init()
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
	})
	// A minute: a 1,000-item run answered whole takes seconds alone and,
	// with the suite on both cores, once took more than thirty.
	return &harness{t: t, app: a, dbURL: dbURL, worker: testkit.NewWorker(t, testkit.WorkerOptions{}),
		client: contracttest.Client(t, &http.Client{Timeout: time.Minute}), clock: clock}
}

// waitLimit is how long the harness waits for what a test expects.
// Generous: under -race, beside the whole suite's parallel tests on two
// cores, a 4,500-item fan-out took up to 28 s. A condition that holds
// returns at once; only a failing test waits this long.
const waitLimit = 60 * time.Second

func (h *harness) eventually(cond func() bool, format string, args ...any) {
	h.t.Helper()
	testkit.Eventually(h.t, waitLimit, cond, format, args...)
}

// advance moves time forward by d, for the process (its clock) and for
// the due work in its database (storetest.AdvanceDueTimes): deadlines,
// timers, retries and leases due within d are due now.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	storetest.AdvanceDueTimes(h.t, h.app.Store, d)
}

// sweeps waits until the sweeper has made n whole passes begun after the
// call: whatever was due then has been handled.
func (h *harness) sweeps(n int) { h.t.Helper(); h.passes(&h.app.TestSignals.SweepDone, n) }

// schedulePasses waits until the scheduler has made n whole passes begun
// after the call.
func (h *harness) schedulePasses(n int) { h.t.Helper(); h.passes(&h.app.TestSignals.ScheduleDone, n) }

func (h *harness) passes(s *testsignal.Signal[time.Time], n int) {
	h.t.Helper()
	since := h.clock.Now()
	for n > 0 {
		if !s.Wait(h.t, waitLimit).Before(since) {
			n--
		}
	}
}

// do sends an API request and decodes the JSON answer into out (if not nil).
func (h *harness) do(method, path string, body any, out any) int {
	h.t.Helper()
	return h.doAs(token, method, path, body, out)
}

// doAs is do with another bearer token (a personal one).
func (h *harness) doAs(tok, method, path string, body any, out any) int {
	h.t.Helper()
	return h.send(tok, nil, method, path, body, out)
}

// send is doAs with headers added to the request.
func (h *harness) send(tok string, header http.Header, method, path string, body any, out any) int {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(h.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, h.app.URL+path, rd)
	require.NoError(h.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		require.NoError(h.t, json.Unmarshal(b, out), "body: %s", b)
	}
	return resp.StatusCode
}

// rawGet reads an API answer whole, an error for one cut short (by the
// server's write timeout, say) rather than a failed test.
func (h *harness) rawGet(path string) ([]byte, error) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), http.MethodGet, h.app.URL+path, nil)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d", path, resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// post sends a raw callback.
func (h *harness) post(url string, body string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewBufferString(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// node is a shorthand for graph nodes in tests.
func wnode(h *harness, id string, extra ...string) map[string]any {
	data := map[string]any{"webhookUrl": h.worker.URL + "/" + id, "retry": map[string]any{"maxAttempts": 1},
		"delivery": map[string]any{"maxTries": 1}}
	for i := 0; i+1 < len(extra); i += 2 {
		var v any
		if err := json.Unmarshal([]byte(extra[i+1]), &v); err != nil {
			v = extra[i+1]
		}
		data[extra[i]] = v
	}
	return map[string]any{"id": id, "type": "Worker", "position": map[string]int{"x": 0, "y": 0}, "data": data}
}

func node(id, typ string, data map[string]any) map[string]any {
	if data == nil {
		data = map[string]any{}
	}
	return map[string]any{"id": id, "type": typ, "position": map[string]int{"x": 0, "y": 0}, "data": data}
}

// redge is an edge with a branch rule (data: condition, default, on,
// outcome).
func redge(src, dst string, data map[string]any) map[string]any {
	return map[string]any{"id": src + "-" + dst, "source": src, "target": dst, "data": data}
}

func edge(src, dst string, mapping map[string]string) map[string]any {
	e := map[string]any{"id": src + "-" + dst, "source": src, "target": dst}
	if mapping != nil {
		e["data"] = map[string]any{"mapping": mapping}
	}
	return e
}

type flowResp struct {
	ID string `json:"id"`
}

func (h *harness) createFlow(nodes []map[string]any, edges []map[string]any) string {
	h.t.Helper()
	if edges == nil {
		edges = []map[string]any{}
	}
	var f flowResp
	var raw map[string]any
	code := h.do("POST", "/api/v1/flows", map[string]any{"name": h.t.Name(), "graph": map[string]any{"nodes": nodes, "edges": edges}}, &raw)
	require.Equal(h.t, 201, code, "create flow: %v", raw)
	f.ID = as[string](h.t, raw["id"])
	return f.ID
}

type nodeJSON struct {
	Key      string          `json:"key"`
	NodeID   string          `json:"node_id"`
	Index    []int           `json:"index"`
	Status   string          `json:"status"`
	Input    json.RawMessage `json:"input"`
	Output   json.RawMessage `json:"output"`
	Error    *string         `json:"error"`
	Attempt  int             `json:"attempt"`
	Finished *time.Time      `json:"finished_at"`
	Taken    []string        `json:"taken"`
	// ChildRunID is a SubFlow node's child run.
	ChildRunID string `json:"child_run_id"`
}

type runJSON struct {
	ID     string              `json:"id"`
	Status string              `json:"status"`
	Input  json.RawMessage     `json:"input"`
	Output json.RawMessage     `json:"output"`
	Error  *string             `json:"error"`
	Nodes  map[string]nodeJSON `json:"nodes"`
	// ParentRunID and ParentKey: the SubFlow node that started the run.
	ParentRunID string `json:"parent_run_id"`
	ParentKey   string `json:"parent_key"`
}

func (h *harness) startRun(flowID string, input any) runJSON {
	h.t.Helper()
	var r runJSON
	code := h.do("POST", "/api/v1/flows/"+flowID+"/runs", map[string]any{"input": input}, &r)
	require.Equal(h.t, 201, code)
	return r
}

func (h *harness) run(id string) runJSON {
	h.t.Helper()
	var r runJSON
	require.Equal(h.t, 200, h.do("GET", "/api/v1/runs/"+id, nil, &r))
	return r
}

// waitRun waits until run id has status and gives it whole. A run
// awaited to finish is polled without its node states (Prefer:
// return=minimal), which for a run of many nodes are costly to write,
// check against the contract and read on every poll, then read whole
// once: a finished run does not change.
func (h *harness) waitRun(id, status string) runJSON {
	h.t.Helper()
	var r runJSON
	finished := status == "completed" || status == "failed" || status == "cancelled"
	last := ""
	h.eventually(func() bool {
		if finished {
			if last = h.runStatus(id); last != status {
				return false
			}
		}
		r = h.run(id)
		last = r.Status
		return r.Status == status
	}, "run %s to be %s (is %s)", id, status, testkit.Later(func() string { return last }))
	return r
}

// waitStatus waits until run id has status, reading only its status: for
// a test that awaits many runs and looks at none of their nodes.
func (h *harness) waitStatus(id, status string) {
	h.t.Helper()
	h.eventually(func() bool { return h.runStatus(id) == status }, "run %s to be %s", id, status)
}

// runStatus is run id's status, from its answer without node states.
func (h *harness) runStatus(id string) string {
	h.t.Helper()
	var r struct {
		Status string `json:"status"`
	}
	code := h.send(token, http.Header{"Prefer": {"return=minimal"}}, http.MethodGet, "/api/v1/runs/"+id, nil, &r)
	require.Equal(h.t, http.StatusOK, code, "run %s", id)
	return r.Status
}

func (h *harness) waitNode(runID, key, status string) nodeJSON {
	h.t.Helper()
	var n nodeJSON
	h.eventually(func() bool { n = h.run(runID).Nodes[key]; return n.Status == status }, "node %s to be %s (is %s)", key, status, n.Status)
	return n
}

// complete calls back a dispatch with output.
func (h *harness) complete(d dispatch, output string) {
	h.t.Helper()
	code, body := h.post(d.Payload.CallbackURL, fmt.Sprintf(`{"status":"completed","output":%s}`, output))
	require.Equal(h.t, 200, code, body)
}

// mint returns a callback URL signed with the server's current key.
func (h *harness) mint(runID, key string, attempt int, expiry time.Time) string {
	h.t.Helper()
	keys, err := h.app.Store.CallbackKeys(context.Background())
	require.NoError(h.t, err)
	ring, err := callbacks.NewKeyring(callbacks.Key{ID: keys[0].ID, Secret: keys[0].Secret})
	require.NoError(h.t, err)
	return h.app.URL + "/callbacks/" + ring.Mint(callbacks.Claims{RunID: runID, Key: key, Attempt: attempt, Expiry: expiry})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func newServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// problem is one entry of an error answer's details.
type problem struct {
	Code    string `json:"code"`
	NodeID  string `json:"node_id"`
	EdgeID  string `json:"edge_id"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// refused sends a request that must be answered with status and returns
// the error's code and details.
func (h *harness) refused(status int, method, path string, body any) (string, []problem) {
	h.t.Helper()
	var e struct {
		Error struct {
			Code    string    `json:"code"`
			Details []problem `json:"details"`
		} `json:"error"`
	}
	require.Equal(h.t, status, h.do(method, path, body, &e))
	return e.Error.Code, e.Error.Details
}

// byPath maps each problem's path to its message.
func byPath(ps []problem) map[string]string {
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		out[p.Path] = p.Message
	}
	return out
}
