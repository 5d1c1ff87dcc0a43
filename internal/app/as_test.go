package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// as is v.(T), a test failure when v is not a T (decoded JSON's objects
// and fields: map[string]any, []any, string).
func as[T any](t testing.TB, v any) T {
	t.Helper()
	x, ok := v.(T)
	require.True(t, ok, "%T (%v) is not a %T", v, v, x)
	return x
}
