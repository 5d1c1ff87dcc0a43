package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Branches (docs/state_machine.md): when a node with branches finishes,
// each outbound edge is decided taken or not taken; a node fires when all
// its inbound edges are decided and at least one is taken, and is skipped
// when none is. A plain graph (no ExecutionGraph.Branches) never reaches
// this file's rules: every edge of a completed node is taken.

// errCondition: an edge condition could not be evaluated; the source node
// fails with it.
type errCondition struct {
	edgeID string
	err    error
}

func (e *errCondition) Error() string {
	return fmt.Sprintf("the condition of edge %s could not be evaluated: %s", e.edgeID, ExprMessage(e.err))
}

// decide evaluates the rules of node n's outbound edges after it completed
// with output (outcome: the choice of a person at a UX node, else "") and
// returns the targets of the edges taken, never nil. A condition that
// cannot be evaluated is an *errCondition.
func (t *txn) decide(n *Node, key string, iter int, input, output json.RawMessage, outcome string) ([]string, error) {
	taken, err := t.decideEdges(n, key, input, output, outcome)
	if err != nil {
		return nil, err
	}
	return taken, t.checkLoop(n, key, iter, taken)
}

func (t *txn) decideEdges(n *Node, key string, input, output json.RawMessage, outcome string) ([]string, error) {
	var env *ConditionEnv
	return t.e.decideRules(t.graph.Branches[n.ID], outcome, func(c *Condition) (*ConditionEnv, error) {
		if env == nil {
			var err error
			env, err = t.conditionEnv(c, key, input, output)
			return env, err
		}
		return env, t.completeEnv(env, c, key)
	})
}

// decideRules decides a completed node's edge rules (outcome: a person's
// choice at a UX node, else ""): the targets of the edges taken, never
// nil. envFor gives what condition c sees. It is the decision both of a
// run (decideEdges) and of a step tried alone (TryNode), so that a try
// takes the edges a run would, and fails where a run would: a condition
// that cannot be evaluated is an *errCondition.
func (e *Engine) decideRules(rules []EdgeRule, outcome string, envFor func(c *Condition) (*ConditionEnv, error)) ([]string, error) {
	taken := make([]string, 0, len(rules))
	chose := false
	for _, r := range rules {
		switch {
		case r.OnFailure || r.Default:
			continue
		case r.Outcome != "":
			if r.Outcome != outcome {
				continue
			}
			chose = true
		case r.Condition != "":
			c, err := e.conds.get(r.Condition)
			if err != nil {
				return nil, &errCondition{edgeID: r.ID, err: err}
			}
			env, err := envFor(c)
			if err != nil {
				return nil, err
			}
			ok, err := c.Eval(*env)
			if err != nil {
				return nil, &errCondition{edgeID: r.ID, err: err}
			}
			if !ok {
				continue
			}
			chose = true
		}
		taken = append(taken, r.Target)
	}
	if !chose {
		for _, r := range rules {
			if r.Default {
				taken = append(taken, r.Target)
			}
		}
	}
	return taken, nil
}

// conditionEnv builds what condition c sees; run and entity are loaded only
// when some condition names them (completeEnv adds them for a later one).
func (t *txn) conditionEnv(c *Condition, key string, input, output json.RawMessage) (*ConditionEnv, error) {
	env := &ConditionEnv{Run: RunEnv{ID: t.run.ID}}
	var err error
	if env.Output, err = decodeJSON(output); err != nil {
		return nil, err
	}
	if env.Input, err = decodeJSON(input); err != nil {
		return nil, err
	}
	return env, t.completeEnv(env, c, key)
}

func (t *txn) completeEnv(env *ConditionEnv, c *Condition, key string) error {
	var idx []int
	if len(c.Steps) > 0 || c.UsesItem {
		_, idx, _ = t.graph.parseKey(key)
	}
	return t.completeVarEnv(env, c.Refs, key, idx)
}

// hasBranches reports whether node id's outbound edges have rules.
func (g *ExecutionGraph) hasBranches(id string) bool { return len(g.Branches[id]) > 0 }

// failureTargets returns the targets of node id's failure edges.
func (g *ExecutionGraph) failureTargets(id string) []string {
	var out []string
	for _, r := range g.Branches[id] {
		if r.OnFailure {
			out = append(out, r.Target)
		}
	}
	return out
}

