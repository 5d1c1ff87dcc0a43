package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/jsbox"
)

// Code runs a JavaScript function body (data.source) over the step's
// input, the run, earlier steps, the run's variables, its item and entity;
// what it returns is the output. The script runs in the dispatcher's
// sandbox (internal/jsbox), outside the firing transaction, as a
// request/response row of kind code: no modules, no timers, no network,
// its memory bounded by --code-memory and its time by data.timeoutMs.
type Code struct{}

// codeRefs finds what a script reads of earlier steps and variables:
// steps.fetch, steps["fetch-2"], vars.total. A script names them as
// written; one built at run time (steps[id]) reads nothing.
var codeRefs = regexp.MustCompile(`\b(steps|vars)\s*(?:\.\s*([A-Za-z_$][\w$]*)|\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\])`)

// Fire gathers what the script sees and hands it to the dispatcher.
func (Code) Fire(_ context.Context, fc engine.FireContext) error {
	var cfg struct {
		Source    string `json:"source"`
		TimeoutMs int64  `json:"timeoutMs"`
	}
	if err := json.Unmarshal(fc.Node().Config, &cfg); err != nil {
		return fc.Fail(fmt.Sprintf("the node's data cannot be read: %v", err))
	}
	timeout := cfg.TimeoutMs
	if timeout <= 0 {
		timeout = jsbox.DefaultTimeout.Milliseconds()
	}
	// One expression gathers the script's names, loaded as an
	// expression's are (the same item's instance of a step in the region).
	v, err := fc.Eval(envExpression(cfg.Source, fc.Index()))
	if err != nil {
		return fc.Fail("the script's data could not be gathered: " + engine.ExprMessage(err))
	}
	env, err := json.Marshal(v)
	if err != nil {
		return fc.Fail(fmt.Sprintf("the script's data is not JSON: %v", err))
	}
	body, err := json.Marshal(map[string]any{"source": cfg.Source, "env": json.RawMessage(env)})
	if err != nil {
		return fmt.Errorf("error encoding the script's row: %w", err)
	}
	return fc.Dispatch(engine.DispatchRequest{Kind: engine.DispatchCode, URL: "code:" + fc.Node().ID, Body: body,
		MaxTries: 3, RequestTimeoutMs: timeout, // a row claimed again after a lost process runs it again
		// The node's deadline: the script's time and a lease's worth for a
		// process lost while it ran (its row is claimed again).
		TimeoutSeconds: int(timeout/1000) + 120})
}

// envExpression is the expr-lang expression of what a script sees: input,
// run, entity, item, and the steps and variables its source names.
func envExpression(source string, idx []int) string {
	var steps, vars []string
	for _, m := range codeRefs.FindAllStringSubmatch(source, -1) {
		name := m[2] + m[3] + m[4]
		switch {
		case name == "":
		case m[1] == "steps" && !slices.Contains(steps, name):
			steps = append(steps, name)
		case m[1] == "vars" && !slices.Contains(vars, name):
			vars = append(vars, name)
		}
	}
	var b strings.Builder
	b.WriteString(`{"input": input, "run": {"id": run.id, "input": run.input}, "entity": entity`)
	if len(idx) > 0 {
		b.WriteString(`, "item": item`)
	} else {
		b.WriteString(`, "item": nil`)
	}
	b.WriteString(`, "steps": {`)
	for i, id := range steps {
		if i > 0 {
			b.WriteString(", ")
		}
		q := strconv.Quote(id)
		fmt.Fprintf(&b, `%s: {"input": steps[%s].input, "output": steps[%s].output}`, q, q, q)
	}
	b.WriteString(`}, "vars": {`)
	for i, name := range vars {
		if i > 0 {
			b.WriteString(", ")
		}
		q := strconv.Quote(name)
		fmt.Fprintf(&b, `%s: vars[%s]`, q, q)
	}
	b.WriteString("}}")
	return b.String()
}

// Respond takes the script's value (the body) as the output, or its
// failure; a script fails the same way again, so it is not retried.
func (Code) Respond(_ *engine.Node, r engine.Response) (json.RawMessage, string, bool) {
	if r.Error != "" {
		return nil, r.Error, false
	}
	if len(r.Body) > MaxTransformOutput {
		return nil, fmt.Sprintf("the script's value is %d bytes of JSON, more than %d", len(r.Body), MaxTransformOutput), false
	}
	return json.RawMessage(r.Body), "", false
}

// codeType is the Code type's registration (handlers.Types). Its data is
// checked by its schema and by compiling the script (a syntax error names
// its line and column).
func codeType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: "Code", IDPrefix: "code", Label: "Code", Color: "#1e293b", Icon: "{}",
		Help:          "Runs a JavaScript function body over input, run, steps, vars, item and entity; what it returns is the output. No I/O.",
		DefaultConfig: json.RawMessage(`{"source":"return input;"}`), Handler: Code{},
		ConfigSchema: object(`"required":["source"],"additionalProperties":false,"properties":{
			"source":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(jsbox.MaxSource) + `,"contentMediaType":"text/javascript","title":"JavaScript (a function body: return the output)"},
			"timeoutMs":{"type":"integer","minimum":1,"maximum":` + strconv.FormatInt(jsbox.MaxTimeout.Milliseconds(), 10) + `,"title":"Time limit (ms)","default":1000},` + common + `}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed),
		Check:    checkCode,
	}
}

// checkCode compiles the script at save.
func checkCode(data json.RawMessage) []string {
	var cfg struct {
		Source string `json:"source"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil || cfg.Source == "" {
		return nil // the schema says what is wrong
	}
	if err := jsbox.Check(cfg.Source); err != nil {
		return []string{"source: " + err.Error()}
	}
	return nil
}
