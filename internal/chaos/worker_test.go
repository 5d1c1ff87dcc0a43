package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/internal/contracttest"
)

// Behaviour of the misbehaving worker, per delivery and per callback.
const (
	p500      = 0.05  // answer 500
	p503      = 0.04  // answer 503
	p429      = 0.04  // answer 429 with Retry-After: 1
	pHang     = 0.02  // hang past the dispatch timeout
	pHijack   = 0.03  // hijack the connection and close it (no answer)
	pFailed   = 0.02  // accept, then call back {"status":"failed"}
	pHeartbt  = 0.03  // send a heartbeat before the result
	pDup      = 0.10  // send the callback twice
	pLate     = 0.003 // call back 1–3 s after the node's deadline
	pBeatLate = 0.003 // send a heartbeat halfway to the deadline, then call back 1–3 s after the original deadline
	poisonMod = 20    // runs r with r%poisonMod == poisonRun have item 7 poisoned
	poisonRun = 7
)

// callbackRecord is one callback the worker sent and the answer it got,
// checked against the database afterwards (checkCallbacks).
type callbackRecord struct {
	run, key string
	attempt  int
	status   string          // completed, failed or running (a heartbeat)
	output   json.RawMessage // of a completed callback
	errMsg   string          // of a failed callback
	late     bool            // sent 1–3 s after the node's deadline
	beatLate bool            // late, after a heartbeat sent halfway to the deadline
	dup      bool            // one of a callback sent twice
	sent     time.Time       // the first try was sent
	answered time.Time       // the answer counted was received
	code     int             // the answer (0: the test ended first)
	body     []byte          // the answer's body
}

// workerStats counts what the worker saw and did.
type workerStats struct {
	deliveries, redeliveries, accepted, a500, a503, a429, hung, hijacked, poisoned atomic.Int64
	outages                                                                        atomic.Int64
	callbacks, failedReported, heartbeats                                          atomic.Int64
	dupSent, dup200, dup409                                                        atomic.Int64
	lateSent, late200, late409                                                     atomic.Int64
	beatLateSent                                                                   atomic.Int64
	cb503, cbConnErr                                                               atomic.Int64
	done                                                                           atomic.Int64 // work goroutines finished
}

type dispatchPayload struct {
	RunID       string          `json:"runId"`
	NodeID      string          `json:"nodeId"`
	Attempt     int             `json:"attempt"`
	Input       json.RawMessage `json:"input"`
	CallbackURL string          `json:"callbackUrl"`
}

// chaosWorker is a loopback worker that misbehaves: it answers 500, 503,
// 429 with Retry-After, hangs past the dispatch timeout, drops connections,
// closes its listening socket for a while, reports failures, sends
// heartbeats, duplicates callbacks and delays some past the node deadline.
// Callbacks go to any live instance, retried while instances or the
// database are down.
type chaosWorker struct {
	cl       *cluster
	deadline time.Duration // the nodes' timeoutSeconds
	ctx      context.Context
	wg       sync.WaitGroup
	srv      *http.Server
	addr     string
	client   *http.Client

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}

	seen     sync.Map // webhook-id → *atomic.Int32 deliveries
	accepted sync.Map // webhook-id → struct{}

	stats workerStats

	recMu   sync.Mutex
	records []callbackRecord

	unexpectedMu sync.Mutex
	unexpected   []string
}

// Its callbacks' answers are checked against openapi.yaml, failing tb
// (internal/contracttest).
func newChaosWorker(ctx context.Context, tb testing.TB, cl *cluster, deadline time.Duration) (*chaosWorker, error) {
	w := &chaosWorker{cl: cl, deadline: deadline, ctx: ctx, conns: map[net.Conn]struct{}{},
		client: contracttest.Client(tb, &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}})}
	w.srv = &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second, ConnState: w.connState}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("error listening: %w", err)
	}
	w.addr, w.ln = ln.Addr().String(), ln
	go func() { _ = w.srv.Serve(ln) }()
	return w, nil
}

func (w *chaosWorker) url() string { return "http://" + w.addr }

func (w *chaosWorker) connState(c net.Conn, s http.ConnState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch s {
	case http.StateNew:
		w.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(w.conns, c)
	default: // StateActive, StateIdle: still open, tracked already
	}
}

func (w *chaosWorker) close() {
	_ = w.srv.Close()
	w.wg.Wait()
}

func (w *chaosWorker) fail(format string, args ...any) {
	w.unexpectedMu.Lock()
	defer w.unexpectedMu.Unlock()
	if len(w.unexpected) < 50 {
		w.unexpected = append(w.unexpected, fmt.Sprintf(format, args...))
	}
}

