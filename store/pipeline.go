package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
)

// querier is what an engine transaction (pgTx) runs its statements on.
//
// Besides the usual query, row and exec it offers later: a statement whose
// result nobody needs before the transaction ends (an outbox row, the
// run's events and row) is queued and sent with the next statement that
// must be answered, or with COMMIT. Over one pgx connection (pipe) the
// queued statements, the next one and BEGIN and COMMIT share a round trip
// (pgx's pipeline mode): a chain step that took nine round trips takes
// five. Over a gorm transaction (sqlQuerier: storetest's per-test
// transactions) the queue is run one statement at a time, so both behave
// alike but for the round trips.
type querier interface {
	query(ctx context.Context, q string, args []any) (rows, error)
	row(ctx context.Context, q string, args []any) scanner
	exec(ctx context.Context, q string, args []any) (int64, error)
	// later queues a statement; scan, when set, reads its one row.
	later(q string, args []any, scan func(scanner) error)
	// last returns the statement queued last while it waits to be sent
	// (nil: none), for a statement that extends it instead of queueing
	// another (pgTx.DeferNode).
	last() *queued
	// queued is how many statements wait to be sent.
	queued() int
	// flush runs what is queued.
	flush(ctx context.Context) error
}

// rows is the part of a result set pgTx reads.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

type queued struct {
	q    string
	args []any
	scan func(scanner) error
	// more: what a statement extending this one extends (pgTx.DeferNode's
	// *deferredFires), nil for others.
	more any
}

// lastOf is querier.last over a queue.
func lastOf(queue []queued) *queued {
	if len(queue) == 0 {
		return nil
	}
	return &queue[len(queue)-1]
}

// errDeferred marks the error of a queued statement, which surfaces at a
// later statement or at COMMIT.
func errDeferred(q string, err error) error {
	return fmt.Errorf("error in a queued statement (%.40s…): %w", q, err)
}

// sqlQuerier runs statements on a gorm transaction's connection, the queue
// one statement at a time.
type sqlQuerier struct {
	conn  gorm.ConnPool
	queue []queued
	err   error // sticky: a queued statement failed
}

func (s *sqlQuerier) query(ctx context.Context, q string, args []any) (rows, error) {
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	r, err := s.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

func (s *sqlQuerier) row(ctx context.Context, q string, args []any) scanner {
	if err := s.flush(ctx); err != nil {
		return errRow{err}
	}
	return s.conn.QueryRowContext(ctx, q, args...)
}

func (s *sqlQuerier) exec(ctx context.Context, q string, args []any) (int64, error) {
	if err := s.flush(ctx); err != nil {
		return 0, err
	}
	res, err := s.conn.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *sqlQuerier) later(q string, args []any, scan func(scanner) error) {
	s.queue = append(s.queue, queued{q: q, args: args, scan: scan})
}

func (s *sqlQuerier) last() *queued { return lastOf(s.queue) }

func (s *sqlQuerier) queued() int { return len(s.queue) }

func (s *sqlQuerier) flush(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	for len(s.queue) > 0 {
		it := s.queue[0]
		s.queue = s.queue[1:]
		var err error
		if it.scan != nil {
			err = it.scan(s.conn.QueryRowContext(ctx, it.q, it.args...))
		} else {
			_, err = s.conn.ExecContext(ctx, it.q, it.args...)
		}
		if err != nil {
			s.queue = nil
			s.err = errDeferred(it.q, err)
			return s.err
		}
	}
	return nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// pipe runs one transaction on one pgx connection. BEGIN is queued when
// the pipe is made, so it travels with the first statement; commit sends
// the queue with COMMIT. A transaction that ends up running nothing (a
// callback rejected before its first statement) sends nothing at all.
type pipe struct {
	conn  *pgx.Conn
	queue []queued
	// begun is set once BEGIN has been sent.
	begun bool
	// err is sticky: once a queued statement failed, every later call and
	// the commit fail with its error. A queued statement's check can fail
	// without failing the transaction in Postgres, and the statement that
	// carried it may belong to another operation of a group commit, which
	// might otherwise be left out as a rejected operation and the rest
	// committed.
	err error
}

func newPipe(conn *pgx.Conn) *pipe {
	return &pipe{conn: conn, queue: []queued{{q: "begin"}}}
}

// A statement whose arguments begin with a pgx.QueryExecMode (planFor: a
// statement carrying many rows, to be planned for its actual parameters)
// cannot take that mode in a pipeline: pgx gives a batch the connection's
// mode, which caches every statement's plan. In the pipeline it is
// wrapped instead — SET LOCAL plan_cache_mode = force_custom_plan before
// it, reset to the session's setting after (the engine sets it nowhere
// else) — so it travels with the others and keeps its binary arguments.
const (
	forceCustomPlan = "SET LOCAL plan_cache_mode = force_custom_plan"
	restorePlanMode = "SET LOCAL plan_cache_mode TO DEFAULT"
)

// customPlanned reports whether args ask for a custom plan, and returns
// them without that request.
func customPlanned(args []any) (bool, []any) {
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			return true, args[1:]
		}
	}
	return false, args
}

