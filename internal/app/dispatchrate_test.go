package app_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/syncbuf"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestDispatchRateAcrossProcesses: --dispatch-rate HOST=50 holds within
// 10 % for a 500-item fan-out delivered by two processes on one database
// (measured where the deliveries arrive), and a host without a rate is
// not slowed.
func TestDispatchRateAcrossProcesses(t *testing.T) {
	// Not parallel: it runs before the package's parallel tests, which on
	// two cores held sends up long enough to put 226 arrivals in a 4-second
	// window (the bound: 225) while the pace stayed at 51.2/s.
	limited, arrived := arrivalServer(t)
	u, err := url.Parse(limited.URL)
	require.NoError(t, err)
	const rate, items = 50.0, 500
	_, dbURL := storetest.IsolatedDB(t)
	opt := func(c *app.Config) { c.DispatchRates = map[string]float64{u.Host: rate} }
	a := newHarnessOn(t, dbURL, opt)
	newHarnessOn(t, dbURL, opt) // a second process, sharing the bucket

	flow := a.createFlow([]map[string]any{splitter("s", "xs"),
		node("w", "Worker", map[string]any{"webhookUrl": limited.URL + "/w", "retry": map[string]any{"maxAttempts": 1}}),
		node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	a.startRun(flow, map[string]any{"xs": make([]int, items)})
	a.eventually(func() bool { return len(arrived()) >= items }, "%d deliveries", items)
	got := arrived()
	require.Len(t, got, items, "each item delivered once")
	// The pace after the first burst (a tenth of a second's worth).
	burst := int(rate / 10)
	pace := arrivalPace(got[burst:])
	t.Logf("%d deliveries, %.1f/s after the first %d (limit %.0f/s)", len(got), pace, burst, rate)
	requirePace(t, rate, pace)
	// No four seconds of arrivals above the limit by more than 10 % (plus
	// the burst): tokens are taken before the request is sent, so arrivals
	// jitter by the sending's own delays. Alone, two seconds from the first
	// arrival hold 105 (the burst and 100); in the full suite, with other
	// tests on both cores, sends held up by the scheduler arrive together
	// and two seconds held up to 120 — a window of four smooths that out.
	const window = 4
	for i := range got {
		j := sort.Search(len(got), func(k int) bool { return got[k].After(got[i].Add(window * time.Second)) })
		require.LessOrEqual(t, j-i, int(window*rate*1.1)+burst, "deliveries in the %d seconds from %d", window, i)
	}

	// Another host is not limited: 200 items arrive well above 50/s.
	w := a.worker
	flow2 := a.createFlow([]map[string]any{splitter("s", "xs"), wnode(a, "w"), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	began := time.Now()
	r := a.startRun(flow2, map[string]any{"xs": make([]int, 200)})
	a.eventually(func() bool {
		n := 0
		for _, d := range w.All() {
			if d.Payload.RunID == r.ID {
				n++
			}
		}
		return n >= 200
	}, "200 unlimited deliveries")
	require.Less(t, time.Since(began), 4*time.Second, "200 deliveries to an unlimited host took %s", time.Since(began))
}

// TestDispatchRatePostpones: a wait past MaxTokenWait gives the row back
// to the outbox for later instead of holding it, without counting a try;
// every item is still delivered once, at the rate.
func TestDispatchRatePostpones(t *testing.T) {
	t.Parallel()
	limited, arrived := arrivalServer(t)
	u, err := url.Parse(limited.URL)
	require.NoError(t, err)
	// 0.5/s: a 2 s wait, past the 1 s a delivery may wait holding its row.
	var logs syncbuf.Buffer
	h := newHarness(t, func(c *app.Config) {
		c.DispatchRates = map[string]float64{u.Hostname(): 0.5}
		c.DispatchMaxTokenWait = time.Second
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	flow := h.createFlow([]map[string]any{splitter("s", "xs"),
		node("w", "Worker", map[string]any{"webhookUrl": limited.URL + "/w", "retry": map[string]any{"maxAttempts": 1}}),
		node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	r := h.startRun(flow, map[string]any{"xs": make([]int, 3)})
	h.eventually(func() bool { return len(arrived()) >= 3 }, "3 deliveries")
	got := arrived()
	require.GreaterOrEqual(t, got[2].Sub(got[0]), 3500*time.Millisecond, "three deliveries at 0.5/s take 4 s")
	var tries []int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT tries FROM dispatches WHERE run_id = ? ORDER BY tries`, r.ID).Scan(&tries).Error)
	require.Equal(t, []int{1, 1, 1}, tries, "a postponement is not a try")
	require.Contains(t, logs.String(), "delivery postponed for its rate", "the rows went back to the outbox")
	// A delivery arrives before its row is marked delivered; a lease
	// moved past while the mark is still on its way is a redelivery by
	// design (at least once), not what this test is about.
	h.eventually(func() bool {
		var n int64
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE run_id = ? AND status = 'delivered'`, r.ID).Scan(&n).Error)
		return n == 3
	}, "3 deliveries marked delivered")
	h.advance(time.Minute) // every postponement and lease due: nothing is sent again
	h.sweeps(3)            // the dispatcher polls as often
	require.Len(t, arrived(), 3, "each delivered once")
}

// TestWorkerNodeRateLimit: a worker node's rateLimit holds for its own
// deliveries, within 10 %, with no --dispatch-rate.
func TestWorkerNodeRateLimit(t *testing.T) {
	t.Parallel()
	srv, arrived := arrivalServer(t)
	h := newHarness(t)
	const rate, items = 20.0, 100
	flow := h.createFlow([]map[string]any{splitter("s", "xs"),
		node("w", "Worker", map[string]any{"webhookUrl": srv.URL + "/w", "rateLimit": rate}), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	h.startRun(flow, map[string]any{"xs": make([]int, items)})
	h.eventually(func() bool { return len(arrived()) >= items }, "%d deliveries", items)
	got := arrived()
	burst := int(rate / 10)
	pace := arrivalPace(got[burst:])
	t.Logf("%.1f/s for a rateLimit of %.0f/s", pace, rate)
	requirePace(t, rate, pace)
}

// requirePace: arrivals never outpace the limit by more than 10 %. Below
// the limit, only a pace under half of it fails here: a loaded two-core
// suite (another package's browser tests beside this one) starves the
// senders and measured 42.5/s for 50 and 17.5/s for 20, which is the
// machine, not the bucket. That the bucket itself never asks for more
// waiting than its rate demands is TestDispatchTokensWaitNoLonger's, in
// store, where it does not depend on the load; half the rate still
// catches a dispatcher that waits twice (or a bucket each process fills
// on its own, then halved).
func requirePace(t *testing.T, rate, pace float64) {
	t.Helper()
	require.LessOrEqual(t, pace, rate*1.1, "at most 10 %% above the limit: %.1f/s", pace)
	require.GreaterOrEqual(t, pace, rate/2, "not held back far below the limit: %.1f/s", pace)
}

// arrivalPace is the pace of arrivals per second, the median of the
// paces between every two arrivals at least a tenth of them apart
// (Theil–Sen): a least-squares slope moved by a tenth when the scheduler
// held up a few sends at either end (22.3/s for a limit of 20 in a loaded
// suite); the median moves only when most pairs do, as they all do under
// a bucket that lets too much through.
func arrivalPace(at []time.Time) float64 {
	gap := max(1, len(at)/10)
	var paces []float64
	for i := range at {
		for j := i + gap; j < len(at); j++ {
			if d := at[j].Sub(at[i]).Seconds(); d > 0 {
				paces = append(paces, float64(j-i)/d)
			}
		}
	}
	if len(paces) == 0 {
		return 0
	}
	sort.Float64s(paces)
	return paces[len(paces)/2]
}

// arrivalServer is a worker that accepts every delivery and notes when it
// arrived; arrived returns the times so far, in order.
func arrivalServer(t *testing.T) (*httptest.Server, func() []time.Time) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		got := append([]time.Time(nil), at...)
		sort.Slice(got, func(i, j int) bool { return got[i].Before(got[j]) })
		return got
	}
}

// TestArrivalPace: the rate tests' measure reads an even 20/s as 20/s
// with the first arrivals held up, and a bucket letting 40/s through as
// 40/s.
func TestArrivalPace(t *testing.T) {
	t.Parallel()
	even := func(rate float64, n int) []time.Time {
		at := make([]time.Time, n)
		for i := range at {
			at[i] = time.Unix(0, 0).Add(time.Duration(float64(i) / rate * float64(time.Second)))
		}
		return at
	}
	held := even(20, 98)
	for i := range 5 { // the first five held up, arriving together
		held[i] = held[5]
	}
	require.InDelta(t, 20, arrivalPace(held), 0.5)
	require.InDelta(t, 40, arrivalPace(even(40, 98)), 0.5)
}