func (w *chaosWorker) problems() []string {
	w.unexpectedMu.Lock()
	defer w.unexpectedMu.Unlock()
	return append([]string(nil), w.unexpected...)
}

// outages closes the listening socket and every open connection for
// length, every interval, until ctx ends: deliveries meanwhile are refused.
func (w *chaosWorker) outages(ctx context.Context, every func() time.Duration, length time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every()):
		}
		w.mu.Lock()
		ln := w.ln
		conns := make([]net.Conn, 0, len(w.conns))
		for c := range w.conns {
			conns = append(conns, c)
		}
		w.mu.Unlock()
		_ = ln.Close()
		for _, c := range conns {
			_ = c.Close()
		}
		w.stats.outages.Add(1)
		time.Sleep(length) // the outage itself: real time, the chaos being tested
		for {
			// WithoutCancel: an outage under way when ctx ends still
			// ends, the worker listening again for the runs' last callbacks.
			ln, err := (&net.ListenConfig{}).Listen(context.WithoutCancel(ctx), "tcp", w.addr)
			if err == nil {
				w.mu.Lock()
				w.ln = ln
				w.mu.Unlock()
				go func() { _ = w.srv.Serve(ln) }()
				break
			}
			if ctx.Err() != nil {
				return
			}
			time.Sleep(50 * time.Millisecond) // the port is briefly busy
		}
	}
}

// poisoned reports whether the dispatch is a poisoned item's first attempt:
// its every delivery answers 500, so the dispatch gives up per the retry
// policy and the run fails until the node is retried.
func poisoned(p dispatchPayload) bool {
	if !strings.HasPrefix(p.NodeID, "first_") || p.Attempt != 1 {
		return false
	}
	x := gjson.GetBytes(p.Input, "@this").Int()
	return x%1000 == 7 && (x/1000)%poisonMod == poisonRun
}

func (w *chaosWorker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the connection broke
	}
	var p dispatchPayload
	if err := json.Unmarshal(body, &p); err != nil || p.CallbackURL == "" {
		w.fail("undecodable dispatch: %s", body)
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	id := r.Header.Get("webhook-id")
	w.stats.deliveries.Add(1)
	n, _ := w.seen.LoadOrStore(id, new(atomic.Int32))
	if c, ok := n.(*atomic.Int32); ok && c.Add(1) > 1 {
		w.stats.redeliveries.Add(1)
	}
	if _, ok := w.accepted.Load(id); ok {
		rw.WriteHeader(http.StatusAccepted) // already working on it (de-duplicated by webhook-id)
		return
	}
	if poisoned(p) {
		w.stats.poisoned.Add(1)
		rw.WriteHeader(http.StatusInternalServerError)
		return
	}
	roll := rand.Float64()
	switch {
	case roll < p500:
		w.stats.a500.Add(1)
		rw.WriteHeader(http.StatusInternalServerError)
	case roll < p500+p503:
		w.stats.a503.Add(1)
		rw.WriteHeader(http.StatusServiceUnavailable)
	case roll < p500+p503+p429:
		w.stats.a429.Add(1)
		rw.Header().Set("Retry-After", "1")
		rw.WriteHeader(http.StatusTooManyRequests)
	case roll < p500+p503+p429+pHang:
		w.stats.hung.Add(1)
		select { // hang until stitchd gives up on us
		case <-r.Context().Done():
		case <-time.After(dispatchTimeout + time.Second):
			rw.WriteHeader(http.StatusGatewayTimeout) // never an implicit 200
		}
	case roll < p500+p503+p429+pHang+pHijack:
		w.stats.hijacked.Add(1)
		if c, _, err := http.NewResponseController(rw).Hijack(); err == nil {
			_ = c.Close()
		}
	default:
		if _, loaded := w.accepted.LoadOrStore(id, struct{}{}); !loaded {
			w.stats.accepted.Add(1)
			w.wg.Add(1)
			go w.work(p)
		}
		rw.WriteHeader(http.StatusAccepted)
	}
}

// output computes a node's result from its input, deterministically, so
// that a repeated callback is identical.
func output(p dispatchPayload) json.RawMessage {
	base, _, _ := strings.Cut(p.NodeID, "_")
	in := gjson.ParseBytes(p.Input)
	var v map[string]int64
	switch base {
	case "first":
		v = map[string]int64{"item": in.Int()}
	case "second":
		x := in.Get("item").Int()
		v = map[string]int64{"item": x, "second": 2*x + 1}
	case "side":
		v = map[string]int64{"side": in.Get("run").Int()}
	default: // join echoes its input
		return p.Input
	}
	b, _ := json.Marshal(v)
	return b
}

