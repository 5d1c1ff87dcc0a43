package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestRuleUXOutcomes: docs/state_machine.md, Branches ("UX outcomes") — a
// UX node fires pending → running → waiting_for_user; a person's outcome
// with an edge of its own (or the first outcome) completes it with its
// input plus the decision and takes that outcome's edges; another outcome
// without an edge (reject without a reject edge) fails it, which a
// failure edge may take; an answer to a node no longer waiting is a
// conflict; an outcome not among the node's is refused.
func TestRuleUXOutcomes(t *testing.T) {
	t.Parallel()
	const (
		C = engine.StatusCompleted
		S = engine.StatusSkipped
		F = engine.StatusFailed
		P = engine.StatusPending
	)
	// approve → ok, escalate → esc; "hold" has no edge.
	const outcomesGraph = `{"nodes":[
		{"id":"ask","type":"UX","data":{"prompt":"ok?","outcomes":["approve","escalate","hold"]}},
		{"id":"ok","type":"Transform","data":{"expression":"\"ok\""}},
		{"id":"esc","type":"Transform","data":{"expression":"{\"escalated\": input.decision.outcome}"}}],
		"edges":[{"id":"e-ok","source":"ask","target":"ok","data":{"outcome":"approve"}},
			{"id":"e-esc","source":"ask","target":"esc","data":{"outcome":"escalate"}}]}`
	// default outcomes (approve, reject), a plain edge: reject has no edge.
	const plainGraph = `{"nodes":[
		{"id":"ask","type":"UX","data":{"prompt":"ok?"}},
		{"id":"next","type":"Transform","data":{"expression":"input.decision.outcome"}}],
		"edges":[{"id":"e1","source":"ask","target":"next"}]}`
	const failureEdgeGraph = `{"nodes":[
		{"id":"ask","type":"UX","data":{"prompt":"ok?"}},
		{"id":"next","type":"Transform","data":{"expression":"1"}},
		{"id":"denied","type":"Transform","data":{"expression":"{\"why\": input.error}"}}],
		"edges":[{"id":"e1","source":"ask","target":"next"},
			{"id":"e2","source":"ask","target":"denied","data":{"on":"failure"}}]}`
	cases := []struct {
		name    string
		graph   string
		outcome string
		comment string
		errIs   error
		run     engine.RunStatus
		nodes   map[string]engine.Status
		check   func(t *testing.T, ns map[string]engine.NodeState)
	}{
		{"an outcome's edge is taken", outcomesGraph, "escalate", "", nil, engine.RunCompleted,
			map[string]engine.Status{"ask": C, "ok": S, "esc": C}, func(t *testing.T, ns map[string]engine.NodeState) {
				require.Equal(t, []string{"esc"}, ns["ask"].Taken)
				require.JSONEq(t, `{"escalated":"escalate"}`, string(ns["esc"].Output))
				var out struct {
					Case     int             `json:"case"`
					Decision engine.Decision `json:"decision"`
				}
				require.NoError(t, json.Unmarshal(ns["ask"].Output, &out))
				require.Equal(t, 7, out.Case, "the output is the input with the decision added")
				require.Equal(t, "escalate", out.Decision.Outcome)
				require.Equal(t, "rules@example.com", out.Decision.By)
				require.JSONEq(t, `{"note":"x"}`, string(out.Decision.Answer))
			}},
		{"the first outcome's edge", outcomesGraph, "approve", "", nil, engine.RunCompleted,
			map[string]engine.Status{"ask": C, "ok": C, "esc": S}, nil},
		{"an outcome without an edge fails the node", outcomesGraph, "hold", "", nil, engine.RunFailed,
			map[string]engine.Status{"ask": F, "ok": P, "esc": P}, func(t *testing.T, ns map[string]engine.NodeState) {
				require.Equal(t, `outcome "hold" chosen, and it has no edge`, *ns["ask"].Error)
			}},
		{"the first outcome takes plain edges", plainGraph, "approve", "", nil, engine.RunCompleted,
			map[string]engine.Status{"ask": C, "next": C}, func(t *testing.T, ns map[string]engine.NodeState) {
				require.JSONEq(t, `"approve"`, string(ns["next"].Output), "next reads the decision its input carries")
			}},
		{"a rejection without a reject edge fails", plainGraph, "reject", "too costly", nil, engine.RunFailed,
			map[string]engine.Status{"ask": F, "next": P}, func(t *testing.T, ns map[string]engine.NodeState) {
				require.Equal(t, "rejected: too costly", *ns["ask"].Error)
			}},
		{"a rejection taken by a failure edge", failureEdgeGraph, "reject", "", nil, engine.RunCompleted,
			map[string]engine.Status{"ask": F, "next": S, "denied": C}, func(t *testing.T, ns map[string]engine.NodeState) {
				require.Equal(t, []string{"denied"}, ns["ask"].Taken)
				require.JSONEq(t, `{"why":"rejected"}`, string(ns["denied"].Output))
			}},
		{"an outcome that is not the node's is refused", plainGraph, "maybe", "", engine.ErrInvalidRequest, engine.RunRunning,
			map[string]engine.Status{"ask": engine.StatusWaitingForUser, "next": P}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run := r.start(tc.graph, `{"case":7}`)
			_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"ask": engine.StatusWaitingForUser})
			require.Equal(t, 1, ns["ask"].Attempt)
			require.Empty(t, r.outbox(run.ID), "a person's step sends nothing to a worker")
			err := r.eng.CompleteUX(context.Background(), engine.CompleteUXParams{RunID: run.ID, Key: "ask", Outcome: tc.outcome,
				Comment: tc.comment, Output: json.RawMessage(`{"note":"x"}`), By: "rules@example.com"})
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
			} else {
				require.NoError(t, err)
			}
			_, ns = r.wantStatuses(run.ID, tc.run, tc.nodes)
			if tc.check != nil {
				tc.check(t, ns)
			}
			if tc.errIs == nil {
				require.ErrorIs(t, r.decide(run.ID, "ask", "approve", ""), engine.ErrInvalidTransition, "no longer waiting (409)")
			}
		})
	}
}

