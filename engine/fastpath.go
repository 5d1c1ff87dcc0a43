package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stitchd/stitchd/engine/internal/writer"
	"github.com/tidwall/gjson"
)

// Fast paths: optimisations the rules call, each doing what the ordinary
// path would do in fewer statements or round trips. Speculation applies a
// chain step without waiting for the database (speculate, checked at
// flush by checkSpeculation); the count-down of a completing node's
// successors travels with its compare-and-set (queueCountDown,
// keepCountDown; the writer queues and keeps it, engine/internal/writer) and
// walk takes its answer (countDownSuccessors); a
// fan-out's or a run's first fires are written in bulk (the writer
// collects them: engine/internal/writer); a big
// fan-out's events are written before the commit (spillEvents). A batch's
// bulk completion of callbacks is in commit_apply.go (takeCompletedInBulk),
// completion across runs in commit_together.go.

// speculationOf returns what a speculation of completion tr of run runID
// starts from — the run's flow version and graph as this process keeps
// them, the node and its index — and reports false when none may be made:
// speculation is off, tr is not a worker's first completion of its
// running attempt, or the graph is not kept.
func (t *txn) speculationOf(runID string, tr *NodeTransition) (string, *ExecutionGraph, *Node, []int, bool) {
	if t.noSpeculation || tr.From != StatusRunning || len(tr.Steps) != 1 || tr.Steps[0] != StatusCompleted ||
		tr.Attempt <= 0 || tr.NewAttempt {
		return "", nil, nil, nil, false
	}
	// A rerun run's compare-and-set would fail (NOT reran): not tried.
	v, ok := t.e.versions.get(runID)
	if !ok || v.reran {
		return "", nil, nil, nil, false
	}
	g, ok := t.e.loadGraph(v.id)
	if !ok {
		return "", nil, nil, nil, false
	}
	n, idx, ok := g.parseKey(tr.Key)
	return v.id, g, n, idx, ok
}

// speculate applies the completion of a chain step without waiting for
// anything: the node's compare-and-set (which locks the run), its
// successors' starts and outbox rows and the run's save are all queued,
// to travel with COMMIT in one round trip. It does so only when the outcome cannot
// depend on what the database would answer: this process knows the run's
// flow version (and so its graph); the node is a Worker that moves no
// entity, and every node after it is a Worker or unassigned UX node at its depth
// whose only upstream node it is — or a switch's join it alone makes
// ready (knownJoin: its count-down's answer is assumed, checked in the
// database) — (so each is pending and fires now, with
// the callback's output as input, and the run stays running: it has work
// left and a node that just became active). What it assumed travels with
// the compare-and-set (the row's node, the run running on that version),
// which fails the transaction in the database when it moves no row — a
// repeated or stale callback, a cancelled run — and Engine.transact then
// applies the operation again without speculating. The run's counters are
// saved as changes to the row's (RunSave.Relative).
func (t *txn) speculate(runID string, tr *NodeTransition) (*NodeState, bool, error) {
	v, g, n, idx, ok := t.speculationOf(runID, tr)
	if !ok {
		return nil, false, nil
	}
	join, untaken := t.e.knownJoin(runID, g, n, idx)
	if !speculable(g, n, idx, tr.Output, join) {
		return nil, false, nil
	}
	tr.RunID, tr.NodeID, tr.RunVersion = runID, n.ID, v
	// The compare-and-set checks and locks the run.
	if err := t.w.Speculate(tr); err != nil {
		return nil, true, fmt.Errorf("error moving node %s: %w", tr.Key, err)
	}
	if join != "" {
		if err := t.w.AssumeCountDown(writer.CountDown{RunID: runID, Key: tr.Key, Version: v, NodeID: n.ID}, join, untaken); err != nil {
			return nil, true, fmt.Errorf("error counting down %s: %w", join, err)
		}
	}
	// The run was not read: run holds changes to its counters.
	t.run, t.graph = &Run{ID: runID, FlowID: g.FlowID, FlowVersionID: v, Status: RunRunning}, g
	st := &NodeState{RunID: runID, Key: tr.Key, NodeID: n.ID, Index: idx, Type: n.Type, Status: StatusCompleted,
		Output: tr.Output, Attempt: tr.Attempt}
	t.transitioned(tr, st)
	return st, true, nil
}

