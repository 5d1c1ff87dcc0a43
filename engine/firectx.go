package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stitchd/stitchd/engine/internal/writer"
)

// fireCtx implements FireContext for one node instance.
type fireCtx struct {
	t       *txn
	node    *Node
	key     string
	idx     []int
	input   json.RawMessage
	from    Status
	attempt int
	delayMs int64
	acted   bool
	// logs are Log's events, written once the action is (fire.go).
	logs []NewEvent
	// answer is Answer's, recorded as the action begins (act), or after
	// it when Answer came later (fire.go).
	answer *CallerAnswer
}

func (f *fireCtx) Answer(a CallerAnswer) {
	a.Node = f.key
	f.answer = &a
}

// Bounds of FireContext.Log.
const (
	MaxLogMessage = 4096
	MaxLogData    = 64 << 10
)

func (f *fireCtx) Log(message string, data json.RawMessage) {
	if len(message) > MaxLogMessage {
		message = strings.ToValidUTF8(message[:MaxLogMessage], "") + "…"
	}
	p := map[string]any{"node_id": f.node.ID, "message": storableText(message)}
	switch {
	case len(data) > MaxLogData:
		p["data"] = map[string]any{"omitted": fmt.Sprintf("%d bytes, more than %d", len(data), MaxLogData)}
	case len(data) > 0 && json.Valid(data):
		if msg := unstorable("the data", data); msg != "" {
			p["data"] = map[string]any{"omitted": msg}
		} else {
			p["data"] = data
		}
	}
	f.logs = append(f.logs, NewEvent{Type: EventNodeLog, Key: f.key, Payload: p})
}

func (f *fireCtx) RunID() string          { return f.t.run.ID }
func (f *fireCtx) Key() string            { return f.key }
func (f *fireCtx) Node() *Node            { return f.node }
func (f *fireCtx) Index() []int           { return f.idx }
func (f *fireCtx) Input() json.RawMessage { return f.input }
func (f *fireCtx) Attempt() int           { return f.attempt }
func (f *fireCtx) Now() time.Time         { return f.t.e.cfg.Clock.Now() }

func (f *fireCtx) CallbackURL() (string, error) {
	u, err := f.t.e.cfg.Minter.CallbackURL(f.t.run.ID, f.key, f.attempt)
	if err != nil {
		return "", fmt.Errorf("error minting callback URL: %w", err)
	}
	return u, nil
}

func (f *fireCtx) Eval(src string) (any, error) {
	if f.unwritten() {
		// A run's first fires are tried before its rows exist, for the
		// starts that need none; whatever an expression's value is for,
		// it needs the row (a completion, a failure, a wait), so the
		// expression is evaluated once, when the node fires again.
		return nil, writer.ErrNeedsRow
	}
	v, err := f.t.e.vals.get(src)
	if err != nil {
		return nil, err
	}
	env := ValueEnv{Run: RunEnv{ID: f.t.run.ID}}
	if env.Input, err = decodeJSON(f.input); err != nil {
		return nil, err
	}
	if v.UsesRun {
		in, err := f.t.runInput()
		if err != nil {
			return nil, err
		}
		if env.Run.Input, err = decodeJSON(in); err != nil {
			return nil, err
		}
	}
	if v.UsesEntity && f.t.run.EntityID != nil {
		if env.Entity, err = f.t.tx.EntityOf(f.t.ctx, *f.t.run.EntityID); err != nil {
			return nil, err
		}
	}
	if env.Steps, err = f.t.stepsOf(v.Steps, f.idx); err != nil {
		return nil, err
	}
	if env.Vars, err = f.t.runVars(v.Vars); err != nil {
		return nil, err
	}
	if v.UsesItem {
		env.Item = itemOf(f.key, f.idx)
	}
	return v.Eval(env)
}

func (f *fireCtx) act() error {
	if f.acted {
		return errors.New("a node handler may take only one action per fire")
	}
	f.acted = true
	if a := f.answer; a != nil && !f.unwritten() {
		// Recorded before the action walks on: a Respond node further on
		// in this transaction fires inside the action, and the first to
		// fire counts. (A fire the action will ask to try again once the
		// node's row exists records it then.)
		f.answer = nil
		return f.t.answerCaller(a)
	}
	return nil
}

