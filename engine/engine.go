package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stitchd/stitchd/engine/internal/commit"
)

// Config wires an Engine.
type Config struct {
	Store Store
	// Types are the node types flows may use (handlers.Types and any
	// added), each with its handler and capabilities.
	Types  []NodeTypeSpec
	Minter CallbackMinter
	// Claims, if set, is where each commit puts the outbox rows it claimed
	// for this process (see ClaimLease), for the dispatcher to take.
	Claims *Claims
	// ClaimLease, when > 0, writes immediately due outbox rows already
	// claimed by this process for that long, so the dispatcher delivers
	// them without another transaction; if the process dies, another
	// claims them once the lease expires.
	ClaimLease time.Duration
	// MarkDelay is how long a successful delivery's delivered mark waits
	// (between one and two delays) for the worker's callback that makes it
	// unnecessary: 500 ms when 0, and at most ClaimLease/8.
	MarkDelay time.Duration
	// Committer is the commit service: CommitGrouped (the default) or
	// CommitInline (commit.go).
	Committer Committer
	// GroupTransactions bounds the transactions in flight that batches of
	// different runs share (cross-run group commit, engine/internal/commit):
	// 4 when 0. Operations beyond it wait and then share one.
	GroupTransactions int
	NewID             IDGenerator
	Clock             Clock
	// ExprLimits bound every evaluation of an expression (exprlimit.go).
	ExprLimits ExprLimits
	// MaxFirings bounds the nodes one transaction fires
	// (DefaultMaxFirings when 0); the rest fire in later transactions,
	// through the sweeper (Wake).
	MaxFirings int
	// MaxRows bounds the node rows one transaction creates before the
	// sub-flow runs it would start wait for later ones (DefaultMaxRows
	// when 0).
	MaxRows int
	// FanOutChunk is how many items of a fan-out are instantiated, and
	// how many events are written ahead of the commit, at a time
	// (DefaultFanOutChunk when 0): a big fan-out holds a chunk in memory,
	// not every instance.
	FanOutChunk int
	// MaxRunNodes bounds the node instances of a run and its sub-flow
	// runs, all levels (DefaultMaxRunNodes when 0): a fan-out or sub-flow
	// that would pass it fails its node with run_tree_limit.
	MaxRunNodes int
	Logger      *slog.Logger
	// Notify writes notifications (approval.requested, .reminder,
	// .timed_out, run.failed) to the outbox the notification webhook is
	// served from; off, none are written.
	Notify bool
	// OnCommit, if set, is called after every committed transaction with
	// what it did (metrics, tests).
	OnCommit func(CommitInfo)
	// Tracer, if set, sees each transaction the commit service runs
	// (trace.go).
	Tracer Tracer
}

// CommitInfo summarises one committed engine transaction.
type CommitInfo struct {
	RunID string
	// Transitions are the node status changes the transaction made, in
	// order (a UX node firing is two: running, then waiting_for_user),
	// but for those only counted in Counted.
	Transitions []TransitionInfo
	// Counted are transitions counted by kind, not listed: those of a big
	// fan-out, whose events the transaction wrote before its commit
	// (failures among them are listed in Transitions all the same).
	Counted []TransitionCount
	// RunStarted is set when the transaction created the run.
	RunStarted bool
	// RunFinished is the status the run settled in (completed, failed or
	// cancelled) when the transaction finished it, else "".
	RunFinished RunStatus
	// Notifications is how many notifications the transaction wrote.
	Notifications int
	// Deferred is how many nodes the transaction left to fire in a later
	// one (Config.MaxFirings): the sweeper fires them when it next runs.
	Deferred int
}

// TransitionInfo is one node status change.
type TransitionInfo struct {
	Key    string
	NodeID string
	// Type is the node's type ("" when the graph does not know the node).
	Type    NodeType
	To      Status
	Attempt int
	Error   string
}

// TransitionCount is how many node status changes of one kind a
// transaction made (CommitInfo.Counted).
type TransitionCount struct {
	Type  NodeType
	To    Status
	Count int
}

