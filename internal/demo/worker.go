package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stitchd/stitchd/callbacks"
)

// WorkerConfig configures the demo worker.
type WorkerConfig struct {
	// Secret verifies the webhook-signature of every dispatch (the server's
	// webhook secret, GET /api/v1/webhook-secret).
	Secret []byte
	// MinDelay and MaxDelay bound the random time a job takes (default
	// 300ms to 2s).
	MinDelay, MaxDelay time.Duration
	// FailRate is the probability that a job reports a failure, to show
	// retries (default 0).
	FailRate float64
	// Client posts callbacks (default: a client with a 10 s timeout).
	Client *http.Client
	Logger *slog.Logger
}

// Worker is the demo worker: an http.Handler serving POST /enrich, /score,
// /qualify and /echo with the worker protocol. It answers 202 at once and
// calls back from a goroutine; Close stops it.
type Worker struct {
	cfg    WorkerConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	seen   map[string]time.Time // webhook-id → first seen (redeliveries)
}

// NewWorker returns a running demo worker.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.MinDelay <= 0 && cfg.MaxDelay <= 0 {
		cfg.MinDelay, cfg.MaxDelay = 300*time.Millisecond, 2*time.Second
	}
	if cfg.MaxDelay < cfg.MinDelay {
		cfg.MaxDelay = cfg.MinDelay
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{cfg: cfg, ctx: ctx, cancel: cancel, seen: map[string]time.Time{}}
}

// Close abandons the jobs in progress (stitchd's deadline and retry policy
// take care of them) and waits for their goroutines.
func (w *Worker) Close() {
	w.cancel()
	w.wg.Wait()
}

// Dispatch is the body stitchd POSTs to a worker.
type Dispatch struct {
	RunID       string          `json:"runId"`
	NodeID      string          `json:"nodeId"`
	Attempt     int             `json:"attempt"`
	Config      json.RawMessage `json:"config"`
	Input       json.RawMessage `json:"input"`
	CallbackURL string          `json:"callbackUrl"`
}

type job func(input json.RawMessage) (any, error)

var jobs = map[string]job{"/enrich": enrich, "/score": score, "/qualify": qualify, "/echo": echo}

// signatureTolerance bounds the age of a dispatch's webhook-timestamp.
const signatureTolerance = 5 * time.Minute

func (w *Worker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
		rw.WriteHeader(http.StatusOK)
		return
	}
	do, ok := jobs[r.URL.Path]
	if !ok || r.Method != http.MethodPost {
		http.Error(rw, "the demo worker serves POST /enrich, /score, /qualify and /echo", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(rw, "error reading body", http.StatusBadRequest)
		return
	}
	id := r.Header.Get("webhook-id")
	if err := callbacks.VerifyWebhook(w.cfg.Secret, id, r.Header.Get("webhook-timestamp"),
		r.Header.Get("webhook-signature"), body, time.Now(), signatureTolerance); err != nil {
		w.cfg.Logger.Warn("demo worker: refused a dispatch", "path", r.URL.Path, "error", err)
		http.Error(rw, "bad signature: "+err.Error(), http.StatusUnauthorized)
		return
	}
	var d Dispatch
	if err := json.Unmarshal(body, &d); err != nil || d.CallbackURL == "" {
		http.Error(rw, "body is not a stitchd dispatch", http.StatusBadRequest)
		return
	}
	if w.redelivery(id) {
		rw.WriteHeader(http.StatusAccepted) // already working on it
		return
	}
	rw.WriteHeader(http.StatusAccepted)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.work(d, do)
	}()
}

// redelivery records id and reports whether it was seen before (stitchd
// delivers at least once; webhook-id is stable across redeliveries).
func (w *Worker) redelivery(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if _, ok := w.seen[id]; ok {
		return true
	}
	if len(w.seen) > 10000 {
		for k, t := range w.seen {
			if now.Sub(t) > time.Hour {
				delete(w.seen, k)
			}
		}
	}
	w.seen[id] = now
	return false
}

func (w *Worker) work(d Dispatch, do job) {
	delay := w.cfg.MinDelay
	if span := w.cfg.MaxDelay - w.cfg.MinDelay; span > 0 {
		delay += rand.N(span) //nolint:gosec // G404: a simulated delay, no secret
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return
	case <-t.C:
	}
	log := w.cfg.Logger.With("run_id", d.RunID, "node_key", d.NodeID, "attempt", d.Attempt)
	var cb map[string]any
	if w.cfg.FailRate > 0 && rand.Float64() < w.cfg.FailRate { //nolint:gosec // G404: a simulated failure, no secret
		cb = map[string]any{"status": "failed", "error": "demo worker: simulated failure (--fail-rate)"}
	} else if out, err := do(d.Input); err != nil {
		cb = map[string]any{"status": "failed", "error": err.Error()}
	} else {
		cb = map[string]any{"status": "completed", "output": out}
	}
	if err := w.callBack(d.CallbackURL, cb); err != nil {
		log.Warn("demo worker: callback failed", "error", err)
		return
	}
	log.Info("demo worker: called back", "status", cb["status"], "after", delay.Round(time.Millisecond))
}