// edgeTaken reports whether the edge from the upstream node state u to
// target was taken: u completed and took it (every edge of a node without
// branches), or u failed and a failure edge handed its failure on to target.
func edgeTaken(u *NodeState, target string) bool {
	switch u.Status {
	case StatusCompleted:
		return u.Taken == nil || slices.Contains(u.Taken, target)
	case StatusFailed:
		return slices.Contains(u.Taken, target)
	default: // not settled, or settled without taking edges
		return false
	}
}

// readyDecided settles a target that may have an inbound edge not taken,
// once all its inbound edges are decided (p: its count-down's answer): it
// fires with the outputs of the edges taken, or is skipped when none was.
// from is the node whose decision made it ready (taken: its edges taken,
// nil for all) and outputs holds outputs already in hand.
//
// Which upstream edges were taken is read from their rows, unless the
// count of edges decided not taken tells: none was, or only from's was (a
// switch's join) — counted exactly for a node on no loop in a run never
// rerun, whose count-down started at its number of upstream nodes.
func (t *txn) readyDecided(tg target, p Pending, from string, taken []string, outputs map[string]json.RawMessage) error {
	if p.Status != StatusPending {
		return nil // cancelled, or already settled
	}
	ups := t.graph.Upstream[tg.node.ID]
	takenFrom := make(map[string]bool, len(ups))
	var others []string
	for _, u := range ups {
		uk := InstanceKey(u, tg.idx[:t.graph.Nodes[u].Depth])
		if uk == from {
			takenFrom[u] = taken == nil || slices.Contains(taken, tg.node.ID)
			continue
		}
		others = append(others, uk)
	}
	if len(others) > 0 && t.untakenCounted(tg) {
		fromTook := 0
		for _, ok := range takenFrom {
			if ok {
				fromTook++
			}
		}
		// Edges decided not taken, and from's if it took its edge: the
		// others' edges are all not taken when these are all of them.
		if p.Untaken+fromTook >= len(ups) {
			others = nil
		}
	}
	if len(others) > 0 {
		states, err := t.tx.NodeStates(t.ctx, t.run.ID, others)
		if err != nil {
			return fmt.Errorf("error loading the upstream nodes of %s: %w", tg.key, err)
		}
		for _, u := range ups {
			if st := states[InstanceKey(u, tg.idx[:t.graph.Nodes[u].Depth])]; st != nil {
				takenFrom[u] = edgeTaken(st, tg.node.ID)
				if takenFrom[u] {
					outputs[st.Key] = st.Output
				}
			}
		}
	}
	anyTaken := false
	for _, ok := range takenFrom {
		anyTaken = anyTaken || ok
	}
	if !anyTaken {
		return t.skip(tg)
	}
	if tg.node.Caps.Collects {
		return t.fireCollector(tg.node, tg.idx, p.Status, 0)
	}
	input, err := t.inputFrom(tg.node, tg.idx, outputs, takenFrom)
	if err != nil {
		return err
	}
	return t.firePending(tg, input)
}

// untakenCounted reports whether the count of tg's inbound edges decided
// not taken is exact: its pending count began at its number of upstream
// nodes and was never reset (a loop's next iteration, a rerun) — no
// Collector (whose count is of items) and no join's branch.
func (t *txn) untakenCounted(tg target) bool {
	return !tg.node.Caps.Collects && !tg.node.joinBranch && t.graph.loopOf(tg.node.ID) == nil && !t.run.Reran
}

// skip moves a pending node whose inbound edges were all decided not taken
// to skipped, and decides its own edges as not taken (dead-path
// elimination). A skipped Splitter skips its Collector: its region has no
// instances.
//
// The node is known pending (read under the run's lock, or its one
// upstream node completing now), so its compare-and-set is queued to
// travel with the next statement — the count-down of its successors —
// rather than waited for: a switch's branches not taken cost a round
// trip each, not two. A row not pending after all fails the transaction.
func (t *txn) skip(tg target) error {
	if err := t.skipOnly(tg); err != nil {
		return err
	}
	n := tg.node
	if n.Caps.FansOut {
		region := t.graph.Regions[n.ID]
		if region == nil {
			return fmt.Errorf("splitter %s has no region in the graph", n.ID)
		}
		coll := t.graph.Nodes[region.Collector]
		return t.skip(target{node: coll, idx: tg.idx, key: InstanceKey(coll.ID, tg.idx)})
	}
	return t.walk(n, tg.key, tg.idx, nil, []string{})
}

