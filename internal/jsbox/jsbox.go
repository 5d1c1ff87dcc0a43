package jsbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"modernc.org/quickjs"
)

// Defaults and bounds.
const (
	// DefaultMemory bounds a script's JavaScript heap (--code-memory).
	DefaultMemory = 64 << 20
	// DefaultTimeout and MaxTimeout bound a script's time (data.timeoutMs).
	DefaultTimeout = time.Second
	MaxTimeout     = 30 * time.Second
	// MaxLogLines and MaxLogLine bound what console.log keeps of a run.
	MaxLogLines = 100
	MaxLogLine  = 4096
	// MaxSource bounds a script's source.
	MaxSource = 64 << 10
)

// Limits bound one run of a script.
type Limits struct {
	// MemoryBytes bounds the JavaScript heap (DefaultMemory when 0).
	MemoryBytes int64
	// Timeout bounds its time (DefaultTimeout when 0).
	Timeout time.Duration
}

// Result is what a script gave: its value as JSON (null for undefined)
// and what it logged.
type Result struct {
	Output json.RawMessage
	Logs   []string
}

// LimitError is a script stopped at one of its Limits.
type LimitError struct {
	// Limit is "memory" or "time".
	Limit string
	// Bound is the limit's value, for the message.
	Bound string
}

func (e *LimitError) Error() string {
	if e.Limit == "time" {
		return "code_limit: the script ran longer than its " + e.Bound + " (data.timeoutMs) and was stopped"
	}
	return "code_limit: the script needed more memory than its " + e.Bound + " (--code-memory) and was stopped"
}

// ScriptError is an error of the script itself: a syntax error (with its
// line and column in the source) or an exception it threw (with the line
// when known).
type ScriptError struct {
	Message      string
	Line, Column int
}

func (e *ScriptError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Message)
	}
	return e.Message
}

// The source is the body of a function of the names a script sees; it
// starts on the wrapper's second line, so a reported line is one more than
// the source's.
const (
	params = "input, run, steps, vars, item, entity, console"
	// The wrapper's own names, shadowed (undefined) inside the source.
	hidden = ", __log, __e, __c, __fmt, __v"
	head   = "(function (" + params + hidden + ") {\n"
)

// Check compiles source without running it: a *ScriptError with the line
// and column of the first syntax error, or nil.
func Check(source string) error {
	if len(source) > MaxSource {
		return &ScriptError{Message: fmt.Sprintf("the script is longer than %d bytes", MaxSource)}
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return fmt.Errorf("error starting the script engine: %w", err)
	}
	defer vm.Close()
	vm.SetMemoryLimit(DefaultMemory)
	if _, err := vm.Compile(head+source+"\n})", quickjs.EvalGlobal); err != nil {
		return scriptError(err)
	}
	return nil
}