// callBack posts the result, retrying transient failures a few times. A
// 409 means stitchd no longer waits for this attempt: nothing to retry.
func (w *Worker) callBack(url string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	backoff := 200 * time.Millisecond
	var last error
	for try := 1; try <= 5; try++ {
		req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := w.cfg.Client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return nil
			case resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
				return fmt.Errorf("stitchd answered %d", resp.StatusCode)
			}
			err = fmt.Errorf("stitchd answered %d", resp.StatusCode)
		}
		last = err
		select {
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-time.After(backoff):
		}
		backoff *= 2
	}
	return last
}

// ---------------------------------------------------------------- jobs

// Contact is a person at a lead's company.
type Contact struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Email string `json:"email,omitempty"`
	Score int    `json:"score,omitempty"`
}

type lead struct {
	Name     string          `json:"name"`
	Email    string          `json:"email"`
	Company  json.RawMessage `json:"company,omitempty"`
	Contacts []Contact       `json:"contacts"`
}

// Company is what enrichment finds out about a lead's company.
type Company struct {
	Name      string `json:"name"`
	Domain    string `json:"domain"`
	Industry  string `json:"industry"`
	Employees int    `json:"employees"`
}

func hashOf(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(s)))
	return h.Sum32()
}

var (
	industries = []string{"Software", "Logistics", "Retail", "Healthcare", "Manufacturing", "Finance"}
	firstNames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken"}
	lastNames  = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson"}
	titles     = []string{"CEO", "VP Sales", "Head of Operations", "Engineering Manager", "Analyst", "Intern"}
)

// enrich adds the lead's company and, when the lead came without contacts,
// finds a few (deterministically, from the email's domain).
func enrich(input json.RawMessage) (any, error) {
	var l lead
	if err := json.Unmarshal(input, &l); err != nil {
		return nil, fmt.Errorf("enrich: the input is not a lead: %w", err)
	}
	domain := "example.com"
	if _, d, ok := strings.Cut(l.Email, "@"); ok && d != "" {
		domain = strings.ToLower(d)
	}
	h := hashOf(domain)
	co := Company{Domain: domain, Industry: industries[h%uint32(len(industries))], Employees: 10 + int(h%5000)} //nolint:gosec // G115: a small constant table
	var given string
	if json.Unmarshal(l.Company, &given) == nil && given != "" {
		co.Name = given
	} else {
		base, _, _ := strings.Cut(domain, ".")
		if base == "" {
			base = domain
		}
		co.Name = strings.ToUpper(base[:1]) + base[1:]
	}
	contacts := l.Contacts
	if len(contacts) == 0 {
		n := 2 + int(h%3)
		for i := range n {
			first, last := firstNames[(h>>uint(i))%uint32(len(firstNames))], lastNames[(h>>uint(2*i))%uint32(len(lastNames))] //nolint:gosec // G115: small constant tables
			contacts = append(contacts, Contact{Name: first + " " + last, Title: titles[(int(h)+i)%len(titles)],
				Email: strings.ToLower(first) + "@" + domain})
		}
	}
	return map[string]any{"name": l.Name, "email": l.Email, "company": co, "contacts": contacts}, nil
}

// score rates one contact: seniority of the title, plus a little noise.
func score(input json.RawMessage) (any, error) {
	var c Contact
	if err := json.Unmarshal(input, &c); err != nil {
		return nil, fmt.Errorf("score: the input is not a contact: %w", err)
	}
	t := strings.ToLower(c.Title)
	base := 30
	switch {
	case containsAny(t, "ceo", "cto", "founder", "owner", "president", "chief"):
		base = 85
	case containsAny(t, "vp", "vice president", "head", "director"):
		base = 70
	case containsAny(t, "manager", "lead"):
		base = 50
	case containsAny(t, "intern", "student"):
		base = 10
	}
	c.Score = min(100, base+rand.IntN(11)) //nolint:gosec // G404: a made-up score, no secret
	return c, nil
}

func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// QualifyThreshold is the best contact score from which the demo worker
// recommends sending a lead to sales.
const QualifyThreshold = 60

// qualify decides from the contacts' scores.
func qualify(input json.RawMessage) (any, error) {
	var in struct {
		Name    string          `json:"name"`
		Email   string          `json:"email"`
		Company json.RawMessage `json:"company"`
		Scores  []Contact       `json:"scores"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("qualify: unexpected input: %w", err)
	}
	var best *Contact
	for i := range in.Scores {
		if best == nil || in.Scores[i].Score > best.Score {
			best = &in.Scores[i]
		}
	}
	out := map[string]any{"name": in.Name, "email": in.Email, "company": nullIfEmpty(in.Company),
		"contacts_scored": len(in.Scores), "score": 0, "best_contact": nil}
	if best != nil {
		out["score"], out["best_contact"] = best.Score, best
	}
	ok := best != nil && best.Score >= QualifyThreshold
	out["qualified"] = ok
	if ok {
		out["recommendation"] = "send to sales"
	} else {
		out["recommendation"] = "nurture"
	}
	return out, nil
}

func nullIfEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// echo returns its input: handy to try a flow of your own.
func echo(input json.RawMessage) (any, error) { return nullIfEmpty(input), nil }
