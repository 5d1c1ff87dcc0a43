package commit

import (
	"context"

	"github.com/stitchd/stitchd/engine/enginetype"
)

// Op is one operation on a run.
type Op[F any] struct {
	RunID string
	Fn    F
	// Callback is set for a worker callback: its completion may be applied
	// with others (a batch's, or across runs), and it is not applied when
	// its caller gave up before its batch began.
	Callback *enginetype.CallbackParams
	// Alone asks for a transaction of its own (operator controls,
	// starting a run): never batched.
	Alone bool
}

// Item is one operation of a run's batch.
type Item[F any] struct {
	// Ctx is the submitter's: its values (a trace) reach the transaction.
	Ctx      context.Context
	Fn       F
	Callback *enginetype.CallbackParams
}

// Member is one run's batch in a group sharing a transaction.
type Member[F any] struct {
	// Ctx is the batch's (detached from its first caller's cancellation);
	// Trace describes the batch.
	Ctx   context.Context
	Trace enginetype.TransactionTrace
	RunID string
	Fn    F
	// Callback is set when the batch is one worker callback.
	Callback *enginetype.CallbackParams
	// Version is the run's flow version when the group may complete the
	// member's node together with the others' (Applier.Together), ""
	// otherwise: judged once, before it waits.
	Version string

	done chan error
	// taken: a group runner took it (guarded by the grouper's lock).
	taken bool
}

// Applier is what the engine does in transactions for the commit service.
type Applier[F any] interface {
	// Transact applies fn to run runID in a transaction of its own, with
	// the engine's own retries; noSpeculation: assume nothing, read as it
	// goes.
	Transact(ctx context.Context, trace enginetype.TransactionTrace, runID string, fn F, noSpeculation bool) error
	// Batch is one operation that applies items to run runID in order,
	// leaving out each one rejected before it wrote anything; results[i]
	// is set to item i's answer.
	Batch(runID string, items []Item[F], results []error) F
	// Group applies the batches ms (in run-id order) in one transaction.
	// With err nil the transaction committed, the engine has handed on
	// what it did, and results[i] is member i's answer (nil: applied).
	// Else bad is the member that failed by its own compare-and-set (-1:
	// none known).
	Group(ctx context.Context, trace enginetype.TransactionTrace, ms []*Member[F]) (results []error, bad int, err error)
	// Together returns callback p's run's flow version when the group may
	// complete p's node together with others (a completion of a node that
	// decides no edges and would not be speculated), "" otherwise.
	Together(p *enginetype.CallbackParams) string
}

// Committer applies operations and answers each once its transaction
// committed (or it was rejected).
type Committer[F any] interface {
	Submit(ctx context.Context, o Op[F]) error
	// Wait returns once the committer's goroutines have ended (after its
	// submissions have been answered).
	Wait()
	// Waiting is how many batches wait for a transaction.
	Waiting() int
}

// Inline applies each operation in a transaction of its own: for engine
// tests and tools, where what a test sees is what one operation did.
type Inline[F any] struct{ Applier Applier[F] }

// Submit applies o in a transaction of its own.
func (c Inline[F]) Submit(ctx context.Context, o Op[F]) error {
	return c.Applier.Transact(ctx, enginetype.TransactionTrace{Runs: 1, Operations: 1}, o.RunID, o.Fn, false)
}

// Wait returns at once: Inline has no goroutines.
func (Inline[F]) Wait() {}

// Waiting is 0: nothing waits.
func (Inline[F]) Waiting() int { return 0 }
