package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Notifications (README, Notifications): what people should hear about is
// written to an outbox (Tx.InsertNotifications) by the transaction in which
// it happened, and delivered to the notification webhook after the commit
// (callbacks.Notifier), signed like dispatches, with retries. Nothing is
// written when no webhook is configured (Config.Notify) — but a worker's
// cancel notice, which goes to its node's own cancelUrl.

// Notification types.
const (
	NotifyApprovalRequested = "approval.requested"
	NotifyApprovalReminder  = "approval.reminder"
	NotifyApprovalTimedOut  = "approval.timed_out"
	NotifyRunFailed         = "run.failed"
)

// EventApprovalReminder is recorded when a UX node still waiting was
// reminded about.
const EventApprovalReminder = "node.reminder"

// notify writes a notification of type typ about the transaction's run
// (and node key, if any) with fields added to the common ones.
func (t *txn) notify(typ, key string, fields map[string]any) {
	if !t.e.cfg.Notify {
		return
	}
	id := t.e.cfg.NewID()
	p := map[string]any{"type": typ, "id": id, "at": t.e.cfg.Clock.Now().UTC(), "run_id": t.run.ID,
		"flow_id": t.run.FlowID}
	if key != "" {
		p["node_key"] = key
	}
	for k, v := range fields {
		p[k] = v
	}
	b, err := json.Marshal(p)
	if err != nil { // values are the engine's own
		b = []byte(fmt.Sprintf(`{"type":%q,"id":%q,"run_id":%q}`, typ, id, t.run.ID))
	}
	t.notes = append(t.notes, Notification{ID: id, Type: typ, RunID: t.run.ID, Payload: b})
}

// NotifyWorkerCancel is the notice a Worker node's cancelUrl gets when the
// run of a job it was given is cancelled.
const NotifyWorkerCancel = "worker.cancel"

// tellWorkerCancelled writes, for a Worker node that was running (its job
// handed to, or on its way to, its worker) and has a cancelUrl, a notice to
// that URL: {"type": "worker.cancel", "runId", "nodeId", "attempt",
// "reason"} — the dispatch's own names, so the worker finds the job;
// reason is "run cancelled", or, for a branch a join's first arrival
// cancelled, "another branch reached <join> first". It
// travels the notification outbox (signed, retried), whether or not a
// notification webhook is configured.
func (t *txn) tellWorkerCancelled(c CancelledNode, reason string) {
	n := t.graph.Nodes[c.NodeID]
	if c.Was != StatusRunning || n == nil || !n.Caps.CallsBack {
		return
	}
	var cfg struct {
		CancelURL string `json:"cancelUrl"`
	}
	if len(n.Config) > 0 {
		_ = json.Unmarshal(n.Config, &cfg) // the compiler checked it
	}
	if cfg.CancelURL == "" {
		return
	}
	id := t.e.cfg.NewID()
	// Fields in the order a map's sorted keys had; "at" formatted as
	// time.Time's JSON is, so that encoding cannot fail.
	b, _ := json.Marshal(struct {
		At      string `json:"at"`
		Attempt int    `json:"attempt"`
		ID      string `json:"id"`
		NodeID  string `json:"nodeId"`
		Reason  string `json:"reason"`
		RunID   string `json:"runId"`
		Type    string `json:"type"`
	}{At: t.e.cfg.Clock.Now().UTC().Format(time.RFC3339Nano), Attempt: c.Attempt, ID: id, NodeID: c.Key,
		Reason: reason, RunID: t.run.ID, Type: NotifyWorkerCancel})
	t.notes = append(t.notes, Notification{ID: id, Type: NotifyWorkerCancel, RunID: t.run.ID, URL: cfg.CancelURL, Payload: b})
}

// NotificationOutcome is the result of one delivery try of a notification.
type NotificationOutcome struct {
	ID        string
	Tries     int
	Delivered bool
	Error     string
	// RetryIn > 0 schedules another try; 0 with Delivered false gives up.
	RetryIn time.Duration
}

// uxInfo is what a notification about a UX node tells of it.
type uxInfo struct {
	Label              string   `json:"label,omitempty"`
	Prompt             string   `json:"prompt,omitempty"`
	Outcomes           []string `json:"-"`
	TimeoutSeconds     float64  `json:"timeoutSeconds,omitempty"`
	RemindAfterSeconds float64  `json:"remindAfterSeconds,omitempty"`
}

func uxInfoOf(n *Node) uxInfo {
	var cfg uxInfo
	if len(n.Config) > 0 {
		_ = json.Unmarshal(n.Config, &cfg) // the compiler checked it
	}
	cfg.Outcomes = UXOutcomes(n)
	return cfg
}

// remindSeconds is a UX node's reminder interval (0: none).
func remindSeconds(n *Node) int {
	if !n.Caps.WaitsForPerson {
		return 0
	}
	return int(math.Ceil(max(uxInfoOf(n).RemindAfterSeconds, 0)))
}

// notifyApproval notifies about UX node n at key, attempt.
func (t *txn) notifyApproval(typ string, n *Node, key string, attempt int, extra map[string]any) {
	if !t.e.cfg.Notify {
		return
	}
	info := uxInfoOf(n)
	p := map[string]any{"node_id": n.ID, "attempt": attempt, "label": info.Label, "prompt": info.Prompt,
		"outcomes": info.Outcomes}
	if info.TimeoutSeconds > 0 {
		p["timeout_seconds"] = info.TimeoutSeconds
	}
	for k, v := range extra {
		p[k] = v
	}
	t.notify(typ, key, p)
}

// RemindApproval reminds about a UX node still waiting for a person when
// its remindAfterSeconds came round again: a node.reminder event and an
// approval.reminder notification, and the next reminder as far ahead. A
// node no longer waiting that attempt is left alone.
func (e *Engine) RemindApproval(ctx context.Context, runID, key string, attempt int) error {
	return e.whileIn(ctx, runID, key, attempt, StatusWaitingForUser, func(t *txn, n *Node, cur *NodeState) error {
		secs := remindSeconds(n)
		t.event(EventApprovalReminder, key, map[string]any{"attempt": attempt})
		t.notifyApproval(NotifyApprovalReminder, n, key, attempt, map[string]any{"waiting_since": cur.StartedAt})
		if err := t.w.SetRemindAt(runID, key, secs); err != nil {
			return fmt.Errorf("error setting the next reminder of %s: %w", key, err)
		}
		return nil
	})
}
