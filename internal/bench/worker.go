package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// worker is the instant worker: it answers each dispatch with 202 and
// calls back at once from a pool of goroutines (256: enough that callbacks
// never queue behind each other, as with many independent workers). It timestamps every
// callback it sends and every dispatch it receives, so the latency from a
// callback to the next node's dispatch can be computed.
type worker struct {
	srv    *http.Server
	url    string
	client *http.Client
	jobs   chan job

	// onAnswered, when set, is told each time a callback of a run was
	// answered 200.
	onAnswered func(run string)

	mu       sync.Mutex
	sent     map[string]time.Time // run/key → callback sent
	arrived  map[string]time.Time // run/key → dispatch received
	received int64
	failures int64
	wg       sync.WaitGroup
}

type job struct {
	run, key, url string
}

func startWorker(ctx context.Context, senders int, onAnswered func(run string)) (*worker, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("error listening for the worker: %w", err)
	}
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second}
	w := &worker{
		url:        "http://" + ln.Addr().String() + "/work",
		client:     &http.Client{Transport: tr, Timeout: 30 * time.Second},
		jobs:       make(chan job, 1<<20),
		sent:       map[string]time.Time{},
		arrived:    map[string]time.Time{},
		onAnswered: onAnswered,
	}
	w.srv = &http.Server{Handler: http.HandlerFunc(w.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.srv.Serve(ln) }()
	for range senders {
		w.wg.Add(1)
		go w.send(ctx)
	}
	return w, nil
}

func (w *worker) serve(rw http.ResponseWriter, r *http.Request) {
	now := time.Now()
	if key, ok := strings.CutPrefix(r.URL.Path, "/http/"); ok {
		w.serveHTTP(rw, r, key, now)
		return
	}
	if r.URL.Path == "/slow" {
		// A worker that takes its time to accept (the fairness scenario):
		// deliveries are bound by the dispatcher's workers per host.
		time.Sleep(slowAccept)
	}
	var p struct {
		RunID       string `json:"runId"`
		NodeID      string `json:"nodeId"`
		CallbackURL string `json:"callbackUrl"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.arrived[p.RunID+"/"+p.NodeID] = now
	w.received++
	w.mu.Unlock()
	rw.WriteHeader(http.StatusAccepted)
	w.jobs <- job{run: p.RunID, key: p.NodeID, url: p.CallbackURL}
}

// took records a pulled task in a poller's hands (as a dispatch's
// arrival) and queues its callback.
func (w *worker) took(run, key, callbackURL string, at time.Time) {
	w.mu.Lock()
	w.arrived[run+"/"+key] = at
	w.received++
	w.mu.Unlock()
	w.jobs <- job{run: run, key: key, url: callbackURL}
}

// httpURL is the base of the instant REST endpoint the http scenario's
// nodes call: <httpURL>/<key> (one run at a time).
func (w *worker) httpURL() string { return strings.TrimSuffix(w.url, "/work") + "/http" }

// serveHTTP answers an HTTP node's request at once with 200 and a small
// JSON body, timestamping its arrival (the key from the path).
func (w *worker) serveHTTP(rw http.ResponseWriter, r *http.Request, key string, now time.Time) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.mu.Lock()
	w.arrived["http/"+key] = now
	w.received++
	w.mu.Unlock()
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(httpAnswer)
}

var httpAnswer = []byte(`{"ok":true}`)

// requestLatencies returns, for every chain step i → i+1 of the http
// scenario's run, the time from the arrival of n<i>'s request to the
// arrival of n<i+1>'s: the response, its recording and the next request's
// dispatch.
func (w *worker) requestLatencies(length int) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for i := 0; i+1 < length; i++ {
		a, ok1 := w.arrived[fmt.Sprintf("http/n%d", i)]
		b, ok2 := w.arrived[fmt.Sprintf("http/n%d", i+1)]
		if ok1 && ok2 {
			out = append(out, b.Sub(a))
		}
	}
	return out
}

var completed = []byte(`{"status":"completed","output":{"ok":true}}`)

// post POSTs body as JSON to url.
func post(ctx context.Context, c *http.Client, url string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

func (w *worker) send(ctx context.Context) {
	defer w.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-w.jobs:
			w.mu.Lock()
			w.sent[j.run+"/"+j.key] = time.Now()
			w.mu.Unlock()
			// WithoutCancel: a callback under way when the bench stops
			// is finished, not counted as a failure.
			resp, err := post(context.WithoutCancel(ctx), w.client, j.url, completed)
			ok := err == nil && resp.StatusCode == http.StatusOK
			if resp != nil {
				// Drained, so the connection is reused (as a well-behaved
				// worker's would be).
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			if !ok {
				w.mu.Lock()
				w.failures++
				w.mu.Unlock()
			} else if w.onAnswered != nil {
				w.onAnswered(j.run)
			}
		}
	}
}

// latency returns, for every chain step i → i+1 of the given runs, the
// time from the callback of n<i> to the dispatch of n<i+1>.
func (w *worker) chainLatencies(runs []string, length int) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for _, run := range runs {
		for i := 0; i+1 < length; i++ {
			s, ok1 := w.sent[fmt.Sprintf("%s/n%d", run, i)]
			a, ok2 := w.arrived[fmt.Sprintf("%s/n%d", run, i+1)]
			if ok1 && ok2 {
				out = append(out, a.Sub(s))
			}
		}
	}
	return out
}

// span returns when the first and the last dispatch of run arrived and
// when its last callback was sent.
func (w *worker) span(run string) (first, last, lastCallback time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prefix := run + "/"
	for k, t := range w.arrived {
		if strings.HasPrefix(k, prefix) {
			if first.IsZero() || t.Before(first) {
				first = t
			}
			if t.After(last) {
				last = t
			}
		}
	}
	for k, t := range w.sent {
		if strings.HasPrefix(k, prefix) && t.After(lastCallback) {
			lastCallback = t
		}
	}
	return first, last, lastCallback
}

func (w *worker) stats() (received, failures int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.received, w.failures
}

// reset forgets the timestamps of earlier scenarios.
func (w *worker) reset() {
	w.mu.Lock()
	w.sent, w.arrived = map[string]time.Time{}, map[string]time.Time{}
	w.mu.Unlock()
}

func (w *worker) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.srv.Shutdown(ctx)
}
