package engine

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// ExprLimits bound one evaluation of an expression — an edge condition, a
// Transform, a template value, an assignee, an event key, a Wait's until:
// the memory it builds and the time it runs. expr-lang's own budget counts
// array elements only: a string grown by repeat, + or join, or a loop that
// runs for minutes, is not bounded by it, and a Go out-of-memory error
// ends the process, not the evaluation.
type ExprLimits struct {
	// MemoryBytes bounds what one evaluation builds: strings, arrays and
	// maps, and the value it gives (DefaultExprMemory when 0).
	MemoryBytes int64
	// Time bounds how long one evaluation runs (DefaultExprTime when 0).
	Time time.Duration
}

// Defaults of ExprLimits (the --expr-memory and --expr-timeout flags).
const (
	DefaultExprMemory = 64 << 20
	DefaultExprTime   = time.Second
)

func (l ExprLimits) withDefaults() ExprLimits {
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultExprMemory
	}
	if l.Time <= 0 {
		l.Time = DefaultExprTime
	}
	return l
}

// ErrExprLimit matches every *ExprLimitError.
var ErrExprLimit = errors.New("expression_limit")

// ExprLimitError is an evaluation stopped at one of its limits.
type ExprLimitError struct {
	// Limit is "memory", "time" or "match".
	Limit string
	// Max is the limit's value, for the message.
	Max string
}

func (e *ExprLimitError) Error() string {
	if e.Limit == "match" {
		return "expression_limit: matching " + e.Max + " is more work than one evaluation may do (at most " +
			fmt.Sprint(maxMatchWork) + " steps: the text's length times the pattern's size)"
	}
	if e.Limit == "time" {
		return fmt.Sprintf("expression_limit: the expression ran longer than %s (the time limit, --expr-timeout)", e.Max)
	}
	return fmt.Sprintf("expression_limit: the expression built more than %s (the memory limit, --expr-memory)", e.Max)
}

// Is makes an ExprLimitError an ErrExprLimit for errors.Is.
func (e *ExprLimitError) Is(target error) bool { return target == ErrExprLimit }

// exprBudget is one evaluation's account. Patched programs (limitPatch)
// call into it; it stops the evaluation with a panic, which expr-lang's
// VM turns into the evaluation's error.
type exprBudget struct {
	clock    Clock
	deadline time.Time
	limits   ExprLimits
	left     int64
	ticks    uint32
}

func newExprBudget(clock Clock, l ExprLimits) *exprBudget {
	return &exprBudget{clock: clock, deadline: clock.Now().Add(l.Time), limits: l, left: l.MemoryBytes}
}

// tickEvery is how many loop iterations pass between two looks at the
// clock: one look costs about as much as a few dozen VM instructions.
const tickEvery = 16

// tick counts one iteration of a closure (map, filter, count, reduce, …).
func (b *exprBudget) tick() {
	b.ticks++
	if b.ticks%tickEvery == 0 {
		b.checkTime()
	}
}

func (b *exprBudget) checkTime() {
	if b.clock.Now().After(b.deadline) {
		panic(b.timeErr())
	}
}

func (b *exprBudget) timeErr() *ExprLimitError {
	return &ExprLimitError{Limit: "time", Max: b.limits.Time.String()}
}

func (b *exprBudget) memErr() *ExprLimitError {
	return &ExprLimitError{Limit: "memory", Max: byteSize(b.limits.MemoryBytes)}
}

// charge accounts n bytes built, stopping the evaluation past the limit.
// Functions that could build more than the limit in one step charge
// before they build.
func (b *exprBudget) charge(n int64) {
	if n < 0 || n > b.left {
		b.left = -1
		panic(b.memErr())
	}
	b.left -= n
	b.checkTime()
}

// byteSize writes n bytes for a person: 64 MiB, 1.5 KiB, 100 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Names the patch gives its calls and the budget in the environment; a
// source naming them is refused, so a user can't call them or read the
// budget.
const (
	budgetIdent = "__budget"
	tickFunc    = "__tick"
	chargeFunc  = "__charge"
	chargeStr   = "__charge_s"
	addFunc     = "__add"
	matchesFunc = "__matches"
)

