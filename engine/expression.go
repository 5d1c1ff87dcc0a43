package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm"
)

// ConditionEnv is what an edge condition sees: the source node's output
// and input, the run and its entity (nil when the run has none), the
// earlier steps it names and, inside a fan-out region, its item.
type ConditionEnv struct {
	Output any                `expr:"output"`
	Input  any                `expr:"input"`
	Run    RunEnv             `expr:"run"`
	Entity map[string]any     `expr:"entity"`
	Steps  map[string]StepEnv `expr:"steps"`
	Item   *ItemEnv           `expr:"item"`
	Vars   map[string]any     `expr:"vars"`
	// Budget is the evaluation's account (exprlimit.go), set by Eval.
	Budget *exprBudget `expr:"__budget"`
}

// StepEnv is an earlier step of the run as an expression sees it
// (steps.<id>): its latest row's input and output, null when it has not
// run (or was skipped). Inside a fan-out region a step of the same region
// is the same item's instance.
//
// StepEnv, ItemEnv and RunEnv are values an expression can hand on whole
// ({"item": item}, a Code step's globals), encoded as JSON: their json
// names are the ones expressions read, never Go's field names.
type StepEnv struct {
	Output any `expr:"output" json:"output"`
	Input  any `expr:"input" json:"input"`
}

// ItemEnv is the fan-out item an expression inside a parallel region runs
// for: the innermost region's index, and the instance's key.
type ItemEnv struct {
	Index int    `expr:"index" json:"index"`
	Key   string `expr:"key" json:"key"`
}

// Refs are what an expression reads beyond its input and output, so that
// only that is loaded.
type Refs struct {
	UsesEntity, UsesRun bool
	// UsesInput: it reads input (the node's input), so deciding a node's
	// edges needs its row read first.
	UsesInput bool
	// UsesEnv: it reads $env, and so may read input, run or entity
	// (they are loaded); what it reads of steps or vars is not. Refused
	// at save (the Compile… functions), evaluated as before in versions
	// saved earlier.
	UsesEnv bool
	// Steps are the ids it reads as steps.<id>, sorted, once each.
	Steps []string
	// Vars are the run variables it reads as vars.<name>, sorted, once
	// each.
	Vars []string
	// UsesItem: it reads item (a fan-out region's item).
	UsesItem bool
	// InputFields and OutputFields are the fields it reads first of input
	// and output (input.amount → amount), sorted, once each: the compiler
	// warns of one the step before cannot have made.
	InputFields, OutputFields []string
}

// RunEnv is the run as a condition sees it.
type RunEnv struct {
	ID    string `expr:"id" json:"id"`
	Input any    `expr:"input" json:"input"`
}

// Condition is a compiled edge condition.
type Condition struct {
	program *vm.Program
	run     exprRun
	budget  bool
	// Refs tell what evaluating it needs loaded.
	Refs
}

// CompileCondition compiles and type-checks an edge condition: it must
// name only output, input, run, entity, steps and item, and give a bool. The message
// of the error is meant for the person who wrote it.
func CompileCondition(src string) (*Condition, error) {
	c, err := compileCondition(src, newExprRun(ExprLimits{}, nil))
	if err == nil && c.UsesEnv {
		return nil, errEnv
	}
	return c, err
}

// errEnv refuses $env at save: what an expression reads is loaded because
// it is named, and through $env a step or a variable would be nil.
var errEnv = errors.New("$env is not available: name input, output, run, entity, steps, vars or item directly")

func compileCondition(src string, r exprRun) (*Condition, error) {
	p, budget, err := compileLimited(src, expr.Env(ConditionEnv{}), expr.AsBool())
	if err != nil {
		return nil, err
	}
	root := p.Node()
	// expr types output.x + 1 as any (output is any), which AsBool lets
	// through; arithmetic never gives a bool.
	if b, ok := root.(*ast.BinaryNode); ok && arithmetic[b.Operator] {
		return nil, fmt.Errorf("expected bool, but got the result of %q (a number or string)", b.Operator)
	}
	if c, ok := root.(*ast.CallNode); ok {
		if id, ok := c.Callee.(*ast.IdentifierNode); ok && id.Value == addFunc {
			return nil, errors.New(`expected bool, but got the result of "+" (a number or string)`)
		}
	}
	refs, err := refsOf(root)
	if err != nil {
		return nil, err
	}
	return &Condition{program: p, run: r, budget: budget, Refs: refs}, nil
}

