package web

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestNoAnswerQuotesSQL: an error whose text carries SQL (the store wraps
// a queued statement's, the driver's name statements) is answered with its
// status and code but a plain message; other messages pass as they are.
func TestNoAnswerQuotesSQL(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("error in a queued statement (WITH moved AS (UPDATE node_states SET…): %w", engine.ErrConflict),
		fmt.Errorf("%w: ERROR: duplicate key (SQLSTATE 23505)", engine.ErrInvalidRequest),
		fmt.Errorf("%w: SELECT id FROM runs WHERE x", engine.ErrNotFound),
		fmt.Errorf("%w: INSERT INTO runs (id) VALUES ($1)", engine.ErrForbidden),
	} {
		want := toAPIError(err)
		ae, hidden := withoutSQL(want)
		require.True(t, hidden, err.Error())
		require.Equal(t, want.Status, ae.Status)
		require.Equal(t, want.Code, ae.Code)
		require.NotRegexp(t, sqlText, ae.Message)
		require.NotContains(t, ae.Message, "node_states")
	}
	for _, msg := range []string{"conflict: node b of run r was not pending (attempt 1) when moved to running",
		"select an outcome from approve, reject", "the update of board x set no section", "with a form"} {
		ae, hidden := withoutSQL(toAPIError(fmt.Errorf("%w: %s", engine.ErrConflict, msg)))
		require.False(t, hidden, msg)
		require.Contains(t, ae.Message, msg)
	}
	_, hidden := withoutSQL(toAPIError(errors.New("internal")))
	require.False(t, hidden)
}
