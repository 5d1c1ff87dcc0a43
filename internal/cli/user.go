package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/password"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/web"
)

// newUserCmd manages users straight in the database: the way to the
// first user, before anyone can sign in (README, People and access).
func newUserCmd(env envLookup, stderr io.Writer) *cobra.Command {
	user := &cobra.Command{Use: "user", Short: "Manage users in the database (the first admin, a lost password)"}
	var o options
	var email, name, role, workspace string
	var groups []string
	var pwStdin bool
	create := &cobra.Command{
		Use:   "create --email E --name N --role R [--groups a,b] [--password-stdin]",
		Short: "Create a user; prints its id",
		Long: "Creates a user in the database DATABASE_URL names (no server needed). Roles: " + strings.Join(store.Roles, ", ") +
			".\nWith --password-stdin the first line of standard input is the password (at least 8 characters);" +
			" without one the user signs in by API tokens only.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var pw *string
			if pwStdin {
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("error reading the password: %w", err)
				}
				line = strings.TrimRight(line, "\r\n")
				pw = &line
			}
			if name == "" {
				name, _, _ = strings.Cut(email, "@")
			}
			p, err := web.NewUser(email, name, role, groups, pw)
			if err != nil {
				return fmt.Errorf("invalid user:\n  %s", strings.Join(web.ProblemsOf(err), "\n  "))
			}
			if pw != nil {
				h, err := password.Hash(*pw, password.Default)
				if err != nil {
					return err
				}
				p.PasswordHash = &h
			}
			st, err := openStore(cmd, env, &o, stderr)
			if err != nil {
				return err
			}
			defer st.Close()
			p.Now, p.Workspace = time.Now(), workspace
			u, err := st.CreateUser(cmd.Context(), p)
			if errors.Is(err, engine.ErrInvalidRequest) && workspace != store.DefaultWorkspace {
				return fmt.Errorf("workspace %s does not exist: %w", workspace, err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), u.ID)
			return nil
		},
	}
	f := create.Flags()
	f.StringVar(&email, "email", "", "the user's email (required)")
	f.StringVar(&name, "name", "", "the user's name (default: the email's local part)")
	f.StringVar(&role, "role", "", "admin, editor, operator, approver or viewer (required)")
	f.StringSliceVar(&groups, "groups", nil, "groups, comma-separated")
	f.BoolVar(&pwStdin, "password-stdin", false, "read the password from the first line of standard input")
	f.StringVar(&workspace, "workspace", store.DefaultWorkspace, "the workspace the role is in (role admin: a server admin, of every workspace)")
	addDatabaseFlags(f, &o)
	user.AddCommand(create)
	return user
}

// openStore opens the database the command's flags and environment name,
// migrated first (a new database's first user needs the tables).
func openStore(cmd *cobra.Command, env envLookup, o *options, stderr io.Writer) (*store.Store, error) {
	if err := applyEnv(cmd.Flags(), env); err != nil {
		return nil, err
	}
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return nil, err
	}
	url, _, err := app.ResolveDatabase(cmd.Context(), o.config(log))
	if err != nil {
		return nil, err
	}
	st, err := store.Open(cmd.Context(), url, store.Options{MaxOpenConns: 2})
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(cmd.Context(), log); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}
