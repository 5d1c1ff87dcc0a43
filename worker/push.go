package worker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// PushParams configure a PushHandler.
type PushParams struct {
	// Secret is the webhook secret dispatches are signed with ("whsec_…":
	// `stitchd webhook-secret`, or a flow's own secret). Required.
	Secret string
	// Handler does each task's work. Required.
	Handler Handler
	// Client makes the callbacks (default: a new http.Client; each
	// callback request is bounded to 30 s).
	Client *http.Client
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// HeartbeatInterval is how often a running handler's attempt is
	// heartbeated, pushing its deadline back: 0 is a third of the node's
	// timeoutSeconds (300 s when unset), negative is never.
	HeartbeatInterval time.Duration
	// Tolerance is how far webhook-timestamp may be from now (default
	// DefaultTolerance).
	Tolerance time.Duration
	// MaxBodyBytes bounds a dispatch's body (default 16 MiB).
	MaxBodyBytes int64
	// Now is the clock signatures are checked against (default time.Now).
	Now func() time.Time
}

// dispatch is what stitchd POSTs to a pushed worker.
type dispatch struct {
	RunID       string          `json:"runId"`
	NodeID      string          `json:"nodeId"`
	Attempt     int             `json:"attempt"`
	Config      json.RawMessage `json:"config"`
	Input       json.RawMessage `json:"input"`
	CallbackURL string          `json:"callbackUrl"`
}

// seenIDs is how many webhook-ids a PushHandler remembers: delivery is at
// least once, and a repeat comes within minutes.
const seenIDs = 10000

// PushHandler is a pushed worker's HTTP endpoint (an http.Handler): it
// verifies each dispatch's signature (401 otherwise), answers 202 at once,
// runs the Handler in the background and calls back. A repeated
// webhook-id is answered 202 and not worked twice. After Shutdown starts
// it answers 503, which stitchd retries later.
type PushHandler struct {
	key       []byte
	tolerance time.Duration
	maxBody   int64
	now       func() time.Time
	r         *runner
	base      context.Context //nolint:containedctx // the handlers' parent: they outlive the request that brought them
	stop      context.CancelFunc

	mu    sync.Mutex
	seen  map[string]struct{}
	order []string // seen's ids, oldest first, as a ring
	next  int
}

// NewPushHandler returns the endpoint for p.Handler.
func NewPushHandler(p PushParams) (*PushHandler, error) {
	if p.Handler == nil {
		return nil, errors.New("worker: PushParams.Handler is required")
	}
	key, err := SecretKey(p.Secret)
	if err != nil {
		return nil, err
	}
	h := &PushHandler{key: key, tolerance: p.Tolerance, maxBody: p.MaxBodyBytes, now: p.Now,
		r:    newRunner(p.Handler, p.Client, p.Logger, p.HeartbeatInterval, "timeoutSeconds"),
		seen: map[string]struct{}{}, order: make([]string, 0, seenIDs)}
	if h.tolerance <= 0 {
		h.tolerance = DefaultTolerance
	}
	if h.maxBody <= 0 {
		h.maxBody = 16 << 20
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.base, h.stop = context.WithCancel(context.Background())
	return h, nil
}

func (h *PushHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, h.maxBody+1))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	if int64(len(body)) > h.maxBody {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if err := VerifySignature(h.key, req.Header, body, h.now(), h.tolerance); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var d dispatch
	if err := json.Unmarshal(body, &d); err != nil || d.CallbackURL == "" || d.RunID == "" {
		http.Error(w, "not a stitchd dispatch", http.StatusBadRequest)
		return
	}
	id := req.Header.Get("webhook-id")
	if h.repeated(id) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	t := &Task{RunID: d.RunID, NodeID: d.NodeID, Attempt: d.Attempt, Input: d.Input, Config: d.Config,
		CallbackURL: d.CallbackURL, MessageID: id}
	if !h.r.start(h.base, t, func() {}) {
		h.forget(id) // not taken: its retry must be worked
		w.Header().Set("Retry-After", "5")
		http.Error(w, "worker shutting down", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted) // the work goes on after the answer
}

// repeated records id and reports whether it was seen before.
func (h *PushHandler) repeated(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.seen[id]; ok {
		return true
	}
	if len(h.order) < seenIDs {
		h.order = append(h.order, id)
	} else {
		delete(h.seen, h.order[h.next])
		h.order[h.next] = id
		h.next = (h.next + 1) % seenIDs
	}
	h.seen[id] = struct{}{}
	return false
}

// forget drops id from the ids seen (its ring slot stays, harmlessly).
func (h *PushHandler) forget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.seen, id)
}

// InFlight is how many tasks are being worked.
func (h *PushHandler) InFlight() int { return h.r.inFlight() }

// Shutdown stops taking tasks (503, which stitchd retries) and waits for
// the running handlers until ctx ends; those still running then have their
// context cancelled and are reported failed with ErrShuttingDown —
// retryable, so the node's retry policy runs the next attempt — and the
// error says how many. Shut the http.Server down first.
func (h *PushHandler) Shutdown(ctx context.Context) error {
	defer h.stop()
	return h.r.drain(ctx)
}
