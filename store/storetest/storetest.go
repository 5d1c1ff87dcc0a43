package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of sql.Open

	"github.com/stitchd/stitchd/migrations"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/localpg"
)

// harness is the per-binary state. Test binaries are processes, so this is
// the natural scope; it is created lazily on first use.
type harness struct {
	serverURL string // a URL to the server's "postgres" database
	template  string
	pkgDB     string
	pkgStore  *store.Store
	created   []string
	mu        sync.Mutex
	seq       atomic.Int64
	retired   []string // test databases not dropped yet (retire)
	dropping  sync.WaitGroup
}

// dropBatch is how many test databases retire drops together.
const dropBatch = 8

var (
	once    sync.Once
	h       *harness
	initErr error
	// inRun is set while Run runs the tests: it waits for the drops retire
	// leaves running, and drops what is left.
	inRun atomic.Bool
)

func get(tb testing.TB) *harness {
	tb.Helper()
	once.Do(func() { h, initErr = setup() })
	if initErr != nil {
		tb.Fatalf("storetest: %v", initErr)
	}
	return h
}

// ServerURL returns the URL of the "postgres" database on the test server.
func ServerURL(tb testing.TB) string { return get(tb).serverURL }

func setup() (*harness, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	server := os.Getenv("DATABASE_URL")
	if server == "" {
		u, _, err := localpg.Resolve(ctx, localpg.Options{DatabaseName: "postgres",
			DataDir: os.Getenv("STITCHD_TEST_DATA_DIR")})
		if err != nil {
			return nil, err
		}
		server = u
	}
	server = withDB(server, "postgres")
	hs := &harness{serverURL: server}
	sum, err := migrationsHash()
	if err != nil {
		return nil, err
	}
	hs.template = "stitchd_tmpl_" + sum[:12]
	if err := hs.ensureTemplate(ctx); err != nil {
		return nil, err
	}
	hs.pkgDB = fmt.Sprintf("%s%s_%d_%d", dbPrefix, hostTag(), os.Getpid(), time.Now().UnixNano()%1_000_000)
	if err := hs.clone(ctx, hs.pkgDB); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, withDB(server, hs.pkgDB), store.Options{MaxOpenConns: 32})
	if err != nil {
		return nil, err
	}
	hs.pkgStore = st
	return hs, nil
}

func migrationsHash() (string, error) {
	hash := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, p)
		if err != nil {
			return err
		}
		hash.Write([]byte(p))
		hash.Write(b)
		return nil
	})
	return hex.EncodeToString(hash.Sum(nil)), err
}

func withDB(u, name string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Path = "/" + name
	return p.String()
}

// ensureTemplate creates the migrated template once, under an advisory lock
// so that parallel test binaries do not race.
func (hs *harness) ensureTemplate(ctx context.Context) error {
	db, err := sql.Open("pgx", hs.serverURL)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("error connecting to the test server: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(74201)`); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock(74201)`) //nolint:errcheck
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, hs.template).Scan(&exists); err != nil {
		return err
	}
	// Under the lock, once a binary: what dead binaries of this machine
	// left behind goes first.
	if _, err := dropStale(ctx, db, hostTag()); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := hs.template + "_build"
	_, _ = conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+localpg.QuoteIdent(building))
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+localpg.QuoteIdent(building)); err != nil {
		return fmt.Errorf("error creating template database: %w", err)
	}
	st, err := store.Open(ctx, withDB(hs.serverURL, building), store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	if err := st.Migrate(ctx, nil); err != nil {
		st.Close()
		return err
	}
	st.Close()
	if _, err := conn.ExecContext(ctx, `ALTER DATABASE `+localpg.QuoteIdent(building)+` RENAME TO `+localpg.QuoteIdent(hs.template)); err != nil {
		return fmt.Errorf("error publishing template database: %w", err)
	}
	return nil
}

