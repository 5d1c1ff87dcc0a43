package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/schedule"
	"github.com/stitchd/stitchd/store"
)

// runSchedules starts the runs of due schedule triggers every poll
// interval, until ctx ends. Any number of processes may run it: each due
// schedule is claimed by one (store.FireSchedules), and a tick's run is
// started with the idempotency key schedule:<id>:<tick>, so a claim lost
// in a crash after the run started starts nothing twice.
func (a *App) runSchedules(ctx context.Context) {
	a.everyPoll(ctx, func() {
		defer a.TestSignals.ScheduleDone.Signal(a.clock.Now())
		n, err := a.Store.FireSchedules(ctx, 100, a.fireSchedule)
		if err != nil && ctx.Err() == nil {
			a.cfg.Logger.Warn("scheduler", "error", err)
		}
		a.Metrics.SweeperAction("schedule_fired", n)
	})
}

// everyPoll calls fn every poll interval until ctx ends.
func (a *App) everyPoll(ctx context.Context, fn func()) {
	t := time.NewTicker(a.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}

// fireSchedule decides what a due schedule does now (database time): the
// latest tick not after now fires — ticks missed while no process ran
// collapse into it (catch_up "one"), or are dropped (catch_up "none") —
// unless the previous run still runs and overlap is "skip".
func (a *App) fireSchedule(ctx context.Context, d *store.DueSchedule) error {
	spec, perr := schedule.Parse(d.Cron, d.Timezone)
	if perr != nil { // validated when saved; a time zone database may change
		msg := perr.Error()
		d.LastError, d.NextFireAt = &msg, d.Now.Add(time.Hour)
		return nil
	}
	due := d.NextFireAt
	tick, missed := spec.Latest(due, d.Now)
	d.NextFireAt = spec.Next(d.Now)
	// Ticks were missed (no process ran the scheduler), not just noticed a
	// poll late: several fell due, the first of them well before now.
	late := missed > 0 && d.Now.Sub(due) > 2*a.cfg.PollInterval+time.Second
	switch {
	case late && d.CatchUp == "none":
		msg := fmt.Sprintf("skipped %d missed tick(s) up to %s (catch_up none)", missed+1, tick.UTC().Format(time.RFC3339))
		d.LastError = &msg
		return nil
	case d.Overlap == "skip" && (d.LastRunStatus == string(engine.RunRunning) || d.LastRunStatus == string(engine.RunPaused)):
		msg := fmt.Sprintf("skipped the tick of %s: run %s is still %s (overlap skip)", tick.UTC().Format(time.RFC3339), *d.LastRunID, d.LastRunStatus)
		d.LastError = &msg
		return nil
	}
	f, err := a.Store.GetFlow(ctx, d.FlowID)
	if err != nil {
		return fmt.Errorf("error loading flow %s of schedule %s: %w", d.FlowID, d.ID, err)
	}
	trig, err := json.Marshal(map[string]any{"type": "schedule", "schedule_id": d.ID, "tick": tick.UTC(), "missed": missedTicks(late, missed)})
	if err != nil {
		return fmt.Errorf("error encoding the trigger of schedule %s: %w", d.ID, err)
	}
	run, _, err := a.Engine.StartRun(ctx, engine.StartRunParams{FlowID: d.FlowID, VersionID: f.VersionID, Input: d.Input,
		Trigger: trig, IdempotencyKey: "schedule:" + d.ID + ":" + tick.UTC().Format(time.RFC3339Nano)})
	if errors.Is(err, engine.ErrUnavailable) {
		return err // the claim is rolled back: the tick is tried again
	}
	if err != nil {
		msg := fmt.Sprintf("the tick of %s could not start a run: %v", tick.UTC().Format(time.RFC3339), err)
		d.LastError = &msg
		return nil
	}
	d.LastFiredAt, d.LastRunID, d.LastError = &tick, &run.ID, nil
	return nil
}

// missedTicks is how many earlier ticks a run stands for (catch-up).
func missedTicks(late bool, missed int) int {
	if !late {
		return 0
	}
	return missed
}

// deliverLeftEvents makes the event deliveries a process left undone (it
// stopped between storing an event and delivering it).
func (a *App) deliverLeftEvents(ctx context.Context) {
	left, err := a.Store.LeftDeliveries(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			a.cfg.Logger.Warn("sweeper", "what", "event deliveries", "error", err)
		}
		return
	}
	for _, d := range left {
		if err := a.Engine.DeliverEvent(ctx, engine.DeliverEventParams{RunID: d.RunID, Key: d.Key, Attempt: d.Attempt,
			EventID: d.EventID, Name: d.Name, On: d.On, Payload: d.Payload}); err != nil && ctx.Err() == nil {
			a.cfg.Logger.Warn("sweeper: error delivering an event", "run_id", d.RunID, "node_key", d.Key, "error", err)
		}
	}
	a.Metrics.SweeperAction("event_delivered_late", len(left))
}

