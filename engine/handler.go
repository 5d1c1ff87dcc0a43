package engine

import (
	"context"
	"encoding/json"
	"time"
)

// NodeHandler gives a node type its behaviour. Fire is called inside the
// transaction in which the node instance became ready (or was retried); it
// must end by calling exactly one of the FireContext actions.
type NodeHandler interface {
	Fire(ctx context.Context, fc FireContext) error
}

// FireContext is what a handler sees of the node it fires and the actions
// it may take. Each action is one compare-and-set transition from the
// node's current status (pending on a first fire, failed on a retry).
type FireContext interface {
	RunID() string
	Key() string
	Node() *Node
	Index() []int
	Input() json.RawMessage
	// Attempt is the attempt number this fire starts (1 on the first fire).
	Attempt() int
	// Eval evaluates the expr-lang expression src over the node's input,
	// the run ({id, input}) and its entity, in the firing transaction. An
	// error is the person's to read (a bad expression, a runtime error).
	Eval(src string) (any, error)
	// Now is the engine's clock.
	Now() time.Time

	// CallbackURL is the signed URL on which this attempt is completed
	// (a worker's callback), for the body of a callback dispatch.
	CallbackURL() (string, error)
	// Dispatch marks the node running with a deadline of timeoutSeconds
	// and writes an outbox row delivering req's body to its URL after the
	// transaction commits. What completes the node is req.Kind's: the
	// callback on CallbackURL, or the request's response.
	Dispatch(req DispatchRequest) error
	// WaitForUser marks the node waiting_for_user; with timeoutSeconds > 0
	// it times out then (the node's onTimeout).
	WaitForUser() error
	// WaitForEvent marks the node waiting_for_event on w (with a deadline
	// of timeoutSeconds when > 0), or completes it at once with an event
	// of w that arrived before the wait began.
	WaitForEvent(w EventWait, timeoutSeconds int) error
	// Sleep marks the node sleeping until w; the sweeper wakes it when due
	// (database time) and it completes with its input.
	Sleep(w Wake) error
	// Complete marks the node completed with output and walks its edges.
	Complete(output json.RawMessage) error
	// Fail marks the node failed with reason.
	Fail(reason string) error
	// FanOut completes a Splitter with items and instantiates its parallel
	// region once per item (Splitter nodes only).
	FanOut(items []json.RawMessage) error
	// Log records message, with data (a JSON value; nil for none), as a
	// node.log event of the run. It is not an action: it is written
	// with the action the handler takes, before it, and not at all when
	// the fire takes none or is tried again. A message is cut at
	// MaxLogMessage bytes, data over MaxLogData bytes is replaced by a
	// note of its size.
	Log(message string, data json.RawMessage)
	// Answer gives the run's caller — a webhook request waiting for the
	// run (a trigger's respond.mode "wait") — its answer now, while the
	// run goes on: the first answer of a run counts, later ones are
	// ignored. Like Log it is not an action: it is recorded as the
	// action the handler takes begins (so before a later Respond that
	// action leads to), and not at all when the fire takes none or is
	// tried again. Called after the action, it is recorded after it.
	Answer(a CallerAnswer)
	// StartChild marks the node running and starts a run of another flow
	// version (its child) in the same transaction; the child's end
	// completes or fails the node, in the child's final transaction.
	StartChild(c ChildRun) error
}

// EventRunResponded is recorded when a Respond node answered the run's
// caller (its payload: the node and the status; not the body).
const EventRunResponded = "run.responded"

// DispatchRequest describes an outbound delivery: a worker dispatch (the
// contract payload POSTed, the worker's callback completes the node), or,
// with Kind DispatchHTTP, a request whose response completes the node
// (Engine.CompleteFromResponse).
type DispatchRequest struct {
	URL string
	// Body is what is sent: for a callback dispatch, the payload the
	// handler built (a Worker's is WorkerPayload, carrying CallbackURL).
	Body []byte
	// TimeoutSeconds is the node's deadline (0: none).
	TimeoutSeconds int
	MaxTries       int
	// DelayMs postpones delivery (backoff before an automatic retry).
	DelayMs int64
	// Kind is what completes the node. Method, Headers and
	// RequestTimeoutMs describe a request/response delivery (Kind
	// DispatchHTTP): sent as it is, unsigned, with no callback; a
	// callback dispatch is POSTed signed.
	Kind             DispatchKind
	Method           string
	Headers          map[string]string
	RequestTimeoutMs int64
	// Secrets are the secrets whose placeholders the request holds
	// (nil: none).
	Secrets *SecretUse
	// Credential names the credential the request carries ("": none).
	Credential string
	// Queue and LeaseSeconds describe a pulled task (Kind DispatchTask):
	// the queue a worker polls and how long its lease lasts.
	Queue        string
	LeaseSeconds int
}

// DispatchKind is what an outbox row delivers.
type DispatchKind string

const (
	// DispatchCallback ("" in Go values) is a worker dispatch: the signed
	// contract payload, answered by the worker's callback.
	DispatchCallback DispatchKind = "callback"
	// DispatchHTTP is a request whose response completes the node.
	DispatchHTTP DispatchKind = "request"
	// DispatchCode is a script the dispatcher runs in its sandbox
	// (internal/jsbox) outside any transaction: its value completes the
	// node as a response would (Body: the value, Logs: its console). Pure,
	// so a row claimed again runs it again. RequestTimeoutMs is its time.
	DispatchCode DispatchKind = "code"
	// DispatchEmail is a message the dispatcher sends over SMTP with the
	// request's credential (an smtp one): Body is the message
	// ({to, cc, bcc, subject, text, html}); the response's Body is
	// {"message_id"}. Sent at most once, as a request is.
	DispatchEmail DispatchKind = "email"
	// DispatchTask is a pulled worker's task: written to its queue (Queue)
	// rather than the outbox, handed to a worker that polls it
	// (POST /api/v1/tasks/poll), whose lease (LeaseSeconds from the poll,
	// a heartbeat extends it) is the node's deadline; Body is the
	// WorkerPayload, answered by the worker's callback as a push is.
	DispatchTask DispatchKind = "task"
)

// answered reports whether a row of kind k is answered by the dispatcher
// itself (a response, a script's value, a sent message) rather than by a
// worker's callback: its row carries an HTTPRequest.
func (k DispatchKind) answered() bool {
	return k == DispatchHTTP || k == DispatchCode || k == DispatchEmail
}

// request is the HTTPRequest a row of kind k carries (nil for a worker's
// dispatch).
func (req DispatchRequest) request() *HTTPRequest {
	if !req.Kind.answered() {
		return nil
	}
	return &HTTPRequest{Method: req.Method, Headers: req.Headers, TimeoutMs: req.RequestTimeoutMs, Secrets: req.Secrets,
		Credential: req.Credential, Code: req.Kind == DispatchCode, Email: req.Kind == DispatchEmail}
}

// WorkerPayload is the body POSTed to a worker (the public contract).
type WorkerPayload struct {
	RunID       string          `json:"runId"`
	NodeID      string          `json:"nodeId"`
	Config      json.RawMessage `json:"config"`
	Input       json.RawMessage `json:"input"`
	CallbackURL string          `json:"callbackUrl"`
	Attempt     int             `json:"attempt"`
}

// CallbackMinter mints the callback URL a worker posts its result to.
type CallbackMinter interface {
	CallbackURL(runID, key string, attempt int) (string, error)
}

// IDGenerator returns new unique ids (UUID strings).
type IDGenerator func() string