// start is the transition every action begins with: a new attempt from
// the node's current status, storing its input (Collectors keep only their
// output, which is the same array). A first fire clears the node's
// pending-parents count (every upstream node completed; Collectors keep
// theirs, which tells a failed Collector's retry whether items are still
// outstanding).
func (f *fireCtx) start(steps ...Status) *NodeTransition {
	tr := &NodeTransition{Key: f.key, From: f.from, Steps: steps, NewAttempt: true}
	if !f.node.Caps.Collects {
		tr.Input = f.input
		tr.ClearPending = f.from == StatusPending
	}
	return tr
}

func (f *fireCtx) Dispatch(req DispatchRequest) error {
	if err := f.act(); err != nil {
		return err
	}
	t := f.t
	payload := req.Body
	hr := req.request()
	if req.DelayMs == 0 {
		req.DelayMs = f.delayMs
	}
	if f.bulkable() && req.DelayMs == 0 {
		d := &Dispatch{ID: t.e.cfg.NewID(), RunID: t.run.ID, Workspace: t.graph.Workspace, Key: f.key, Attempt: 1, URL: req.URL,
			Payload: payload, MaxTries: req.MaxTries, Request: hr, Queue: req.Queue, LeaseSeconds: req.LeaseSeconds}
		t.w.Claim(d, t.run.Status == RunPaused)
		t.w.StartInBulk(t.run.ID, f.node.ID, f.bulkStart(StatusRunning, req.TimeoutSeconds), d)
		return nil
	}
	if f.unwritten() {
		return writer.ErrNeedsRow
	}
	tr := f.start(StatusRunning)
	tr.DeadlineSeconds = req.TimeoutSeconds
	if req.DelayMs > 0 && tr.DeadlineSeconds > 0 {
		// The deadline counts from the delayed delivery.
		tr.DeadlineSeconds += int((req.DelayMs + 999) / 1000)
	}
	// The fire's status and attempt were read under the run's lock: the
	// start needs no answer and travels with the next statement.
	if err := t.transitionLater(tr, f.node.ID, f.attempt-1); err != nil {
		return err
	}
	d := &Dispatch{ID: t.e.cfg.NewID(), RunID: t.run.ID, Workspace: t.graph.Workspace, Key: f.key, Attempt: f.attempt, URL: req.URL,
		Payload: payload, MaxTries: req.MaxTries, DelayMs: req.DelayMs, Request: hr, Queue: req.Queue, LeaseSeconds: req.LeaseSeconds}
	t.w.Claim(d, t.run.Status == RunPaused)
	if err := t.w.InsertDispatch(d); err != nil {
		return fmt.Errorf("error writing dispatch for %s: %w", f.key, err)
	}
	return nil
}

func (f *fireCtx) WaitForUser() error {
	if err := f.act(); err != nil {
		return err
	}
	secs, remind, escalate := uxTimeoutSeconds(f.node), remindSeconds(f.node), firstEscalation(f.node)
	people := UXPeopleOf(f.node)
	// A node reminded about, escalated or assigned starts on its own: the
	// bulk start has no reminder or escalation time and no assignees.
	if f.bulkable() && remind == 0 && escalate == 0 && !people.Assigned() {
		f.t.w.StartInBulk(f.t.run.ID, f.node.ID, f.bulkStart(StatusWaitingForUser, secs), nil)
		f.t.notifyApproval(NotifyApprovalRequested, f.node, f.key, f.attempt, nil)
		return nil
	}
	if f.unwritten() {
		return writer.ErrNeedsRow
	}
	assign, err := f.assignees(people)
	if err != nil {
		return f.fail(err.Error()) // no one to ask
	}
	tr := f.start(StatusRunning, StatusWaitingForUser)
	tr.DeadlineSeconds, tr.RemindSeconds, tr.Assign, tr.EscalateSeconds = secs, remind, assign, escalate
	var extra map[string]any
	if assign != nil {
		extra = map[string]any{"assignees": assign}
	}
	f.t.notifyApproval(NotifyApprovalRequested, f.node, f.key, f.attempt, extra)
	return f.t.transitionLater(tr, f.node.ID, f.attempt-1)
}

func (f *fireCtx) Sleep(w Wake) error {
	if err := f.act(); err != nil {
		return err
	}
	if f.unwritten() {
		return writer.ErrNeedsRow
	}
	tr := f.start(StatusRunning, StatusSleeping)
	tr.Wake = &w
	return f.t.transitionLater(tr, f.node.ID, f.attempt-1)
}