// skipAll skips the pending nodes tgs, which their one upstream node
// decided not to take (a switch's branches not taken), and counts their
// successors down together: one statement for a switch's branches that
// join again, not one each. A node whose successors are not all counted
// down (a sole child, a Collector's arrival, a Splitter's region) or a
// paused run's is skipped on its own (skip). from is the node that
// decided, taken the targets it took.
func (t *txn) skipAll(tgs []target, from *Node, taken []string) error {
	var alone []target
	if t.run.Status == RunPaused {
		alone, tgs = tgs, nil
	}
	counts := map[string]int{}
	var succ []target // the skipped nodes' successors, in first-seen order
	var together []target
	for _, tg := range tgs {
		targets, ok := skippedTogether(t.graph, tg)
		if !ok {
			alone = append(alone, tg)
			continue
		}
		together = append(together, tg)
		for _, s := range targets {
			if counts[s.key] == 0 {
				succ = append(succ, s)
			}
			counts[s.key]++
		}
	}
	// One count-down for each number of skipped parents (one, for the
	// branches of one switch). Successors known to keep parents left need
	// no answer (parentsLeft): their count-downs travel with the skips'
	// statement, or queued after it.
	byDelta := map[int][]target{}
	var deltas []int
	for _, s := range succ {
		d := counts[s.key]
		if byDelta[d] == nil {
			deltas = append(deltas, d)
		}
		byDelta[d] = append(byDelta[d], s)
	}
	var known []UntakenCountDown
	asked := map[int][]string{}
	for _, d := range deltas {
		var keys []string
		for _, s := range byDelta[d] {
			if t.parentsLeft(s, from, taken) {
				keys = append(keys, s.key)
			} else {
				asked[d] = append(asked[d], s.key)
			}
		}
		if len(keys) > 0 {
			known = append(known, UntakenCountDown{Keys: keys, N: d})
		}
	}
	carried, err := t.skipOnlyAll(together, known)
	if err != nil {
		return err
	}
	if !carried {
		for _, c := range known {
			if err := t.w.CountDownUntakenLater(t.run.ID, c.Keys, c.N); err != nil {
				return fmt.Errorf("error counting down the successors of skipped nodes: %w", err)
			}
		}
	}
	remaining := map[string]Pending{}
	for _, d := range deltas {
		if len(asked[d]) == 0 {
			continue
		}
		got, err := t.w.AddPendingUntaken(t.run.ID, asked[d], asked[d], -d)
		if err != nil {
			return fmt.Errorf("error counting down the successors of skipped nodes: %w", err)
		}
		maps.Copy(remaining, got)
	}
	outputs := map[string]json.RawMessage{}
	for _, s := range succ {
		p, ok := remaining[s.key]
		if !ok || p.Remaining != 0 {
			continue
		}
		// Every inbound edge decided: which were taken is read from the
		// upstream rows (the skips, queued, travel first).
		var err error
		if t.graph.MaySkip[s.node.ID] {
			err = t.readyDecided(s, p, "", nil, outputs)
		} else {
			err = t.fireReady(s, p.Status, outputs)
		}
		if err != nil {
			return err
		}
	}
	for _, tg := range alone {
		if err := t.skip(tg); err != nil {
			return err
		}
	}
	return nil
}

// parentsLeft reports whether successor s of nodes that from's decision
// skipped (taken: the targets it took) keeps pending parents after their
// count-down, without asking: its count started at its number of upstream
// nodes (untakenCounted), each of which is a target of from that from
// alone starts — pending until now, so none counted s down before — and
// one that from took waits for a worker or a person, so it did not count
// s down in this transaction either. The database checks it
// (CountDownUntakenLater); a transaction applied again after a failed
// assumption (noSpeculation) asks.
func (t *txn) parentsLeft(s target, from *Node, taken []string) bool {
	if t.noSpeculation || from == nil || !t.untakenCounted(s) || from.Depth != s.node.Depth || t.graph.loopOf(from.ID) != nil {
		return false
	}
	waits := false
	for _, u := range t.graph.Upstream[s.node.ID] {
		un := t.graph.Nodes[u]
		if un.Depth != s.node.Depth || !soleParent(t.graph, un) || t.graph.Upstream[u][0] != from.ID || t.graph.loopOf(u) != nil {
			return false
		}
		if slices.Contains(taken, u) && (un.Caps.CallsBack || un.Caps.WaitsForPerson) {
			waits = true
		}
	}
	return waits
}