// speculateDecision is speculate for a worker's node that decides its
// edges (a switch), completing by tr: the edges are decided first, from
// the callback's output and the run's input this process keeps, and the
// step is speculated when what follows cannot depend on what the database
// would answer (speculableDecider, decisionSpeculable): the branches
// taken start, those not taken are skipped together, and the joins they
// lead to keep parents left (parentsLeft). It reports false, having
// changed nothing, otherwise.
func (t *txn) speculateDecision(runID string, tr *NodeTransition) (*NodeState, bool, error) {
	v, g, n, idx, ok := t.speculationOf(runID, tr)
	if !ok || !speculableDecider(t, g, n, idx) || !distinctKeys(gjson.ParseBytes(tr.Output)) {
		return nil, false, nil
	}
	in, kept := t.e.inputs.get(runID)
	if !kept && t.decisionReadsRun(runID, tr.Key) {
		return nil, false, nil
	}
	t.run, t.graph = &Run{ID: runID, FlowID: g.FlowID, FlowVersionID: v, Status: RunRunning, Input: in}, g
	taken, ok := t.decisionSpeculable(n, idx, tr)
	if !ok {
		t.run, t.graph = nil, nil // decided again the ordinary way
		return nil, false, nil
	}
	tr.Taken = taken
	tr.RunID, tr.NodeID, tr.RunVersion = runID, n.ID, v
	// The compare-and-set checks and locks the run.
	if err := t.w.Speculate(tr); err != nil {
		return nil, true, fmt.Errorf("error moving node %s: %w", tr.Key, err)
	}
	st := &NodeState{RunID: runID, Key: tr.Key, NodeID: n.ID, Index: idx, Type: n.Type, Status: StatusCompleted,
		Output: tr.Output, Attempt: tr.Attempt, Taken: taken}
	t.transitioned(tr, st)
	return st, true, nil
}

// speculableDecider reports whether the completion of node n (of graph g)
// may be speculated whatever it decides: a Worker that moves no entity,
// sets no variables, undoes nothing and is on no loop, whose conditions
// read only its output and the run's input, and whose edges lead to
// Worker or unassigned UX nodes at its depth that it alone starts, on no
// loop and each with successors, which it alone counts down of what the
// run does next (no join's first arrival, no Collector, no Splitter).
func speculableDecider(t *txn, g *ExecutionGraph, n *Node, idx []int) bool {
	if !n.Caps.CallsBack || movementOf(n, true) != nil || g.SetVariables[n.ID] != nil || len(g.JoinAny) > 0 ||
		g.loopOf(n.ID) != nil || (len(g.Compensation) > 0 && g.UndoStep(n.ID) != "") || !decidesFirst(t, g, n) {
		return false
	}
	for _, r := range g.Branches[n.ID] {
		if r.Outcome != "" {
			return false
		}
		if r.Condition == "" {
			continue
		}
		c, err := t.e.conds.get(r.Condition)
		if err != nil || c.UsesEntity || c.UsesInput || c.UsesEnv || c.UsesItem || len(c.Steps) > 0 || len(c.Vars) > 0 {
			return false
		}
	}
	targets, arrivals := successors(g, n, idx)
	if len(targets) == 0 || len(targets) > maxFastSuccessors || len(arrivals) > 0 {
		return false
	}
	for _, tg := range targets {
		b := tg.node
		if !soleParent(g, b) || b.Depth != n.Depth || g.loopOf(b.ID) != nil || b.Caps.FansOut || len(g.Adjacency[b.ID]) == 0 ||
			(!b.Caps.CallsBack && !b.Caps.WaitsForPerson) {
			return false
		}
		if b.Caps.WaitsForPerson && (UXPeopleOf(b).Assigned() || firstEscalation(b) > 0) {
			return false
		}
	}
	return true
}

// decisionSpeculable decides node n's edges on its completion tr and
// reports whether what the decision does next is known without asking: a
// branch is taken, and every successor of a branch not taken is counted
// down together with the others' (skipAll), keeping parents left. A
// decision that fails (a condition that cannot be evaluated) is not: it
// is made again the ordinary way, which fails the node with it.
func (t *txn) decisionSpeculable(n *Node, idx []int, tr *NodeTransition) ([]string, bool) {
	taken, err := t.decide(n, tr.Key, -1, nil, tr.Output, "")
	if err != nil || len(taken) == 0 {
		return nil, false
	}
	targets, _ := successors(t.graph, n, idx)
	for _, tg := range targets {
		if slices.Contains(taken, tg.node.ID) {
			continue
		}
		next, ok := skippedTogether(t.graph, tg)
		if !ok {
			return nil, false
		}
		for _, s := range next {
			if !t.parentsLeft(s, n, taken) {
				return nil, false
			}
		}
	}
	return taken, true
}

