package callbacks

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// flakyRecorder fails its first fails calls as the database being
// unavailable.
type flakyRecorder struct {
	mu    sync.Mutex
	fails int
	calls []engine.DeliveryOutcome
}

func (r *flakyRecorder) RecordDelivery(_ context.Context, o engine.DeliveryOutcome) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, o)
	if len(r.calls) <= r.fails {
		return fmt.Errorf("error recording: %w", engine.ErrUnavailable)
	}
	return nil
}

// A failed try whose outcome could not be recorded because the database
// was unavailable (a failover under way) is recorded again while its row's
// lease lasts, and no longer: before, the row waited for its lease to end
// and was tried again at once, the try not counted.
func TestDeliveryOutcomeRecordedAgainWhileLeased(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	ctx := context.Background()
	claim := engine.ClaimedDispatch{ID: "d1", RunID: "r1", Key: "k", Attempt: 1, URL: srv.URL, Payload: []byte(`{}`),
		Tries: 1, MaxTries: 3}

	rec := &flakyRecorder{fails: 2}
	d := NewDispatcher(DispatcherConfig{Recorder: rec, Client: srv.Client(), Secret: []byte("s"), Lease: 10 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	claim.LeasedAt = time.Now()
	d.deliver(ctx, claim)
	require.Len(t, rec.calls, 3, "recorded again until the database answered")
	for _, o := range rec.calls {
		require.Equal(t, rec.calls[0], o, "the same outcome each time")
	}
	require.False(t, rec.calls[0].Delivered)
	require.Positive(t, rec.calls[0].RetryInMs)

	rec = &flakyRecorder{fails: 1000}
	d = NewDispatcher(DispatcherConfig{Recorder: rec, Client: srv.Client(), Secret: []byte("s"), Lease: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	claim.LeasedAt = time.Now()
	began := time.Now()
	d.deliver(ctx, claim)
	require.Less(t, time.Since(began), 2*time.Second, "not past the lease")
	require.GreaterOrEqual(t, len(rec.calls), 2)
}