// commitInfo summarises the transaction from the events it wrote: those
// written before the commit (spillEvents), then the rest.
func (t *txn) commitInfo() CommitInfo {
	ci := t.spilled
	ci.RunID = t.run.ID
	ci.Notifications = len(t.notes)
	ci.Deferred = t.deferred
	for _, ev := range t.events {
		ci.note(ev, t.graph, false)
	}
	return ci
}

// note adds what event ev did to ci; a node transition is only counted
// when count is set, unless it is a failure.
func (ci *CommitInfo) note(ev NewEvent, g *ExecutionGraph, count bool) {
	switch ev.Type {
	case EventRunStarted:
		ci.RunStarted = true
	case EventRunCompleted:
		ci.RunFinished = RunCompleted
	case EventRunFailed:
		ci.RunFinished = RunFailed
	case EventRunCancelled:
		ci.RunFinished = RunCancelled
	case EventRunResumed:
		ci.RunFinished = ""
	case EventNodeStatus:
		ti := transitionOf(ev, g)
		if !count || ti.To == StatusFailed {
			ci.Transitions = append(ci.Transitions, ti)
			return
		}
		for i := range ci.Counted {
			if c := &ci.Counted[i]; c.Type == ti.Type && c.To == ti.To {
				c.Count++
				return
			}
		}
		ci.Counted = append(ci.Counted, TransitionCount{Type: ti.Type, To: ti.To, Count: 1})
	}
}

// transitionOf reads a node.status event.
func transitionOf(ev NewEvent, g *ExecutionGraph) TransitionInfo {
	ti := TransitionInfo{Key: ev.Key}
	switch p := ev.Payload.(type) {
	case *nodeStatus:
		ti.To, ti.NodeID, ti.Attempt = p.Status, p.NodeID, p.Attempt
		if p.Error != nil {
			ti.Error = *p.Error
		}
	case map[string]any: // a cancellation
		switch v := p["status"].(type) {
		case Status:
			ti.To = v
		case string:
			ti.To = Status(v)
		}
	}
	if ti.NodeID == "" {
		ti.NodeID = ev.Key // a static node's key is its id
	}
	if g != nil {
		if n := g.Nodes[ti.NodeID]; n != nil {
			ti.Type = n.Type
		}
	}
	return ti
}

// Retrier is implemented by handlers whose nodes retry automatically after
// a reported failure (Worker, HTTP). RetryDelayMs reports whether a node
// that just failed an attempt gets another, and after how long.
type Retrier interface {
	RetryDelayMs(p RetryParams) (delayMs int64, retry bool)
}

// RetryParams describe a failed attempt, for Retrier: the node, its
// instance (run and key, from which a handler may derive a reproducible
// jitter), the attempt that failed and its error.
type RetryParams struct {
	Node    *Node
	RunID   string
	Key     string
	Attempt int
	Error   string
}

// Timeouter is implemented by handlers whose nodes carry a deadline.
type Timeouter interface {
	TimeoutSeconds(node *Node) int
}

// Engine executes runs. It is safe for concurrent use; all coordination
// between goroutines and processes happens in the database.
type Engine struct {
	cfg Config
	// handlers and caps are Config.Types by name.
	handlers map[NodeType]NodeHandler
	caps     map[NodeType]Capabilities
	graphs   sync.Map // flow version id → *ExecutionGraph (immutable)
	// conds and vals cache compiled edge conditions and value expressions
	// by source.
	conds *compiled[*Condition]
	vals  *compiled[*Value]
	// sets caches the expressions of nodes' setVariables.
	sets *compiled[*Value]
	// forms caches UX nodes' compiled forms.
	forms FormCache
	// commit is the commit service (engine/internal/commit; commit.go);
	// gate admits operations to it between Start and Stop.
	commit commit.Committer[opFn]
	gate   gate
	// together counts nodes completed across runs (completeTogether) in
	// committed transactions.
	together atomic.Int64
	// delivered holds and group-commits the marks of successful deliveries.
	delivered deliveredBatch
	versions  runVersions
	inputs    runInputs
	decisions runDecisions
}