// skippedTogether returns the successors of tg, a node to be skipped, and
// reports whether skipAll skips it with the others: its successors are all
// counted down (none a sole child, no Collector's arrival, not a
// Splitter's region).
func skippedTogether(g *ExecutionGraph, tg target) ([]target, bool) {
	targets, arrivals := successors(g, tg.node, tg.idx)
	if tg.node.Caps.FansOut || len(arrivals) > 0 || slices.ContainsFunc(targets, func(s target) bool {
		return soleParent(g, s.node)
	}) {
		return nil, false
	}
	return targets, true
}

// skipOnlyAll is skipOnly for several nodes, with one statement for those
// whose attempt is known without reading their rows (pendingAttempt),
// which carries the count-downs then (SkipLater; their keys are the
// skipped nodes' successors, never the skipped nodes); it reports whether
// one did.
func (t *txn) skipOnlyAll(tgs []target, then []UntakenCountDown) (bool, error) {
	var known []target
	for _, tg := range tgs {
		if t.attemptKnown(tg) {
			known = append(known, tg)
			continue
		}
		if err := t.skipOnly(tg); err != nil {
			return false, err
		}
	}
	// One node alone is a plain compare-and-set, unless the count-downs
	// are to travel with it (a two-way switch's branch not taken).
	switch {
	case len(known) == 0:
		return false, nil
	case len(known) == 1 && len(then) == 0:
		return false, t.skipOnly(known[0])
	}
	keys := make([]string, len(known))
	for i, tg := range known {
		keys[i] = tg.key
	}
	if err := t.w.SkipLater(t.run.ID, keys, then); err != nil {
		return false, fmt.Errorf("error skipping nodes %v: %w", keys, err)
	}
	for _, tg := range known {
		tr := &NodeTransition{RunID: t.run.ID, Key: tg.key, From: StatusPending, Steps: []Status{StatusSkipped}}
		t.transitioned(tr, &NodeState{RunID: t.run.ID, Key: tg.key, NodeID: tg.node.ID, Status: StatusSkipped})
		t.skippedTerminal(tg)
	}
	return true, nil
}

// skipOnly moves pending node tg to skipped (queued: see skip) and keeps
// the run's count of terminal nodes; its edges are decided by the caller.
func (t *txn) skipOnly(tg target) error {
	prev, err := t.pendingAttempt(tg)
	if err != nil {
		return err
	}
	if err := t.transitionLater(&NodeTransition{Key: tg.key, From: StatusPending, Steps: []Status{StatusSkipped}}, tg.node.ID, prev); err != nil {
		return fmt.Errorf("error skipping node %s: %w", tg.key, err)
	}
	t.skippedTerminal(tg)
	return nil
}

// skippedTerminal keeps the run's count of terminal nodes left when tg
// was skipped.
func (t *txn) skippedTerminal(tg target) {
	if tg.node.Depth == 0 && len(t.graph.Adjacency[tg.node.ID]) == 0 {
		t.run.TerminalsLeft--
	}
}

// handleFailure hands the failure of node n on along its failure edges:
// the node stays failed, with the edges it took recorded, which makes the
// failure handled (it does not fail the run, and is final); its other
// edges are not taken. The failure edges' targets get
// {"error", "node", "input"}.
func (t *txn) handleFailure(n *Node, st *NodeState, msg string) error {
	doc, err := json.Marshal(map[string]any{"error": msg, "node": st.Key, "input": orNull(st.Input)})
	if err != nil {
		return fmt.Errorf("error encoding the failure of %s: %w", st.Key, err)
	}
	taken := t.graph.failureTargets(n.ID)
	if err := t.w.SetTaken(t.run.ID, st.Key, taken, doc); err != nil {
		return fmt.Errorf("error handing on the failure of %s: %w", st.Key, err)
	}
	t.run.FailedNodes--
	t.event(EventFailureHandled, st.Key, map[string]any{"error": msg, "taken": taken})
	return t.walk(n, st.Key, st.Index, doc, taken)
}