// refsOf reports what an expression names beyond input and output. A step
// is named by a constant id (steps.fetch, steps["fetch"]): anything else
// would read a step nobody can check at save.
func refsOf(root ast.Node) (Refs, error) {
	var r Refs
	stepsIdents, named, varsIdents, varsNamed, envs := 0, 0, 0, 0, 0
	seen, seenVar := map[string]bool{}, map[string]bool{}
	// A builtin function's name that nothing calls (len alone).
	var builtins []*ast.IdentifierNode
	called := map[*ast.IdentifierNode]bool{}
	ast.Walk(&root, visitor(func(n ast.Node) {
		switch n := n.(type) {
		case *ast.CallNode:
			if id, ok := n.Callee.(*ast.IdentifierNode); ok {
				called[id] = true
			}
		case *ast.IdentifierNode:
			if _, ok := builtin.Index[n.Value]; ok {
				builtins = append(builtins, n)
			}
			switch n.Value {
			case "$env":
				envs++
			case "input":
				r.UsesInput = true
			case "entity":
				r.UsesEntity = true
			case "run":
				r.UsesRun = true
			case "item":
				r.UsesItem = true
			case "steps":
				stepsIdents++
			case "vars":
				varsIdents++
			}
		case *ast.MemberNode:
			base, ok := n.Node.(*ast.IdentifierNode)
			prop, isStr := n.Property.(*ast.StringNode)
			switch {
			case ok && base.Value == "steps" && isStr:
				named++
				if !seen[prop.Value] {
					seen[prop.Value] = true
					r.Steps = append(r.Steps, prop.Value)
				}
			case ok && base.Value == "vars" && isStr:
				varsNamed++
				if !seenVar[prop.Value] {
					seenVar[prop.Value] = true
					r.Vars = append(r.Vars, prop.Value)
				}
			case ok && base.Value == "input" && isStr && !slices.Contains(r.InputFields, prop.Value):
				r.InputFields = append(r.InputFields, prop.Value)
			case ok && base.Value == "output" && isStr && !slices.Contains(r.OutputFields, prop.Value):
				r.OutputFields = append(r.OutputFields, prop.Value)
			}
		}
	}))
	for _, id := range builtins {
		if !called[id] {
			// It compiles, and fails every evaluation ("cannot fetch len").
			return Refs{}, fmt.Errorf("%s is a function: call it, as %s(…)", id.Value, id.Value)
		}
	}
	if envs > 0 {
		r.UsesEnv, r.UsesInput, r.UsesRun, r.UsesEntity = true, true, true, true
	}
	if stepsIdents != named {
		return Refs{}, errors.New("steps must be followed by a step's id: steps.fetch.output")
	}
	if varsIdents != varsNamed {
		return Refs{}, errors.New("vars must be followed by a variable's name: vars.total")
	}
	slices.Sort(r.Steps)
	slices.Sort(r.Vars)
	slices.Sort(r.InputFields)
	slices.Sort(r.OutputFields)
	return r, nil
}

// ValueEnv is what a value expression (a Transform's, a template's) sees:
// the node's input, the run and its entity (nil when the run has none),
// the earlier steps it names and, inside a fan-out region, its item.
type ValueEnv struct {
	Input  any                `expr:"input"`
	Run    RunEnv             `expr:"run"`
	Entity map[string]any     `expr:"entity"`
	Steps  map[string]StepEnv `expr:"steps"`
	Item   *ItemEnv           `expr:"item"`
	Vars   map[string]any     `expr:"vars"`
	// Budget is the evaluation's account (exprlimit.go), set by Eval.
	Budget *exprBudget `expr:"__budget"`
}

// Value is a compiled value expression.
type Value struct {
	program *vm.Program
	run     exprRun
	budget  bool
	Refs
}