// knownJoin returns the key of node n's one successor when it is a
// switch's join that n's completion makes ready, with its count of edges
// not taken: n is one of the switch's branches, every upstream node of
// the join is a branch of the same switch (each started by it alone, at
// the join's depth, on no loop), and the switch took n alone, as this
// process decided it (runDecisions). "" otherwise.
func (e *Engine) knownJoin(runID string, g *ExecutionGraph, n *Node, idx []int) (string, int) {
	next := g.Adjacency[n.ID]
	ups := g.Upstream[n.ID]
	if len(next) != 1 || len(ups) != 1 || len(g.JoinAny) > 0 || (len(g.Compensation) > 0 && g.UndoStep(n.ID) != "") {
		return "", 0
	}
	j, sw := g.Nodes[next[0]], g.Nodes[ups[0]]
	if soleParent(g, j) || !g.MaySkip[j.ID] || j.Caps.Collects || j.joinBranch || j.Depth != n.Depth ||
		sw.Depth != n.Depth || g.loopOf(j.ID) != nil || g.loopOf(sw.ID) != nil {
		return "", 0
	}
	for _, u := range g.Upstream[j.ID] {
		un := g.Nodes[u]
		if !soleParent(g, un) || g.Upstream[u][0] != sw.ID || un.Depth != n.Depth || g.loopOf(u) != nil {
			return "", 0
		}
	}
	if one, ok := e.decisions.get(runID, InstanceKey(sw.ID, idx)); !ok || one != n.ID {
		return "", 0
	}
	return InstanceKey(j.ID, idx), len(g.Upstream[j.ID]) - 1
}

// speculable reports whether completing node n at index idx with output
// may be speculated (speculate): a Worker that moves no entity and
// decides no edges, whose successors are Worker or unassigned UX nodes
// at its depth that it alone starts — or, join (when not ""), its one
// successor, a switch's join it makes ready (knownJoin).
func speculable(g *ExecutionGraph, n *Node, idx []int, output json.RawMessage, join string) bool {
	if !n.Caps.CallsBack || movementOf(n, true) != nil || g.hasBranches(n.ID) || g.SetVariables[n.ID] != nil {
		return false
	}
	targets, arrivals := successors(g, n, idx)
	if len(targets) == 0 || len(targets) > maxFastSuccessors || len(arrivals) > 0 {
		return false
	}
	for _, tg := range targets {
		if (!soleParent(g, tg.node) && tg.key != join) || tg.node.Depth != n.Depth || g.loopOf(tg.node.ID) != nil ||
			(!tg.node.Caps.CallsBack && !tg.node.Caps.WaitsForPerson) {
			return false
		}
		// An assigned UX node's assignees may need the run's entity, and
		// failing to work them out would fail the run.
		if tg.node.Caps.WaitsForPerson && (UXPeopleOf(tg.node).Assigned() || firstEscalation(tg.node) > 0) {
			return false
		}
	}
	// The successors' inputs are made from the callback's bytes, where
	// the ordinary path reads the output back from Postgres: the same
	// JSON unless an object repeats a key (jsonb keeps the last, a gjson
	// mapping finds the first).
	return distinctKeys(gjson.ParseBytes(output))
}

// distinctKeys reports whether no object in the JSON value v repeats a key
// (keys compared unescaped, as jsonb compares them).
func distinctKeys(v gjson.Result) bool {
	ok := true
	switch {
	case v.IsObject():
		seen := map[string]struct{}{}
		v.ForEach(func(k, val gjson.Result) bool {
			if _, dup := seen[k.Str]; dup {
				ok = false
				return false
			}
			seen[k.Str] = struct{}{}
			ok = distinctKeys(val)
			return ok
		})
	case v.IsArray():
		v.ForEach(func(_, val gjson.Result) bool {
			ok = distinctKeys(val)
			return ok
		})
	}
	return ok
}

// errMisspeculated: a speculated step did something speculate ruled out.
var errMisspeculated = fmt.Errorf("%w: a speculated step did not leave its run running with a node started", ErrConflict)

// maxFastSuccessors bounds the successors whose count-down is queued with
// their parent's completion (queueCountDown), and those a speculated step
// fires.
const maxFastSuccessors = 8

// queueCountDown queues the count-down of the successors of the node tr
// completes, when the run's flow version and graph are cached by this
// process (cachedGraph), and returns it with the version and node it
// assumed.
func (t *txn) queueCountDown(runID string, tr *NodeTransition) *writer.CountDown {
	if tr.Final() != StatusCompleted {
		return nil
	}
	v, g, ok := t.e.cachedGraph(runID)
	if !ok {
		return nil
	}
	n, idx, ok := g.parseKey(tr.Key)
	if !ok || n.Caps.FansOut {
		return nil
	}
	targets, _ := successors(g, n, idx)
	keys := counted(g, targets)
	if len(keys) == 0 || len(keys) > maxFastSuccessors {
		return nil
	}
	return t.w.QueueCountDown(writer.CountDown{RunID: runID, Key: tr.Key, Version: v, NodeID: n.ID}, keys)
}