// failDecision fails a node whose condition could not be evaluated (no
// automatic retry: the same output would fail again).
func (t *txn) failDecision(tr *NodeTransition, cerr error) error {
	var ce *errCondition
	var le *errLoopLimit
	if !errors.As(cerr, &ce) && !errors.As(cerr, &le) {
		return cerr
	}
	msg := cerr.Error()
	tr.Steps[len(tr.Steps)-1] = StatusFailed
	tr.Output, tr.Taken, tr.Error = nil, nil, &msg
	st, err := t.transition(tr)
	if err != nil {
		return err
	}
	return t.failed(st, msg, false)
}

// UXOutcomes returns a UX node's outcomes (data.outcomes, default approve
// and reject).
func UXOutcomes(n *Node) []string {
	var cfg struct {
		Outcomes []string `json:"outcomes"`
	}
	if len(n.Config) > 0 && json.Unmarshal(n.Config, &cfg) == nil && len(cfg.Outcomes) > 0 {
		return cfg.Outcomes
	}
	return []string{"approve", "reject"}
}

// mayBranch reports whether the node key of run runID may have edges to
// decide before it completes — it has branches, or this process does not
// know the run's graph yet — so that its completion reads the node first
// (completeDeciding) instead of taking a fast path.
func (t *txn) mayBranch(runID, key string) bool {
	if t.run != nil && t.run.ID == runID {
		n, _, ok := t.graph.parseKey(key)
		return !ok || t.graph.hasBranches(n.ID)
	}
	_, g, ok := t.e.cachedGraph(runID)
	if !ok {
		return true
	}
	n, _, ok := g.parseKey(key)
	return !ok || g.hasBranches(n.ID)
}

// completeDeciding completes a worker's node whose edges are decided
// first, in the completion's compare-and-set (tr).
//
// When the run is not locked yet, its lock, the node's row and (when a
// condition reads run.input) the run's input are read in one round trip.
func (t *txn) completeDeciding(p CallbackParams, tr *NodeTransition) error {
	if t.run == nil {
		if st, ok, err := t.speculateDecision(p.RunID, tr); err != nil {
			return err
		} else if ok {
			return t.completed(st)
		}
	}
	var cur *NodeState
	var nodeErr error
	read := false
	if (t.run == nil || t.run.ID != p.RunID) && t.decidesUnread(p.RunID, p.Key) {
		if err := t.lockForDecision(p.RunID, p.Key); err != nil {
			return err
		}
	}
	if t.run == nil || t.run.ID != p.RunID {
		locked := t.tx.LockRunLater(t.ctx, p.RunID)
		var input func() (json.RawMessage, error)
		cached, ok := t.e.inputs.get(p.RunID)
		if !ok && t.decisionReadsRun(p.RunID, p.Key) {
			input = t.tx.RunInputLater(t.ctx, p.RunID)
		}
		cur, nodeErr = t.tx.Node(t.ctx, p.RunID, p.Key)
		if err := t.lockAnswered(p.RunID, locked, nodeErr); err != nil {
			return err
		}
		if nodeErr != nil && !errors.Is(nodeErr, ErrNotFound) {
			return nodeErr
		}
		switch {
		case ok:
			t.run.Input = cached
		case input != nil:
			if in, err := input(); err == nil && in != nil {
				t.run.Input = in
				t.e.inputs.put(p.RunID, in)
			}
		}
		read = true
	}
	n, _, ok := t.graph.parseKey(p.Key)
	if !read && ok && decidesFirst(t, t.graph, n) {
		// The edges are decided before the row is read, in the hope that
		// the node is running this attempt: the compare-and-set below
		// checks it, and a stale callback's decision is thrown away. A
		// decision that fails is made again on the row (below), so that a
		// stale callback is answered as one.
		if taken, err := t.decide(n, p.Key, -1, nil, tr.Output, ""); err == nil {
			tr.Taken = taken
			st, err := t.transition(tr)
			if err != nil {
				return t.duplicateOr(err, p)
			}
			return t.completed(st)
		}
	}
	if !ok || t.graph.hasBranches(n.ID) {
		// The row names its node; a key with no row fails the
		// compare-and-set below, answered as a conflict like any other.
		if !read {
			cur, nodeErr = t.tx.Node(t.ctx, p.RunID, p.Key)
		}
		if err := nodeErr; err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if cur != nil {
			n = t.graph.Nodes[cur.NodeID]
		}
		// A node not running this attempt fails the compare-and-set below,
		// answered as a repeat or a conflict.
		if cur != nil && n != nil && t.graph.hasBranches(n.ID) && cur.Status == StatusRunning && cur.Attempt == p.Attempt {
			taken, err := t.decide(n, cur.Key, cur.Iteration, cur.Input, tr.Output, "")
			if err != nil {
				return t.failDecision(tr, err)
			}
			tr.Taken = taken
		}
	}
	st, err := t.transition(tr)
	if err != nil {
		return t.duplicateOr(err, p)
	}
	return t.completed(st)
}

