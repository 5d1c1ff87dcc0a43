package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stitchd/stitchd/store"
)

// dueTimes are the columns due work is found by, each compared with the
// database's now() by a sweeper, a poller or a scheduler
// (docs/state_machine.md, Time): node deadlines, timers and reminders, run
// deadlines, delivery retries and leases, schedule ticks, event and secret
// expiries.
var dueTimes = []struct {
	table   string
	columns []string
}{
	{"node_states", []string{"deadline", "wake_at", "remind_at", "escalate_at"}},
	{"runs", []string{"deadline_at"}},
	{"dispatches", []string{"next_attempt_at", "locked_until"}},
	{"notifications", []string{"next_attempt_at"}},
	{"schedules", []string{"next_fire_at"}},
	{"events", []string{"expires_at"}},
	{"webhook_secrets", []string{"expires_at"}},
	{"triggers", []string{"previous_secret_expires_at"}},
}

// AdvanceDueTimes moves the database of st (a test's own: IsolatedDB)
// forward by d as due work sees it: every due time is d earlier, so what
// would fall due within d is due now, and what a process sets from now()
// afterwards stays consistent with it. Tests of deadlines, timers, leases
// and retries use it, with a process's own clock (testkit.Clock) moved as
// much, instead of sleeping until they pass.
func AdvanceDueTimes(tb testing.TB, st *store.Store, d time.Duration) {
	tb.Helper()
	for _, t := range dueTimes {
		set := make([]string, len(t.columns))
		args := make([]any, len(t.columns))
		for i, c := range t.columns {
			set[i] = c + " = " + c + " - make_interval(secs => ?)"
			args[i] = d.Seconds()
		}
		if err := st.Gorm().Exec(`UPDATE `+t.table+` SET `+strings.Join(set, ", "), args...).Error; err != nil {
			tb.Fatalf("storetest: error advancing %s: %v", t.table, err)
		}
	}
}
