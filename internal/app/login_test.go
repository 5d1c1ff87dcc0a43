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
	run := func(wait time.Duration) (answers []crowdAnswer, peak int) {
		h := newHarness(t, func(c *app.Config) {
			c.LoginConcurrency, c.LoginWait, c.PasswordParams = slots, wait, password.Default
		})
		calls := make([]crowdCall, n)
		for i := range calls {
			calls[i] = crowdCall{"POST", "/api/v1/auth/login", fmt.Sprintf(`{"email":"nobody%d@example.com","password":"wrong password"}`, i), ""}
		}
		answers = sendTogether(t, h, calls)
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
// (POST and PATCH /api/v1/users) hashes it in the same turns as sign-ins'
// password checks — a hash costs what a check does — so with
// LoginConcurrency 1 a crowd of both runs one at a time. Past LoginWait
// either is 429 with Retry-After, and a refused write creates or changes
// nothing.
func TestUserPasswordHashesShareTheBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) {
		c.LoginConcurrency, c.LoginWait, c.PasswordParams = 1, time.Millisecond, password.Default
	})
	var existing struct{ ID string }
	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/users", map[string]any{"email": "ann@example.com",
		"name": "Ann", "role": "viewer"}, &existing)) // no password: no turn
	var calls []crowdCall
	for i := range 4 {
		calls = append(calls,
			crowdCall{"POST", "/api/v1/users", fmt.Sprintf(`{"email":"crowd%d@example.com","name":"Crowd %d","role":"viewer","password":"a long enough password"}`, i, i), token},
			crowdCall{"PATCH", "/api/v1/users/" + existing.ID, fmt.Sprintf(`{"name":"Ann %d","password":"a long enough password"}`, i), token},
			crowdCall{"POST", "/api/v1/auth/login", fmt.Sprintf(`{"email":"nobody%d@example.com","password":"wrong password"}`, i), ""})
	}
	answers := sendTogether(t, h, calls)
	turns, created, patched, busyWrites, peak := 0, 0, 0, 0, 0
	for i, c := range calls {
		code, body, what := answers[i].code, answers[i].body, c.method+" "+c.path
		if code == http.StatusTooManyRequests {
			require.Equal(t, "1", answers[i].retryAfter, what)
		}
		switch {
		case code == http.StatusTooManyRequests:
			if c.auth != "" {
				busyWrites++
				require.Contains(t, body, "too many user writes with a password at once", what)
			} else {
				require.Contains(t, body, "too many sign-ins at once", what)
			}
			continue
		case c.method == "PATCH":
			require.Equal(t, http.StatusOK, code, "%s: %s", what, body)
			patched++
		case c.auth != "":
			require.Equal(t, http.StatusCreated, code, "%s: %s", what, body)
			created++
		default:
			require.Equal(t, http.StatusUnauthorized, code, "%s: %s", what, body)
		}
		turns++
	}
	// One signal a turn taken, with how many were running as it began.
	for range turns {
		peak = max(peak, h.app.TestSignals.PasswordChecks.Wait(t, waitLimit))
	}
	require.Equal(t, 1, peak, "one check or hash at a time, sign-ins and user writes together")
	require.Positive(t, busyWrites, "past the wait, a user write is 429")
	var list struct {
		Users []struct{ Email, Name string } `json:"users"`
	}
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/users?limit=100", nil, &list))
	crowd := 0
	for _, u := range list.Users {
		if strings.HasPrefix(u.Email, "crowd") {
			crowd++
		}
		if u.Email == "ann@example.com" && patched == 0 {
			require.Equal(t, "Ann", u.Name, "a refused PATCH changed nothing")
		}
	}
	require.Equal(t, created, crowd, "a refused POST created no user")
}

// crowdCall is one request of a crowd sent together (auth: a bearer token,
// or none).
type crowdCall struct{ method, path, body, auth string }

// crowdAnswer is what a crowdCall was answered.
type crowdAnswer struct {
	code             int
	retryAfter, body string
}

// sendTogether sends calls at once, each on its own goroutine, and returns
// their answers in the calls' order.
func sendTogether(t *testing.T, h *harness, calls []crowdCall) []crowdAnswer {
	t.Helper()
	answers := make([]crowdAnswer, len(calls))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range calls {
		wg.Go(func() {
			<-start
			req, err := http.NewRequestWithContext(t.Context(), c.method, h.app.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Error(err)
				return
			}
			if c.auth != "" {
				req.Header.Set("Authorization", "Bearer "+c.auth)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := h.client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers[i] = crowdAnswer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
		})
	}
	close(start)
	wg.Wait()
	return answers
}
