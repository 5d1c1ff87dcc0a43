package writer

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stitchd/stitchd/engine/enginetype"
	"github.com/stretchr/testify/require"
)

// readyWrites records the writes an assumed-ready join's check travels
// in: the transitions queued (with what they carry), the immediate ones
// and the checks queued alone, in order.
type readyWrites struct {
	enginetype.TxWrites
	log []string
}

func (r *readyWrites) TransitionLater(_ context.Context, t *enginetype.NodeTransition) error {
	if t.Ready != nil {
		r.log = append(r.log, "later "+t.Key+" carrying "+itoa(t.Ready.Untaken))
	} else {
		r.log = append(r.log, "later "+t.Key)
	}
	return nil
}

func (r *readyWrites) Transition(_ context.Context, t *enginetype.NodeTransition) (*enginetype.NodeState, error) {
	if t.Ready != nil {
		r.log = append(r.log, "now "+t.Key+" carrying")
		return &enginetype.NodeState{Key: t.Key}, nil
	}
	r.log = append(r.log, "now "+t.Key)
	return &enginetype.NodeState{Key: t.Key}, nil
}

func (r *readyWrites) SkipLater(_ context.Context, _ string, keys []string, _ []enginetype.UntakenCountDown) error {
	r.log = append(r.log, "skip "+strings.Join(keys, ","))
	return nil
}

func (r *readyWrites) DeferNode(_ context.Context, _, key string, _ json.RawMessage) error {
	r.log = append(r.log, "defer "+key)
	return nil
}

func (r *readyWrites) CountDownToReadyLater(_ context.Context, _, key string, untaken int) error {
	r.log = append(r.log, "check "+key+" "+itoa(untaken))
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestAssumedReadyCheckedOnce: a join assumed ready is checked exactly
// once — carried by its first fire out of pending when one is queued,
// else queued alone before any other write of its row or when the
// operation ends — and a second assumption while one waits is refused.
func TestAssumedReadyCheckedOnce(t *testing.T) {
	t.Parallel()
	pending := func(key string) *enginetype.NodeTransition {
		return &enginetype.NodeTransition{RunID: "r", Key: key, From: enginetype.StatusPending, Steps: []enginetype.Status{enginetype.StatusRunning}, ClearPending: true}
	}
	for name, c := range map[string]struct {
		then func(w *Writer) error
		want []string
	}{
		"carried by the join's move": {
			then: func(w *Writer) error { return w.TransitionLater(pending("j")) },
			want: []string{"later j carrying 2"},
		},
		"no move of the join: alone at the end": {
			then: func(w *Writer) error { return w.TransitionLater(pending("k")) },
			want: []string{"later k", "check j 2"},
		},
		"the join's move not from pending: alone before it": {
			then: func(w *Writer) error {
				return w.TransitionLater(&enginetype.NodeTransition{RunID: "r", Key: "j", From: enginetype.StatusRunning,
					Steps: []enginetype.Status{enginetype.StatusCompleted}})
			},
			want: []string{"check j 2", "later j"},
		},
		"another run's node of the same key: alone at the end": {
			then: func(w *Writer) error {
				return w.TransitionLater(&enginetype.NodeTransition{RunID: "other", Key: "j", From: enginetype.StatusPending,
					Steps: []enginetype.Status{enginetype.StatusRunning}})
			},
			want: []string{"later j", "check j 2"},
		},
		"the join skipped (pending_parents kept): alone before it": {
			then: func(w *Writer) error {
				return w.TransitionLater(&enginetype.NodeTransition{RunID: "r", Key: "j", From: enginetype.StatusPending,
					Steps: []enginetype.Status{enginetype.StatusSkipped}})
			},
			want: []string{"check j 2", "later j"},
		},
		"skipped with other nodes: alone before it": {
			then: func(w *Writer) error { return w.SkipLater("r", []string{"k", "j"}, nil) },
			want: []string{"check j 2", "skip k,j"},
		},
		"other nodes skipped: alone at the end": {
			then: func(w *Writer) error { return w.SkipLater("r", []string{"k"}, nil) },
			want: []string{"skip k", "check j 2"},
		},
		"the join deferred: alone before it": {
			then: func(w *Writer) error { return w.DeferNode("r", "j", nil) },
			want: []string{"check j 2", "defer j"},
		},
		"an immediate move of the join: alone before it": {
			then: func(w *Writer) error {
				_, err := w.Transition(pending("j"))
				return err
			},
			want: []string{"check j 2", "now j"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := &readyWrites{}
			w := &Writer{ctx: context.Background(), tx: rec}
			require.NoError(t, w.AssumeCountDown(CountDown{RunID: "r", Key: "b"}, "j", 2))
			require.True(t, w.Assumed())
			require.Error(t, w.AssumeCountDown(CountDown{RunID: "r", Key: "c"}, "j2", 1), "a second while one waits")
			got, err := w.CountDown("r", "b", []string{"j"})
			require.NoError(t, err)
			require.Equal(t, map[string]enginetype.Pending{"j": {Remaining: 0, Untaken: 2, Status: enginetype.StatusPending}}, got)
			require.NoError(t, c.then(w))
			require.NoError(t, w.AssumedReady())
			require.NoError(t, w.AssumedReady(), "checked once")
			require.Equal(t, c.want, rec.log)
		})
	}
}
