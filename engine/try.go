package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrNotTestable is the error of a step tried alone (TryNode) that waits for something — a
// worker's callback, a person, an event, a time, a child run — so there
// is nothing to show without a run.
var ErrNotTestable = errors.New("not_testable")

// TryNodeParams describe a step tried alone, outside any run: what it
// would see.
type TryNodeParams struct {
	Graph  *ExecutionGraph
	NodeID string
	// Input is the step's input; RunInput the run's (run.input).
	Input, RunInput json.RawMessage
	// Steps are earlier steps' samples (steps.<id>); Vars the run's
	// variables (vars.<name>).
	Steps map[string]StepSample
	Vars  map[string]any
	// Send makes a request step's request (callbacks.Dispatcher.TryRequest):
	// an HTTP step is tried for real. Nil: such a step is not testable.
	Send func(ctx context.Context, url string, rq *HTTPRequest, payload []byte) Response
}

// StepSample is an earlier step's input and output as a tried step reads
// them.
type StepSample struct {
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`
}

// TryNodeResult is what a step tried alone did: its output or why it
// failed, which of its out-edges would be taken, what it logged.
type TryNodeResult struct {
	Output json.RawMessage `json:"output"`
	Error  *string         `json:"error"`
	Edges  []TriedEdge     `json:"edges"`
	Logs   []TriedLog      `json:"logs,omitempty"`
	// Answer is what a Respond step would answer the run's caller.
	Answer *CallerAnswer `json:"answer,omitempty"`
}

// TriedEdge is one out-edge of a tried step: whether it would be taken.
type TriedEdge struct {
	ID     string `json:"id,omitempty"`
	Target string `json:"target"`
	// Label says what decides it: its condition, "default", "on failure",
	// an outcome, or "" for a plain edge.
	Label string `json:"label"`
	Taken bool   `json:"taken"`
	// Error is why its condition could not be evaluated.
	Error string `json:"error,omitempty"`
}

// TriedLog is a message the step logged (FireContext.Log).
type TriedLog struct {
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// TryNode runs one step alone with its handler, as a run would fire it,
// but writes nothing: no run, no rows, no events. A step that would wait
// is ErrNotTestable; a step inside a fan-out runs as item 0 of each
// region.
func (e *Engine) TryNode(ctx context.Context, p TryNodeParams) (*TryNodeResult, error) {
	n := p.Graph.Nodes[p.NodeID]
	if n == nil {
		return nil, fmt.Errorf("%w: the flow has no step %q", ErrNotFound, p.NodeID)
	}
	h := e.handlers[n.Type]
	if h == nil {
		return nil, fmt.Errorf("%w: no handler for node type %s", ErrInvalidRequest, n.Type)
	}
	tc := &tryCtx{e: e, p: p, node: n, idx: make([]int, n.Depth), ctx: ctx}
	tc.key = InstanceKey(n.ID, tc.idx)
	if len(p.Input) > 0 && !json.Valid(p.Input) {
		return nil, fmt.Errorf("%w: input is not JSON", ErrInvalidRequest)
	}
	if err := h.Fire(ctx, tc); err != nil {
		if errors.Is(err, ErrNotTestable) {
			return nil, err
		}
		return nil, fmt.Errorf("error trying step %s: %w", n.ID, err)
	}
	if !tc.acted {
		return nil, fmt.Errorf("the handler of %s step %s took no action", n.Type, n.ID)
	}
	res := &TryNodeResult{Output: tc.output, Logs: tc.logs, Answer: tc.answer}
	if tc.failed != "" {
		res.Error, res.Output = &tc.failed, nil
	}
	edges, err := tc.edges(res)
	if err != nil {
		return nil, err
	}
	res.Edges = edges
	return res, nil
}

// tryCtx is the FireContext of a step tried alone.
type tryCtx struct {
	e      *Engine
	p      TryNodeParams
	ctx    context.Context //nolint:containedctx // the Send of a request step needs the request's context
	node   *Node
	key    string
	idx    []int
	acted  bool
	output json.RawMessage
	failed string
	logs   []TriedLog
	answer *CallerAnswer
}

func (c *tryCtx) Answer(a CallerAnswer) {
	a.Node = c.key
	c.answer = &a
}

func (c *tryCtx) RunID() string          { return "" }
func (c *tryCtx) Key() string            { return c.key }
func (c *tryCtx) Node() *Node            { return c.node }
func (c *tryCtx) Index() []int           { return c.idx }
func (c *tryCtx) Input() json.RawMessage { return c.p.Input }
func (c *tryCtx) Attempt() int           { return 1 }
func (c *tryCtx) Now() time.Time         { return c.e.cfg.Clock.Now() }

func (c *tryCtx) Eval(src string) (any, error) {
	v, err := c.e.vals.get(src)
	if err != nil {
		return nil, err
	}
	env := ValueEnv{}
	if err := c.env(&env.Input, &env.Run, &env.Steps, &env.Vars, &env.Item, v.Refs); err != nil {
		return nil, err
	}
	return v.Eval(env)
}

// env fills what an expression sees from the samples.
func (c *tryCtx) env(input *any, run *RunEnv, steps *map[string]StepEnv, vars *map[string]any, item **ItemEnv, refs Refs) error {
	var err error
	if *input, err = decodeJSON(c.p.Input); err != nil {
		return err
	}
	if run.Input, err = decodeJSON(c.p.RunInput); err != nil {
		return err
	}
	if len(refs.Steps) > 0 {
		*steps = make(map[string]StepEnv, len(refs.Steps))
		for _, id := range refs.Steps {
			s := c.p.Steps[id]
			var st StepEnv
			if st.Output, err = decodeJSON(s.Output); err != nil {
				return fmt.Errorf("steps.%s.output: %w", id, err)
			}
			if st.Input, err = decodeJSON(s.Input); err != nil {
				return fmt.Errorf("steps.%s.input: %w", id, err)
			}
			(*steps)[id] = st
		}
	}
	*vars = c.p.Vars
	if refs.UsesItem {
		*item = itemOf(c.key, c.idx)
	}
	return nil
}

func (c *tryCtx) act() error {
	if c.acted {
		return errors.New("a node handler may take only one action per fire")
	}
	c.acted = true
	return nil
}

func notTestable(what string) error {
	return fmt.Errorf("%w: a step that %s cannot be tried alone; start a run to see it", ErrNotTestable, what)
}

func (c *tryCtx) CallbackURL() (string, error) {
	return "", notTestable("waits for a worker's callback")
}

func (c *tryCtx) Dispatch(req DispatchRequest) error {
	h, ok := c.e.handlers[c.node.Type].(Responder)
	if !req.Kind.answered() || !ok || c.p.Send == nil {
		return notTestable("waits for a worker's callback")
	}
	if err := c.act(); err != nil {
		return err
	}
	resp := c.p.Send(c.ctx, req.URL, req.request(), req.Body)
	for _, l := range resp.Logs {
		c.logs = append(c.logs, TriedLog{Message: l})
	}
	if resp.Error != "" {
		c.failed = resp.Error
		return nil
	}
	out, failure, _ := h.Respond(c.node, resp)
	c.output, c.failed = out, failure
	return nil
}

func (c *tryCtx) WaitForUser() error                { return notTestable("waits for a person") }
func (c *tryCtx) WaitForEvent(EventWait, int) error { return notTestable("waits for an event") }
func (c *tryCtx) Sleep(Wake) error                  { return notTestable("waits for a time") }
func (c *tryCtx) StartChild(ChildRun) error         { return notTestable("runs another flow") }
func (c *tryCtx) Log(message string, data json.RawMessage) {
	if len(message) > MaxLogMessage {
		message = message[:MaxLogMessage]
	}
	if len(data) > MaxLogData || !json.Valid(data) {
		data = nil
	}
	c.logs = append(c.logs, TriedLog{Message: message, Data: data})
}

func (c *tryCtx) Complete(output json.RawMessage) error {
	if err := c.act(); err != nil {
		return err
	}
	if msg := unstorable("the output", output); msg != "" {
		c.failed = msg // as a run fails it (fireCtx.Complete)
		return nil
	}
	c.output = output
	return nil
}

func (c *tryCtx) Fail(reason string) error {
	if err := c.act(); err != nil {
		return err
	}
	c.failed = reason
	return nil
}

// FanOut shows the items a fan-out step would make (its output).
func (c *tryCtx) FanOut(items []json.RawMessage) error {
	if err := c.act(); err != nil {
		return err
	}
	out, err := json.Marshal(items)
	if err != nil {
		return fmt.Errorf("error encoding the items: %w", err)
	}
	c.output = out
	return nil
}

// edges says which of the step's out-edges a run would take, decided by
// the run's own code (decideRules) over the samples: every edge of a
// completed step without rules; a completed step's rules (conditions, the
// default when none holds); a failed step's failure edges. A decision a
// run would refuse — a condition that cannot be evaluated, a loop's back
// edge past its maxIterations (the try being the first iteration) — fails
// the step, as it fails a run's node: res says so with the run's message
// (failDecision), its output still the value the step made.
func (c *tryCtx) edges(res *TryNodeResult) ([]TriedEdge, error) {
	g := c.p.Graph
	rules := g.Branches[c.node.ID]
	if len(rules) == 0 {
		out := make([]TriedEdge, 0, len(g.Adjacency[c.node.ID]))
		for _, target := range g.Adjacency[c.node.ID] {
			out = append(out, TriedEdge{Target: target, Taken: res.Error == nil})
		}
		return out, nil
	}
	var taken []string
	var cerr *errCondition
	if res.Error == nil {
		var err error
		if taken, err = c.e.decideRules(rules, "", c.conditionEnv); err == nil {
			if l := g.loopTaken(c.node.ID, taken); l != nil {
				err = l.limit(0)
			}
		}
		var lerr *errLoopLimit
		switch {
		case errors.As(err, &cerr) || errors.As(err, &lerr):
			// The run fails the step; the value it made stays in the
			// answer, which the editor's preview of its expression shows.
			msg := err.Error()
			res.Error = &msg
		case err != nil:
			return nil, fmt.Errorf("error deciding the edges of %s: %w", c.node.ID, err)
		}
	}
	out := make([]TriedEdge, 0, len(rules))
	for _, r := range rules {
		te := TriedEdge{ID: r.ID, Target: r.Target, Label: ruleLabel(r)}
		if res.Error != nil {
			te.Taken = r.OnFailure
		} else {
			te.Taken = slices.Contains(taken, r.Target)
		}
		if cerr != nil && r.Condition != "" && r.ID == cerr.edgeID {
			te.Error = ExprMessage(cerr.err) // the edge that failed the step
		}
		out = append(out, te)
	}
	return out, nil
}

// ruleLabel says what decides an edge: its condition, "default", "on
// failure", an outcome (a person's choice, never made by a try), or ""
// for a plain edge.
func ruleLabel(r EdgeRule) string {
	switch {
	case r.OnFailure:
		return "on failure"
	case r.Default:
		return "default"
	case r.Outcome != "":
		return "outcome " + r.Outcome
	default:
		return r.Condition
	}
}

// conditionEnv gives what condition cond sees over the samples, the step's
// output as output.
func (c *tryCtx) conditionEnv(cond *Condition) (*ConditionEnv, error) {
	env := &ConditionEnv{}
	var err error
	if env.Output, err = decodeJSON(c.output); err != nil {
		return nil, err
	}
	if err := c.env(&env.Input, &env.Run, &env.Steps, &env.Vars, &env.Item, cond.Refs); err != nil {
		return nil, err
	}
	return env, nil
}
