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
	"github.com/stitchd/stitchd/internal/password"
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
		h := newHarness(t, func(c *app.Config) {
			c.LoginConcurrency, c.LoginWait, c.PasswordParams = slots, wait, password.Default
		})
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

// TestUserPasswordHashesShareTheBound: a user write that sets a password
// (POST and PATCH /api/v1/users) hashes it in a sign-in's turn — a hash
// costs what a check does — so a crowd of them holds at most
// LoginConcurrency hashes at once. One that waits past LoginWait is 429
// with Retry-After and creates or changes nothing.
func TestUserPasswordHashesShareTheBound(t *testing.T) {
	t.Parallel()
	const n = 8
	h := newHarness(t, func(c *app.Config) {
		c.LoginConcurrency, c.LoginWait, c.PasswordParams = 1, time.Millisecond, password.Default
	})
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			body := fmt.Sprintf(`{"email":"crowd%d@example.com","name":"Crowd %d","role":"viewer","password":"a long enough password"}`, i, i)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.app.URL+"/api/v1/users", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := h.client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			codes[i], bodies[i] = resp.StatusCode, string(b)
			if ra := resp.Header.Get("Retry-After"); resp.StatusCode == http.StatusTooManyRequests && ra != "1" {
				t.Errorf("user %d: 429 with Retry-After %q, not 1", i, ra)
			}
		})
	}
	close(start)
	wg.Wait()
	created, busy, peak := 0, 0, 0
	for i, code := range codes {
		switch code {
		case http.StatusCreated:
			created++
			peak = max(peak, h.app.TestSignals.PasswordChecks.Wait(t, waitLimit))
		case http.StatusTooManyRequests:
			busy++
			require.Contains(t, bodies[i], "too many password changes at once")
		default:
			t.Fatalf("user %d: answered %d: %s", i, code, bodies[i])
		}
	}
	require.Positive(t, created)
	require.Positive(t, busy, "past the wait, 429")
	require.Equal(t, 1, peak, "one hash at a time")
	var list struct {
		Users []struct{ Email string } `json:"users"`
	}
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/users?limit=100", nil, &list))
	crowd := 0
	for _, u := range list.Users {
		if strings.HasPrefix(u.Email, "crowd") {
			crowd++
		}
	}
	require.Equal(t, created, crowd, "a refused write created no user")
}
