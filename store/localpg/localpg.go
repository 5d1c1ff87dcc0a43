package localpg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// ErrNoPostgres is returned when no database can be found or started.
var ErrNoPostgres = errors.New("no PostgreSQL available: set DATABASE_URL (or --database-url), start a server on 127.0.0.1:5432, or install the PostgreSQL server binaries (Debian: apt-get install postgresql) so stitchd can start its own")

// LocalServerURL is the conventional local server tried before starting a
// throwaway cluster.
const LocalServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// NoLocalServer as Options.LocalURL skips the local server.
const NoLocalServer = "none"

// Options tunes Resolve.
type Options struct {
	// DatabaseName is the database to use (created if missing) on the local
	// or throwaway server. Default "stitchd".
	DatabaseName string
	// DataDir is where a throwaway cluster lives. Default: $STITCHD_DATA_DIR/pg,
	// else /var/lib/stitchd/pg when run as root (the postgres user runs the
	// cluster, and reaches it without any home directory opened up), else
	// ~/.cache/stitchd/pg (or the system temp dir when there is no home).
	DataDir string
	// LocalURL overrides LocalServerURL; NoLocalServer ("none") skips it
	// and starts a throwaway cluster.
	LocalURL string
	// Logf, if set, receives one line per decision.
	Logf func(format string, args ...any)
}

// Cluster is a server started by Resolve; Stop shuts it down.
type Cluster struct {
	DataDir string
	Port    int
	pgCtl   string
	cred    *syscall.Credential
	// started: this process started the cluster (it did not find it
	// running, left by another).
	started bool
}

// Resolve returns a URL to a stitchd database on the local server at
// 127.0.0.1:5432 (creating the database if missing), or on a throwaway
// cluster it starts. The returned cluster is nil when the local server was
// used; otherwise the caller decides whether to Stop it.
func Resolve(ctx context.Context, opts Options) (string, *Cluster, error) {
	if opts.DatabaseName == "" {
		opts.DatabaseName = "stitchd"
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	local := opts.LocalURL
	if local == "" {
		local = LocalServerURL
	}
	if local == NoLocalServer {
		logf("not looking for a local PostgreSQL server")
	} else if err := ping(ctx, local); err == nil {
		u, err := EnsureDatabase(ctx, local, opts.DatabaseName)
		if err != nil {
			return "", nil, err
		}
		logf("using the local PostgreSQL server at %s", hostOf(local))
		return u, nil, nil
	}
	cluster, err := StartCluster(ctx, opts.DataDir)
	if err != nil {
		return "", nil, err
	}
	logf("started a throwaway PostgreSQL cluster in %s on port %d", cluster.DataDir, cluster.Port)
	u, err := EnsureDatabase(ctx, cluster.URL("postgres"), opts.DatabaseName)
	if err != nil {
		_ = cluster.Stop()
		return "", nil, err
	}
	return u, cluster, nil
}

// URL returns a connection URL to database name on the cluster.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, name)
}

// Started reports whether this process started the cluster, rather than
// finding it running: the one to stop it.
func (c *Cluster) Started() bool { return c.started }

// Stop shuts the cluster down (fast mode) and leaves its data directory.
func (c *Cluster) Stop() error { return c.stop("fast") }

// Crash stops the cluster as a crash would (immediate mode: its processes
// quit at once, without a shutdown checkpoint); the next Start recovers
// from the write-ahead log.
func (c *Cluster) Crash() error { return c.stop("immediate") }