func (hs *harness) clone(ctx context.Context, name string) error {
	db, err := sql.Open("pgx", hs.serverURL)
	if err != nil {
		return err
	}
	defer db.Close()
	var lastErr error
	for i := 0; i < 50; i++ {
		_, lastErr = db.ExecContext(ctx, `CREATE DATABASE `+localpg.QuoteIdent(name)+` TEMPLATE `+localpg.QuoteIdent(hs.template))
		if lastErr == nil {
			hs.mu.Lock()
			hs.created = append(hs.created, name)
			hs.mu.Unlock()
			return nil
		}
		if !strings.Contains(lastErr.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("error cloning test database %s: %w", name, lastErr)
}

// retire drops a finished test's database without the test waiting for
// it, dropBatch at a time and concurrently: DROP DATABASE makes
// PostgreSQL take an immediate checkpoint (every dirty buffer of the
// server written and synced, and each page written after it logged whole
// in the WAL), and requests that arrive together are served by one. A
// drop a test made a checkpoint about every second across the suite, with
// most of the WAL full-page images. Outside Run (a package without
// TestMain) it drops at once, as nothing would drop the rest.
func (hs *harness) retire(name string) {
	if !inRun.Load() {
		hs.drop(name)
		return
	}
	hs.mu.Lock()
	hs.retired = append(hs.retired, name)
	var batch []string
	if len(hs.retired) >= dropBatch {
		batch, hs.retired = hs.retired, nil
	}
	hs.mu.Unlock()
	if batch != nil {
		hs.dropping.Go(func() { hs.dropAll(batch) })
	}
}

// dropAll drops the databases names concurrently.
func (hs *harness) dropAll(names []string) {
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() { hs.drop(n) })
	}
	wg.Wait()
}

func (hs *harness) drop(name string) {
	db, err := sql.Open("pgx", hs.serverURL)
	if err != nil {
		return
	}
	defer db.Close()
	// Not a test's context: drop runs in Cleanup, after the test's context is done.
	_, _ = db.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+localpg.QuoteIdent(name)+` WITH (FORCE)`)
}

// Main runs the package's tests and drops the databases they cloned.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit, for a TestMain with more to close after
// the tests (internal/browser's Chromium): it returns m.Run's code.
func Run(m *testing.M) int {
	inRun.Store(true)
	code := m.Run()
	if h != nil {
		if h.pkgStore != nil {
			h.pkgStore.Close()
		}
		h.dropping.Wait()
		h.mu.Lock()
		left := append([]string{h.pkgDB}, h.retired...)
		names := append([]string(nil), h.created...)
		h.mu.Unlock()
		h.dropAll(left) // together, as retire drops
		// Then any a failed drop left: DROP … IF EXISTS of a database
		// dropped already is a lookup, without a checkpoint.
		for _, n := range names {
			h.drop(n)
		}
	}
	return code
}

// Store returns the package's shared store. Tests using it must not assume
// an empty database; prefer TestTx or IsolatedDB.
func Store(tb testing.TB) *store.Store { return get(tb).pkgStore }

// TestTx returns a store bound to a transaction on the package database
// that is rolled back when the test ends.
func TestTx(tb testing.TB) *store.Store {
	tb.Helper()
	hs := get(tb)
	tx := hs.pkgStore.Gorm().Begin()
	if tx.Error != nil {
		tb.Fatalf("storetest: error beginning transaction: %v", tx.Error)
	}
	tb.Cleanup(func() { tx.Rollback() })
	return store.WithTx(tx)
}

// IsolatedDB clones a fresh migrated database for one test and returns a
// store on it and its URL; the database is dropped after the test ends
// (retire: in the background under Run).
func IsolatedDB(tb testing.TB) (*store.Store, string) {
	tb.Helper()
	hs := get(tb)
	name := fmt.Sprintf("%s_%d", hs.pkgDB, hs.seq.Add(1))
	ctx := context.Background()
	if err := hs.clone(ctx, name); err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	u := withDB(hs.serverURL, name)
	st, err := store.Open(ctx, u, store.Options{MaxOpenConns: 24})
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	tb.Cleanup(func() {
		st.Close()
		hs.retire(name)
	})
	return st, u
}

// EmptyDB creates an empty (unmigrated) database for migration tests and
// returns its URL; it is dropped when the test ends.
func EmptyDB(tb testing.TB) string {
	tb.Helper()
	hs := get(tb)
	name := fmt.Sprintf("%s_e%d", hs.pkgDB, hs.seq.Add(1))
	db, err := sql.Open("pgx", hs.serverURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(tb.Context(), `CREATE DATABASE `+localpg.QuoteIdent(name)); err != nil {
		tb.Fatalf("storetest: error creating database: %v", err)
	}
	tb.Cleanup(func() { hs.drop(name) })
	return withDB(hs.serverURL, name)
}
