package handlers

import (
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// Respond answers the run's caller — a webhook request waiting for the
// run (its trigger's respond.mode "wait", docs/triggers.md) — at once,
// with data.status (200 by default) and data.body rendered over its input
// as an HTTP node's body is (a JSON value whose strings are templates, or
// one template string), then passes its input on: the run goes on. The
// run's first answer counts; without a caller waiting it is kept on the
// run and nothing else happens.
type Respond struct{}

// Fire renders the answer and completes with the input.
func (Respond) Fire(_ context.Context, fc engine.FireContext) error {
	var cfg struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(fc.Node().Config, &cfg); err != nil {
		return fc.Fail("the node's data cannot be read: " + err.Error())
	}
	if cfg.Status == 0 {
		cfg.Status = 200
	}
	body, ctype, err := renderBody(cfg.Body, fc.Eval)
	if err != nil {
		return fc.Fail("the body could not be rendered: " + engine.ExprMessage(err))
	}
	fc.Answer(engine.CallerAnswer{Status: cfg.Status, ContentType: ctype, Body: string(body)})
	return fc.Complete(fc.Input())
}

// respondType is the Respond type's registration (handlers.Types). Its
// data is checked by its schema and by parsing its templates.
func respondType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: "Respond", IDPrefix: "respond", Label: "Respond", Color: "#0369a1", Icon: "↩", Panel: true,
		Help: "Answers the webhook request waiting for the run (a trigger with respond wait) now, with a status and a body; " +
			"the run goes on.",
		DefaultConfig: json.RawMessage(`{"status":200,"body":{"ok":true}}`), Handler: Respond{},
		ConfigSchema: object(`"additionalProperties":false,"properties":{
			"status":{"type":"integer","minimum":100,"maximum":599,"default":200,"title":"HTTP status"},
			"body":{"title":"Body (JSON whose strings may hold {{ expr }}, or one template)"},` + common + `}`),
		Statuses: statuses(engine.StatusCompleted, engine.StatusFailed),
		Check:    checkRespond,
	}
}

// checkRespond parses the body's templates at save; a secret is refused
// (whoever calls the hook would read it).
func checkRespond(data json.RawMessage) []string {
	var out []string
	var walk func(v gjson.Result, path string)
	walk = func(v gjson.Result, path string) {
		switch {
		case v.IsObject():
			v.ForEach(func(k, e gjson.Result) bool {
				walk(e, path+"."+k.String())
				return true
			})
		case v.IsArray():
			for _, e := range v.Array() {
				walk(e, path+"[]")
			}
		case v.Type == gjson.String:
			t, err := engine.ParseTemplate(v.Str)
			switch {
			case err != nil:
				out = append(out, path+": "+err.Error())
			case len(t.Secrets()) > 0:
				out = append(out, path+": a Respond body cannot hold a secret: whoever calls the hook would read it")
			}
		}
	}
	walk(gjson.GetBytes(data, "body"), "body")
	return out
}
