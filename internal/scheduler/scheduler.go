package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/schedule"
	"github.com/stitchd/stitchd/internal/startstop"
	"github.com/stitchd/stitchd/internal/testsignal"
	"github.com/stitchd/stitchd/store"
)

// Store claims the due schedules and reads their flows (store.Store).
type Store interface {
	FireSchedules(ctx context.Context, limit int, fire func(ctx context.Context, d *store.DueSchedule) error) (int, error)
	GetFlow(ctx context.Context, id string) (*store.Flow, error)
}

// Engine starts the schedules' runs (engine.Engine).
type Engine interface {
	StartRun(ctx context.Context, p engine.StartRunParams) (run *engine.Run, created bool, err error)
}

// ActionCounter counts the schedules fired
// (internal/metrics.Metrics.SweeperAction, as "schedule_fired").
type ActionCounter interface {
	SweeperAction(action string, n int)
}

// Params configures a Scheduler.
type Params struct {
	Store  Store
	Engine Engine
	// Metrics counts the schedules fired (nil: not counted).
	Metrics ActionCounter
	// Clock tells the time a pass began (default engine.SystemClock); due
	// ticks are found by the database's clock.
	Clock  engine.Clock
	Logger *slog.Logger
	// PollInterval is how often due schedules are claimed (default 1s); a
	// tick later than two of them is a missed one (catch_up).
	PollInterval time.Duration
	// Done is sent after each pass, with the time it began (nil: nothing
	// is sent; internal/app's TestSignals.ScheduleDone).
	Done *testsignal.Signal[time.Time]
}

// Scheduler starts the runs of due schedule triggers every poll interval.
type Scheduler struct {
	p         Params
	lifecycle startstop.Base
}

// New returns a Scheduler; Start runs it.
func New(p Params) *Scheduler {
	if p.Metrics == nil {
		p.Metrics = noCounter{}
	}
	if p.Clock == nil {
		p.Clock = engine.SystemClock{}
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.PollInterval <= 0 {
		p.PollInterval = time.Second
	}
	if p.Done == nil {
		p.Done = &testsignal.Signal[time.Time]{} // inert
	}
	return &Scheduler{p: p}
}

// noCounter counts nothing.
type noCounter struct{}

func (noCounter) SweeperAction(string, int) {}

// Start fires due schedules every poll interval until Stop
// (startstop.Service).
func (s *Scheduler) Start(ctx context.Context) error {
	return s.lifecycle.StartWith(ctx, func(ctx context.Context) error {
		s.lifecycle.Go(ctx, s.run)
		return nil
	})
}

// Stop stops firing and returns once a pass under way ended.
func (s *Scheduler) Stop() { s.lifecycle.Stop() }

func (s *Scheduler) run(ctx context.Context) {
	t := time.NewTicker(s.p.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.pass(ctx)
	}
}

// pass fires the due schedules, a hundred at most.
func (s *Scheduler) pass(ctx context.Context) {
	defer s.p.Done.Signal(s.p.Clock.Now())
	n, err := s.p.Store.FireSchedules(ctx, 100, s.fire)
	if err != nil && ctx.Err() == nil {
		s.p.Logger.Warn("scheduler", "error", err)
	}
	s.p.Metrics.SweeperAction("schedule_fired", n)
}

// fire decides what a due schedule does now (database time): the latest
// tick not after now fires — ticks missed while no process ran collapse
// into it (catch_up "one"), or are dropped (catch_up "none") — unless the
// previous run still runs and overlap is "skip".
func (s *Scheduler) fire(ctx context.Context, d *store.DueSchedule) error {
	spec, perrs := schedule.Parse(d.Cron, d.Timezone)
	if len(perrs) > 0 { // validated when saved; a time zone database may change
		msg := perrs[0].Error()
		d.LastError, d.NextFireAt = &msg, d.Now.Add(time.Hour)
		return nil
	}
	due, next := d.NextFireAt, spec.Next(d.Now)
	switch {
	case next.IsZero():
		// A date that comes once in more than five years (29 February
		// around 2100): looked at again in a day, starting nothing, rather
		// than due at the year 1 for ever, in front of every schedule.
		msg := fmt.Sprintf("%q has no time in the next five years: nothing fires (change the cron expression)", d.Cron)
		d.LastError, d.NextFireAt = &msg, d.Now.Add(24*time.Hour)
		return nil
	case due.IsZero():
		// Saved when it had no next time: nothing was due; it goes on from now.
		d.NextFireAt = next
		return nil
	}
	tick, missed := spec.Latest(due, d.Now)
	d.NextFireAt = next
	// Ticks were missed (no process ran the scheduler), not just noticed a
	// poll late: several fell due, the first of them well before now.
	late := missed > 0 && d.Now.Sub(due) > 2*s.p.PollInterval+time.Second
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
	f, err := s.p.Store.GetFlow(ctx, d.FlowID)
	if err != nil {
		return fmt.Errorf("error loading flow %s of schedule %s: %w", d.FlowID, d.ID, err)
	}
	trig, err := json.Marshal(map[string]any{"type": "schedule", "schedule_id": d.ID, "tick": tick.UTC(), "missed": missedTicks(late, missed)})
	if err != nil {
		return fmt.Errorf("error encoding the trigger of schedule %s: %w", d.ID, err)
	}
	run, _, err := s.p.Engine.StartRun(ctx, engine.StartRunParams{FlowID: d.FlowID, VersionID: f.VersionID, Input: d.Input,
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
