package app_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stitchd/stitchd/internal/app"
)

// scrape reads GET /metrics into series → value ("name{a="x",b="y"}").
func (h *harness) scrape() map[string]float64 {
	h.t.Helper()
	out, err := h.tryScrape()
	require.NoError(h.t, err)
	return out
}

var metricLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$`)

// tryScrape reads /metrics into name{labels} → value.
func (h *harness) tryScrape() (map[string]float64, error) {
	req, err := http.NewRequestWithContext(h.t.Context(), http.MethodGet, h.app.URL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("/metrics answered %d: %s", resp.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		m := metricLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", sc.Text(), err)
		}
		out[m[1]] = v
	}
	return out, sc.Err()
}

func TestMetricsAfterRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	// 1. A worker that calls back, then a person approves: completed.
	ok := h.createFlow([]map[string]any{wnode(h, "fetch"), node("approve", "UX", nil)},
		[]map[string]any{edge("fetch", "approve", nil)})
	r1 := h.startRun(ok, map[string]any{"lead": "ada"})
	h.complete(h.waitDispatch(r1.ID, "fetch", 1), `{"score":1}`)
	h.waitNode(r1.ID, "approve", "waiting_for_user")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r1.ID+"/nodes/approve/complete", map[string]any{"status": "completed", "output": map[string]any{}}, nil))
	h.waitRun(r1.ID, "completed")

	// 2. A worker that answers 503: one retry, then the node gives up.
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	flaky := h.createFlow([]map[string]any{node("flaky", "Worker", map[string]any{"webhookUrl": down,
		"retry": map[string]any{"maxAttempts": 2, "initialDelayMs": 10, "maxDelayMs": 10}, "delivery": map[string]any{"maxTries": 2}})}, nil)
	r2 := h.startRun(flaky, nil)

	// 3. A worker that never calls back: the sweeper expires it.
	slow := h.createFlow([]map[string]any{wnode(h, "slow", "timeoutSeconds", "1")}, nil)
	r3 := h.startRun(slow, nil)
	h.waitRun(r2.ID, "failed")
	h.waitRun(r3.ID, "failed")

	// The sweeper counts an expiry once its transaction committed: a
	// scrape right after the run failed may come before the count.
	var m map[string]float64
	h.eventually(func() bool {
		m = h.scrape()
		return m[`stitchd_sweeper_actions_total{action="expired"}`] >= 1
	}, "the sweeper to count the expiry")
	want := map[string]float64{
		`stitchd_runs_started_total`:                                      3,
		`stitchd_runs_finished_total{status="completed"}`:                 1,
		`stitchd_runs_finished_total{status="failed"}`:                    2,
		`stitchd_runs_finished_total{status="cancelled"}`:                 0,
		`stitchd_node_transitions_total{to="waiting_for_user",type="UX"}`: 1,
		`stitchd_node_transitions_total{to="completed",type="UX"}`:        1,
		`stitchd_node_transitions_total{to="completed",type="Worker"}`:    1,
		`stitchd_node_transitions_total{to="running",type="Worker"}`:      3,
		`stitchd_node_transitions_total{to="failed",type="Worker"}`:       2,
		`stitchd_dispatch_attempts_total{outcome="failed"}`:               2,
		`stitchd_dispatch_failures_total{next="retry"}`:                   1,
		`stitchd_dispatch_failures_total{next="gave_up"}`:                 1,
		`stitchd_callback_duration_seconds_count{code="200"}`:             1,
		`stitchd_callback_duration_seconds_bucket{code="200",le="+Inf"}`:  1,
		`stitchd_outbox_depth{status="pending"}`:                          0,
		`stitchd_outbox_depth{status="sending"}`:                          0,
		`stitchd_sweeper_actions_total{action="expired"}`:                 1,
		`stitchd_node_transitions_total{to="running",type="Splitter"}`:    -1, // never seen: absent
		`stitchd_dispatch_attempts_total{outcome="delivered"}`:            2,
		`stitchd_sweeper_actions_total{action="claimed"}`:                 1,
	}
	for series, v := range want {
		got, present := m[series]
		if v < 0 {
			require.False(t, present, series)
			continue
		}
		require.True(t, present, "%s is not exposed", series)
		switch series {
		case `stitchd_dispatch_attempts_total{outcome="delivered"}`, `stitchd_sweeper_actions_total{action="claimed"}`:
			require.GreaterOrEqual(t, got, v, series) // a delivery's lease may be taken over on a slow machine
		default:
			require.InDelta(t, v, got, 0, series)
		}
	}
	require.Greater(t, m[`stitchd_callback_duration_seconds_sum{code="200"}`], 0.0)
	require.Contains(t, m, "go_goroutines", "Go runtime metrics")
	require.Contains(t, m, "process_resident_memory_bytes", "process metrics")
}

// otlpCollector records what an OTLP/HTTP exporter sends.
type otlpCollector struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/traces" {
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *otlpCollector) all() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.bodies, nil)
}

// spans decodes every span the exporter sent.
func (c *otlpCollector) spans(t *testing.T) []*tracepb.Span {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []*tracepb.Span
	for _, b := range c.bodies {
		var req coltracepb.ExportTraceServiceRequest
		require.NoError(t, proto.Unmarshal(b, &req))
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				all = append(all, ss.GetSpans()...)
			}
		}
	}
	return all
}

func TestTracesExportedWhenConfigured(t *testing.T) {
	t.Parallel()
	col := &otlpCollector{}
	endpoint := newServer(t, col)
	h := newHarness(t, func(c *app.Config) { c.OTLPEndpoint = endpoint })
	f := h.createFlow([]map[string]any{wnode(h, "fetch")}, nil)
	r := h.startRun(f, map[string]any{"x": 1})
	d := h.waitDispatch(r.ID, "fetch", 1)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$`, d.Header.Get("traceparent"), "the worker gets the trace context")
	h.complete(d, `{"ok":true}`)
	h.waitRun(r.ID, "completed")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.app.Stop(ctx)) // flushes the exporter
	got := col.all()
	for _, want := range []string{"stitchd", "dispatch", "POST /callbacks/{token}", "POST /api/v1/flows/{id}/runs", "GET /api/v1/runs/{id}"} {
		require.True(t, bytes.Contains(got, []byte(want)), "no %q in the exported spans", want)
	}
	token := d.Payload.CallbackURL[strings.LastIndex(d.Payload.CallbackURL, "/")+1:]
	require.False(t, bytes.Contains(got, []byte(token)), "a callback token leaked into a span")

	// The request's trace reaches the transaction that applies its
	// operation: the run's start and the worker's callback each have an
	// engine.transaction span as a child, in their trace.
	spans := col.spans(t)
	for _, route := range []string{"POST /api/v1/flows/{id}/runs", "POST /callbacks/{token}"} {
		i := slices.IndexFunc(spans, func(s *tracepb.Span) bool { return s.GetName() == route })
		require.GreaterOrEqual(t, i, 0, "no %s span", route)
		req := spans[i]
		j := slices.IndexFunc(spans, func(s *tracepb.Span) bool {
			return s.GetName() == "engine.transaction" && bytes.Equal(s.GetParentSpanId(), req.GetSpanId()) &&
				bytes.Equal(s.GetTraceId(), req.GetTraceId())
		})
		require.GreaterOrEqual(t, j, 0, "no engine.transaction span is a child of %s", route)
		attrs := map[string]int64{}
		for _, a := range spans[j].GetAttributes() {
			attrs[a.GetKey()] = a.GetValue().GetIntValue()
		}
		require.Equal(t, int64(1), attrs["stitchd.runs"], route)
		require.GreaterOrEqual(t, attrs["stitchd.operations"], int64(1), route)
	}
}

