package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/migrations"
)

// Store is stitchd's Postgres store. A Store is bound either to the
// connection pool or, inside InTx (and in storetest's per-test
// transactions), to one transaction.
type Store struct {
	db    *gorm.DB
	url   string
	binds *binds
}

// Options tunes Open.
type Options struct {
	MaxOpenConns int
}

// Open connects to the database at url.
func Open(_ context.Context, url string, opts Options) (*Store, error) {
	db, err := gorm.Open(postgres.New(postgres.Config{DSN: url,
		OptionOpenDB: []stdlib.OptionOpenDB{stdlib.OptionBeforeConnect(dropReadOnly)}}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		DisableAutomaticPing:   true,
	})
	if err != nil {
		return nil, fmt.Errorf("error opening database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("error opening database: %w", err)
	}
	if opts.MaxOpenConns <= 0 {
		opts.MaxOpenConns = 16
	}
	sqlDB.SetMaxOpenConns(opts.MaxOpenConns)
	sqlDB.SetMaxIdleConns(opts.MaxOpenConns)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	return &Store{db: db, url: url, binds: &binds{}}, nil
}

// readOnlySQLState is Postgres's read_only_sql_transaction: a write sent
// to a standby (or a primary demoted under the connection).
const readOnlySQLState = "25006"

// dropReadOnly makes a connection close itself when the server refuses a
// write as read-only, so that the pool drops it and dials again: with
// target_session_attrs=read-write the new connection finds the primary.
// A connection checks only when it is made that its server takes writes;
// one made to a primary that was since demoted, or through an address
// that now leads to a standby, would otherwise fail every write it is
// given.
func dropReadOnly(_ context.Context, cfg *pgx.ConnConfig) error {
	next := cfg.OnPgError
	cfg.OnPgError = func(c *pgconn.PgConn, e *pgconn.PgError) bool {
		if e.Code == readOnlySQLState {
			return false
		}
		return next == nil || next(c, e)
	}
	return nil
}

// Close closes the pool.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// URL is the database URL the store was opened with.
func (s *Store) URL() string { return s.url }

// SQLDB is the underlying pool (migrations, listeners).
func (s *Store) SQLDB() (*sql.DB, error) { return s.db.DB() }

// WithTx returns a Store bound to an open gorm transaction (storetest).
func WithTx(tx *gorm.DB) *Store { return &Store{db: tx, binds: &binds{}} }

// Gorm exposes the gorm handle (storetest).
func (s *Store) Gorm() *gorm.DB { return s.db }

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one int
	if err := s.db.WithContext(ctx).Raw(`SELECT 1`).Row().Scan(&one); err != nil {
		return interpretError(err)
	}
	return nil
}

// Ready reports nil when the database answers and every migration is
// applied.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	p, err := s.provider()
	if err != nil {
		return err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return interpretError(err)
	}
	if pending {
		return fmt.Errorf("%w: migrations pending", engine.ErrUnavailable)
	}
	return nil
}

func (s *Store) provider() (*goose.Provider, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	// Poll the lock every second (goose's default is 5 s) for up to 5 minutes.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("error creating migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("error loading migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending migration under goose's Postgres session
// lock, so processes starting at once apply each migration exactly once.
func (s *Store) Migrate(ctx context.Context, log *slog.Logger) error {
	p, err := s.provider()
	if err != nil {
		return err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("error migrating database: %w", err)
	}
	for _, r := range res {
		if log != nil {
			log.Info("applied migration", "version", r.Source.Version, "duration", r.Duration)
		}
	}
	return nil
}

// MigrateDownAll rolls every migration back (tests).
func (s *Store) MigrateDownAll(ctx context.Context) error {
	p, err := s.provider()
	if err != nil {
		return err
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		return fmt.Errorf("error rolling back migrations: %w", err)
	}
	return nil
}

// MigrationVersion returns the database's current migration version.
func (s *Store) MigrationVersion(ctx context.Context) (int64, error) {
	p, err := s.provider()
	if err != nil {
		return 0, err
	}
	return p.GetDBVersion(ctx)
}

// InTx implements engine.Store. On the pool it runs fn on one pgx
// connection with statements pipelined (pipe); bound to a transaction
// (storetest) it runs fn in a savepoint, statement by statement.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx engine.Tx) error) error {
	if pool, ok := s.db.Statement.ConnPool.(*sql.DB); ok {
		return interpretError(inPipe(ctx, pool, s.binds, fn))
	}
	err := s.db.WithContext(ctx).Transaction(func(gtx *gorm.DB) error {
		q := &sqlQuerier{conn: gtx.Statement.ConnPool}
		tx := &pgTx{q: q, binds: s.binds}
		if err := fn(ctx, tx); err != nil {
			return err
		}
		tx.writeHeld()
		return q.flush(ctx)
	})
	return interpretError(err)
}