// elemSize is what an array element or map entry is counted as: an
// interface value and a bit.
const elemSize = 16

// limitOptions are the expr-lang options every expression is compiled
// with: the budget functions, the guarded builtins that could build more
// than the limit in one step, and the patch that routes the program
// through them. *needs reports whether the patch changed anything, i.e.
// whether an evaluation needs a budget.
func limitOptions(p *limitPatch) []expr.Option {
	budgetT := reflect.TypeFor[*exprBudget]()
	opts := []expr.Option{
		expr.Function(tickFunc, func(args ...any) (any, error) {
			args[0].(*exprBudget).tick() //nolint:forcetypeassert // the patch passes the budget
			return args[1], nil
		}, new(func(*exprBudget, any) any)),
		expr.Function(chargeFunc, func(args ...any) (any, error) {
			args[0].(*exprBudget).charge(shallowSize(args[1])) //nolint:forcetypeassert // the patch passes the budget
			return args[1], nil
		}, new(func(*exprBudget, any) any)),
		expr.Function(chargeStr, func(args ...any) (any, error) {
			s, _ := args[1].(string)
			args[0].(*exprBudget).charge(int64(len(s))) //nolint:forcetypeassert // the patch passes the budget
			return args[1], nil
		}, new(func(*exprBudget, string) string)),
		expr.Function(addFunc, func(args ...any) (any, error) {
			b := args[0].(*exprBudget) //nolint:forcetypeassert // the patch passes the budget
			if l, ok := args[1].(string); ok {
				if r, ok := args[2].(string); ok {
					b.charge(int64(len(l)) + int64(len(r)))
					return l + r, nil
				}
			}
			return runtime.Add(args[1], args[2]), nil
		}, new(func(*exprBudget, any, any) any)),
		expr.Function(matchesFunc, matches(), new(func(*exprBudget, any, any) bool)),
		expr.Patch(p),
	}
	for _, g := range guarded {
		f := builtinByName(g.name)
		types := make([]any, 0, len(f.Types))
		for _, t := range f.Types {
			in := []reflect.Type{budgetT}
			for i := range t.NumIn() {
				in = append(in, t.In(i))
			}
			out := []reflect.Type{t.Out(0)}
			types = append(types, reflect.New(reflect.FuncOf(in, out, false)).Interface())
		}
		cost, call := g.cost, builtinCall(f)
		opts = append(opts, expr.Function(g.name, func(args ...any) (any, error) {
			b := args[0].(*exprBudget) //nolint:forcetypeassert // the patch passes the budget
			b.charge(cost(b, args[1:]))
			return call(args[1:]...)
		}, types...))
	}
	return opts
}

func builtinByName(name string) *builtin.Function {
	return builtin.Builtins[builtin.Index[name]]
}

// builtinCall calls a builtin whichever form its implementation takes.
func builtinCall(f *builtin.Function) func(args ...any) (any, error) {
	switch {
	case f.Func != nil:
		return f.Func
	case f.Safe != nil:
		return func(args ...any) (any, error) {
			out, _, err := f.Safe(args...)
			return out, err
		}
	default:
		return func(args ...any) (any, error) { return f.Fast(args[0]), nil }
	}
}