// Run runs source with env (a JSON object of the names a script sees:
// input, run, steps, vars, item, entity) within lim and returns its value.
// The script has no modules, no timers, no network and no file system:
// only the language and console.log. A limit reached is a *LimitError,
// the script's own failure a *ScriptError; either way the VM is gone
// afterwards and the process is unharmed.
func Run(ctx context.Context, source string, env json.RawMessage, lim Limits) (*Result, error) {
	if lim.MemoryBytes <= 0 {
		lim.MemoryBytes = DefaultMemory
	}
	if lim.Timeout <= 0 {
		lim.Timeout = DefaultTimeout
	}
	if len(env) == 0 {
		env = json.RawMessage(`{}`)
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("error starting the script engine: %w", err)
	}
	defer vm.Close()
	vm.SetMemoryLimit(uintptr(lim.MemoryBytes)) //nolint:gosec // positive: set above
	if err := vm.SetEvalTimeout(lim.Timeout); err != nil {
		return nil, fmt.Errorf("error setting the script's timeout: %w", err)
	}
	stop := context.AfterFunc(ctx, vm.Interrupt)
	defer stop()
	res := &Result{}
	logged := func(line string) {
		switch {
		case len(res.Logs) == MaxLogLines:
			res.Logs = append(res.Logs, "… more lines not kept")
		case len(res.Logs) > MaxLogLines:
		default:
			if len(line) > MaxLogLine {
				line = strings.ToValidUTF8(line[:MaxLogLine], "") + "…"
			}
			res.Logs = append(res.Logs, line)
		}
	}
	if err := vm.RegisterFunc("__log", logged, false); err != nil {
		return nil, fmt.Errorf("error preparing the script: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, env); err != nil {
		return nil, fmt.Errorf("error reading the script's data: %w", err)
	}
	// One line before the source, as Check's: console.log joins its
	// arguments as a browser shows them; the value given back is JSON
	// (undefined: null).
	script := "(function (__log, __e) { delete globalThis.__log;" +
		" const __fmt = (a) => a.map((x) => typeof x === 'string' ? x : JSON.stringify(x)).join(' ');" +
		" const __c = Object.freeze({log: (...a) => __log(__fmt(a)), info: (...a) => __log(__fmt(a))," +
		" warn: (...a) => __log(__fmt(a)), error: (...a) => __log(__fmt(a))});" +
		" const __v = " + head + source +
		"\n}).call(undefined, __e.input, __e.run, __e.steps, __e.vars, __e.item, __e.entity, __c);" +
		" return __v === undefined ? 'null' : JSON.stringify(__v); })(globalThis.__log, " + compact.String() + ")"
	v, err := vm.Eval(script, quickjs.EvalGlobal)
	if err != nil {
		err = classify(ctx, err, lim)
		var se *ScriptError
		if errors.As(err, &se) && se.Line > strings.Count(source, "\n")+1 {
			// Past the source: the wrapper's JSON.stringify of the value
			// (a BigInt, a circular object), no line of the script's.
			se.Message, se.Line, se.Column = "the script's value cannot be made JSON: "+se.Message, 0, 0
		}
		return res, err
	}
	s, ok := v.(string)
	if !ok {
		// JSON.stringify of a function or a symbol: undefined.
		s = "null"
	}
	res.Output = json.RawMessage(s)
	if !json.Valid(res.Output) {
		return res, &ScriptError{Message: "the script's value is not JSON"}
	}
	return res, nil
}

// classify turns what the engine reported into a *LimitError, a
// *ScriptError (line numbers of the source) or ctx's error.
func classify(ctx context.Context, err error, lim Limits) error {
	var qe *quickjs.Error
	if !errors.As(err, &qe) {
		return fmt.Errorf("error running the script: %w", err)
	}
	switch {
	case qe.Name == "InternalError" && strings.Contains(qe.Message, "interrupted"):
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &LimitError{Limit: "time", Bound: lim.Timeout.String()}
	case qe.Error() == "null" || strings.Contains(qe.Message, "out of memory"):
		return &LimitError{Limit: "memory", Bound: fmt.Sprintf("%d MiB", lim.MemoryBytes>>20)}
	}
	se := toScriptError(qe, 1)
	if se.Line == 0 {
		if line := stackLine(qe.Stack); line > 1 {
			se.Line = line - 1
		}
	}
	return se
}

var stackAt = regexp.MustCompile(`<eval>:(\d+)`)

// stackLine is the line of the innermost frame of a stack.
func stackLine(stack string) int {
	m := stackAt.FindStringSubmatch(stack)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// scriptError is a compile error of Check's wrapper (one line before the
// source).
func scriptError(err error) error {
	var qe *quickjs.Error
	if !errors.As(err, &qe) {
		return &ScriptError{Message: err.Error()}
	}
	return toScriptError(qe, 1)
}

// toScriptError is qe with its line in the source: lines before it in
// the wrapper are not counted.
func toScriptError(qe *quickjs.Error, before int) *ScriptError {
	se := &ScriptError{Message: strings.TrimPrefix(qe.Name+": "+qe.Message, ": ")}
	if se.Message == "" {
		// A thrown value that is no Error (throw "no"): it has no name
		// and no message, and an empty one read as no failure at all.
		se.Message = "the script threw a value with no message"
		if v := strings.TrimSpace(qe.Error()); v != "" {
			se.Message = "uncaught " + v
		}
	}
	if qe.LineNumber > before {
		se.Line, se.Column = qe.LineNumber-before, qe.ColumnNumber
	}
	return se
}