// inPipe runs fn in a transaction on one connection of pool, through a
// pipe. A connection left in doubt (an error while BEGIN, a statement or
// COMMIT was under way, which may leave the transaction open) is discarded
// rather than returned to the pool.
func inPipe(ctx context.Context, pool *sql.DB, b *binds, fn func(ctx context.Context, tx engine.Tx) error) error {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("error getting a connection: %w", err)
	}
	defer conn.Close()
	var fnErr error
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		p := newPipe(sc.Conn())
		tx := &pgTx{q: p, binds: b}
		if fnErr = fn(ctx, tx); fnErr != nil {
			if err := p.rollback(context.WithoutCancel(ctx)); err != nil {
				return driver.ErrBadConn
			}
			return nil
		}
		tx.writeHeld() // to travel with COMMIT
		if fnErr = p.commit(ctx); fnErr != nil {
			if sc.Conn().PgConn().TxStatus() != 'I' {
				if err := p.rollback(context.WithoutCancel(ctx)); err != nil {
					return driver.ErrBadConn
				}
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// clientError puts a database error a client caused (a missing row, a
// taken key, a malformed id) under an engine sentinel. Its text is the
// sentinel's and a plain description: the driver's ("sql: no rows in
// result set", SQL type and constraint names) would reach the answer.
// errors.Is and errors.As still find the driver error.
type clientError struct {
	sentinel error
	what     string
	cause    error
}

func (e *clientError) Error() string {
	if e.what == "" {
		return e.sentinel.Error()
	}
	return e.sentinel.Error() + ": " + e.what
}

func (e *clientError) Unwrap() []error { return []error{e.sentinel, e.cause} }

// interpretError maps database errors onto engine sentinels. It is the one
// place that knows Postgres error codes.
// limitSQLState is stitchd_admit_run's refusal of a start past its
// workspace's limits (migration 45).
const limitSQLState = "SD429"

func interpretError(err error) error {
	if err == nil {
		return nil
	}
	// Interpreted already, on its way out of a transaction: keep what it
	// names (which node was not found), not the wrapping's text, which
	// may quote a statement.
	var ce *clientError
	if errors.As(err, &ce) {
		return &clientError{sentinel: ce.sentinel, what: ce.what, cause: err}
	}
	if errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, sql.ErrNoRows) {
		return &clientError{sentinel: engine.ErrNotFound, cause: err}
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == limitSQLState:
			after, _ := strconv.ParseFloat(pgErr.Hint, 64)
			return &engine.LimitError{Workspace: pgErr.Message, Limit: pgErr.Detail, RetryAfter: time.Duration(after * float64(time.Second))}
		case pgErr.Code == "23505":
			return &clientError{sentinel: engine.ErrConflict, what: "it already exists", cause: err}
		case pgErr.Code == "22P02": // invalid input syntax (a malformed uuid)
			return &clientError{sentinel: engine.ErrNotFound, what: "malformed id", cause: err}
		case pgErr.Code == "23503":
			return &clientError{sentinel: engine.ErrInvalidRequest, what: "it refers to something that does not exist", cause: err}
		case strings.HasPrefix(pgErr.Code, "08"), strings.HasPrefix(pgErr.Code, "57P"), pgErr.Code == "53300",
			pgErr.Code == readOnlySQLState: // not the primary (any more): a failover is under way
			return fmt.Errorf("%w: %s", engine.ErrUnavailable, pgErr.Message)
		}
		return err
	}
	// A connection cut without a word (the server crashed or was killed:
	// its backends quit without the FATAL a shutdown sends) ends a read
	// with an unexpected EOF. (Every error InTx returns passes here, the
	// engine's own included: the engine must not wrap io.EOF for anything
	// but a connection, or bad input would answer 503.)
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, pgconn.ErrConnClosed) ||
		strings.Contains(err.Error(), "connect: connection refused") || strings.Contains(err.Error(), "failed to connect") {
		if !errors.Is(err, engine.ErrUnavailable) {
			return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
		}
	}
	return err
}

// intsToText encodes an index path for SQL ("1,2", "" for []).
func intsToText(idx []int) string {
	var b strings.Builder
	for i, v := range idx {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
}

// textToInts decodes array_to_string(idx, ',').
func textToInts(s string) []int {
	if s == "" {
		return []int{}
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i], _ = strconv.Atoi(p)
	}
	return out
}
