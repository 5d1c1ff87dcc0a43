package handlers

import (
	"encoding/json"

	"github.com/stitchd/stitchd/engine"
)

// Types returns the built-in node types, in palette order: each one's
// handler and what the editor and GET /api/v1/node-types show of it. Their
// data is checked by the compiler's own rules (compiler/config.go); the
// schemas here describe it for the editor and for readers of the API
// (TestBuiltinSchemasAcceptTheExamples holds them to the examples).
func Types(o Options) []engine.NodeTypeSpec {
	ts := []engine.NodeTypeSpec{
		{Type: engine.NodeTypeWorker, Label: "Worker", Color: "#4f46e5", Icon: "⚙",
			Help:          "Calls your service over HTTP and waits for its callback.",
			DefaultConfig: raw(`{"webhookUrl":""}`), Handler: Worker{},
			ConfigSchema: object(`"required":["webhookUrl"],"properties":{
				"webhookUrl":{"type":"string","format":"uri","title":"Webhook URL","description":"Where the work is POSTed; the worker answers at the callback URL it carries."},
				"timeoutSeconds":{"type":"number","exclusiveMinimum":0,"title":"Timeout (seconds)"},
				"retry":{"type":"object","title":"Retry policy"},
				"delivery":{"type":"object","title":"Delivery","properties":{"maxTries":{"type":"integer","minimum":1}}},
				"rateLimit":{"type":"number","exclusiveMinimum":0,"title":"Deliveries a second"},
				"cancelUrl":{"type":"string","format":"uri","title":"Cancel URL"},` + common + `}`),
			Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed)},
		{Type: engine.NodeTypeHTTP, Label: "HTTP", Color: "#c2410c", Icon: "⇄",
			Help:          "Calls an existing REST API and completes with its response (status, headers, body). No callback.",
			DefaultConfig: raw(`{"method":"GET","url":""}`), Handler: HTTP{},
			ConfigSchema: object(`"required":["url"],"properties":{
				"method":{"type":"string","enum":["GET","POST","PUT","PATCH","DELETE","HEAD"]},
				"url":{"type":"string","title":"URL"},
				"headers":{"type":"object","additionalProperties":{"type":"string"}},
				"body":{"title":"Body (JSON or a template)"},
				"successCodes":{"type":"array","items":{"type":"integer"}},
				"timeoutSeconds":{"type":"number","exclusiveMinimum":0},
				"retry":{"type":"object"},` + common + `}`),
			Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed)},
		{Type: engine.NodeTypeUX, Label: "UX", Color: "#d97706", Icon: "☺",
			Help:          "Waits for a person to choose an outcome (approve, reject, …).",
			DefaultConfig: raw(`{"prompt":""}`), Handler: UX{},
			ConfigSchema: object(`"properties":{
				"prompt":{"type":"string"},
				"outcomes":{"type":"array","items":{"type":"string"},"minItems":1},
				"form":{"type":"object","title":"Form (JSON Schema)"},
				"summary":{"type":"string"},
				"assignees":{"type":"object"},
				"requiredApprovals":{"type":"integer","minimum":1},
				"rejectPolicy":{"type":"string"},
				"separationOfDuties":{"type":"boolean"},
				"timeoutSeconds":{"type":"number","exclusiveMinimum":0},
				"onTimeout":{"type":"string"},
				"remindAfterSeconds":{"type":"number","minimum":1},` + common + `}`),
			Statuses: statuses(engine.StatusRunning, engine.StatusWaitingForUser, engine.StatusCompleted, engine.StatusFailed)},
		{Type: engine.NodeTypeCondition, Label: "Condition", Color: "#db2777", Icon: "◆",
			Help:          "Does no work and passes its input on: a readable place to branch with conditions on its edges.",
			DefaultConfig: raw(`{}`), Handler: Condition{},
			ConfigSchema: object(`"properties":{` + common + `}`),
			Statuses:     statuses(engine.StatusCompleted)},
		{Type: engine.NodeTypeTransform, Label: "Transform", Color: "#0d9488", Icon: "ƒ",
			Help:          "Reshapes data: an expression over the input whose value is the output. No worker.",
			DefaultConfig: raw(`{}`), Handler: Transform{},
			ConfigSchema: object(`"required":["expression"],"properties":{
				"expression":{"type":"string","title":"Expression (expr-lang)"},` + common + `}`),
			Statuses: statuses(engine.StatusCompleted, engine.StatusFailed)},
		{Type: engine.NodeTypeWait, Label: "Wait", Color: "#4a5f8f", Icon: "◷",
			Help:          "Pauses the run for a duration (48h, P2D) or until a time, then passes its input on.",
			DefaultConfig: raw(`{}`), Handler: Wait{},
			ConfigSchema: object(`"properties":{
				"duration":{"type":"string","title":"Duration (48h, P2D)"},
				"until":{"type":"string","title":"Until (a time, or an expression)"},
				"timezone":{"type":"string"},` + common + `}`),
			Statuses: statuses(engine.StatusRunning, engine.StatusSleeping, engine.StatusCompleted, engine.StatusFailed)},
		{Type: engine.NodeTypeEvent, Label: "Event", Color: "#0f766e", Icon: "✉",
			Help:          "Waits for an event (payment.received) with a key from its input, posted to /api/v1/events.",
			DefaultConfig: raw(`{"event":"","key":""}`), Handler: Event{},
			ConfigSchema: object(`"required":["event","key"],"properties":{
				"event":{"type":"string","minLength":1},
				"key":{"type":"string","minLength":1,"title":"Key (expr-lang over the input)"},
				"timeoutSeconds":{"type":"number","exclusiveMinimum":0},
				"onTimeout":{"type":"string"},` + common + `}`),
			Statuses: statuses(engine.StatusRunning, engine.StatusWaitingForEvent, engine.StatusCompleted, engine.StatusFailed)},
		{Type: engine.NodeTypeSubFlow, Label: "SubFlow", Color: "#4338ca", Icon: "↳",
			Help:          "Runs another flow as one step: its input starts a child run, whose output is this step's output.",
			DefaultConfig: raw(`{"flow":""}`), Handler: SubFlow{},
			ConfigSchema: object(`"required":["flow"],"properties":{
				"flow":{"type":"string","title":"Flow (id or name)"},
				"version":{"anyOf":[{"type":"integer","minimum":1},{"const":"latest"}]},
				"passEntity":{"type":"boolean"},` + common + `}`),
			Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed)},
		{Type: engine.NodeTypeSplitter, Label: "Splitter", Color: "#0891b2", Icon: "⑃",
			Help:          "Fans an array out into parallel paths, one per item.",
			DefaultConfig: raw(`{"arrayPath":""}`), Handler: Splitter{MaxItems: o.MaxFanOutItems},
			ConfigSchema: object(`"required":["arrayPath"],"properties":{
				"arrayPath":{"type":"string","minLength":1,"title":"Array path (gjson)"},
				"maxConcurrency":{"type":"integer","minimum":1},
				"label":{"type":"string"},"description":{"type":"string"}}`),
			Statuses: statuses(engine.StatusCompleted, engine.StatusFailed)},
		{Type: engine.NodeTypeCollector, Label: "Collector", Color: "#7c3aed", Icon: "⑂",
			Help:          "Waits for every parallel path and gathers results in order.",
			DefaultConfig: raw(`{}`), Handler: Collector{},
			ConfigSchema: object(`"properties":{
				"toleratedFailures":{"anyOf":[{"type":"integer","minimum":0},{"type":"string"}]},
				"label":{"type":"string"},"description":{"type":"string"}}`),
			Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed)},
	}
	for i := range ts {
		ts[i].Panel, ts[i].Builtin = true, true
	}
	return ts
}

// common are the data fields every step but the Splitter and Collector
// reads: its label, its description and where it moves the run's entity.
const common = `"label":{"type":"string"},"description":{"type":"string"},
	"entityMovement":{"type":"object","title":"Entity movement","$defs":{"move":{"type":"object","required":["targetSectionId"],
		"properties":{"targetSectionId":{"type":"string","minLength":1},"completeAs":{"enum":["success","failure","neutral"]}}}},
		"properties":{"onSuccess":{"$ref":"#/properties/entityMovement/$defs/move"},"onFailure":{"$ref":"#/properties/entityMovement/$defs/move"},
		"onOutcome":{"type":"object","additionalProperties":{"$ref":"#/properties/entityMovement/$defs/move"}}}}`

func object(body string) json.RawMessage {
	return raw(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` + body + `}`)
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// statuses are a type's statuses: pending, skipped and cancelled (every
// node can take them) and its own.
func statuses(own ...engine.Status) []engine.Status {
	return append([]engine.Status{engine.StatusPending}, append(own, engine.StatusSkipped, engine.StatusCancelled)...)
}