// guarded builtins are replaced by ones that charge what they will build
// before building it: each could build far more than its arguments in one
// step (repeat("a", 1e6) a megabyte; join, toJSON and string an array of a
// million references to one big string).
var guarded = []struct {
	name string
	cost func(b *exprBudget, args []any) int64
}{
	{"repeat", func(_ *exprBudget, a []any) int64 {
		s, _ := a[0].(string)
		n, _ := asInt(a[1]) // any number, as expr-lang's repeat takes it
		if n > 1e6 {
			panic(fmt.Errorf("repeat(…, %d): at most 1000000 repetitions", n))
		}
		if n <= 0 || len(s) == 0 {
			return 0
		}
		if int64(len(s)) > math.MaxInt64/int64(n) {
			return math.MaxInt64
		}
		return int64(len(s)) * int64(n)
	}},
	{"replace", func(_ *exprBudget, a []any) int64 {
		s, _ := a[0].(string)
		old, _ := a[1].(string)
		repl, _ := a[2].(string)
		n := strings.Count(s, old)
		if len(a) == 4 {
			if m, ok := a[3].(int); ok && m >= 0 && m < n {
				n = m
			}
		}
		grow := int64(len(repl)) - int64(len(old))
		if grow < 0 {
			grow = 0
		}
		return int64(len(s)) + int64(n)*grow
	}},
	{"join", func(b *exprBudget, a []any) int64 {
		glue := ""
		if len(a) == 2 {
			glue, _ = a[1].(string)
		}
		n := reflectLen(a[0])
		return deepSize(a[0], b.left+1) + int64(n)*int64(len(glue))
	}},
	{"toJSON", func(b *exprBudget, a []any) int64 { return deepSize(a[0], b.left+1) }},
	{"string", func(b *exprBudget, a []any) int64 { return deepSize(a[0], b.left+1) }},
	{"toBase64", func(_ *exprBudget, a []any) int64 {
		s, _ := a[0].(string)
		return int64(len(s))/3*4 + 4
	}},
	{"fromJSON", func(_ *exprBudget, a []any) int64 {
		// Decoded JSON takes several times its text: an interface per
		// value and a map per object.
		s, _ := a[0].(string)
		return 8 * int64(len(s))
	}},
	{"flatten", func(b *exprBudget, a []any) int64 { return elemSize * leaves(a[0], b.left/elemSize+1) }},
	{"concat", func(_ *exprBudget, a []any) int64 {
		var n int64
		for _, x := range a {
			n += int64(reflectLen(x))
		}
		return elemSize * n
	}},
	{"split", splitCost},
	{"splitAfter", splitCost},
	{"upper", stringCost},
	{"lower", stringCost},
	{"fromBase64", stringCost},
}

// maxMatchWork bounds one regular-expression match: the text's length
// times the compiled pattern's instructions. Go's matching is linear in
// both, but their product is not small: a 200 KB text against
// (a|b){500}c is 2.7 s. About 0.1 s of matching.
const maxMatchWork = 20_000_000

// matches is `text matches pattern` within maxMatchWork, each pattern
// compiled once by the program (a few of them kept).
func matches() func(args ...any) (any, error) {
	type compiled struct {
		re   *regexp.Regexp
		size int
	}
	var mu sync.Mutex
	cache := map[string]compiled{}
	return func(args ...any) (any, error) {
		b := args[0].(*exprBudget) //nolint:forcetypeassert // the patch passes the budget
		text, ok1 := args[1].(string)
		pattern, ok2 := args[2].(string)
		if args[1] == nil || args[2] == nil {
			return false, nil // as expr-lang's matches
		}
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("invalid operation: %T matches %T", args[1], args[2])
		}
		mu.Lock()
		c, ok := cache[pattern]
		mu.Unlock()
		if !ok {
			b.charge(int64(len(pattern)) * 64) // the compiled program
			re, err := regexp.Compile(pattern)
			if err != nil {
				return nil, err
			}
			parsed, err := syntax.Parse(pattern, syntax.Perl)
			if err != nil {
				return nil, err
			}
			prog, err := syntax.Compile(parsed.Simplify())
			if err != nil {
				return nil, err
			}
			c = compiled{re: re, size: len(prog.Inst)}
			mu.Lock()
			if len(cache) >= 64 {
				clear(cache)
			}
			cache[pattern] = c
			mu.Unlock()
		}
		if int64(len(text))*int64(c.size) > maxMatchWork {
			panic(&ExprLimitError{Limit: "match", Max: fmt.Sprintf("%d characters against a pattern of %d steps", len(text), c.size)})
		}
		b.checkTime()
		return c.re.MatchString(text), nil
	}
}

