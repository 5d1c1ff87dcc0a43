package commit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine/enginetype"
)

// timeout bounds a wait for the committer's goroutines to get where a
// test wants them; tick is how often it looks.
const (
	timeout = 10 * time.Second
	tick    = time.Millisecond
)

// op is a test operation: what it answers when applied.
type op = func() error

// recorder is an Applier that applies operations by calling them and
// records each transaction it was asked for. The first transaction is
// held open (held is closed) until release is closed, so that what is
// submitted meanwhile queues; group, when set, answers a group's
// transaction.
type recorder struct {
	mu      sync.Mutex
	log     []string
	first   bool // the first transaction began
	held    chan struct{}
	release chan struct{}
	group   func(runs []string) (bad int, err error)
}

func newRecorder() *recorder {
	return &recorder{held: make(chan struct{}), release: make(chan struct{})}
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) Transact(_ context.Context, _ enginetype.TransactionTrace, runID string, fn op, noSpeculation bool) error {
	r.mu.Lock()
	first := !r.first
	r.first = true
	r.mu.Unlock()
	if first {
		close(r.held)
		<-r.release
	}
	if noSpeculation {
		r.note("alone, assuming nothing " + runID)
	} else {
		r.note("alone " + runID)
	}
	return fn()
}

func (r *recorder) Batch(runID string, items []Item[op], results []error) op {
	r.note(fmt.Sprintf("batch %s of %d", runID, len(items)))
	return func() error {
		for i, it := range items {
			results[i] = it.Fn()
		}
		return nil
	}
}

func (r *recorder) Group(_ context.Context, _ enginetype.TransactionTrace, ms []*Member[op]) ([]error, int, error) {
	runs := make([]string, len(ms))
	for i, m := range ms {
		runs[i] = m.RunID
	}
	r.note("group " + strings.Join(runs, ","))
	if r.group != nil {
		if bad, err := r.group(runs); err != nil {
			return nil, bad, err
		}
	}
	results := make([]error, len(ms))
	for i, m := range ms {
		results[i] = m.Fn()
	}
	return results, -1, nil
}

func (r *recorder) Together(*enginetype.CallbackParams) string { return "" }