// cancelOrphanedChildren cancels the sub-flow runs of cancelled runs that
// a process stopped before cancelling (it does so after the parent's
// commit).
func (a *App) cancelOrphanedChildren(ctx context.Context) {
	ids, err := a.Store.OrphanedChildren(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			a.cfg.Logger.Warn("sweeper", "what", "sub-flow runs of cancelled runs", "error", err)
		}
		return
	}
	for _, id := range ids {
		if _, err := a.Engine.CancelRun(ctx, id); err != nil && !errors.Is(err, engine.ErrConflict) && ctx.Err() == nil {
			a.cfg.Logger.Warn("sweeper: error cancelling a sub-flow run of a cancelled run", "run_id", id, "error", err)
		}
	}
	a.Metrics.SweeperAction("orphan_cancelled", len(ids))
}

// retain deletes finished runs past their retention, in batches of 500
// (each its own short transaction; with an archive, batches of 50, each
// sent to it first). It has a loop of its own, so that a backlog — a
// retention set on a flow with a year of runs — never holds up the
// sweeper's deadlines and timers: batch after batch while whole batches
// are due, each followed by a pause twice as long as it took, so that
// retention takes at most a third of one connection's time, and less of a
// busy database's (its batches take longer there): the hot path keeps
// the database (at half, the bench's chains lost too much of their rate
// while a backlog was deleted: docs/performance.md#measurements-behind-the-code);
// once caught up, one batch every poll interval.
func (a *App) retain(ctx context.Context) {
	timer := time.NewTimer(a.cfg.PollInterval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		n, full := a.deleteExpiredRuns(ctx)
		a.Metrics.SweeperAction("run_deleted", n)
		wait := a.cfg.PollInterval
		if full {
			wait = 2 * time.Since(start)
		}
		timer.Reset(wait)
	}
}

// deleteExpiredRuns deletes one batch of finished runs past their
// retention; full reports that the batch was whole (more may be due).
func (a *App) deleteExpiredRuns(ctx context.Context) (n int, full bool) {
	batch := 500
	var err error
	if a.cfg.ArchiveURL != "" {
		batch = archiveBatch
		n, err = a.Store.ArchiveExpiredRuns(ctx, a.cfg.Retention, batch, a.sendArchive)
	} else {
		n, err = a.Store.DeleteExpiredRuns(ctx, a.cfg.Retention, batch)
	}
	if err != nil {
		if ctx.Err() == nil {
			a.cfg.Logger.Warn("sweeper", "what", "retention", "error", err)
		}
		return 0, false
	}
	return n, n == batch
}

// archiveBatch is how many runs go to the archive in one request: a run
// carries all its node states and events, so fewer than are deleted at
// once without one.
const archiveBatch = 50

// sendArchive POSTs a batch of runs to the archive, signed as dispatches
// are (Standard Webhooks; webhook-id the batch's id, the same for the same
// runs, so a receiver drops a batch it already has): 2xx takes it.
func (a *App) sendArchive(ctx context.Context, batchID string, body []byte) error {
	secret, err := a.Store.WebhookSecret(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.ArchiveURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("invalid archive URL: %w", err)
	}
	ts := a.clock.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "stitchd")
	req.Header.Set("webhook-id", batchID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", callbacks.SignWebhook(secret, batchID, ts, body))
	resp, err := a.archiveClient.Do(req)
	if err != nil {
		return fmt.Errorf("archive unreachable: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("archive answered %d", resp.StatusCode)
	}
	return nil
}

// deleteExpiredSessions drops sign-in sessions past their expiry, and
// failed sign-ins long past counting, once a minute at most (an expired
// session already opens nothing).
func (a *App) deleteExpiredSessions(ctx context.Context) {
	now := a.clock.Now()
	if now.Before(a.nextSessionSweep) {
		return
	}
	a.nextSessionSweep = now.Add(time.Minute)
	n, err := a.Store.DeleteExpiredSessions(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			a.cfg.Logger.Warn("sweeper", "what", "expired sessions", "error", err)
		}
		return
	}
	a.Metrics.SweeperAction("session_deleted", int(n))
	// Sign-in failures count for 15 minutes (web's login window); an hour
	// keeps them well past it.
	if _, err := a.Store.DeleteOldLoginFailures(ctx, now.Add(-time.Hour)); err != nil && ctx.Err() == nil {
		a.cfg.Logger.Warn("sweeper", "what", "old failed sign-ins", "error", err)
	}
}

// failRunsPastDeadline fails the runs whose deadline passed.
func (a *App) failRunsPastDeadline(ctx context.Context) {
	ids, err := a.Store.OverdueRuns(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			a.cfg.Logger.Warn("sweeper", "what", "run deadlines", "error", err)
		}
		return
	}
	for _, id := range ids {
		if err := a.Engine.FailRunPastDeadline(ctx, id); err != nil && ctx.Err() == nil {
			a.cfg.Logger.Warn("sweeper: error failing a run past its deadline", "run_id", id, "error", err)
		}
	}
	a.Metrics.SweeperAction("run_deadline", len(ids))
}
