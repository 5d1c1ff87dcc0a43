package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TakeDispatchToken takes a token from host's bucket, which refills at
// rate a second up to burst, shared by every process: ok, or how long
// until one is there. One statement when the bucket exists.
func (s *Store) TakeDispatchToken(ctx context.Context, host string, rate, burst float64) (bool, time.Duration, error) {
	if rate <= 0 || burst < 1 {
		return false, 0, errors.New("a dispatch rate needs rate > 0 and burst ≥ 1")
	}
	for range 2 {
		var granted bool
		var tokens float64
		// SET is evaluated on the locked row, and clock_timestamp() then: a
		// statement that waited for another's lock refills from when that
		// one left off (never backwards: elapsed time is at least 0).
		const avail = `least(?, tokens + ? * greatest(0, extract(epoch FROM clock_timestamp() - at)))`
		res := s.db.WithContext(ctx).Raw(`UPDATE dispatch_rate_buckets SET
				granted = `+avail+` >= 1,
				tokens = `+avail+` - CASE WHEN `+avail+` >= 1 THEN 1 ELSE 0 END,
				at = greatest(at, clock_timestamp())
			WHERE host = ? RETURNING granted, tokens`, burst, rate, burst, rate, burst, rate, host).Row()
		err := res.Scan(&granted, &tokens)
		if err == nil {
			if granted {
				return true, 0, nil
			}
			return false, time.Duration((1 - tokens) / rate * float64(time.Second)), nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return false, 0, fmt.Errorf("error taking a dispatch token for %s: %w", host, interpretError(err))
		}
		// A new bucket starts full.
		if err := s.db.WithContext(ctx).Exec(`INSERT INTO dispatch_rate_buckets (host, tokens, at) VALUES (?, ?, now())
			ON CONFLICT (host) DO NOTHING`, host, burst).Error; err != nil {
			return false, 0, fmt.Errorf("error making the dispatch bucket of %s: %w", host, interpretError(err))
		}
	}
	return false, 0, fmt.Errorf("the dispatch bucket of %s vanished", host)
}

// PostponeDispatch gives a claimed dispatch back for delay without
// counting the try (its host's rate is spent for longer than the
// process may hold the row).
func (s *Store) PostponeDispatch(ctx context.Context, id string, delay time.Duration) error {
	err := s.db.WithContext(ctx).Exec(`UPDATE dispatches SET status = 'pending', tries = greatest(tries - 1, 0),
		locked_until = NULL, next_attempt_at = now() + make_interval(secs => ?), updated_at = now()
		WHERE id = ? AND status = 'sending'`, delay.Seconds(), id).Error
	if err != nil {
		return fmt.Errorf("error postponing dispatch %s: %w", id, interpretError(err))
	}
	return nil
}
