package engine

import "github.com/stitchd/stitchd/engine/internal/writer"

// Leaving an operation out of a shared transaction. A batch or group
// (engine/internal/commit, applier.Batch and applier.Group in
// commit_apply.go) applies many operations in one transaction; one
// rejected before it wrote anything (a stale callback failing its
// compare-and-set) is left out: its txn is restored to the snapshot taken
// before it, and its writer's count (Writer.Writes) tells whether it wrote.

type txnSnapshot struct {
	run       Run
	events    int
	arrivals  int
	delivered int
	nested    int
	notes     int
	failMsg   string
	firings   int
	deferred  int
	writer    writer.Mark
}

func (t *txn) snapshot() txnSnapshot {
	return txnSnapshot{run: *t.run, events: len(t.events), arrivals: len(t.arrivals), delivered: len(t.deliveredKeys),
		nested: len(t.nested), notes: len(t.notes), failMsg: t.failMsg, firings: t.firings, deferred: t.deferred,
		writer: t.w.Mark()}
}

func (t *txn) restore(s txnSnapshot) {
	*t.run = s.run
	t.events = t.events[:s.events]
	t.arrivals = t.arrivals[:s.arrivals]
	t.deliveredKeys, t.deliveredAttempts = t.deliveredKeys[:s.delivered], t.deliveredAttempts[:s.delivered]
	t.nested = t.nested[:s.nested]
	t.notes = t.notes[:s.notes]
	t.failMsg = s.failMsg
	t.firings, t.deferred = s.firings, s.deferred
	t.w.Restore(s.writer)
}