// runDecisions remembers, for the switches this process decided, the one
// branch each took ("" when it took another number), so that the step of
// that branch can be speculated up to its join (knownJoin). A decision is
// noted before its transaction commits, and one rolled back stays: the
// database checks what the speculation assumes, so a wrong entry costs a
// retry, never a wrong step. The map is cleared when it reaches
// maxRunVersions.
type runDecisions struct {
	mu sync.Mutex
	m  map[string]string
}

func (d *runDecisions) get(runID, key string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.m[runID+"/"+key]
	return b, ok
}

func (d *runDecisions) put(runID, key string, taken []string) {
	one := ""
	if len(taken) == 1 {
		one = taken[0]
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil || len(d.m) >= maxRunVersions {
		d.m = make(map[string]string)
	}
	d.m[runID+"/"+key] = one
}

// runVersions remembers the flow version of runs this process locked, so
// that a callback's transaction can count down the completing node's
// successors before the run's lock answers, and whether the run was
// rerun, when no step of it is speculated (its compare-and-set would
// fail). Only a migration changes a run's version: what assumed the old
// one fails its check in the database once, and the next lock puts the
// new one. The map is cleared when it reaches maxRunVersions (a rerun
// run forgotten costs one failed speculation).
type runVersions struct {
	mu sync.Mutex
	m  map[string]runVersion
}

type runVersion struct {
	id    string
	reran bool
}

const maxRunVersions = 1 << 16

func (v *runVersions) get(runID string) (runVersion, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	rv, ok := v.m[runID]
	return rv, ok
}

func (v *runVersions) put(runID string, rv runVersion) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxRunVersions {
		v.m = make(map[string]runVersion)
	}
	v.m[runID] = rv
}

// runInputs remembers the inputs of runs this process read, so that the
// conditions of a switch that read run.input do not read the run's row at
// every decision. A run's input never changes; inputs over
// maxCachedInput bytes are not kept, and the map is cleared when it holds
// maxRunInputBytes.
type runInputs struct {
	mu    sync.Mutex
	m     map[string]json.RawMessage
	bytes int
}

const (
	maxCachedInput   = 16 << 10
	maxRunInputBytes = 8 << 20
)

func (c *runInputs) get(runID string) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.m[runID]
	return in, ok
}