func (w *chaosWorker) work(p dispatchPayload) {
	defer w.wg.Done()
	defer w.stats.done.Add(1)
	rec := callbackRecord{run: p.RunID, key: p.NodeID, attempt: p.Attempt}
	var body string
	if rand.Float64() < pFailed {
		w.stats.failedReported.Add(1)
		rec.status, rec.errMsg = "failed", "chaos: the worker failed"
		body = `{"status":"failed","error":"chaos: the worker failed"}`
	} else {
		rec.status, rec.output = "completed", output(p)
		body = fmt.Sprintf(`{"status":"completed","output":%s}`, rec.output)
	}
	began := time.Now()
	sleep := func(d time.Duration) bool {
		select {
		case <-w.ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	roll := rand.Float64()
	rec.late = roll < pLate+pBeatLate
	rec.beatLate = roll >= pLate && rec.late
	delay := time.Duration(rand.IntN(30)) * time.Millisecond
	if rec.late {
		delay = w.deadline + time.Second + time.Duration(rand.IntN(2000))*time.Millisecond
	}
	heartbeat := func() {
		w.stats.heartbeats.Add(1)
		w.post(callbackRecord{run: p.RunID, key: p.NodeID, attempt: p.Attempt, status: "running", beatLate: rec.beatLate},
			p.CallbackURL, `{"status":"running","progress":0.5}`)
	}
	if rec.beatLate {
		// A heartbeat in time moves the deadline on, so the callback
		// after the original deadline is in time after all.
		w.stats.beatLateSent.Add(1)
		if !sleep(w.deadline / 2) {
			return
		}
		heartbeat()
	}
	if !sleep(time.Until(began.Add(delay))) { // the work itself
		return
	}
	if !rec.beatLate && rand.Float64() < pHeartbt {
		heartbeat()
	}
	w.stats.callbacks.Add(1)
	if rec.late {
		w.stats.lateSent.Add(1)
	}
	count := func(code int, ok200, ok409 *atomic.Int64) {
		switch code {
		case http.StatusOK:
			ok200.Add(1)
		case http.StatusConflict:
			ok409.Add(1)
		}
	}
	if rand.Float64() >= pDup {
		code := w.post(rec, p.CallbackURL, body)
		if rec.late {
			count(code, &w.stats.late200, &w.stats.late409)
		}
		return
	}
	w.stats.dupSent.Add(1)
	rec.dup = true
	if rand.Float64() < 0.5 { // both at once
		codes := make([]int, 2)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = w.post(rec, p.CallbackURL, body)
			}()
		}
		wg.Wait()
		count(codes[1], &w.stats.dup200, &w.stats.dup409)
		return
	}
	w.post(rec, p.CallbackURL, body)
	count(w.post(rec, p.CallbackURL, body), &w.stats.dup200, &w.stats.dup409)
}

// callbacks returns every callback sent so far.
func (w *chaosWorker) callbacks() []callbackRecord {
	w.recMu.Lock()
	defer w.recMu.Unlock()
	return append([]callbackRecord(nil), w.records...)
}

// post sends a callback to a live instance until it answers 200 or 409
// (or the test ends); connection errors and 503 are retried. rec, with
// the answer, is recorded.
func (w *chaosWorker) post(rec callbackRecord, callbackURL, body string) int {
	rec.sent = time.Now()
	defer func() {
		w.recMu.Lock()
		w.records = append(w.records, rec)
		w.recMu.Unlock()
	}()
	_, path, _ := strings.Cut(strings.TrimPrefix(callbackURL, "http://"), "/")
	for w.ctx.Err() == nil {
		in := w.cl.pick()
		if in == nil {
			time.Sleep(50 * time.Millisecond) // every instance is down
			continue
		}
		req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, in.url()+"/"+path, bytes.NewBufferString(body))
		if err != nil {
			w.fail("bad callback URL %q: %v", callbackURL, err)
			return 0
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := w.client.Do(req)
		if err != nil {
			w.stats.cbConnErr.Add(1)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil { // the instance was killed while answering
			w.stats.cbConnErr.Add(1)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		switch resp.StatusCode {
		case http.StatusOK, http.StatusConflict:
			rec.code, rec.body, rec.answered = resp.StatusCode, b, time.Now()
			return resp.StatusCode
		case http.StatusServiceUnavailable:
			w.stats.cb503.Add(1)
			if !bytes.Contains(b, []byte(`"unavailable"`)) {
				w.fail("callback answered 503 without the contract's error body: %s", b)
			}
			time.Sleep(50 * time.Millisecond)
		default:
			w.fail("callback %s answered %d: %s", body, resp.StatusCode, b)
			rec.code, rec.body, rec.answered = resp.StatusCode, b, time.Now()
			return resp.StatusCode
		}
	}
	return 0
}
