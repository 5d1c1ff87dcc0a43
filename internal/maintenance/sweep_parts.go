package maintenance

import (
	"context"
	"errors"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// expireOverdue fails or retries worker nodes whose deadline passed.
func (s *Sweeper) expireOverdue(ctx context.Context) {
	overdue, err := s.p.Store.OverdueNodes(ctx, 100)
	if err != nil {
		if ctx.Err() == nil {
			s.p.Logger.Warn("sweeper", "error", err)
		}
		return
	}
	for _, o := range overdue {
		expired, err := s.p.Engine.Expire(ctx, engine.ExpireParams{RunID: o.RunID, Key: o.Key, Attempt: o.Attempt,
			Deadline: o.Deadline})
		switch {
		case err != nil:
			if ctx.Err() == nil {
				s.p.Logger.Warn("sweeper: error expiring node", "run_id", o.RunID, "node_key", o.Key, "error", err)
			}
		case expired:
			s.p.Metrics.SweeperAction("expired", 1)
			s.p.Logger.Info("sweeper: worker node overdue", "run_id", o.RunID, "node_key", o.Key, "attempt", o.Attempt)
		default:
			// Its callback, a heartbeat or another attempt came first.
			s.p.Logger.Debug("sweeper: overdue node answered meanwhile", "run_id", o.RunID, "node_key", o.Key, "attempt", o.Attempt)
		}
	}
}

// deliverLeftEvents makes the event deliveries a process left undone (it
// stopped between storing an event and delivering it).
func (s *Sweeper) deliverLeftEvents(ctx context.Context) {
	left, err := s.p.Store.LeftDeliveries(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			s.p.Logger.Warn("sweeper", "what", "event deliveries", "error", err)
		}
		return
	}
	for _, d := range left {
		if err := s.p.Engine.DeliverEvent(ctx, engine.DeliverEventParams{RunID: d.RunID, Key: d.Key, Attempt: d.Attempt,
			EventID: d.EventID, Name: d.Name, On: d.On, Payload: d.Payload}); err != nil && ctx.Err() == nil {
			s.p.Logger.Warn("sweeper: error delivering an event", "run_id", d.RunID, "node_key", d.Key, "error", err)
		}
	}
	s.p.Metrics.SweeperAction("event_delivered_late", len(left))
}

// failRunsPastDeadline fails the runs whose deadline passed.
func (s *Sweeper) failRunsPastDeadline(ctx context.Context) {
	ids, err := s.p.Store.OverdueRuns(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			s.p.Logger.Warn("sweeper", "what", "run deadlines", "error", err)
		}
		return
	}
	for _, id := range ids {
		if err := s.p.Engine.FailRunPastDeadline(ctx, id); err != nil && ctx.Err() == nil {
			s.p.Logger.Warn("sweeper: error failing a run past its deadline", "run_id", id, "error", err)
		}
	}
	s.p.Metrics.SweeperAction("run_deadline", len(ids))
}

// cancelOrphanedChildren cancels the sub-flow runs of cancelled runs that
// a process stopped before cancelling (it does so after the parent's
// commit).
func (s *Sweeper) cancelOrphanedChildren(ctx context.Context) {
	ids, err := s.p.Store.OrphanedChildren(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			s.p.Logger.Warn("sweeper", "what", "sub-flow runs of cancelled runs", "error", err)
		}
		return
	}
	for _, id := range ids {
		if _, err := s.p.Engine.CancelRun(ctx, id); err != nil && !errors.Is(err, engine.ErrConflict) && ctx.Err() == nil {
			s.p.Logger.Warn("sweeper: error cancelling a sub-flow run of a cancelled run", "run_id", id, "error", err)
		}
	}
	s.p.Metrics.SweeperAction("orphan_cancelled", len(ids))
}

// deleteExpiredSessions drops sign-in sessions past their expiry, and
// failed sign-ins long past counting, once a minute at most (an expired
// session already opens nothing).
func (s *Sweeper) deleteExpiredSessions(ctx context.Context) {
	now := s.p.Clock.Now()
	if now.Before(s.nextSessionSweep) {
		return
	}
	s.nextSessionSweep = now.Add(time.Minute)
	n, err := s.p.Store.DeleteExpiredSessions(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			s.p.Logger.Warn("sweeper", "what", "expired sessions", "error", err)
		}
		return
	}
	s.p.Metrics.SweeperAction("session_deleted", int(n))
	// Sign-in failures count for 15 minutes (web's login window); an hour
	// keeps them well past it.
	if _, err := s.p.Store.DeleteOldLoginFailures(ctx, now.Add(-time.Hour)); err != nil && ctx.Err() == nil {
		s.p.Logger.Warn("sweeper", "what", "old failed sign-ins", "error", err)
	}
}

// notifySLABreaches notifies entities past their section's SLA, once per
// stay: a batch every slaSweepEvery at most (it reads every entity of the
// sections with an SLA, so not on every pass).
func (s *Sweeper) notifySLABreaches(ctx context.Context) {
	if !s.p.NotifySLA {
		return
	}
	now := s.p.Clock.Now()
	if now.Before(s.nextSLASweep) {
		return
	}
	s.nextSLASweep = now.Add(slaSweepEvery)
	n, err := s.p.Store.NotifySLABreaches(ctx, now, 500)
	if err != nil {
		if ctx.Err() == nil {
			s.p.Logger.Warn("sweeper", "what", "SLA breaches", "error", err)
		}
		return
	}
	s.p.Metrics.SweeperAction("sla_breached", n)
	if n == 500 {
		s.nextSLASweep = now // more are due: the next pass goes on
	}
}

// slaSweepEvery is how often the sweeper looks for entities past their
// section's SLA.
const slaSweepEvery = 10 * time.Second
