package engine

import (
	"context"
	"slices"
)

// Claims the writer makes. An outbox row due now is written already
// claimed by this process while the dispatcher has room (Config.ClaimLease,
// Claims), and handed to it as a value once the transaction commits:
// the dispatcher delivers it without another transaction.

// newWriter is the writer of a database transaction, claiming at most
// what room has left (shared by the txns of one database transaction).
func (e *Engine) newWriter(ctx context.Context, tx TxWrites, room *claimRoom) *writer {
	return &writer{ctx: ctx, tx: tx, lease: e.cfg.ClaimLease, room: room, began: e.cfg.Clock.Now()}
}

// claimRoom is how many outbox rows a database transaction may still
// claim for this process: the dispatcher's room (Claims), asked before the
// transaction began — nothing calls the dispatcher from inside a
// transaction.
type claimRoom struct{ left int }

// claimRoom asks for the dispatcher's room, before a transaction begins.
func (e *Engine) claimRoom() *claimRoom {
	r := &claimRoom{}
	if e.cfg.ClaimLease > 0 && e.cfg.Claims != nil {
		r.left = e.cfg.Claims.Room()
	}
	return r
}

// Claim marks outbox row d, not yet written, as claimed by this process
// when it is due now (not delayed, not a pull queue's, its run not
// paused) and there is room left. Writing it (InsertDispatch,
// InsertDispatches) notes the claim for the commit.
func (w *writer) Claim(d *Dispatch, paused bool) {
	if w.lease <= 0 || d.DelayMs != 0 || d.Queue != "" || w.room == nil || w.room.left <= 0 || paused {
		return
	}
	w.room.left--
	d.ClaimSeconds = w.lease.Seconds()
}

// noteClaim records written outbox row d, when claimed, for the commit.
func (w *writer) noteClaim(d *Dispatch) {
	if d.ClaimSeconds > 0 {
		w.claimed = append(w.claimed, ClaimedDispatch{ID: d.ID, RunID: d.RunID, Workspace: d.Workspace, Key: d.Key, Attempt: d.Attempt,
			URL: d.URL, Payload: d.Payload, Tries: 1, MaxTries: max(d.MaxTries, 1), LeasedAt: w.began, Request: d.Request})
	}
}

// DropClaims forgets the claimed rows of run runID's instances keys: what
// the transaction started of them (a join cancelling its other branches)
// does not go out.
func (w *writer) DropClaims(runID string, keys map[string]bool) {
	w.claimed = slices.DeleteFunc(w.claimed, func(d ClaimedDispatch) bool { return d.RunID == runID && keys[d.Key] })
}
