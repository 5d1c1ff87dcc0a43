package handlers

import (
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// Log writes its message and its input to the run's events (node.log) and
// passes its input on: a place to see what reached a point of the flow.
type Log struct{}

// Fire logs and completes with the input.
func (Log) Fire(_ context.Context, fc engine.FireContext) error {
	fc.Log(gjson.GetBytes(fc.Node().Config, "message").Str, fc.Input())
	return fc.Complete(fc.Input())
}

// logType is the Log type's registration (handlers.Types). Its data is
// checked by its schema alone.
func logType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: "Log", IDPrefix: "log", Label: "Log", Color: "#475569", Icon: "✎",
		Help:          "Writes a message and its input to the run's events, then passes its input on.",
		DefaultConfig: json.RawMessage(`{"message":""}`), Handler: Log{},
		ConfigSchema: object(`"required":["message"],"additionalProperties":false,"properties":{
			"message":{"type":"string","minLength":1,"maxLength":1000,"title":"Message"},` + common + `}`),
		Statuses: statuses(engine.StatusCompleted)}
}
