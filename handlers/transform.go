package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stitchd/stitchd/engine"
)

// MaxTransformOutput bounds a Transform's output (its JSON encoding).
const MaxTransformOutput = 1 << 20

// Transform completes at once, in the firing transaction, with the value
// of its expression (data.expression, expr-lang over input, run and
// entity). An expression that fails, or whose value cannot be stored,
// fails the node with the reason.
type Transform struct{}

// Fire evaluates the expression.
func (Transform) Fire(_ context.Context, fc engine.FireContext) error {
	var cfg struct {
		Expression string `json:"expression"`
	}
	if err := json.Unmarshal(fc.Node().Config, &cfg); err != nil {
		return fc.Fail(fmt.Sprintf("the node's data cannot be read: %v", err))
	}
	v, err := fc.Eval(cfg.Expression)
	if err != nil {
		return fc.Fail("the expression could not be evaluated: " + engine.ExprMessage(err))
	}
	out, err := json.Marshal(v)
	if err != nil {
		return fc.Fail(fmt.Sprintf("the expression's value is not JSON: %v", err))
	}
	if len(out) > MaxTransformOutput {
		return fc.Fail(fmt.Sprintf("the expression's value is %d bytes of JSON, more than %d", len(out), MaxTransformOutput))
	}
	return fc.Complete(out)
}

// transformType is the Transform type's registration (handlers.Types).
func transformType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeTransform, IDPrefix: "transform", Panel: true,
		Label: "Transform", Color: "#0d9488", Icon: "ƒ",
		Help:          "Reshapes data: an expression over the input whose value is the output. No worker.",
		DefaultConfig: raw(`{}`), Handler: Transform{},
		ConfigSchema: object(`"required":["expression"],"properties":{
			"expression":{"type":"string","title":"Expression (expr-lang)"},` + common + `}`),
		Statuses: statuses(engine.StatusCompleted, engine.StatusFailed)}
}
