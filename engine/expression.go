package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// ConditionEnv is what an edge condition sees: the source node's output
// and input, the run and its entity (nil when the run has none).
type ConditionEnv struct {
	Output any            `expr:"output"`
	Input  any            `expr:"input"`
	Run    RunEnv         `expr:"run"`
	Entity map[string]any `expr:"entity"`
	// Budget is the evaluation's account (exprlimit.go), set by Eval.
	Budget *exprBudget `expr:"__budget"`
}

// RunEnv is the run as a condition sees it.
type RunEnv struct {
	ID    string `expr:"id"`
	Input any    `expr:"input"`
}

// Condition is a compiled edge condition.
type Condition struct {
	program *vm.Program
	run     exprRun
	budget  bool
	// UsesEntity and UsesRun tell whether evaluating it needs the run's
	// entity or input loaded.
	UsesEntity, UsesRun bool
}

// CompileCondition compiles and type-checks an edge condition: it must
// name only output, input, run and entity, and give a bool. The message
// of the error is meant for the person who wrote it.
func CompileCondition(src string) (*Condition, error) {
	return compileCondition(src, newExprRun(ExprLimits{}, nil))
}

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
	c := &Condition{program: p, run: r, budget: budget}
	c.UsesRun, c.UsesEntity = uses(root)
	return c, nil
}

// uses reports whether an expression names run or entity.
func uses(root ast.Node) (run, entity bool) {
	ast.Walk(&root, identVisitor(func(name string) {
		switch name {
		case "entity":
			entity = true
		case "run":
			run = true
		}
	}))
	return run, entity
}

// ValueEnv is what a value expression (a Transform's, a template's) sees:
// the node's input, the run and its entity (nil when the run has none).
type ValueEnv struct {
	Input  any            `expr:"input"`
	Run    RunEnv         `expr:"run"`
	Entity map[string]any `expr:"entity"`
	// Budget is the evaluation's account (exprlimit.go), set by Eval.
	Budget *exprBudget `expr:"__budget"`
}

// Value is a compiled value expression.
type Value struct {
	program             *vm.Program
	run                 exprRun
	budget              bool
	UsesEntity, UsesRun bool
}

// CompileValue compiles and type-checks a value expression: it may name
// only input, run and entity. The message of the error is meant for the
// person who wrote it.
func CompileValue(src string) (*Value, error) {
	return compileValue(src, newExprRun(ExprLimits{}, nil))
}

func compileValue(src string, r exprRun) (*Value, error) {
	p, budget, err := compileLimited(src, expr.Env(ValueEnv{}))
	if err != nil {
		return nil, err
	}
	v := &Value{program: p, run: r, budget: budget}
	v.UsesRun, v.UsesEntity = uses(p.Node())
	return v, nil
}

// Eval evaluates the expression within its limits (ExprLimits): past
// one, the error is an *ExprLimitError.
func (v *Value) Eval(env ValueEnv) (any, error) {
	env.Budget = v.run.budget(v.budget)
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
// adds the source with a caret under the error after it.
func ExprMessage(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return msg[:i]
	}
	return msg
}

type identVisitor func(name string)

func (v identVisitor) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok {
		v(id.Value)
	}
}

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