// CompileValue compiles and type-checks a value expression: it may name
// only input, run, entity, steps, vars and item. The message of the error is meant for the
// person who wrote it.
func CompileValue(src string) (*Value, error) {
	return refuseEnv(compileValue(src, newExprRun(ExprLimits{}, nil)))
}

func refuseEnv(v *Value, err error) (*Value, error) {
	if err == nil && v.UsesEnv {
		return nil, errEnv
	}
	return v, err
}

func compileValue(src string, r exprRun) (*Value, error) { return compileIn(src, r, ValueEnv{}) }

// compileIn compiles a value expression over env's names.
func compileIn(src string, r exprRun, env any) (*Value, error) {
	p, budget, err := compileLimited(src, expr.Env(env))
	if err != nil {
		return nil, err
	}
	refs, err := refsOf(p.Node())
	if err != nil {
		return nil, err
	}
	return &Value{program: p, run: r, budget: budget, Refs: refs}, nil
}

// CompileVariable compiles the expression of a node's setVariables
// entry: a value over what an edge condition sees (output, input, run,
// entity, steps, vars). The message of the error is meant for the person
// who wrote it.
func CompileVariable(src string) (*Value, error) {
	return refuseEnv(compileVariable(src, newExprRun(ExprLimits{}, nil)))
}

func compileVariable(src string, r exprRun) (*Value, error) { return compileIn(src, r, ConditionEnv{}) }

// Eval evaluates the expression within its limits (ExprLimits): past
// one, the error is an *ExprLimitError.
func (v *Value) Eval(env ValueEnv) (any, error) {
	env.Budget = v.run.budget(v.budget)
	return v.eval(env)
}

// evalCompleted evaluates a variable's expression (CompileVariable).
func (v *Value) evalCompleted(env ConditionEnv) (any, error) {
	env.Budget = v.run.budget(v.budget)
	return v.eval(env)
}

func (v *Value) eval(env any) (any, error) {
	out, err := v.run.run(v.program, env)
	if err != nil {
		return nil, err
	}
	if err := v.run.checkResult(out); err != nil {
		return nil, err
	}
	return out, nil
}

// EvalValue evaluates value expression src in env, compiled once by the
// engine and within its ExprLimits (for what evaluates expressions outside
// a run's transaction: a broker trigger's event key).
func (e *Engine) EvalValue(src string, env ValueEnv) (any, error) {
	v, err := e.vals.get(src)
	if err != nil {
		return nil, err
	}
	return v.Eval(env)
}

// compiled caches compiled expressions by source: a flow version's
// expressions are compiled once per process, not at every use.
type compiled[T any] struct {
	m       sync.Map
	compile func(src string) (T, error)
}

func (c *compiled[T]) get(src string) (T, error) {
	if v, ok := c.m.Load(src); ok {
		if t, ok := v.(T); ok {
			return t, nil
		}
	}
	v, err := c.compile(src)
	if err != nil {
		return v, err
	}
	c.m.Store(src, v)
	return v, nil
}

// ExprMessage is an expr-lang error's message on one line: expr-lang
// adds the source with a caret under the error after it. A message that
// names Go's internals instead of the expression's words is said in the
// expression's.
func ExprMessage(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	// map, filter, sum … over an object: expr-lang indexes it as a list.
	if rest, ok := strings.CutPrefix(msg, "reflect: call of reflect.Value.Index on map Value"); ok {
		return "this function takes an array, not an object" + rest
	}
	return msg
}

type visitor func(n ast.Node)

func (v visitor) Visit(n *ast.Node) { v(*n) }

// Eval evaluates the condition within its limits (ExprLimits).
func (c *Condition) Eval(env ConditionEnv) (bool, error) {
	env.Budget = c.run.budget(c.budget)
	out, err := c.run.run(c.program, env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %T, not a bool", out)
	}
	return b, nil
}

var arithmetic = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true, "**": true, "^": true, "..": true}

// decodeJSON decodes a JSON value for an expression (nil for none).
// Whole numbers become ints, so that output.n % 2 works (expr's % takes
// integers only); others are float64.
func decodeJSON(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("error decoding JSON for a condition: %w", err)
	}
	return numbers(v), nil
}

// numbers replaces each json.Number in v by an int or a float64.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil && i >= math.MinInt && i <= math.MaxInt {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
