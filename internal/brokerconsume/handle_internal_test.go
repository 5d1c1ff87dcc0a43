package brokerconsume

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/broker"
)

// TestShownWords: a failure that redelivery may cure is shown on the
// trigger (last_error, which editors read) in the words an API answer
// would use — a limit, the database unavailable, a sentinel's own — and
// a database's own error, which may quote its statement, only as an
// internal error; the log keeps every word.
func TestShownWords(t *testing.T) {
	t.Parallel()
	sql := errors.New(`ERROR: index row size 6032 exceeds btree maximum (SQLSTATE 54000): INSERT INTO runs (id, idempotency_key) VALUES ($1, $2)`)
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("error starting a run of flow f: %w", sql), "internal error (the server's log has it)"},
		{fmt.Errorf("error starting a run of flow f: %w", &engine.LimitError{Workspace: "acme", Limit: "runs a second", RetryAfter: time.Second}),
			"workspace acme is at its runs a second: try again in 1s"},
		{fmt.Errorf("error loading flow f: %w: connection refused", engine.ErrUnavailable), "the database is unavailable"},
		{fmt.Errorf("error loading flow f: %w", engine.ErrNotFound), "error loading flow f: not found"},
	} {
		got := shown(c.err)
		require.Equal(t, c.err.Error(), got.Error(), "the log's words are kept")
		require.Equal(t, c.want, broker.LastErrorText(got))
	}
}
