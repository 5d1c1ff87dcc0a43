package handlers

import (
	"encoding/json"

	"github.com/stitchd/stitchd/engine"
)

// Options configure the built-in handlers.
type Options struct {
	// MaxFanOutItems bounds a Splitter's array (0 = DefaultMaxItems).
	MaxFanOutItems int
}

// Types returns the built-in node types, in palette order: the registry,
// one line a type, each registration beside its handler in the type's own
// file. The ten first types' data is checked by the compiler's own rules
// (compiler/config.go), which their schemas describe for the editor and
// for readers of the API (TestBuiltinSchemasAcceptTheExamples holds them
// to the examples); every later type's, by its schema and Check.
func Types(o Options) []engine.NodeTypeSpec {
	ts := []engine.NodeTypeSpec{
		workerType(),
		httpType(),
		uxType(),
		conditionType(),
		transformType(),
		waitType(),
		eventType(),
		subFlowType(),
		splitterType(o),
		collectorType(),
		logType(),
		codeType(),
		emailType(),
		respondType(),
	}
	for i := range ts {
		ts[i].Builtin = true
	}
	return ts
}

// common are the data fields every step but the Splitter and Collector
// reads: its label, its description and where it moves the run's entity.
const common = `"label":{"type":"string"},"description":{"type":"string"},
	"join":{"enum":["all","any"],"title":"Join","description":"all: fire once every upstream step has arrived; any: fire on the first arrival and cancel the other branches"},
	"setVariables":{"type":"object","title":"Set run variables","description":"name → expression over output, input, run, entity, steps and vars, evaluated when the step completes",
		"additionalProperties":{"type":"string","minLength":1}},
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