func (c *Cluster) stop(mode string) error {
	// Background: a stop is not cut short (pg_ctl -w waits for the shutdown).
	cmd := exec.CommandContext(context.Background(), c.pgCtl, "-D", c.DataDir, "-m", mode, "-w", "stop") //nolint:gosec // G204: PostgreSQL's own pg_ctl, found in its bin directory
	setCred(cmd, c.cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("error stopping PostgreSQL (%s) in %s: %w: %s", mode, c.DataDir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// EnsureDatabase connects to serverURL, creates database name if it does
// not exist, and returns the URL of that database.
func EnsureDatabase(ctx context.Context, serverURL, name string) (string, error) {
	db, err := sql.Open("pgx", serverURL)
	if err != nil {
		return "", fmt.Errorf("error opening %s: %w", hostOf(serverURL), err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("error checking for database %q: %w", name, err)
	}
	if !exists {
		if _, err := db.ExecContext(ctx, `CREATE DATABASE `+QuoteIdent(name)); err != nil && !strings.Contains(err.Error(), "already exists") {
			return "", fmt.Errorf("error creating database %q: %w", name, err)
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("error parsing database URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// QuoteIdent quotes a SQL identifier.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// StartCluster initialises (if needed) and starts a PostgreSQL cluster under
// dataDir on a free loopback port. When running as root, the server runs as
// the "postgres" user, as PostgreSQL refuses to run as root.
func StartCluster(ctx context.Context, dataDir string) (*Cluster, error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	if dataDir == "" {
		dataDir = defaultDataDir()
	}
	cred, err := ServerCredential()
	if err != nil {
		return nil, err
	}
	if err := OwnDir(dataDir, cred); err != nil {
		return nil, err
	}
	c := &Cluster{DataDir: dataDir, pgCtl: filepath.Join(bin, "pg_ctl"), cred: cred}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err != nil {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync") //nolint:gosec // G204: PostgreSQL's own initdb
		setCred(cmd, cred)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("error running initdb in %s: %w: %s", dataDir, err, strings.TrimSpace(string(out)))
		}
	}
	// A cluster left running by an earlier process is reused.
	if port, ok := runningPort(dataDir); ok {
		c.Port = port
		if ping(ctx, c.URL("postgres")) == nil {
			return c, nil
		}
	}
	port, err := freePort(ctx)
	if err != nil {
		return nil, err
	}
	c.Port = port
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	c.started = true
	return c, nil
}

// Start starts a stopped cluster again on its port (a restart after Stop,
// as chaos and outage tests do) and waits until it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off", c.Port, c.DataDir)
	cmd := exec.CommandContext(ctx, c.pgCtl, "-D", c.DataDir, "-l", filepath.Join(c.DataDir, "server.log"), "-w", "-t", "60", "-o", opts, "start") //nolint:gosec // G204: PostgreSQL's own pg_ctl
	setCred(cmd, c.cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("error starting PostgreSQL in %s: %w: %s", c.DataDir, err, strings.TrimSpace(string(out)))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := ping(ctx, c.URL("postgres")); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL in %s did not accept connections: %w", c.DataDir, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ServerCredential is whom PostgreSQL runs as: the "postgres" user when
// this process is root (PostgreSQL refuses to run as root), else nil (this
// process's user).
func ServerCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a 'postgres' user to run PostgreSQL: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// OwnDir creates dir for a server running as cred (nil: this process's
// user): its parents searchable (0755), dir itself the server's alone
// (0700), a temporary parent opened up for the postgres user.
func OwnDir(dir string, cred *syscall.Credential) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil { //nolint:gosec // G301: the parents must be searchable by the postgres user (see above)
		return fmt.Errorf("error creating data directory %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("error creating data directory %s: %w", dir, err)
	}
	if cred == nil {
		return nil
	}
	return chownTree(dir, int(cred.Uid), int(cred.Gid))
}

// SetCredential makes cmd run as cred (nil: unchanged), from a directory
// and with a home it can reach.
func SetCredential(cmd *exec.Cmd, cred *syscall.Credential) { setCred(cmd, cred) }

// BinDir is the directory of the PostgreSQL server binaries (initdb,
// pg_ctl, postgres and the rest of the installation: an initdb in PATH
// that is a symlink is followed), or ErrNoPostgres.
func BinDir() (string, error) {
	dir, err := findBinDir()
	if err != nil {
		return "", err
	}
	initdb, err := filepath.EvalSymlinks(filepath.Join(dir, "initdb"))
	if err != nil {
		return "", fmt.Errorf("error resolving %s: %w", filepath.Join(dir, "initdb"), err)
	}
	return filepath.Dir(initdb), nil
}

func findBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// DefaultDataDir is where a throwaway cluster lives when no directory is
// given: $STITCHD_DATA_DIR/pg, else ~/.cache/stitchd/pg (or the system
// temp dir when there is no home).
func DefaultDataDir() string { return defaultDataDir() }

func defaultDataDir() string {
	if d := os.Getenv("STITCHD_DATA_DIR"); d != "" {
		return filepath.Join(d, "pg")
	}
	if os.Geteuid() == 0 {
		return "/var/lib/stitchd/pg"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "stitchd", "pg")
	}
	return filepath.Join(os.TempDir(), "stitchd-pg")
}

func runningPort(dataDir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid")) //nolint:gosec // G304: the cluster's own data directory
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false
	}
	p, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	return p, err == nil
}

func chownTree(dir string, uid, gid int) error {
	// The parents must be searchable by the postgres user too. Only a
	// temporary directory's (a test's, say) are opened up; any other —
	// a home directory — is left as it is, and the choice of directory
	// refused.
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("error resolving data directory %s: %w", dir, err)
	}
	tmp := filepath.Clean(os.TempDir())
	for p := filepath.Dir(abs); p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm()&0o001 != 0 {
			continue
		}
		if !strings.HasPrefix(p, tmp+string(filepath.Separator)) {
			return fmt.Errorf("the postgres user cannot reach the data directory %s: %s is not searchable by others "+
				"(stitchd opens up no such directory): give --data-dir (or STITCHD_DATA_DIR) a directory under /var/lib or %s", dir, p, tmp)
		}
		if err := os.Chmod(p, st.Mode().Perm()|0o011); err != nil {
			return fmt.Errorf("error making %s searchable for the postgres user: %w", p, err)
		}
	}
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, uid, gid); err != nil { //nolint:gosec // G122: our own fresh data directory; Lchown does not follow links
			return fmt.Errorf("error giving %s to the postgres user: %w", path, err)
		}
		return nil
	})
}

func setCred(cmd *exec.Cmd, cred *syscall.Credential) {
	if cred == nil {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = append(os.Environ(), "HOME=/tmp")
	cmd.Dir = "/"
}

// FreePort is freePort, for servers a test starts itself (Patroni's).
func FreePort(ctx context.Context) (int, error) { return freePort(ctx) }

// freePort picks a free port below Linux's ephemeral range (32768–60999),
// from which outgoing connections take their local ports: a cluster
// restarted on its port (Stop or Crash, then Start) cannot then find it
// taken by a client connection's local end. If none of a few picks is
// free, any free port.
func freePort(ctx context.Context) (int, error) {
	var lc net.ListenConfig
	for range 32 {
		port := 20000 + rand.IntN(12000) //nolint:gosec // G404: a port pick, no secret
		if l, err := lc.Listen(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("error finding a free port: %w", err)
	}
	defer l.Close()
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("error finding a free port: a TCP listener's address is a %T", l.Addr())
	}
	return a.Port, nil
}

// Ping connects to dsn and pings it, within 3 s.
func Ping(ctx context.Context, dsn string) error { return ping(ctx, dsn) }

func ping(ctx context.Context, dsn string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func hostOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil {
		return u.Host
	}
	return "the database"
}
