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

// retryField is the data field of a step whose failed attempts are
// retried (Worker, HTTP, Email): its policy, as internal/retrypolicy
// applies it (docs/workers.md, Retries). The compiler checks it by its own
// rules for every type whose schema has it; the schema describes it for
// the editor's form and for readers of the API.
const retryField = `"retry":{"type":"object","title":"Retry","properties":{
		"maxAttempts":{"type":"integer","minimum":1,"maximum":100,"title":"Max attempts","description":"Attempts in all, the first one too. Default 3."},
		"backoff":{"enum":["exponential","fixed","linear"],"title":"Backoff","description":"How the wait between attempts grows. Default exponential."},
		"initialDelayMs":{"type":"number","minimum":0,"title":"Initial delay (ms)"},
		"maxDelayMs":{"type":"number","minimum":0,"title":"Max delay (ms)"},
		"multiplier":{"type":"number","minimum":1,"maximum":100,"title":"Multiplier","description":"Exponential backoff only. Default 2."},
		"jitter":{"title":"Jitter","description":"Up to this share of each wait is taken off at random. Default full for exponential backoff.",
			"anyOf":[{"title":"a share from 0 to 1","type":"number","minimum":0,"maximum":1},{"title":"full or none","enum":["full","none"]}]},
		"nonRetryable":{"type":"array","maxItems":100,"items":{"type":"string","minLength":1},"title":"Errors not retried","description":"An error that contains one of these fails the step at once."}}}`

func object(body string) json.RawMessage {
	return raw(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` + body + `}`)
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// statuses are a type's statuses: pending, skipped and cancelled (every
// node can take them) and its own.
func statuses(own ...engine.Status) []engine.Status {
	return append([]engine.Status{engine.StatusPending}, append(own, engine.StatusSkipped, engine.StatusCancelled)...)
}
