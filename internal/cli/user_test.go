package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/password"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestUserCreate: the first admin is made from the command line, with a
// password read from standard input that then verifies; bad input
// changes nothing.
func TestUserCreate(t *testing.T) {
	t.Parallel()
	st, dbURL := storetest.IsolatedDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	run := func(stdin string, args ...string) (string, error) {
		var out, errb bytes.Buffer
		root := newRoot(mapEnv(env), &out, &errb, Params{})
		root.SetIn(strings.NewReader(stdin))
		root.SetArgs(args)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := root.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := run("s3cret-admin-pw\n", "user", "create", "--email", "Root@Example.com", "--role", "admin", "--groups", "ops,finance", "--password-stdin")
	require.NoError(t, err)
	u, err := st.GetUser(t.Context(), strings.TrimSpace(out))
	require.NoError(t, err)
	require.Equal(t, "root@example.com", u.Email)
	require.Equal(t, "Root", u.Name)
	require.Equal(t, "admin", u.Role)
	require.Equal(t, []string{"ops", "finance"}, []string(u.Groups))
	require.NotNil(t, u.PasswordHash)
	ok, err := password.Verify("s3cret-admin-pw", *u.PasswordHash)
	require.NoError(t, err)
	require.True(t, ok)

	_, err = run("", "user", "create", "--email", "root@example.com", "--role", "viewer")
	require.ErrorContains(t, err, "exists")
	_, err = run("short\n", "user", "create", "--email", "nope", "--role", "boss", "--password-stdin")
	require.ErrorContains(t, err, "email:")
	require.ErrorContains(t, err, "role:")
	require.ErrorContains(t, err, "password:")
	n, err := st.CountUsers(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// A role in another workspace; one that does not exist is said so.
	_, err = run("", "user", "create", "--email", "sam@example.com", "--role", "editor", "--workspace", "sales")
	require.ErrorContains(t, err, "workspace sales does not exist")
	_, err = st.CreateWorkspace(t.Context(), store.Workspace{Slug: "sales", Name: "Sales", CreatedAt: time.Now(), UpdatedAt: time.Now()})
	require.NoError(t, err)
	out, err = run("", "user", "create", "--email", "sam@example.com", "--role", "editor", "--workspace", "sales")
	require.NoError(t, err)
	role, err := st.MemberRole(t.Context(), "sales", strings.TrimSpace(out))
	require.NoError(t, err)
	require.Equal(t, "editor", role)
	_, err = st.MemberRole(t.Context(), store.DefaultWorkspace, strings.TrimSpace(out))
	require.ErrorIs(t, err, engine.ErrNotFound, "no role in default")
}