// TestRuleUXForm: docs/state_machine.md, Branches ("UX outcomes", docs/forms.md)
// — the answer of an outcome that completes a node with a form must fit
// it, else the decision is refused before the compare-and-set; a
// rejection is not checked.
func TestRuleUXForm(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[
		{"id":"ask","type":"UX","data":{"prompt":"how much?","form":{"type":"object","required":["amount"],
			"properties":{"amount":{"type":"number"}}}}}],"edges":[]}`
	cases := []struct {
		name, outcome, answer string
		errIs                 error
		run                   engine.RunStatus
		node                  engine.Status
	}{
		{"an answer that fits", "approve", `{"amount":3}`, nil, engine.RunCompleted, engine.StatusCompleted},
		{"an answer that does not fit is refused", "approve", `{"amount":"three"}`, engine.ErrInvalidRequest,
			engine.RunRunning, engine.StatusWaitingForUser},
		{"a missing answer is refused", "approve", `{}`, engine.ErrInvalidRequest, engine.RunRunning, engine.StatusWaitingForUser},
		{"a rejection is not checked", "reject", `{}`, nil, engine.RunFailed, engine.StatusFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run := r.start(graph, `{}`)
			err := r.decide(run.ID, "ask", tc.outcome, tc.answer)
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
			} else {
				require.NoError(t, err)
			}
			r.wantStatuses(run.ID, tc.run, map[string]engine.Status{"ask": tc.node})
		})
	}
}

// TestRuleUXVotes: docs/state_machine.md, Branches ("Votes") — with
// requiredApprovals 2 a first vote moves nothing (an approval.vote), the
// second decides the node; a vote after that finds it no longer waiting.
func TestRuleUXVotes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[{"id":"ask","type":"UX","data":{"prompt":"ok?","requiredApprovals":2}}],"edges":[]}`, `{}`)
	vote := func(email string) error {
		return r.eng.CompleteUX(context.Background(), engine.CompleteUXParams{RunID: run.ID, Key: "ask", Outcome: "approve",
			Actor: &engine.Actor{Email: email, Override: true}})
	}
	require.NoError(t, vote("ada@example.com"))
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"ask": engine.StatusWaitingForUser})
	require.Len(t, r.eventsOf(run.ID, "approval.vote"), 1)
	require.NoError(t, vote("bob@example.com"))
	_, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"ask": engine.StatusCompleted})
	require.Contains(t, string(ns["ask"].Output), "bob@example.com")
	require.ErrorIs(t, vote("cy@example.com"), engine.ErrInvalidTransition, "no longer waiting (409)")
}

