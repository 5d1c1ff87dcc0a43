package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// Payload is what stitchd POSTs to a worker (docs/workers.md, The dispatch).
type Payload = engine.WorkerPayload

// Dispatch is one delivery a Worker received.
type Dispatch struct {
	Path    string
	Header  http.Header
	Body    []byte
	Payload Payload
	At      time.Time
}

// WorkerOptions say how a Worker answers; the zero value records every
// dispatch, answers 202 and never calls back.
type WorkerOptions struct {
	// Status answers each dispatch (default 202; Worker.SetStatus
	// changes it).
	Status int
	// Delay is how long the worker takes to answer each dispatch (a slow
	// worker: real time, for tests of what stitchd does meanwhile).
	Delay time.Duration
	// CallBack, when set, is asked after the answer what the worker calls
	// back with: a body and true, or false for no callback.
	CallBack func(d Dispatch) (body string, ok bool)
	// CallbackDelay is how long the work takes before the callback.
	CallbackDelay time.Duration
	// Tries is how many times a callback is sent while stitchd answers
	// neither 200 nor 409 (default 1), RetryWait apart.
	Tries     int
	RetryWait time.Duration
	// Client sends the callbacks (default: a 10 s timeout).
	Client *http.Client
}

// Worker is a loopback worker: it records every dispatch stitchd sends it
// and, as its options say, answers and calls back. It stops, and waits for
// its callbacks, when the test ends.
type Worker struct {
	URL  string
	opts WorkerOptions
	srv  *httptest.Server
	ctx  context.Context
	wg   sync.WaitGroup

	// answered counts the dispatches answered (after Delay).
	answered atomic.Int64

	mu     sync.Mutex
	got    []Dispatch
	status int
	// answers counts stitchd's answers to the callbacks, by status (0: no
	// answer).
	answers map[int]int
}

// OnlyComplete calls back every dispatch as completed with output.
func OnlyComplete(output string) func(Dispatch) (string, bool) {
	return func(Dispatch) (string, bool) { return `{"status":"completed","output":` + output + `}`, true }
}

// EchoInput calls back every dispatch as completed with its input.
func EchoInput(d Dispatch) (string, bool) {
	return `{"status":"completed","output":` + string(d.Payload.Input) + `}`, true
}

// NewWorker starts a Worker.
func NewWorker(tb testing.TB, opts WorkerOptions) *Worker {
	tb.Helper()
	if opts.Status == 0 {
		opts.Status = http.StatusAccepted
	}
	if opts.Tries <= 0 {
		opts.Tries = 1
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Worker{opts: opts, ctx: ctx, status: opts.Status, answers: map[int]int{}}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	w.URL = w.srv.URL
	tb.Cleanup(func() {
		cancel()
		w.srv.Close()
		w.wg.Wait()
	})
	return w
}

func (w *Worker) serve(rw http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	d := Dispatch{Path: r.URL.Path, Header: r.Header.Clone(), Body: b, At: time.Now()}
	if err := json.Unmarshal(b, &d.Payload); err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.got = append(w.got, d)
	status := w.status
	w.mu.Unlock()
	if w.opts.Delay > 0 {
		wait(r.Context(), w.opts.Delay) // a slow worker: real time is the point
	}
	w.answered.Add(1)
	rw.WriteHeader(status)
	if w.opts.CallBack == nil || status < 200 || status > 299 {
		return
	}
	body, ok := w.opts.CallBack(d)
	if !ok {
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if w.opts.CallbackDelay > 0 && !wait(w.ctx, w.opts.CallbackDelay) {
			return
		}
		w.callBack(d.Payload.CallbackURL, body)
	}()
}

// callBack sends body, again while stitchd answers neither 200 nor 409.
func (w *Worker) callBack(url, body string) {
	for try := 1; try <= w.opts.Tries && w.ctx.Err() == nil; try++ {
		code := 0
		req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, url, bytes.NewBufferString(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			var resp *http.Response
			if resp, err = w.opts.Client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				code = resp.StatusCode
			}
		}
		w.mu.Lock()
		w.answers[code]++
		w.mu.Unlock()
		if code == http.StatusOK || code == http.StatusConflict {
			return
		}
		// A real worker's back-off before it tries again: real time.
		if try < w.opts.Tries && !wait(w.ctx, w.opts.RetryWait) {
			return
		}
	}
}

// wait waits d, or until ctx ends (false).
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// SetStatus changes the status the worker answers with.
func (w *Worker) SetStatus(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status = status
}

// All returns the dispatches received so far, in order of arrival.
func (w *Worker) All() []Dispatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Dispatch(nil), w.got...)
}

// From returns the dispatches received after the first i, in order of
// arrival: a test that polls for new ones copies only those.
func (w *Worker) From(i int) []Dispatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i >= len(w.got) {
		return nil
	}
	return append([]Dispatch(nil), w.got[i:]...)
}

// Received is how many dispatches arrived.
func (w *Worker) Received() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.got)
}

// Answered is how many dispatches the worker answered (Delay after each
// arrived).
func (w *Worker) Answered() int64 { return w.answered.Load() }

// Answers returns how many callbacks stitchd answered with each status (0:
// no answer: a refused connection, a timeout).
func (w *Worker) Answers() map[int]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.answers)
}

// Wait waits until a dispatch match accepts arrived, and returns the
// first such.
func (w *Worker) Wait(tb testing.TB, timeout time.Duration, what string, match func(Dispatch) bool) Dispatch {
	tb.Helper()
	var found Dispatch
	// Looked through in place, not copied (All): a worker may hold
	// thousands of dispatches, and this is asked every few milliseconds.
	Eventually(tb, timeout, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, d := range w.got {
			if match(d) {
				found = d
				return true
			}
		}
		return false
	}, "%s", what)
	return found
}
