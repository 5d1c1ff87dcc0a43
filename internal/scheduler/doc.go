// Package scheduler runs stitchd's schedule triggers: every poll interval
// the Scheduler claims the due schedules (store.FireSchedules) and starts
// each one's run. Any number of processes may run it: each due schedule
// is claimed by one, and a tick's run is started with the idempotency key
// schedule:<id>:<tick>, so a claim lost in a crash after the run started
// starts nothing twice. Cron specs are read by internal/schedule.
package scheduler