// asInt reads a number as expr-lang's builtins do (runtime.ToInt): JSON
// numbers come as float64.
func asInt(v any) (int, bool) {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(r.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int(min(r.Uint(), math.MaxInt)), true
	case reflect.Float32, reflect.Float64:
		f := r.Float()
		if f >= math.MaxInt {
			return math.MaxInt, true
		}
		return int(f), true
	default:
		return 0, false
	}
}

// leaves counts what flatten makes of v (its leaves, arrays of arrays
// walked), stopping once past limit.
func leaves(v any, limit int64) int64 {
	r := reflect.ValueOf(v)
	if r.Kind() != reflect.Slice && r.Kind() != reflect.Array {
		return 1
	}
	var n int64
	for i := 0; i < r.Len() && n <= limit; i++ {
		n += leaves(r.Index(i).Interface(), limit-n)
	}
	return n
}

func stringCost(_ *exprBudget, a []any) int64 {
	s, _ := a[0].(string)
	return int64(len(s))
}

func splitCost(_ *exprBudget, a []any) int64 {
	s, _ := a[0].(string)
	sep, _ := a[1].(string)
	if sep == "" {
		return elemSize * int64(utf8.RuneCountInString(s)+1)
	}
	return elemSize * int64(strings.Count(s, sep)+1)
}

func reflectLen(v any) int {
	switch x := v.(type) {
	case []any:
		return len(x)
	case []string:
		return len(x)
	}
	r := reflect.ValueOf(v)
	if r.Kind() == reflect.Slice || r.Kind() == reflect.Array || r.Kind() == reflect.Map {
		return r.Len()
	}
	return 0
}

// shallowSize is what a builtin's result is charged: a string's bytes, an
// array's or map's elements (their own contents were charged when they
// were built, or came with the input).
func shallowSize(v any) int64 {
	if s, ok := v.(string); ok {
		return int64(len(s))
	}
	return elemSize * int64(reflectLen(v))
}

// deepSize bounds the size of v written out (as JSON, or as %v), counting
// a value as often as it is referenced; it stops counting once past limit,
// so it never walks more than about limit values.
func deepSize(v any, limit int64) int64 {
	var n int64
	var walk func(v any, depth int64)
	walk = func(v any, depth int64) {
		if n > limit {
			return
		}
		// Indentation: MarshalIndent writes two spaces a level a line.
		n += 2*depth + 2
		switch x := v.(type) {
		case string:
			n += int64(len(x)) * 6 / 5
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			for k, e := range x {
				n += int64(len(k)) + 4
				walk(e, depth+1)
			}
		case nil, bool:
			n += 4
		case int, float64:
			n += 24
		default:
			r := reflect.ValueOf(v)
			switch r.Kind() {
			case reflect.Slice, reflect.Array:
				for i := range r.Len() {
					walk(r.Index(i).Interface(), depth+1)
				}
			case reflect.Map:
				it := r.MapRange()
				for it.Next() {
					n += 8
					walk(it.Key().Interface(), depth+1)
					walk(it.Value().Interface(), depth+1)
				}
			case reflect.String:
				n += int64(r.Len())
			default:
				n += 32
			}
		}
	}
	walk(v, 0)
	return n
}

// limitPatch routes a program through its budget: every closure's body
// ticks, every builtin's result is charged, + on what may be strings is
// charged, and the guarded builtins get the budget as a first argument.
// Patched records whether it changed anything; Forbidden, the first name
// of the patch's own that the source used.
type limitPatch struct {
	Patched   bool
	Forbidden string
}

func budgetArg() ast.Node { return &ast.IdentifierNode{Value: budgetIdent} }

func (p *limitPatch) call(fn string, args ...ast.Node) *ast.CallNode {
	p.Patched = true
	return &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: append([]ast.Node{budgetArg()}, args...)}
}

var guardedNames = func() map[string]bool {
	m := make(map[string]bool, len(guarded))
	for _, g := range guarded {
		m[g.name] = true
	}
	return m
}()

