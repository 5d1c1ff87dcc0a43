package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
)

// fire is a FireContext that records the one action a handler takes. It is
// the handler's whole world: what the engine does with the action is the
// engine's tests' (engine/, internal/app).
type fire struct {
	node  engine.Node
	input json.RawMessage

	action   string
	dispatch engine.DispatchRequest
	output   json.RawMessage
	reason   string
	items    []json.RawMessage
	logs     []string
	answer   *engine.CallerAnswer
}

func newFire(typ engine.NodeType, config, input string) *fire {
	return &fire{node: engine.Node{ID: "n", Type: typ, Config: json.RawMessage(config)}, input: json.RawMessage(input)}
}

func (f *fire) RunID() string                { return "run-1" }
func (f *fire) Key() string                  { return "n" }
func (f *fire) Node() *engine.Node           { return &f.node }
func (f *fire) Index() []int                 { return nil }
func (f *fire) Input() json.RawMessage       { return f.input }
func (f *fire) Attempt() int                 { return 2 }
func (f *fire) Now() time.Time               { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) }
func (f *fire) CallbackURL() (string, error) { return "http://stitchd/callbacks/run-1/n/2?sig=x", nil }

// Eval evaluates over {input} only, as the engine does for an expression
// that reads neither the run nor the entity.
func (f *fire) Eval(src string) (any, error) {
	var in any
	if len(f.input) > 0 {
		if err := json.Unmarshal(f.input, &in); err != nil {
			return nil, err
		}
	}
	return expr.Eval(src, map[string]any{"input": in})
}

func (f *fire) act(a string) error {
	if f.action != "" {
		return errors.New("a second action: " + a)
	}
	f.action = a
	return nil
}

func (f *fire) Dispatch(req engine.DispatchRequest) error { f.dispatch = req; return f.act("dispatch") }
func (f *fire) WaitForUser() error                        { return f.act("wait_for_user") }
func (f *fire) WaitForEvent(engine.EventWait, int) error  { return f.act("wait_for_event") }
func (f *fire) Sleep(engine.Wake) error                   { return f.act("sleep") }
func (f *fire) Complete(out json.RawMessage) error        { f.output = out; return f.act("complete") }
func (f *fire) Fail(reason string) error                  { f.reason = reason; return f.act("fail") }
func (f *fire) FanOut(items []json.RawMessage) error      { f.items = items; return f.act("fan_out") }
func (f *fire) StartChild(engine.ChildRun) error          { return f.act("start_child") }
func (f *fire) Log(message string, data json.RawMessage) {
	f.logs = append(f.logs, message+" "+string(data))
}

func (f *fire) Answer(a engine.CallerAnswer) { f.answer = &a }

// TestWorkerSendsTheContractPayload: a Worker states its whole request —
// the contract payload with this attempt's callback URL, a null input
// when it has none — and that its callback completes it.
func TestWorkerSendsTheContractPayload(t *testing.T) {
	f := newFire(engine.NodeTypeWorker, `{"webhookUrl":"https://w.example/score","timeoutSeconds":30,"delivery":{"maxTries":4}}`, "")
	require.NoError(t, handlers.Worker{}.Fire(context.Background(), f))
	require.Equal(t, "dispatch", f.action)
	req := f.dispatch
	require.Equal(t, "https://w.example/score", req.URL)
	require.Equal(t, engine.DispatchCallback, req.Kind)
	require.Equal(t, 30, req.TimeoutSeconds)
	require.Equal(t, 4, req.MaxTries)
	require.JSONEq(t, `{"runId":"run-1","nodeId":"n","attempt":2,"input":null,
		"callbackUrl":"http://stitchd/callbacks/run-1/n/2?sig=x",
		"config":{"webhookUrl":"https://w.example/score","timeoutSeconds":30,"delivery":{"maxTries":4}}}`, string(req.Body))
}

