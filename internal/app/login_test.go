package app_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
)

// TestLoginConcurrencyBounded: however many sign-ins arrive at once (here
// 10 from one address, each a new email, so neither the per-account nor
// the per-address limit applies), at most LoginConcurrency password checks
// (argon2id, 19 MiB each) run at once; 200 from 4 addresses added 1.07 GB
// before. A sign-in that waits past LoginWait is 429 with Retry-After.
// (Ten, not more: each check is a good part of a second of CPU under the
// race detector, taken from the suite's timing tests beside it.)
func TestLoginConcurrencyBounded(t *testing.T) {
	t.Parallel()
	const slots, n = 2, 10
	type answer struct {
		code             int
		retryAfter, body string
	}
	run := func(wait time.Duration) (answers []answer, peak int) {
		h := newHarness(t, func(c *app.Config) { c.LoginConcurrency, c.LoginWait = slots, wait })
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				body := fmt.Sprintf(`{"email":"nobody%d@example.com","password":"wrong password"}`, i)
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.app.URL+"/api/v1/auth/login", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := h.client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				mu.Lock()
				defer mu.Unlock()
				answers = append(answers, answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)})
			})
		}
		close(start)
		wg.Wait()
		require.Len(t, answers, n)
		// One signal per password check, with how many ran as it started.
		for _, a := range answers {
			if a.code == http.StatusUnauthorized {
				peak = max(peak, h.app.TestSignals.PasswordChecks.Wait(t, waitLimit))
			}
		}
		return answers, peak
	}

	answers, peak := run(time.Minute)
	for _, a := range answers {
		require.Equal(t, http.StatusUnauthorized, a.code, "every sign-in waited its turn: %s", a.body)
	}
	require.Equal(t, slots, peak, "at most %d password checks at once, and that many did run together", slots)

	answers, peak = run(time.Millisecond)
	busy := 0
	for _, a := range answers {
		if a.code == http.StatusTooManyRequests {
			busy++
			require.Equal(t, "1", a.retryAfter)
			require.Contains(t, a.body, "too many sign-ins at once")
		} else {
			require.Equal(t, http.StatusUnauthorized, a.code, a.body)
		}
	}
	require.Positive(t, busy, "past the wait, 429")
	require.LessOrEqual(t, peak, slots)
}