func (c *runInputs) put(runID string, in json.RawMessage) {
	if len(in) > maxCachedInput {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+len(in) > maxRunInputBytes {
		c.m, c.bytes = make(map[string]json.RawMessage), 0
	}
	if _, ok := c.m[runID]; !ok {
		c.m[runID] = in
		c.bytes += len(in) + len(runID)
	}
}

// DefaultMaxFirings is Config.MaxFirings' default: a few hundred
// milliseconds of synchronous nodes (Transforms, Conditions) a
// transaction.
const DefaultMaxFirings = 250

// DefaultMaxRows is Config.MaxRows' default.
const DefaultMaxRows = 5_000

// DefaultMaxRunNodes is Config.MaxRunNodes' default (--max-run-nodes).
const DefaultMaxRunNodes = 1_000_000

func (e *Engine) maxRows() int {
	if e.cfg.MaxRows > 0 {
		return e.cfg.MaxRows
	}
	return DefaultMaxRows
}

// DefaultFanOutChunk is Config.FanOutChunk's default.
const DefaultFanOutChunk = 2000

func (e *Engine) fanOutChunk() int {
	if e.cfg.FanOutChunk > 0 {
		return e.cfg.FanOutChunk
	}
	return DefaultFanOutChunk
}

func (e *Engine) maxRunNodes() int {
	if e.cfg.MaxRunNodes > 0 {
		return e.cfg.MaxRunNodes
	}
	return DefaultMaxRunNodes
}

func (e *Engine) maxFirings() int {
	if e.cfg.MaxFirings > 0 {
		return e.cfg.MaxFirings
	}
	return DefaultMaxFirings
}

// New returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.NewID == nil || cfg.Minter == nil {
		return nil, errors.New("engine: Store, NewID and Minter are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.GroupTransactions <= 0 {
		cfg.GroupTransactions = defaultGroups
	}
	if len(cfg.Types) == 0 {
		return nil, errors.New("engine: no node types")
	}
	hs := make(map[NodeType]NodeHandler, len(cfg.Types))
	for _, t := range cfg.Types {
		if t.Handler == nil {
			return nil, fmt.Errorf("engine: no handler for node type %s", t.Type)
		}
		if _, dup := hs[t.Type]; dup {
			return nil, fmt.Errorf("engine: node type %s registered twice", t.Type)
		}
		hs[t.Type] = t.Handler
	}
	run := newExprRun(cfg.ExprLimits, cfg.Clock)
	e := &Engine{cfg: cfg, handlers: hs, caps: CapsOf(cfg.Types),
		conds: &compiled[*Condition]{compile: func(src string) (*Condition, error) { return compileCondition(src, run) }},
		vals:  &compiled[*Value]{compile: func(src string) (*Value, error) { return compileValue(src, run) }},
		sets:  &compiled[*Value]{compile: func(src string) (*Value, error) { return compileVariable(src, run) }}}
	e.gate.idle = sync.NewCond(&e.gate.mu)
	e.forms.Now = cfg.Clock.Now
	switch cfg.Committer {
	case CommitGrouped, "":
		e.commit = commit.NewGrouped(commit.GroupedParams[opFn]{Applier: applier{e}, Groups: cfg.GroupTransactions,
			Traced: cfg.Tracer != nil})
	case CommitInline:
		e.commit = commit.Inline[opFn]{Applier: applier{e}}
	default:
		return nil, fmt.Errorf("engine: unknown committer %q", cfg.Committer)
	}
	return e, nil
}

// Graph returns the execution graph of a flow version, cached in memory
// (versions are immutable).
func (e *Engine) Graph(ctx context.Context, versionID string) (*ExecutionGraph, error) {
	if g, ok := e.loadGraph(versionID); ok {
		return g, nil
	}
	g, err := e.cfg.Store.ExecutionGraph(ctx, versionID)
	if err != nil {
		return nil, fmt.Errorf("error loading execution graph of version %s: %w", versionID, err)
	}
	g.SetCaps(e.caps)
	g.Prepare()
	e.graphs.Store(versionID, g)
	return g, nil
}

// cachedGraph returns the flow version and graph of run runID when this
// process knows them without asking the database.
func (e *Engine) cachedGraph(runID string) (string, *ExecutionGraph, bool) {
	v, ok := e.versions.get(runID)
	if !ok {
		return "", nil, false
	}
	g, ok := e.loadGraph(v.id)
	if !ok {
		return "", nil, false
	}
	return v.id, g, true
}

// loadGraph returns the cached graph of a flow version.
func (e *Engine) loadGraph(versionID string) (*ExecutionGraph, bool) {
	v, ok := e.graphs.Load(versionID)
	if !ok {
		return nil, false
	}
	g, ok := v.(*ExecutionGraph) // the only type stored
	return g, ok
}

// StartRunParams starts a run.
type StartRunParams struct {
	FlowID         string
	VersionID      string
	Input          json.RawMessage
	EntityID       *string
	Trigger        json.RawMessage
	IdempotencyKey string
	// Entity, when set, creates or updates (by email) an entity on a board
	// in the same transaction and attaches it to the run.
	Entity *EntityUpsert
	// DeadlineSeconds, when > 0, fails the run with the reason "deadline"
	// that long after it starts; 0 takes the flow's (settings).
	DeadlineSeconds int
	// StartedBy is the person who started the run (a user's email; "" for
	// a trigger, a schedule or the admin token): a UX node with
	// separationOfDuties refuses their decision.
	StartedBy string
}