// TestMetricsToken: with a metrics token, GET /metrics answers 401 in the
// contract's error shape to a request without it — or with another token,
// the API's included — and the metrics to one with it.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.MetricsToken = "scrape-secret\n" }) // as read from a secret file
	get := func(auth string) (int, string, string) {
		return h.metricsRequest(http.MethodGet, "/metrics", auth)
	}
	for _, auth := range []string{"", "Bearer wrong"} {
		code, _, body := h.metricsRequest(http.MethodHead, "/metrics", auth)
		require.Equal(t, http.StatusUnauthorized, code, "HEAD, Authorization %q: %s", auth, body)
		code, _, body = h.metricsRequest(http.MethodGet, "/metrics?format=text", auth)
		require.Equal(t, http.StatusUnauthorized, code, "a query string, Authorization %q: %s", auth, body)
		code, _, body = h.metricsRequest(http.MethodGet, "/metrics/", auth)
		require.NotContains(t, body, "go_goroutines", "/metrics/ (%d) is not the metrics", code)
	}
	code, _, _ := h.metricsRequest(http.MethodHead, "/metrics", "Bearer scrape-secret")
	require.Equal(t, http.StatusOK, code, "HEAD with the token")
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token, "Basic c2NyYXBlLXNlY3JldA==", "scrape-secret"} {
		code, ctype, body := get(auth)
		require.Equal(t, http.StatusUnauthorized, code, "Authorization %q: %s", auth, body)
		require.Contains(t, ctype, "application/json")
		require.JSONEq(t, `{"error":{"code":"unauthorized","message":"missing or invalid metrics token"}}`, body)
	}
	code, _, body := get("Bearer scrape-secret")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "go_goroutines")
	code, _, body = get("bearer scrape-secret")
	require.Equal(t, http.StatusOK, code, "the scheme is case-insensitive: %s", body)
	// Another method is 405 with Allow, as on every API path.
	code, ctype, body := h.metricsRequest(http.MethodPost, "/metrics", "Bearer scrape-secret")
	require.Equal(t, http.StatusMethodNotAllowed, code, body)
	require.Contains(t, ctype, "application/json")
	require.JSONEq(t, `{"error":{"code":"method_not_allowed","message":"/metrics allows GET, HEAD"}}`, body)
}

// metricsRequest sends method path with an Authorization header (if auth
// is set) and returns the status, content type and body.
func (h *harness) metricsRequest(method, path, auth string) (int, string, string) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.app.URL+path, nil)
	require.NoError(h.t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}