// TestSplitterFansOutOrFails: the items at arrayPath, or a failure that
// names what is wrong (no array, too many items).
func TestSplitterFansOutOrFails(t *testing.T) {
	f := newFire(engine.NodeTypeSplitter, `{"arrayPath":"lead.emails"}`, `{"lead":{"emails":["a@x","b@x",{"c":1}]}}`)
	require.NoError(t, handlers.Splitter{}.Fire(context.Background(), f))
	require.Equal(t, "fan_out", f.action)
	require.Equal(t, []json.RawMessage{json.RawMessage(`"a@x"`), json.RawMessage(`"b@x"`), json.RawMessage(`{"c":1}`)}, f.items)

	f = newFire(engine.NodeTypeSplitter, `{"arrayPath":"items"}`, `{"items":[1,2,3]}`)
	require.NoError(t, handlers.Splitter{MaxItems: 2}.Fire(context.Background(), f))
	require.Equal(t, "fail", f.action)
	require.Equal(t, "arrayPath items has 3 items, more than the maximum of 2", f.reason)

	f = newFire(engine.NodeTypeSplitter, `{"arrayPath":"items"}`, `{"items":"none"}`)
	require.NoError(t, handlers.Splitter{}.Fire(context.Background(), f))
	require.Equal(t, "fail", f.action)
	require.Contains(t, f.reason, "items")
}

// TestTransformCompletesWithItsValue: the expression's value is the
// output; an expression that fails fails the node with the reason.
func TestTransformCompletesWithItsValue(t *testing.T) {
	f := newFire(engine.NodeTypeTransform, `{"expression":"{\"name\": upper(input.first), \"hot\": input.n > 100}"}`, `{"first":"ada","n":150}`)
	require.NoError(t, handlers.Transform{}.Fire(context.Background(), f))
	require.Equal(t, "complete", f.action)
	require.JSONEq(t, `{"name":"ADA","hot":true}`, string(f.output))

	f = newFire(engine.NodeTypeTransform, `{"expression":"input.first.missing()"}`, `{"first":"ada"}`)
	require.NoError(t, handlers.Transform{}.Fire(context.Background(), f))
	require.Equal(t, "fail", f.action)
	require.True(t, strings.HasPrefix(f.reason, "the expression could not be evaluated: "), f.reason)

	f = newFire(engine.NodeTypeTransform, `{"expression":"input.s"}`, `{"s":"`+strings.Repeat("x", 1100000)+`"}`)
	require.NoError(t, handlers.Transform{}.Fire(context.Background(), f))
	require.Equal(t, "fail", f.action)
	require.Contains(t, f.reason, "more than 1048576")
}

// TestConditionPassesItsInputOn: a Condition does no work.
func TestConditionPassesItsInputOn(t *testing.T) {
	f := newFire(engine.NodeTypeCondition, `{}`, `{"amount":12}`)
	require.NoError(t, handlers.Condition{}.Fire(context.Background(), f))
	require.Equal(t, "complete", f.action)
	require.JSONEq(t, `{"amount":12}`, string(f.output))
}

// TestTypesAreRegisteredOnce: every built-in type has one registration
// with a handler and a look, in palette order.
func TestTypesAreRegisteredOnce(t *testing.T) {
	types := handlers.Types(handlers.Options{})
	var names []engine.NodeType
	for _, ts := range types {
		names = append(names, ts.Type)
		require.NotNil(t, ts.Handler, ts.Type)
		require.True(t, ts.Builtin, ts.Type)
		require.NotEmpty(t, ts.Help, ts.Type)
		require.NotEmpty(t, ts.Label, ts.Type)
		require.NotEmpty(t, ts.IDPrefix, ts.Type)
		require.Regexp(t, `^#[0-9a-f]{6}$`, ts.Color, ts.Type)
		require.NotEmpty(t, ts.Icon, ts.Type)
		require.Contains(t, ts.Statuses, engine.StatusPending, ts.Type)
	}
	// The ten first types lead the palette, in this order; later ones
	// follow, each once (a new type is its line in Types, not here).
	require.Equal(t, []engine.NodeType{engine.NodeTypeWorker, engine.NodeTypeHTTP, engine.NodeTypeUX, engine.NodeTypeCondition,
		engine.NodeTypeTransform, engine.NodeTypeWait, engine.NodeTypeEvent, engine.NodeTypeSubFlow, engine.NodeTypeSplitter,
		engine.NodeTypeCollector}, names[:10])
	seen := map[string]bool{}
	for _, n := range names {
		l := strings.ToLower(string(n))
		require.False(t, seen[l], "%s registered twice", n)
		seen[l] = true
	}
	require.Contains(t, names, engine.NodeType("Log"))
	require.Contains(t, names, engine.NodeType("Code"))
	require.Equal(t, handlers.Splitter{MaxItems: 7}, handlers.Types(handlers.Options{MaxFanOutItems: 7})[8].Handler)
}

