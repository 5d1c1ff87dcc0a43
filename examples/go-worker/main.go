// Command go-worker is a stitchd worker in Go with the standard library
// only: it verifies each dispatch's Standard Webhooks signature, answers
// 202 at once, does its work in the background and calls back.
//
//	STITCHD_WEBHOOK_SECRET=$(stitchd webhook-secret) go run ./examples/go-worker
//
// Then point a Worker node's webhookUrl at http://127.0.0.1:9001/greet.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// dispatch is what stitchd POSTs to a worker.
type dispatch struct {
	RunID       string          `json:"runId"`
	NodeID      string          `json:"nodeId"`
	Attempt     int             `json:"attempt"`
	Config      json.RawMessage `json:"config"`
	Input       json.RawMessage `json:"input"`
	CallbackURL string          `json:"callbackUrl"`
}

// tolerance bounds the age of webhook-timestamp (replayed requests).
const tolerance = 5 * time.Minute

// verify checks the Standard Webhooks signature: webhook-signature holds
// one or more space-separated "v1,<base64 HMAC-SHA256 of id.timestamp.body>"
// keyed with the base64-decoded part of the secret after "whsec_".
func verify(key []byte, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("invalid webhook-timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook-timestamp too old or in the future")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) { // constant time
			return nil
		}
	}
	return errors.New("no matching signature")
}

type worker struct {
	key    []byte
	client *http.Client
	ctx    context.Context
	wg     sync.WaitGroup
	mu     sync.Mutex
	seen   map[string]bool // webhook-ids seen: delivery is at least once
}

func (w *worker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(rw, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(rw, "cannot read body", http.StatusBadRequest)
		return
	}
	if err := verify(w.key, r.Header, body, time.Now()); err != nil {
		http.Error(rw, err.Error(), http.StatusUnauthorized)
		return
	}
	var d dispatch
	if err := json.Unmarshal(body, &d); err != nil || d.CallbackURL == "" {
		http.Error(rw, "not a stitchd dispatch", http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	dup := w.seen[r.Header.Get("webhook-id")]
	w.seen[r.Header.Get("webhook-id")] = true
	w.mu.Unlock()
	rw.WriteHeader(http.StatusAccepted) // accepted: the work happens after the answer
	if dup {
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.work(d)
	}()
}

// work is the job: greet the input's name. A real worker would call an
// API, run a model, send an email…
func (w *worker) work(d dispatch) {
	var in struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(d.Input, &in)
	if in.Name == "" {
		in.Name = "world"
	}
	// A long job sends heartbeats to push its deadline back.
	if err := w.callBack(d.CallbackURL, map[string]any{"status": "running", "progress": map[string]any{"step": "greeting"}}); err != nil {
		log.Printf("run %s node %s: heartbeat: %v", d.RunID, d.NodeID, err)
	}
	time.Sleep(100 * time.Millisecond) // the "work"
	out := map[string]any{"worker": "go", "greeting": "Hello, " + in.Name + "!", "node": d.NodeID, "attempt": d.Attempt}
	if err := w.callBack(d.CallbackURL, map[string]any{"status": "completed", "output": out}); err != nil {
		log.Printf("run %s node %s: callback: %v", d.RunID, d.NodeID, err)
		return
	}
	log.Printf("run %s node %s: done", d.RunID, d.NodeID)
}

// callBack POSTs to the callback URL (no token needed: the URL is the
// credential), retrying 5xx answers and network errors a few times. 409
// means stitchd no longer waits for this attempt; don't retry it.
func (w *worker) callBack(url string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	var last error
	for try := range 5 {
		if try > 0 {
			time.Sleep(time.Duration(try) * 500 * time.Millisecond)
		}
		req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := w.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("stitchd answered %d", resp.StatusCode)
		if resp.StatusCode < 500 {
			return last
		}
	}
	return last
}

func main() {
	secret := os.Getenv("STITCHD_WEBHOOK_SECRET")
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		log.Fatal("set STITCHD_WEBHOOK_SECRET to the server's webhook secret (whsec_…; `stitchd webhook-secret` prints it)")
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:9001"
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	w := &worker{key: key, client: &http.Client{Timeout: 10 * time.Second}, ctx: ctx, seen: map[string]bool{}}
	srv := &http.Server{Addr: addr, Handler: w, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Printf("go worker listening on http://%s", addr) //nolint:gosec // G706: the operator's own ADDR
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	w.wg.Wait()
}