// TestRuleUXDeadline: docs/state_machine.md, Time — a UX node with
// timeoutSeconds gets a deadline when it starts waiting; past it (the
// sweeper's claim, store.OverdueApprovals, then
// Engine.TimeOutApproval) it is answered with its onTimeout outcome
// (decision.by "timeout") or failed ("no answer within N seconds"); an
// answer given in time leaves the deadline nothing to do.
func TestRuleUXDeadline(t *testing.T) {
	t.Parallel()
	graph := func(onTimeout string) string {
		return `{"nodes":[{"id":"ask","type":"UX","data":{"prompt":"ok?","outcomes":["approve","expire"],
			"timeoutSeconds":60` + onTimeout + `}},
			{"id":"late","type":"Transform","data":{"expression":"input.decision.by"}}],
			"edges":[{"id":"e1","source":"ask","target":"late","data":{"outcome":"expire"}}]}`
	}
	cases := []struct {
		name      string
		onTimeout string
		answer    bool
		run       engine.RunStatus
		nodes     map[string]engine.Status
		err       string
	}{
		{"onTimeout outcome", `,"onTimeout":"expire"`, false, engine.RunCompleted,
			map[string]engine.Status{"ask": engine.StatusCompleted, "late": engine.StatusCompleted}, ""},
		{"no onTimeout fails", ``, false, engine.RunFailed,
			map[string]engine.Status{"ask": engine.StatusFailed, "late": engine.StatusPending}, "no answer within 60 seconds"},
		{"answered in time", `,"onTimeout":"expire"`, true, engine.RunCompleted,
			map[string]engine.Status{"ask": engine.StatusCompleted, "late": engine.StatusSkipped}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			ctx := context.Background()
			run := r.start(graph(tc.onTimeout), `{}`)
			_, ns := r.nodes(run.ID)
			require.NotNil(t, ns["ask"].Deadline)
			overdue := func() []string {
				due, err := r.st.OverdueApprovals(ctx, 500)
				require.NoError(t, err)
				var keys []string
				for _, d := range due {
					if d.RunID == run.ID {
						keys = append(keys, d.Key)
					}
				}
				return keys
			}
			require.Empty(t, overdue(), "not before the deadline")
			if tc.answer {
				require.NoError(t, r.decide(run.ID, "ask", "approve", ""))
			}
			r.advanceDue(run.ID, 61*time.Second)
			if !tc.answer {
				require.Equal(t, []string{"ask"}, overdue())
			}
			require.NoError(t, r.eng.TimeOutApproval(ctx, run.ID, "ask", 1), "the sweeper's call; a node answered is left alone")
			_, ns = r.wantStatuses(run.ID, tc.run, tc.nodes)
			if tc.err != "" {
				require.Equal(t, tc.err, *ns["ask"].Error)
			}
			if tc.nodes["late"] == engine.StatusCompleted {
				require.JSONEq(t, `"timeout"`, string(ns["late"].Output), "decision.by")
			}
		})
	}
}