// decidesUnread reports whether the edges of node key of run runID, not
// locked yet, are decided without reading its row (decidesFirst), as far
// as this process knows the run's graph.
func (t *txn) decidesUnread(runID, key string) bool {
	_, g, ok := t.e.cachedGraph(runID)
	if !ok {
		return false
	}
	n, _, ok := g.parseKey(key)
	return ok && decidesFirst(t, g, n)
}

// decidesFirst reports whether node n's edges (of graph g) are decided
// before its row is read: it has branches, no condition reads its input,
// and it is no loop's source (whose decision needs its iteration).
func decidesFirst(t *txn, g *ExecutionGraph, n *Node) bool {
	if !g.hasBranches(n.ID) || t.decisionReadsInput(g, n) {
		return false
	}
	l := g.loopOf(n.ID)
	return l == nil || l.Source != n.ID
}

// lockForDecision locks run runID for deciding node key's edges before
// reading its row: with the run's input in the same round trip when a
// condition reads it and this process has not kept it.
func (t *txn) lockForDecision(runID, key string) error {
	if _, cached := t.e.inputs.get(runID); cached || !t.decisionReadsRun(runID, key) {
		return t.load(runID)
	}
	locked := t.tx.LockRunLater(t.ctx, runID)
	in, err := t.tx.RunInput(t.ctx, runID)
	if lerr := t.lockAnswered(runID, locked, err); lerr != nil {
		return lerr
	}
	if err != nil {
		return fmt.Errorf("error loading the input of run %s: %w", runID, err)
	}
	t.run.Input = in
	t.e.inputs.put(runID, in)
	return nil
}

// decisionReadsInput reports whether a condition on node n's edges (of
// graph g) reads the node's input (its row's).
func (t *txn) decisionReadsInput(g *ExecutionGraph, n *Node) bool {
	for _, r := range g.Branches[n.ID] {
		if r.Condition == "" {
			continue
		}
		if c, err := t.e.conds.get(r.Condition); err != nil || c.UsesInput {
			return true
		}
	}
	return false
}

// decisionReadsRun reports whether deciding the edges of node key of run
// runID reads the run's input (a condition names run), as far as this
// process knows the run's graph.
func (t *txn) decisionReadsRun(runID, key string) bool {
	_, g, ok := t.e.cachedGraph(runID)
	if !ok {
		return false
	}
	n, _, ok := g.parseKey(key)
	if !ok {
		return false
	}
	for _, r := range g.Branches[n.ID] {
		if r.Condition == "" {
			continue
		}
		if c, err := t.e.conds.get(r.Condition); err == nil && c.UsesRun {
			return true
		}
	}
	return false
}