// StartRun creates a run pinned to p.VersionID and fires its entry nodes
// with the run input. With an idempotency key, a repeated call returns the
// run the first call created and created=false.
func (e *Engine) StartRun(ctx context.Context, p StartRunParams) (run *Run, created bool, err error) {
	g, err := e.Graph(ctx, p.VersionID)
	if err != nil {
		return nil, false, err
	}
	if len(p.Input) == 0 {
		p.Input = json.RawMessage("{}")
	}
	id := e.cfg.NewID()
	err = e.submitAlone(ctx, id, func(t *txn) error {
		if p.IdempotencyKey != "" {
			existing, err := t.tx.RunByIdempotencyKey(ctx, p.FlowID, p.IdempotencyKey)
			if err == nil {
				run = existing
				return errIdempotentHit
			} else if !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		// Counted against the workspace's limits only when a run is made
		// (a repeated key gets its run back whatever the limits).
		t.w.AdmitRun(p.FlowID)
		r, err := t.startRun(id, g, p, nil)
		run = r
		return err
	})
	if errors.Is(err, errIdempotentHit) {
		return run, false, nil
	}
	if errors.Is(err, ErrConflict) && p.IdempotencyKey != "" {
		// A concurrent request with the same key won the insert.
		err = e.cfg.Store.InTx(ctx, func(ctx context.Context, tx Tx) error {
			run, err = tx.RunByIdempotencyKey(ctx, p.FlowID, p.IdempotencyKey)
			return err
		})
		return run, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return run, true, nil
}

var errIdempotentHit = errors.New("idempotent hit")

// HandleCallback applies a worker's callback. A repeated identical callback
// returns nil and changes nothing; a conflicting or stale one returns an
// error wrapping ErrConflict (or ErrInvalidTransition).
func (e *Engine) HandleCallback(ctx context.Context, p CallbackParams) error {
	return e.submitCallback(ctx, p, func(t *txn) error {
		if p.Status != StatusCompleted {
			if err := t.load(p.RunID); err != nil {
				return err
			}
		}
		t.deliveredKeys = append(t.deliveredKeys, p.Key)
		t.deliveredAttempts = append(t.deliveredAttempts, p.Attempt)
		switch p.Status {
		case StatusRunning:
			return t.heartbeat(p.Key, p.Attempt)
		case StatusCompleted:
			out := p.Output
			if len(out) == 0 {
				out = json.RawMessage("null")
			}
			tr := &NodeTransition{Key: p.Key, From: StatusRunning, Steps: []Status{StatusCompleted},
				Attempt: p.Attempt, Output: out}
			if st := t.takeCompletedInBulk(p); st != nil { // applied by the batch's bulk compare-and-set
				t.transitioned(tr, st)
				return t.completed(st)
			}
			if t.mayBranch(p.RunID, p.Key) {
				return t.completeDeciding(p, tr)
			}
			// The run is locked with this compare-and-set, in one round trip.
			st, err := t.lockAndTransition(p.RunID, tr)
			if err != nil {
				return t.duplicateOr(err, p)
			}
			return t.completed(st)
		case StatusFailed:
			msg := p.Error
			if msg == "" {
				msg = "worker reported failure"
			}
			st, err := t.transition(&NodeTransition{Key: p.Key, From: StatusRunning,
				Steps: []Status{StatusFailed}, Attempt: p.Attempt, Error: &msg})
			if err != nil {
				return t.duplicateOr(err, p)
			}
			return t.failed(st, msg, !p.NoRetry)
		default:
			return fmt.Errorf("%w: callback status must be completed, failed or running", ErrInvalidRequest)
		}
	})
}

// ExpireParams name a worker node's attempt whose deadline passed.
type ExpireParams struct {
	RunID   string
	Key     string
	Attempt int
	// Deadline is the node's deadline as the sweeper's claim set it
	// (store.Overdue): a deadline moved since — a heartbeat after the
	// claim — keeps the attempt alive.
	Deadline time.Time
}

// Expire handles a worker node whose deadline passed: it fails the attempt
// and retries it per the node's policy, and reports whether it did. A node
// no longer running that attempt, or whose deadline moved since the claim,
// is left alone (false).
func (e *Engine) Expire(ctx context.Context, p ExpireParams) (bool, error) {
	expired := false
	err := e.submit(ctx, p.RunID, func(t *txn) error {
		expired = false // a transaction applied again decides again
		if err := t.load(p.RunID); err != nil {
			return err
		}
		// Under the run's lock, which a heartbeat takes too: what is read
		// is what a heartbeat answered. Another attempt is a conflict
		// (left alone, below).
		cur, err := t.runningAttempt(p.Key, p.Attempt)
		if err != nil {
			return err
		}
		if cur.Deadline == nil || !cur.Deadline.Equal(p.Deadline) {
			return nil
		}
		t.deliveredKeys = append(t.deliveredKeys, p.Key) // its delivery, if any, goes into the log now
		t.deliveredAttempts = append(t.deliveredAttempts, p.Attempt)
		msg := fmt.Sprintf("deadline exceeded on attempt %d", p.Attempt)
		st, err := t.transition(&NodeTransition{Key: p.Key, From: StatusRunning,
			Steps: []Status{StatusFailed}, Attempt: p.Attempt, Error: &msg})
		if err != nil {
			return err
		}
		expired = true
		return t.failed(st, msg, true)
	})
	if errorsIsConflict(err) {
		return false, nil
	}
	return expired && err == nil, err
}

// CompleteUXParams is a person's answer to a UX node.
type CompleteUXParams struct {
	RunID string
	Key   string
	// Outcome is the person's choice, one of the node's outcomes
	// (UXOutcomes). When empty, Status says it the old way: completed is
	// approve (or the first outcome), failed is reject.
	Outcome string
	Status  Status
	// Output is the person's answer (decision.answer), Comment their note.
	Output  json.RawMessage
	Comment string
	// Error is the failure's reason when the outcome fails the node.
	Error string
	// By is who decided (a user's email, a token's name).
	By string
	// Actor is the person deciding, checked against the node's assignees
	// and separation of duties (assign.go); their vote counts towards its
	// requiredApprovals, and decision.by is their email. Nil: an internal
	// caller (a timeout, the admin token), not checked, whose decision
	// decides the node at once.
	Actor *Actor
	// Attempt, when not 0, is the node's attempt the decision is for (a
	// one-click link's): another attempt is a conflict.
	Attempt int
	// timedOut: the node's deadline answered (onTimeout), not a person, so
	// there is no answer for its form to check (checkForm).
	timedOut bool
}

// CompleteUX resumes a UX node waiting for a person: waiting_for_user →
// running → completed, its output its input with the decision added, and
// walks the edges of the outcome chosen. An outcome with no edge of its
// own, other than the first, fails the node (reject without a reject
// edge), which a failure edge may handle.
func (e *Engine) CompleteUX(ctx context.Context, p CompleteUXParams) error {
	if p.Outcome == "" && p.Status != StatusCompleted && p.Status != StatusFailed {
		return fmt.Errorf("%w: give an outcome (or status completed or failed)", ErrInvalidRequest)
	}
	return e.submit(ctx, p.RunID, func(t *txn) error {
		cur, err := t.personsNode(p.RunID, p.Key)
		if err != nil {
			return err
		}
		if cur.Status != StatusWaitingForUser {
			// In a person's words: most often someone decided it first.
			return fmt.Errorf("%w: step %s of run %s is no longer waiting for a decision (it is %s): it was decided, or moved on, before this answer",
				ErrInvalidTransition, p.Key, p.RunID, cur.Status)
		}
		if p.Attempt != 0 && cur.Attempt != p.Attempt {
			return fmt.Errorf("%w: node %s is at attempt %d, not %d: the decision was for an earlier one", ErrConflict, p.Key,
				cur.Attempt, p.Attempt)
		}
		n := t.graph.Nodes[cur.NodeID]
		if n == nil {
			return fmt.Errorf("node %s is not in the run's graph: %w", cur.NodeID, ErrNotFound)
		}
		return t.decideUX(n, cur, p)
	})
}

// RetryNode re-fires a failed node as a new attempt (failed → running).
func (e *Engine) RetryNode(ctx context.Context, runID, key string) error {
	return e.submitAlone(ctx, runID, func(t *txn) error {
		if err := t.load(runID); err != nil {
			return err
		}
		if t.run.Status == RunCancelled {
			return fmt.Errorf("%w: run %s is cancelled", ErrConflict, runID)
		}
		cur, err := t.tx.Node(ctx, runID, key)
		if err != nil {
			return err
		}
		if cur.Status != StatusFailed {
			return &TransitionError{Key: key, Want: StatusFailed, Current: cur}
		}
		if cur.Taken != nil {
			return fmt.Errorf("%w: node %s's failure was handed on by its failure edge, which makes it final", ErrConflict, key)
		}
		n := t.graph.Nodes[cur.NodeID]
		if n == nil {
			return fmt.Errorf("node %s is not in the run's graph: %w", cur.NodeID, ErrNotFound)
		}
		if err := t.refuseCompensated(n.ID, "retried"); err != nil {
			return err
		}
		if err := t.resumeCompensation(n.ID); err != nil {
			return err
		}
		if n.Caps.Collects {
			return t.refireCollector(n, cur)
		}
		if err := t.untolerate(cur); err != nil {
			return err
		}
		return t.fire(n, cur.Index, cur.Input, StatusFailed, cur.Attempt)
	})
}

// CancelRun cancels a running run: every non-terminal node becomes
// cancelled and undelivered dispatches are dropped; then its sub-flow
// runs are cancelled, each in a transaction of its own.
func (e *Engine) CancelRun(ctx context.Context, runID string) (*Run, error) {
	return e.cancelRun(ctx, runID, false)
}

// cancelRun is CancelRun, followed, with compensate, by the run's
// compensation (CancelRunWith).
func (e *Engine) cancelRun(ctx context.Context, runID string, compensate bool) (*Run, error) {
	var out *Run
	var children []string
	err := e.submitAlone(ctx, runID, func(t *txn) error {
		if err := t.load(runID); err != nil {
			return err
		}
		if t.run.Status != RunRunning && t.run.Status != RunFailed && t.run.Status != RunPaused && t.run.Status != RunQueued {
			return fmt.Errorf("%w: run %s is already %s", ErrConflict, runID, t.run.Status)
		}
		if len(t.graph.Compensation) > 0 {
			c, err := t.compensation()
			if err != nil {
				return err
			}
			if compensate && c != nil {
				return fmt.Errorf("%w: run %s's compensation began already (it is %s)", ErrConflict, runID, c.State)
			}
			if err := t.interruptCompensation(); err != nil {
				return err
			}
		}
		nodes, err := t.w.CancelNodes(runID)
		if err != nil {
			return err
		}
		for _, c := range nodes {
			t.event(EventNodeStatus, c.Key, map[string]any{"status": StatusCancelled})
			t.tellWorkerCancelled(c, "run cancelled")
		}
		// Every node that was running, waiting or failed is cancelled now.
		t.run.ActiveNodes, t.run.FailedNodes = 0, 0
		out = t.run
		if compensate {
			// The undo nodes run in a running run; it ends cancelled
			// after them (endCompensated).
			t.run.Status = RunRunning
			t.run.Error = nil
			if err := t.compensate(CompensateOnCancel, "cancelled"); err != nil {
				return err
			}
		} else {
			t.run.Status = RunCancelled
			t.finishRun(nil, "cancelled")
			t.event(EventRunCancelled, "", nil)
		}
		children, err = t.tx.ChildRuns(t.ctx, runID, RunRunning, RunPaused, RunFailed)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.cascade(ctx, children, e.CancelRun) // their nodes were cancelled: no run tells them back
	return out, nil
}