// TestLogLogsAndPassesItsInputOn: a Log logs its message with its input
// and completes with the input.
func TestLogLogsAndPassesItsInputOn(t *testing.T) {
	f := newFire("Log", `{"message":"reached scoring"}`, `{"score":7}`)
	require.NoError(t, handlers.Log{}.Fire(context.Background(), f))
	require.Equal(t, "complete", f.action)
	require.JSONEq(t, `{"score":7}`, string(f.output))
	require.Equal(t, []string{`reached scoring {"score":7}`}, f.logs)
}

// TestRespondAnswersAndPassesItsInputOn: a Respond node gives the run's
// caller its status (200 by default) and its body rendered over its
// input — JSON with templated strings, or a text template — and
// completes with its input; its templates are checked at save, a secret
// refused.
func TestRespondAnswersAndPassesItsInputOn(t *testing.T) {
	f := newFire("Respond", `{"status":201,"body":{"accepted":"{{ input.order }}","n":"{{ input.n }}","note":"order {{ input.order }}"}}`,
		`{"order":"o-1","n":3}`)
	require.NoError(t, handlers.Respond{}.Fire(context.Background(), f))
	require.Equal(t, "complete", f.action)
	require.JSONEq(t, `{"order":"o-1","n":3}`, string(f.output))
	require.NotNil(t, f.answer)
	require.Equal(t, 201, f.answer.Status)
	require.Equal(t, "application/json", f.answer.ContentType)
	require.JSONEq(t, `{"accepted":"o-1","n":3,"note":"order o-1"}`, f.answer.Body)

	f = newFire("Respond", `{"body":"thanks, {{ input.name }}"}`, `{"name":"Ada"}`)
	require.NoError(t, handlers.Respond{}.Fire(context.Background(), f))
	require.Equal(t, engine.CallerAnswer{Status: 200, ContentType: "text/plain; charset=utf-8", Body: "thanks, Ada"}, *f.answer)

	f = newFire("Respond", `{"status":204}`, `{}`)
	require.NoError(t, handlers.Respond{}.Fire(context.Background(), f))
	require.Equal(t, engine.CallerAnswer{Status: 204}, *f.answer)

	f = newFire("Respond", `{"body":"{{ input.missing.deeper }}"}`, `{}`)
	require.NoError(t, handlers.Respond{}.Fire(context.Background(), f))
	require.Equal(t, "fail", f.action)
	require.Nil(t, f.answer, "no answer from a node that failed")

	var spec engine.NodeTypeSpec
	for _, s := range handlers.Types(handlers.Options{}) {
		if s.Type == "Respond" {
			spec = s
		}
	}
	require.NotNil(t, spec.Check)
	require.Empty(t, spec.Check(json.RawMessage(`{"body":{"a":["{{ input.x }}"]}}`)))
	require.Len(t, spec.Check(json.RawMessage(`{"body":{"a":"{{ input. }}"}}`)), 1)
	require.Contains(t, spec.Check(json.RawMessage(`{"body":"{{ secret \"TOKEN\" }}"}`))[0], "secret")
}

// TestPolicyTimeoutRoundsUp: a fractional timeoutSeconds is a deadline of
// whole seconds rounded up, never the default.
func TestPolicyTimeoutRoundsUp(t *testing.T) {
	for cfg, want := range map[string]int{`{"timeoutSeconds": 0.5}`: 1, `{"timeoutSeconds": 1.5}`: 2, `{"timeoutSeconds": 7}`: 7, `{}`: handlers.DefaultTimeoutSeconds} {
		require.Equal(t, want, handlers.PolicyOf(&engine.Node{Config: json.RawMessage(cfg)}).TimeoutSeconds, cfg)
	}
}