// Visit is called after a node's children (ast.Walk is post-order), so
// the nodes the patch makes are never visited.
func (p *limitPatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if strings.HasPrefix(n.Value, "__") && p.Forbidden == "" {
			p.Forbidden = n.Value
		}
	case *ast.PredicateNode:
		n.Node = p.call(tickFunc, n.Node)
	case *ast.BinaryNode:
		switch {
		case n.Operator == "+" && (!numeric(n.Left) || !numeric(n.Right)):
			ast.Patch(node, p.call(addFunc, n.Left, n.Right))
		case n.Operator == "matches":
			ast.Patch(node, p.call(matchesFunc, n.Left, n.Right))
		}
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok || !guardedNames[id.Value] {
			return
		}
		// Charged before it builds: not again after.
		n.Arguments = append([]ast.Node{budgetArg()}, n.Arguments...)
		p.Patched = true
	case *ast.BuiltinNode:
		p.chargeResult(node)
	}
}

// chargeResult charges a builtin's result once it is built: linear in
// what the builtin was given, so building it cannot overshoot far, but a
// loop building one a turn is stopped.
func (p *limitPatch) chargeResult(node *ast.Node) {
	t := (*node).Type()
	if t == nil {
		*node = p.call(chargeFunc, *node)
		return
	}
	switch t.Kind() {
	case reflect.String:
		*node = p.call(chargeStr, *node)
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Interface:
		*node = p.call(chargeFunc, *node)
	default: // numbers, bools, times: nothing kept
	}
}

func numeric(n ast.Node) bool {
	t := n.Type()
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	default:
		return false
	}
}

// compileLimited compiles src with the budget patch. The program needs a
// budget at evaluation when needsBudget is set.
func compileLimited(src string, opts ...expr.Option) (prog *vm.Program, needsBudget bool, err error) {
	// First as written, for the messages a person expects: with the
	// guarded builtins replaced, expr-lang checks calls' arguments less
	// closely (an unknown name inside upper() would pass).
	plain, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, false, err
	}
	p := &limitPatch{}
	ast.Walk(new(plain.Node()), p)
	if p.Forbidden != "" {
		return nil, false, fmt.Errorf("unknown name %s", p.Forbidden)
	}
	p = &limitPatch{}
	prog, err = expr.Compile(src, append(opts, limitOptions(p)...)...)
	if err != nil {
		return nil, false, fmt.Errorf("error compiling %q within limits: %w", src, err)
	}
	return prog, p.Patched, nil
}

// exprRun evaluates compiled programs within limits.
type exprRun struct {
	limits ExprLimits
	clock  Clock
}

func newExprRun(l ExprLimits, c Clock) exprRun {
	if c == nil {
		c = SystemClock{}
	}
	return exprRun{limits: l.withDefaults(), clock: c}
}

// budget returns a new evaluation's budget when the program needs one.
func (r exprRun) budget(needs bool) *exprBudget {
	if !needs {
		return nil
	}
	return newExprBudget(r.clock, r.limits)
}

// run evaluates prog: expr-lang's element budget is derived from the
// memory limit, and a limit reached is an *ExprLimitError.
func (r exprRun) run(prog *vm.Program, env any) (any, error) {
	m := vm.VM{MemoryBudget: uint(max(r.limits.MemoryBytes/elemSize, 0))}
	out, err := m.Run(prog, env)
	if err != nil {
		var le *ExprLimitError
		if errors.As(err, &le) {
			return nil, le
		}
		if strings.Contains(err.Error(), "memory budget exceeded") {
			return nil, &ExprLimitError{Limit: "memory", Max: byteSize(r.limits.MemoryBytes)}
		}
		return nil, err
	}
	return out, nil
}

// checkResult refuses a value too big to keep: an array of a million
// references to one long string is small in memory but not once written.
func (r exprRun) checkResult(v any) error {
	switch v.(type) {
	case nil, bool, int, float64:
		return nil
	}
	if deepSize(v, r.limits.MemoryBytes) > r.limits.MemoryBytes {
		return &ExprLimitError{Limit: "memory", Max: byteSize(r.limits.MemoryBytes)}
	}
	return nil
}