// submitted submits fn for each run, each from a goroutine of its own,
// and returns their answers by run once all were answered.
func submitted(t *testing.T, g *Grouped[op], runs []string, fn func(run string) op) map[string][]error {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[string][]error{}
	for _, run := range runs {
		wg.Go(func() {
			err := g.Submit(t.Context(), Op[op]{RunID: run, Fn: fn(run)})
			mu.Lock()
			got[run] = append(got[run], err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// TestGroupedSchedules: operations on a busy run wait and go together as
// one batch; batches of several runs ready at once share a transaction,
// in run-id order; an operation rejected in a batch gets its own answer.
func TestGroupedSchedules(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	g := NewGrouped(GroupedParams[op]{Applier: r, Groups: 1})
	first := make(chan error, 1)
	go func() { first <- g.Submit(t.Context(), Op[op]{RunID: "a", Fn: func() error { return nil }}) }()
	<-r.held // a's first operation holds the one transaction

	rejected := errors.New("rejected")
	var got map[string][]error
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = submitted(t, g, []string{"a", "a", "a", "c", "b"}, func(run string) op {
			if run == "b" {
				return func() error { return rejected }
			}
			return func() error { return nil }
		})
	}()
	// Everything submitted waits: a's behind its drain, b and c behind the
	// one transaction a's next batch will share with them.
	require.Eventually(t, func() bool {
		g.batch.mu.Lock()
		defer g.batch.mu.Unlock()
		q := g.batch.queues["a"]
		return q != nil && len(q.items) == 3 && len(g.batch.queues) == 3
	}, timeout, tick)
	require.Eventually(t, func() bool { return g.Waiting() == 2 }, timeout, tick, "b's and c's batches wait for the transaction")
	close(r.release)
	require.NoError(t, <-first)
	<-done
	g.Wait()
	require.Equal(t, []error{nil, nil, nil}, got["a"])
	require.Equal(t, []error{rejected}, got["b"])
	require.Equal(t, []error{nil}, got["c"])
	require.Equal(t, "alone a", r.log[0])
	require.Contains(t, r.log, "batch a of 3", "a's three waiting operations are one batch")
	shared := regexp.MustCompile(`^group (a,)?b,c$`) // a's batch may join them
	require.True(t, slices.ContainsFunc(r.log, shared.MatchString),
		"b's and c's batches share a transaction, in run-id order: %q", r.log)
}

// TestGroupedFailurePolicy: a group whose transaction failed by one
// batch's own compare-and-set applies that batch on its own, assuming
// nothing, and the others again together; any other failure applies each
// batch on its own.
func TestGroupedFailurePolicy(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		bad  int
		want []string
	}{
		"the batch's own compare-and-set": {bad: 1, want: []string{
			"group b,c,d", "alone, assuming nothing c", "group b,d"}}, // sorted after the first
		"anything else": {bad: -1, want: []string{
			"group b,c,d", "alone b", "alone c", "alone d"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRecorder()
			failed := false
			r.group = func([]string) (int, error) {
				if failed {
					return -1, nil
				}
				failed = true
				return c.bad, errors.New("the transaction failed")
			}
			g := NewGrouped(GroupedParams[op]{Applier: r, Groups: 1})
			first := make(chan error, 1)
			go func() { first <- g.Submit(t.Context(), Op[op]{RunID: "a", Fn: func() error { return nil }}) }()
			<-r.held
			var got map[string][]error
			done := make(chan struct{})
			go func() {
				defer close(done)
				got = submitted(t, g, []string{"d", "b", "c"}, func(string) op { return func() error { return nil } })
			}()
			require.Eventually(t, func() bool { return g.Waiting() == 3 }, timeout, tick)
			close(r.release)
			require.NoError(t, <-first)
			<-done
			g.Wait()
			for _, run := range []string{"b", "c", "d"} {
				require.Equal(t, []error{nil}, got[run], "run %s is answered once, applied", run)
			}
			log := slices.Clone(r.log[1:])
			slices.Sort(log[1:]) // what follows the failure runs side by side
			require.Equal(t, c.want, log)
		})
	}
}

// TestGroupedLoneOperationOnItsCaller: an operation on an idle run, with a
// transaction free, is applied on its caller's goroutine — a chain's step
// is not handed to a new goroutine and back — and leaves no drain or
// group runner behind.
func TestGroupedLoneOperationOnItsCaller(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	close(r.release)
	g := NewGrouped(GroupedParams[op]{Applier: r, Groups: 2})
	for range 3 {
		var stack string
		require.NoError(t, g.Submit(t.Context(), Op[op]{RunID: "a", Fn: func() error {
			buf := make([]byte, 64<<10)
			stack = string(buf[:runtime.Stack(buf, false)])
			return nil
		}}))
		require.Contains(t, stack, ").Submit(", "applied on the caller's goroutine:\n%s", stack)
	}
	g.Wait()
	require.Empty(t, g.batch.queues)
	require.Zero(t, g.groups.running)
	require.Equal(t, []string{"alone a", "alone a", "alone a"}, r.log)
}

// TestGroupedPanicEndsTheProcess: a panic in an operation applied on its
// caller's goroutine ends the process, as it did on the committer's own,
// even when the caller recovers (an HTTP server does): recovered, it
// would leave the run's queue and the group runner held, and every later
// operation waiting.
func TestGroupedPanicEndsTheProcess(t *testing.T) {
	if os.Getenv("STITCHD_COMMIT_PANIC") == "1" {
		r := newRecorder()
		close(r.release)
		g := NewGrouped(GroupedParams[op]{Applier: r, Groups: 1})
		func() {
			defer func() { _ = recover() }()
			_ = g.Submit(context.Background(), Op[op]{RunID: "a", Fn: func() error { panic("an operation's panic") }})
		}()
		os.Exit(0) // the caller carried on
	}
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestGroupedPanicEndsTheProcess$") //nolint:gosec // G702: this test binary, run again
	cmd.Env = append(os.Environ(), "STITCHD_COMMIT_PANIC=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the process ended well:\n%s", out)
	require.Contains(t, string(out), "panic: an operation's panic")
	require.Contains(t, string(out), "TestGroupedPanicEndsTheProcess", "the panic's own stack")
}

// TestGroupedCallerHandsTheRunnerOn: a caller that runs groups (its
// batch found a transaction free) is answered once the group with its
// batch committed; the batches that queued meanwhile go to a runner of
// their own — the caller does not wait on others' transactions.
func TestGroupedCallerHandsTheRunnerOn(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	othersHeld, othersGo := make(chan struct{}), make(chan struct{})
	r.group = func(runs []string) (int, error) {
		if slices.Equal(runs, []string{"b", "c"}) {
			close(othersHeld)
			<-othersGo
		}
		return -1, nil
	}
	g := NewGrouped(GroupedParams[op]{Applier: r, Groups: 1})
	first := make(chan error, 1)
	go func() { first <- g.Submit(t.Context(), Op[op]{RunID: "a", Fn: func() error { return nil }}) }()
	<-r.held // a's caller runs the one transaction
	done := make(chan struct{})
	go func() {
		defer close(done)
		got := submitted(t, g, []string{"b", "c"}, func(string) op { return func() error { return nil } })
		assert.Equal(t, map[string][]error{"b": {nil}, "c": {nil}}, got)
	}()
	require.Eventually(t, func() bool { return g.Waiting() == 2 }, timeout, tick)
	close(r.release)
	select {
	case err := <-first:
		require.NoError(t, err)
	case <-time.After(timeout):
		t.Fatal("a's caller was not answered while b's and c's transaction was under way")
	}
	select {
	case <-othersHeld: // b's and c's group began on a goroutine of its own
	case <-time.After(timeout):
		t.Fatal("b's and c's batches were left waiting")
	}
	close(othersGo)
	<-done
	g.Wait()
	require.Equal(t, []string{"alone a", "group b,c"}, r.log)
	require.Zero(t, g.groups.running)
}
