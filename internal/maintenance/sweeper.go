package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/startstop"
	"github.com/stitchd/stitchd/internal/testsignal"
	"github.com/stitchd/stitchd/store"
)

// SweeperStore is what the sweeper claims and deletes (store.Store).
type SweeperStore interface {
	OverdueNodes(ctx context.Context, limit int) ([]store.Overdue, error)
	DueTimers(ctx context.Context, limit int) ([]store.Due, error)
	OverdueApprovals(ctx context.Context, limit int) ([]store.Due, error)
	DueReminders(ctx context.Context, limit int) ([]store.Due, error)
	DueEscalations(ctx context.Context, limit int) ([]store.Due, error)
	OverdueEvents(ctx context.Context, limit int) ([]store.Due, error)
	LeftDeliveries(ctx context.Context, limit int) ([]store.LeftDelivery, error)
	OverdueRuns(ctx context.Context, limit int) ([]string, error)
	OrphanedChildren(ctx context.Context, limit int) ([]string, error)
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int64, error)
	DeleteOldLoginFailures(ctx context.Context, before time.Time) (int64, error)
	NotifySLABreaches(ctx context.Context, now time.Time, limit int) (int, error)
}

// SweeperEngine applies what fell due (engine.Engine).
type SweeperEngine interface {
	Expire(ctx context.Context, p engine.ExpireParams) (bool, error)
	Wake(ctx context.Context, runID string, due []engine.DueNode) error
	TimeOutApproval(ctx context.Context, runID, key string, attempt int) error
	RemindApproval(ctx context.Context, runID, key string, attempt int) error
	EscalateApproval(ctx context.Context, runID, key string, attempt int) error
	TimeOutEvent(ctx context.Context, runID, key string, attempt int) error
	DeliverEvent(ctx context.Context, p engine.DeliverEventParams) error
	FailRunPastDeadline(ctx context.Context, runID string) error
	CancelRun(ctx context.Context, runID string) (*engine.Run, error)
}

// SweeperParams configures a Sweeper.
type SweeperParams struct {
	Store  SweeperStore
	Engine SweeperEngine
	// Metrics counts the actions (nil: not counted).
	Metrics ActionCounter
	// Clock tells the time of a pass and of the sessions' expiry (default
	// engine.SystemClock); what is due is found by the database's clock.
	Clock  engine.Clock
	Logger *slog.Logger
	// PollInterval is how often a pass runs (default 1s).
	PollInterval time.Duration
	// NotifySLA makes each pass notify entities past their section's SLA
	// (entity.sla_breached; only when a notification webhook is set).
	NotifySLA bool
	// Done is sent after each pass, with the time it began (nil: nothing
	// is sent; internal/app's TestSignals.SweepDone).
	Done *testsignal.Signal[time.Time]
}

// Sweeper handles, every poll interval, what fell due: worker nodes past
// their deadline (failed or retried), timers, approvals and event waits
// past their deadline, reminders, event deliveries left undone, runs past
// theirs, sub-flow runs of cancelled runs, expired sessions.
type Sweeper struct {
	p         SweeperParams
	lifecycle startstop.Base
	// nextSessionSweep is when the sweeper next drops expired sessions,
	// nextSLASweep when it next looks for SLA breaches (read and written by
	// the sweeper's goroutine only).
	nextSessionSweep time.Time
	nextSLASweep     time.Time
}

// NewSweeper returns a Sweeper; Start runs it.
func NewSweeper(p SweeperParams) *Sweeper {
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
	return &Sweeper{p: p}
}

// Start sweeps every poll interval until Stop (startstop.Service).
func (s *Sweeper) Start(ctx context.Context) error {
	return s.lifecycle.StartWith(ctx, func(ctx context.Context) error {
		s.lifecycle.Go(ctx, func(ctx context.Context) { everyPoll(ctx, s.p.PollInterval, func() { s.pass(ctx) }) })
		return nil
	})
}

// Stop stops sweeping and returns once a pass under way ended.
func (s *Sweeper) Stop() { s.lifecycle.Stop() }

// pass is one sweep; Done is sent once every part of it returned.
func (s *Sweeper) pass(ctx context.Context) {
	began := s.p.Clock.Now()
	defer s.p.Done.Signal(began)
	s.expireOverdue(ctx)
	due := dueSweep{Logger: s.p.Logger, Metrics: s.p.Metrics}
	due.run(ctx, "woken", s.p.Store.DueTimers, s.p.Engine.Wake)
	due.run(ctx, "approval_timed_out", s.p.Store.OverdueApprovals, each(s.p.Engine.TimeOutApproval))
	due.run(ctx, "approval_reminded", s.p.Store.DueReminders, each(s.p.Engine.RemindApproval))
	due.run(ctx, "approval_escalated", s.p.Store.DueEscalations, each(s.p.Engine.EscalateApproval))
	due.run(ctx, "event_timed_out", s.p.Store.OverdueEvents, each(s.p.Engine.TimeOutEvent))
	s.deliverLeftEvents(ctx)
	s.failRunsPastDeadline(ctx)
	s.cancelOrphanedChildren(ctx)
	s.deleteExpiredSessions(ctx)
	s.notifySLABreaches(ctx)
}