func (f *fireCtx) Complete(output json.RawMessage) error {
	if err := f.act(); err != nil {
		return err
	}
	if msg := unstorable("the output", output); msg != "" {
		return f.fail(msg)
	}
	if f.unwritten() {
		return writer.ErrNeedsRow
	}
	tr := f.start(StatusRunning, StatusCompleted)
	tr.Output = orNull(output)
	if f.t.graph.hasBranches(f.node.ID) {
		taken, err := f.t.decide(f.node, f.key, -1, f.input, tr.Output, "")
		if err != nil {
			return f.t.failDecision(tr, err)
		}
		tr.Taken = taken
	}
	if f.completesQueued() {
		// The row is known pending, attempt 0: its move needs no answer,
		// and the row it leaves is built here as the database returns it.
		if err := f.t.transitionLater(tr, f.node.ID, f.attempt-1); err != nil {
			return err
		}
		return f.t.completed(&NodeState{RunID: f.t.run.ID, Key: f.key, NodeID: f.node.ID, Index: f.idx,
			Type: f.node.Type, Status: StatusCompleted, Attempt: f.attempt, Input: f.input, Output: tr.Output,
			Taken: tr.Taken})
	}
	st, err := f.t.transition(tr)
	if err != nil {
		return err
	}
	return f.t.completed(st)
}

// completesQueued reports whether a synchronous completion's move is
// queued rather than answered: a first fire in a fan-out's collection
// (its instance's row made pending in this transaction: attemptKnown)
// whose consequences read nothing of the row but what the fire knows —
// on no loop, moving no entity, setting no variables, undoing nothing. A
// fan-out of 10,000 synchronous steps made 10,000 round trips in its
// transaction.
func (f *fireCtx) completesQueued() bool {
	t, n := f.t, f.node
	on, unwritten := t.w.Collecting(t.run.ID)
	return on && !unwritten && f.from == StatusPending && t.graph.loopOf(n.ID) == nil &&
		movementOf(n, true) == nil && t.graph.SetVariables[n.ID] == nil &&
		(len(t.graph.Compensation) == 0 || t.graph.UndoStep(n.ID) == "")
}

func (f *fireCtx) Fail(reason string) error {
	if err := f.act(); err != nil {
		return err
	}
	return f.fail(reason)
}

// fail fails the node firing, its action taken.
func (f *fireCtx) fail(reason string) error {
	if f.unwritten() {
		return writer.ErrNeedsRow
	}
	reason = storableText(reason)
	tr := f.start(StatusRunning, StatusFailed)
	tr.Error = &reason
	st, err := f.t.transition(tr)
	if err != nil {
		return err
	}
	return f.t.failed(st, reason, false)
}

func (f *fireCtx) FanOut(items []json.RawMessage) error {
	if !f.node.Caps.FansOut {
		return fmt.Errorf("FanOut called on %s node %s", f.node.Type, f.key)
	}
	if err := f.act(); err != nil {
		return err
	}
	if f.unwritten() {
		return writer.ErrNeedsRow
	}
	if region := f.t.graph.Regions[f.node.ID]; region != nil && len(items) > 0 {
		if ok, err := f.t.growTree(len(items) * len(region.Direct)); err != nil {
			return err
		} else if !ok {
			return f.fail(f.t.treeLimitMessage(fmt.Sprintf("fanning out %d items", len(items))))
		}
	}
	arr, err := json.Marshal(items)
	if err != nil {
		return fmt.Errorf("error encoding items: %w", err)
	}
	tr := f.start(StatusRunning, StatusCompleted)
	tr.Output = arr
	st, err := f.t.transition(tr)
	if err != nil {
		return err
	}
	if err := f.t.completed(st); err != nil {
		return err
	}
	return f.t.fanOut(f.node, f.idx, f.key, items)
}

// bulkable reports whether this fire can join a bulk start (the writer
// collects first fires: a Splitter fans out, or a run starts): a first
// attempt of a pending instance.
func (f *fireCtx) bulkable() bool {
	on, _ := f.t.w.Collecting(f.t.run.ID)
	return on && f.from == StatusPending && f.attempt == 1
}

// unwritten reports whether this fire happens before its instance's row
// exists (bulkFires.unwritten): only a bulk start can be taken then.
func (f *fireCtx) unwritten() bool {
	_, unwritten := f.t.w.Collecting(f.t.run.ID)
	return unwritten && f.from == StatusPending && f.attempt == 1
}

// bulkStart is this fire's start as a bulk start takes it.
func (f *fireCtx) bulkStart(status Status, deadlineSeconds int) BulkStart {
	return BulkStart{Key: f.key, Input: f.input, Status: status, DeadlineSeconds: deadlineSeconds}
}
