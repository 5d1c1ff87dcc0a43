package maintenance

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/startstop/startstoptest"
	"github.com/stitchd/stitchd/internal/testsignal"
	"github.com/stitchd/stitchd/store"
)

// fakeStore has one of each due thing, once; it records what it was asked.
type fakeStore struct {
	mu     sync.Mutex
	timers []store.Due
	asked  []string
}

func (f *fakeStore) ask(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, what)
}

func (f *fakeStore) OverdueNodes(context.Context, int) ([]store.Overdue, error) {
	f.ask("nodes")
	// r1b's worker answers between the claim and the expiry.
	return []store.Overdue{{RunID: "r1", Key: "w", Attempt: 1}, {RunID: "r1b", Key: "w", Attempt: 1}}, nil
}

func (f *fakeStore) DueTimers(context.Context, int) ([]store.Due, error) {
	f.ask("timers")
	f.mu.Lock()
	defer f.mu.Unlock()
	due := f.timers
	f.timers = nil
	return due, nil
}

func (f *fakeStore) OverdueApprovals(context.Context, int) ([]store.Due, error) {
	f.ask("approvals")
	return []store.Due{{RunID: "r3", Key: "a", Attempt: 1}}, nil
}

func (f *fakeStore) DueReminders(context.Context, int) ([]store.Due, error) {
	f.ask("reminders")
	return nil, nil
}

func (f *fakeStore) DueEscalations(context.Context, int) ([]store.Due, error) {
	f.ask("escalations")
	return nil, nil
}

func (f *fakeStore) OverdueEvents(context.Context, int) ([]store.Due, error) {
	f.ask("events")
	return nil, errors.New("boom")
}

func (f *fakeStore) LeftDeliveries(context.Context, int) ([]store.LeftDelivery, error) {
	f.ask("deliveries")
	return nil, nil
}

func (f *fakeStore) OverdueRuns(context.Context, int) ([]string, error) {
	f.ask("runs")
	return []string{"r4"}, nil
}

func (f *fakeStore) OrphanedChildren(context.Context, int) ([]string, error) {
	f.ask("orphans")
	return []string{"r5"}, nil
}

func (f *fakeStore) DeleteExpiredSessions(context.Context, time.Time) (int64, error) {
	f.ask("sessions")
	return 2, nil
}

func (f *fakeStore) DeleteOldLoginFailures(context.Context, time.Time) (int64, error) {
	f.ask("login failures")
	return 0, nil
}

func (f *fakeStore) NotifySLABreaches(context.Context, time.Time, int) (int, error) {
	f.ask("SLA breaches")
	return 0, nil
}

// fakeEngine records what it applied.
type fakeEngine struct {
	mu      sync.Mutex
	applied []string
}

func (e *fakeEngine) did(s string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applied = append(e.applied, s)
	return nil
}

func (e *fakeEngine) Expire(_ context.Context, p engine.ExpireParams) (bool, error) {
	return p.RunID != "r1b", e.did("expire " + p.RunID)
}

func (e *fakeEngine) Wake(_ context.Context, runID string, due []engine.DueNode) error {
	return e.did("wake " + runID + " " + due[0].Key)
}

func (e *fakeEngine) TimeOutApproval(_ context.Context, runID, _ string, _ int) error {
	return e.did("approval " + runID)
}

func (e *fakeEngine) RemindApproval(_ context.Context, runID, _ string, _ int) error {
	return e.did("remind " + runID)
}

func (e *fakeEngine) EscalateApproval(_ context.Context, runID, _ string, _ int) error {
	return e.did("escalate " + runID)
}

func (e *fakeEngine) TimeOutEvent(_ context.Context, runID, _ string, _ int) error {
	return e.did("event " + runID)
}

func (e *fakeEngine) DeliverEvent(_ context.Context, p engine.DeliverEventParams) error {
	return e.did("deliver " + p.RunID)
}