// send sends the queue, then q (when not empty) in one pipeline, and reads
// the queue's results. The caller reads q's result from the returned
// batch and must close it.
func (p *pipe) send(ctx context.Context, q string, args []any) (pgx.BatchResults, error) {
	if p.err != nil {
		return nil, p.err
	}
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(p.queue)+3)}
	queueStmt := func(q string, args []any) {
		custom, args := customPlanned(args)
		if custom {
			b.Queue(forceCustomPlan)
		}
		b.Queue(q, args...)
		if custom {
			b.Queue(restorePlanMode)
		}
	}
	for _, it := range p.queue {
		queueStmt(it.q, it.args)
	}
	custom, _ := customPlanned(args)
	if q != "" {
		queueStmt(q, args)
	}
	queue := p.queue
	p.queue = nil
	p.begun = true
	br := p.conn.SendBatch(ctx, b)
	fail := func(q string, err error) (pgx.BatchResults, error) {
		_ = br.Close()
		p.err = errDeferred(q, err)
		return nil, p.err
	}
	for _, it := range queue {
		wrapped, _ := customPlanned(it.args)
		if wrapped {
			if _, err := br.Exec(); err != nil {
				return fail(forceCustomPlan, err)
			}
		}
		var err error
		if it.scan != nil {
			err = it.scan(br.QueryRow())
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			return fail(it.q, err)
		}
		if wrapped {
			if _, err := br.Exec(); err != nil {
				return fail(restorePlanMode, err)
			}
		}
	}
	if custom {
		// q's result is next; the restoring SET after it is read by the
		// batch's Close.
		if _, err := br.Exec(); err != nil {
			return fail(forceCustomPlan, err)
		}
	}
	return br, nil
}

// direct reports whether q can go on its own, outside a pipeline: nothing
// is queued and it needs no wrapping for a custom plan.
func (p *pipe) direct(args []any) (bool, error) {
	if p.err != nil {
		return false, p.err
	}
	custom, _ := customPlanned(args)
	return len(p.queue) == 0 && !custom, nil
}

func (p *pipe) query(ctx context.Context, q string, args []any) (rows, error) {
	if ok, err := p.direct(args); err != nil {
		return nil, err
	} else if ok {
		return p.conn.Query(ctx, q, args...)
	}
	br, err := p.send(ctx, q, args)
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: r, br: br}, nil
}

func (p *pipe) row(ctx context.Context, q string, args []any) scanner {
	if ok, err := p.direct(args); err != nil {
		return errRow{err}
	} else if ok {
		return p.conn.QueryRow(ctx, q, args...)
	}
	br, err := p.send(ctx, q, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (p *pipe) exec(ctx context.Context, q string, args []any) (int64, error) {
	if ok, err := p.direct(args); err != nil {
		return 0, err
	} else if ok {
		ct, err := p.conn.Exec(ctx, q, args...)
		return ct.RowsAffected(), err
	}
	br, err := p.send(ctx, q, args)
	if err != nil {
		return 0, err
	}
	ct, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return ct.RowsAffected(), err
}

func (p *pipe) later(q string, args []any, scan func(scanner) error) {
	p.queue = append(p.queue, queued{q: q, args: args, scan: scan})
}

// last is querier.last; BEGIN, queued when the pipe is made, is never
// extended.
func (p *pipe) last() *queued {
	if !p.begun && len(p.queue) == 1 {
		return nil
	}
	return lastOf(p.queue)
}

// queued is querier.queued; BEGIN, queued when the pipe is made, is not
// counted.
func (p *pipe) queued() int {
	if !p.begun {
		return len(p.queue) - 1
	}
	return len(p.queue)
}

func (p *pipe) flush(ctx context.Context) error {
	if len(p.queue) == 0 {
		return nil
	}
	br, err := p.send(ctx, "", nil)
	if err != nil {
		return err
	}
	return br.Close()
}

// commit sends the queue and COMMIT together. A transaction that never
// sent BEGIN and has nothing queued but it sends nothing.
func (p *pipe) commit(ctx context.Context) error {
	if p.err != nil {
		return p.err
	}
	if !p.begun && len(p.queue) == 1 {
		p.queue = nil
		return nil
	}
	// The COMMIT's tag is checked: Postgres answers COMMIT of a failed
	// transaction with ROLLBACK and no error.
	br, err := p.send(ctx, "commit", nil)
	if err != nil {
		return err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("error committing: %w", err)
	}
	if tag.String() != "COMMIT" {
		return errors.New("error committing: the transaction was rolled back")
	}
	return nil
}

// rollback ends a transaction that BEGIN opened.
func (p *pipe) rollback(ctx context.Context) error {
	p.queue = nil
	if !p.begun {
		return nil
	}
	_, err := p.conn.Exec(ctx, "rollback")
	return err
}

type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	_ = r.br.Close()
}

type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}
