// Package maintenance holds stitchd's background services that find what
// fell due in the database and apply it through the engine, after River's
// internal/maintenance: one service per file, each a startstop.Service
// built from a params struct, with the clock injected.
//
//   - Sweeper, every poll interval: worker nodes past their deadline
//     (failed or retried), timers, approvals past their deadline or due a
//     reminder, event waits past theirs, event deliveries a process left
//     undone, runs past their deadline, sub-flow runs of cancelled runs,
//     expired sign-in sessions;
//   - DeferredFirer: the nodes a transaction left to fire later
//     (engine.Config.MaxFirings), as soon as it commits;
//   - Retainer: finished runs past their retention, deleted in paced
//     batches, each sent to the archive first when there is one;
//   - Roller: the analytics' daily rollups of flows and boards, and the
//     days a change made stale.
//
// Any number of processes run them: what is due is claimed in the
// database (store), so each item is applied once. Their actions are
// counted in internal/metrics' stitchd_sweeper_actions_total.
package maintenance