func (e *fakeEngine) FailRunPastDeadline(_ context.Context, runID string) error {
	return e.did("deadline " + runID)
}

func (e *fakeEngine) CancelRun(_ context.Context, runID string) (*engine.Run, error) {
	return nil, e.did("cancel " + runID)
}

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) SweeperAction(action string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[action] += n
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// TestSweeperPass: one pass asks for each due thing in order, applies
// what it got, counts it, signals Done with the clock's time; a failing
// claim stops nothing else; a node the engine left alone (answered
// meanwhile) is not counted expired. Expired sessions are dropped once a minute.
func TestSweeperPass(t *testing.T) {
	t.Parallel()
	st := &fakeStore{timers: []store.Due{{RunID: "r2", Key: "t", Attempt: 1}}}
	eng := &fakeEngine{}
	cnt := &counter{n: map[string]int{}}
	var done testsignal.Signal[time.Time]
	done.Init()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewSweeper(SweeperParams{Store: st, Engine: eng, Metrics: cnt, Clock: fixedClock{now}, Done: &done})
	s.pass(t.Context())
	require.Equal(t, now, done.Wait(t, time.Second))
	require.Equal(t, []string{"nodes", "timers", "approvals", "reminders", "escalations", "events", "deliveries", "runs", "orphans",
		"sessions", "login failures"}, st.asked)
	require.Equal(t, []string{"expire r1", "expire r1b", "wake r2 t", "approval r3", "deadline r4", "cancel r5"}, eng.applied)
	require.Equal(t, map[string]int{"expired": 1, "woken": 1, "approval_timed_out": 1, "approval_reminded": 0, "approval_escalated": 0,
		"event_delivered_late": 0, "run_deadline": 1, "orphan_cancelled": 1, "session_deleted": 2}, cnt.n)

	st.asked = nil
	s.pass(t.Context())
	require.NotContains(t, st.asked, "sessions", "once a minute at most")
}

// TestDeferredFirer: a poke wakes the due timers; pokes never block, and
// the service starts and stops cleanly under load.
func TestDeferredFirer(t *testing.T) {
	t.Parallel()
	var woken atomic.Int64
	claimed := make(chan struct{}, 10)
	f := NewDeferredFirer(DeferredFirerParams{
		Claim: func(context.Context, int) ([]store.Due, error) {
			claimed <- struct{}{}
			return []store.Due{{RunID: "r", Key: "k"}}, nil
		},
		Wake: func(context.Context, string, []engine.DueNode) error { woken.Add(1); return nil },
	})
	for range 100 {
		f.Poke() // before Start: one stays pending
	}
	require.NoError(t, f.Start(t.Context()))
	<-claimed
	f.Stop()
	require.EqualValues(t, 1, woken.Load())
	startstoptest.Stress(t, f, 50)
}

// TestRetainerBatches: a whole batch is followed by another at once, a
// partial one ends the round; without an archive, 500 at a time.
func TestRetainerBatches(t *testing.T) {
	t.Parallel()
	st := &retainStore{left: 1200}
	r := NewRetainer(RetainerParams{Store: st, Retention: time.Hour})
	n, full := r.deleteExpiredRuns(t.Context())
	require.Equal(t, 500, n)
	require.True(t, full)
	r.deleteExpiredRuns(t.Context())
	n, full = r.deleteExpiredRuns(t.Context())
	require.Equal(t, 200, n)
	require.False(t, full)
}

type retainStore struct{ left int }

func (s *retainStore) DeleteExpiredRuns(_ context.Context, _ time.Duration, limit int) (int, error) {
	n := min(s.left, limit)
	s.left -= n
	return n, nil
}

func (s *retainStore) ArchiveExpiredRuns(context.Context, time.Duration, int, store.ArchiveSender) (int, error) {
	return 0, errors.New("no archive configured")
}

func (s *retainStore) WebhookSecret(context.Context) ([]byte, error) { return []byte("secret"), nil }
