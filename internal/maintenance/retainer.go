package maintenance

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/startstop"
	"github.com/stitchd/stitchd/store"
)

// RetainerStore deletes finished runs past their retention (store.Store).
type RetainerStore interface {
	DeleteExpiredRuns(ctx context.Context, keep time.Duration, limit int) (int, error)
	ArchiveExpiredRuns(ctx context.Context, keep time.Duration, limit int, send store.ArchiveSender) (int, error)
	// WebhookSecret signs the archive's batches.
	WebhookSecret(ctx context.Context) ([]byte, error)
}

// RetainerParams configures a Retainer.
type RetainerParams struct {
	Store RetainerStore
	// Retention deletes finished runs that long after they finished (0:
	// keep them, unless their flow sets settings.retentionDays).
	Retention time.Duration
	// ArchiveURL, when set, gets every batch before it is deleted
	// (Archiver); ArchiveClient sends it (guarded, no redirects followed;
	// default http.DefaultClient).
	ArchiveURL    string
	ArchiveClient *http.Client
	// Clock stamps the archive's batches (default engine.SystemClock).
	Clock engine.Clock
	// Metrics counts the runs deleted (nil: not counted).
	Metrics ActionCounter
	Logger  *slog.Logger
	// PollInterval is the pause between batches once caught up (default 1s).
	PollInterval time.Duration
}

// Retainer deletes finished runs past their retention, in batches of 500
// (each its own short transaction; with an archive, batches of 50, each
// sent to it first). It has a loop of its own, so that a backlog — a
// retention set on a flow with a year of runs — never holds up the
// sweeper's deadlines and timers: batch after batch while whole batches
// are due, each followed by a pause twice as long as it took, so that
// retention takes at most a third of one connection's time, and less of a
// busy database's (its batches take longer there): the hot path keeps
// the database (at half, the bench's chains lost too much of their rate
// while a backlog was deleted: docs/performance.md#measurements-behind-the-code);
// once caught up, one batch every poll
// interval.
type Retainer struct {
	p         RetainerParams
	archive   *archiver // nil: no archive
	lifecycle startstop.Base
}

// NewRetainer returns a Retainer; Start runs it.
func NewRetainer(p RetainerParams) *Retainer {
	if p.Clock == nil {
		p.Clock = engine.SystemClock{}
	}
	if p.Metrics == nil {
		p.Metrics = noCounter{}
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.PollInterval <= 0 {
		p.PollInterval = time.Second
	}
	if p.ArchiveClient == nil {
		p.ArchiveClient = http.DefaultClient
	}
	r := &Retainer{p: p}
	if p.ArchiveURL != "" {
		r.archive = &archiver{url: p.ArchiveURL, client: p.ArchiveClient, secret: p.Store.WebhookSecret, clock: p.Clock}
	}
	return r
}

// Start deletes expired runs until Stop (startstop.Service).
func (r *Retainer) Start(ctx context.Context) error {
	return r.lifecycle.StartWith(ctx, func(ctx context.Context) error {
		r.lifecycle.Go(ctx, r.run)
		return nil
	})
}

// Stop stops deleting and returns once a batch under way ended.
func (r *Retainer) Stop() { r.lifecycle.Stop() }

func (r *Retainer) run(ctx context.Context) {
	timer := time.NewTimer(r.p.PollInterval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		// Wall time, not the clock: the pause paces the database's work,
		// which a test's clock does not measure.
		start := time.Now()
		n, full := r.deleteExpiredRuns(ctx)
		r.p.Metrics.SweeperAction("run_deleted", n)
		wait := r.p.PollInterval
		if full {
			wait = 2 * time.Since(start)
		}
		timer.Reset(wait)
	}
}

// runBatch is how many runs one batch deletes without an archive.
const runBatch = 500

// deleteExpiredRuns deletes one batch of finished runs past their
// retention; full reports that the batch was whole (more may be due).
func (r *Retainer) deleteExpiredRuns(ctx context.Context) (n int, full bool) {
	batch := runBatch
	var err error
	if r.archive != nil {
		batch = archiveBatch
		n, err = r.p.Store.ArchiveExpiredRuns(ctx, r.p.Retention, batch, r.archive.send)
	} else {
		n, err = r.p.Store.DeleteExpiredRuns(ctx, r.p.Retention, batch)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.p.Logger.Warn("sweeper", "what", "retention", "error", err)
		}
		return 0, false
	}
	return n, n == batch
}