// keepCountDown keeps count-down c (nil: none was queued) for walk once
// the lock and the compare-and-set that completed st answered: what it
// assumed must be what they found, else the transaction must not commit.
func (t *txn) keepCountDown(c *writer.CountDown, st *NodeState) error {
	if c == nil {
		return nil
	}
	if t.run.FlowVersionID != c.Version || st.NodeID != c.NodeID {
		return fmt.Errorf("error completing %s: counted down successors of node %s of version %s, found node %s of version %s",
			c.Key, c.NodeID, c.Version, st.NodeID, t.run.FlowVersionID)
	}
	t.w.KeepCountDown(c)
	return nil
}

// countDownSuccessors counts the pending parents of node key's successors
// keys down by one and returns what remains of them (writer.CountDown).
func (t *txn) countDownSuccessors(key string, keys []string) (map[string]Pending, error) {
	return t.w.CountDown(t.run.ID, key, keys)
}

// countDownDecided is countDownSuccessors for a node that decided its
// edges (taken: the targets of those it took, nil for all): the targets
// keys of edges it did not take are also counted as untaken
// (Pending.Untaken), so that a join learns what was taken without reading
// its upstream rows (readyDecided).
func (t *txn) countDownDecided(key string, keys, taken []string) (map[string]Pending, error) {
	if taken == nil || len(keys) == 0 || t.w.CountedDown(t.run.ID, key) {
		return t.countDownSuccessors(key, keys)
	}
	var not []string
	for _, k := range keys {
		if n, _, _ := t.graph.parseKey(k); n == nil || !slices.Contains(taken, n.ID) {
			not = append(not, k)
		}
	}
	if len(not) == 0 {
		return t.countDownSuccessors(key, keys)
	}
	return t.w.AddPendingUntaken(t.run.ID, keys, not, -1)
}

// checkSpeculation reports errMisspeculated unless a speculated step left
// the run running (speculate): its completed node's successors started,
// nothing failed or finished. Handlers are what fire them; should one have
// done otherwise, the step is applied again the ordinary way.
func (t *txn) checkSpeculation() error {
	if r := t.run; r.ActiveNodes < 0 || r.FailedNodes != 0 || r.TerminalsLeft != 0 || t.failMsg != "" {
		return errMisspeculated
	}
	return nil
}

// flushBulk writes a collection of first fires (WriteBulk) and counts
// and announces the nodes it started.
func (t *txn) flushBulk(b *writer.Bulk) error {
	if err := t.w.WriteBulk(t.run.ID, b); err != nil {
		return err
	}
	t.run.ActiveNodes += len(b.Starts)
	for i, s := range b.Starts {
		t.event(EventNodeStatus, s.Key, &nodeStatus{Status: StatusRunning, Attempt: 1, NodeID: b.NodeIDs[i]})
		if s.Status == StatusWaitingForUser {
			t.event(EventNodeStatus, s.Key, &nodeStatus{Status: StatusWaitingForUser, Attempt: 1, NodeID: b.NodeIDs[i]})
		}
	}
	return nil
}

// spillEvents writes the events so far before the commit, once they are
// a fan-out chunk's worth, so that a big fan-out's transaction does not
// hold an event per instance (and its commit information a transition per
// instance) until it commits: the fan-out's memory stays that of a chunk.
// The commit hook gets the transitions of all but the first listed events
// (the transaction's before the fan-out's) counted, failures listed. A
// speculated step's events are numbered relative to the run's row, unknown
// here: they stay for flush. It reports whether it wrote.
func (t *txn) spillEvents(listed int) (bool, error) {
	if t.w.Speculated(t.run.ID) || len(t.events) < t.e.fanOutChunk() {
		return false, nil
	}
	if err := t.w.AppendEvents(t.run.ID, t.run.EventSeq+1, t.events); err != nil {
		return false, fmt.Errorf("error writing %d events of run %s: %w", len(t.events), t.run.ID, err)
	}
	t.run.EventSeq += int64(len(t.events))
	for i, ev := range t.events {
		t.spilled.note(ev, t.graph, i >= listed)
	}
	t.spilledEvents += len(t.events)
	t.events = nil
	return true, nil
}
