package writer

import (
	"slices"

	"github.com/stitchd/stitchd/engine/enginetype"
)

// Claims the writer makes. An outbox row due now is written already
// claimed by this process while the dispatcher has room (Config.ClaimLease,
// Claims), and handed to it as a value once the transaction commits:
// the dispatcher delivers it without another transaction.

// ClaimRoom is how many outbox rows a database transaction may still
// claim for this process: the dispatcher's room, asked before the
// transaction began (nothing calls the dispatcher from inside a
// transaction), shared by the writers of one database transaction.
type ClaimRoom struct{ left int }

// NewClaimRoom is room for left claims.
func NewClaimRoom(left int) *ClaimRoom { return &ClaimRoom{left: left} }

// Claimed is the outbox rows written claimed, for the commit to hand to
// the dispatcher.
func (w *Writer) Claimed() []enginetype.ClaimedDispatch { return w.claimed }

// Claim marks outbox row d, not yet written, as claimed by this process
// when it is due now (not delayed, not a pull queue's, its run not
// paused) and there is room left. Writing it (InsertDispatch,
// InsertDispatches) notes the claim for the commit.
func (w *Writer) Claim(d *enginetype.Dispatch, paused bool) {
	if w.lease <= 0 || d.DelayMs != 0 || d.Queue != "" || w.room == nil || w.room.left <= 0 || paused {
		return
	}
	w.room.left--
	d.ClaimSeconds = w.lease.Seconds()
}

// noteClaim records written outbox row d, when claimed, for the commit.
func (w *Writer) noteClaim(d *enginetype.Dispatch) {
	if d.ClaimSeconds > 0 {
		w.claimed = append(w.claimed, enginetype.ClaimedDispatch{ID: d.ID, RunID: d.RunID, Workspace: d.Workspace, Key: d.Key, Attempt: d.Attempt,
			URL: d.URL, Payload: d.Payload, Tries: 1, MaxTries: max(d.MaxTries, 1), LeasedAt: w.began, Request: d.Request})
	}
}

// DropClaims forgets the claimed rows of run runID's instances keys: what
// the transaction started of them (a join cancelling its other branches)
// does not go out.
func (w *Writer) DropClaims(runID string, keys map[string]bool) {
	w.claimed = slices.DeleteFunc(w.claimed, func(d enginetype.ClaimedDispatch) bool { return d.RunID == runID && keys[d.Key] })
}