// decideUX applies a person's answer p to UX node n (cur: its state).
func (t *txn) decideUX(n *Node, cur *NodeState, p CompleteUXParams) error {
	outcomes := UXOutcomes(n)
	outcome := p.Outcome
	if outcome == "" {
		outcome = legacyOutcome(p.Status, outcomes)
	}
	if outcome != "" && !slices.Contains(outcomes, outcome) {
		return fmt.Errorf("%w: outcome %q is not one of node %s's outcomes %q", ErrInvalidRequest, outcome, cur.Key, outcomes)
	}
	p.Comment = decisionComment(n, p)
	people, by := UXPeopleOf(n), deciderOf(p)
	forWhom, viaClaim, err := t.mayDecide(n, cur, p, people)
	if err != nil {
		return err
	}
	d := decider{by: by, forWhom: forWhom, viaClaim: viaClaim}
	t.outcome, t.actor, t.comment = outcome, by, p.Comment
	if t.comment == "" {
		t.comment = p.Error // a legacy {"status": "failed", "error"} answer's reason
	}
	tr := &NodeTransition{Key: cur.Key, From: StatusWaitingForUser, Steps: []Status{StatusRunning, StatusCompleted}}
	if outcome == "" || !outcomeCompletes(t.graph, n, outcome, outcomes) {
		msg := "rejected"
		if outcome != "" && outcome != "reject" {
			msg = fmt.Sprintf("outcome %q chosen, and it has no edge", outcome)
		}
		switch {
		case p.Error != "":
			msg = p.Error
		case p.Comment != "":
			msg += ": " + p.Comment // the person's reason
		}
		if _, decided, err := t.vote(cur, p, people, d, outcome, false); err != nil || !decided {
			return err // a vote of several needed: the node waits on
		}
		tr.Steps[1], tr.Error = StatusFailed, &msg
		return t.failWith(tr)
	}
	if err := checkForm(&t.e.forms, n, cur.Key, outcome, p); err != nil {
		return err
	}
	votes, decided, err := t.vote(cur, p, people, d, outcome, true)
	if err != nil || !decided {
		return err // a vote of several needed: the node waits on
	}
	out, err := withDecision(cur.Input, Decision{Outcome: outcome, Answer: orNull(p.Output), Comment: p.Comment,
		By: by, For: forWhom, At: t.e.cfg.Clock.Now().UTC()})
	if err == nil && people.RequiredApprovals > 1 {
		out, err = withVotes(out, votes)
	}
	if err != nil {
		return err
	}
	tr.Output = out
	return t.completeWith(n, cur, outcome, tr)
}

// legacyOutcome maps the old {"status"} answer to an outcome: completed is
// approve (or the first outcome), failed is reject ("" when the node has
// no reject outcome: it fails).
func legacyOutcome(s Status, outcomes []string) string {
	switch {
	case s == StatusCompleted && slices.Contains(outcomes, "approve"):
		return "approve"
	case s == StatusCompleted:
		return outcomes[0]
	case slices.Contains(outcomes, "reject"):
		return "reject"
	}
	return ""
}

// outcomeCompletes reports whether choosing outcome completes UX node n: it
// has an edge of its own, or it is the first outcome (approve), which
// takes the node's plain edges as a completion always did.
func outcomeCompletes(g *ExecutionGraph, n *Node, outcome string, outcomes []string) bool {
	if outcome == outcomes[0] {
		return true
	}
	for _, r := range g.Branches[n.ID] {
		if r.Outcome == outcome {
			return true
		}
	}
	return false
}

// Decision is what a person decided at a UX node, kept in its output.
type Decision struct {
	Outcome string          `json:"outcome"`
	Answer  json.RawMessage `json:"answer"`
	Comment string          `json:"comment,omitempty"`
	By      string          `json:"by,omitempty"`
	// For is the claimer a delegate (By) decided for.
	For string    `json:"for,omitempty"`
	At  time.Time `json:"at"`
}

// withDecision is a UX node's output: its input object with the decision
// added under "decision" (a non-object input goes under "input").
func withDecision(input json.RawMessage, d Decision) (json.RawMessage, error) {
	dj, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("error encoding a decision: %w", err)
	}
	obj := map[string]json.RawMessage{}
	if in := bytes.TrimSpace(input); len(in) > 0 && in[0] == '{' {
		if err := json.Unmarshal(in, &obj); err != nil {
			return nil, fmt.Errorf("error decoding a UX node's input: %w", err)
		}
	} else if len(in) > 0 && string(in) != "null" {
		obj["input"] = in
	}
	obj["decision"] = dj
	return json.Marshal(obj)
}
