package app_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
)

// runCount counts the runs of a flow.
func (h *harness) runCount(flowID string) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE flow_id = ?`, flowID).Row().Scan(&n))
	return n
}

// refusedWorker runs a one-node flow whose worker is at webhookURL and
// returns the node's error once the run failed.
func (h *harness) refusedWorker(webhookURL string) string {
	h.t.Helper()
	flow := h.createFlow([]map[string]any{node("w", "Worker", map[string]any{"webhookUrl": webhookURL,
		"retry": map[string]any{"maxAttempts": 1}})}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.NotNil(h.t, fin.Nodes["w"].Error)
	return *fin.Nodes["w"].Error
}

// TestSelfLoopRefused: a flow whose worker is stitchd's own public hook
// (by its listen address, another name for it, or its base URL) is
// refused at dispatch in the default (allow) mode: one request starts one
// run, not a loop of them.
func TestSelfLoopRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	port := h.app.URL[strings.LastIndex(h.app.URL, ":")+1:]
	for i, hookURL := range []string{
		h.app.URL + "/hooks/loop0",
		"http://localhost:" + port + "/hooks/loop1",
		"http://0.0.0.0:" + port + "/hooks/loop2",
		"http://[::ffff:127.0.0.1]:" + port + "/hooks/loop3",
	} {
		slug := "loop" + strconv.Itoa(i)
		flow := h.createFlow([]map[string]any{node("w", "Worker", map[string]any{"webhookUrl": hookURL,
			"retry": map[string]any{"maxAttempts": 3}})}, nil)
		require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": slug}, nil))
		code, out := h.postHook(slug, []byte(`{}`), nil)
		require.Equal(t, 202, code, "%v", out)
		fin := h.waitRun(as[string](t, out["run_id"]), "failed")
		require.Contains(t, *fin.Nodes["w"].Error, "is stitchd's own address", hookURL)
		require.Equal(t, 1, fin.Nodes["w"].Attempt, "refused, not retried")
		require.Equal(t, 1, h.runCount(flow), "one request started one run (%s)", hookURL)
	}

	// The base URL stitchd is known by (a proxy in front of it): refused
	// by name, under its path, before anything is dialled.
	proxied := newHarness(t, func(c *app.Config) { c.BaseURL = "http://stitchd.example.test/base" })
	require.Contains(t, proxied.refusedWorker("http://STITCHD.example.test./base/hooks/lead"), "is stitchd's own address (--base-url)")
}

// TestMetadataAndReservedAddressesRefused: link-local and cloud-metadata
// worker addresses are refused in every mode, without a connection;
// in deny mode, NAT64, 6to4, IPv4-compatible IPv6, benchmarking, reserved
// and broadcast addresses are refused too, even with loopback allowed.
func TestMetadataAndReservedAddressesRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/meta-data/"} {
		require.Contains(t, h.refusedWorker(u), "is a link-local or cloud metadata address", u)
	}
	deny := newHarness(t, func(c *app.Config) {
		c.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: true, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	})
	wu, err := url.Parse(deny.worker.URL)
	require.NoError(t, err)
	wport := wu.Port()
	for _, host := range []string{"[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[::7f00:1]", "198.18.0.1", "240.0.0.1", "255.255.255.255"} {
		u := "http://" + host + ":" + wport + "/w"
		require.Contains(t, deny.refusedWorker(u), "worker address refused", u)
	}
	require.Contains(t, deny.refusedWorker("http://169.254.169.254/"), "is a link-local or cloud metadata address")
	require.Contains(t, deny.refusedWorker(deny.app.URL+"/hooks/x"), "is stitchd's own address", "loopback is allowed, stitchd is not")
	// The allowed loopback worker still works.
	flow := deny.createFlow([]map[string]any{wnode(deny, "a")}, nil)
	r := deny.startRun(flow, map[string]any{})
	deny.complete(deny.waitDispatch(r.ID, "a", 1), `{}`)
	deny.waitRun(r.ID, "completed")
	require.Empty(t, deny.worker.All()[1:], "nothing but the allowed run reached the worker")
}

// TestTriggerRateLimit: beyond its rate, a trigger's hook is answered 429
// with Retry-After and starts nothing; other triggers are not affected.
func TestTriggerRateLimit(t *testing.T) {
	t.Parallel()
	// 0.1 a second: a burst of 1, the next token 10 s later, so the test
	// does not depend on how fast it runs.
	h := newHarness(t, func(c *app.Config) { c.TriggerRate = 0.1 })
	flow := h.createFlow([]map[string]any{node("u", "UX", nil)}, nil)
	for _, slug := range []string{"a", "b"} {
		require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": slug}, nil))
	}
	code, out := h.postHook("a", []byte(`{}`), nil)
	require.Equal(t, 202, code, "%v", out)
	for range 3 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.app.URL+"/hooks/a", strings.NewReader(`{}`))
		require.NoError(t, err)
		resp, err := h.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 429, resp.StatusCode)
		ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After %q", resp.Header.Get("Retry-After"))
		require.True(t, ra >= 1 && ra <= 10, "Retry-After %d", ra)
	}
	code, out = h.postHook("b", []byte(`{}`), nil)
	require.Equal(t, 202, code, "another trigger has its own rate: %v", out)
	require.Equal(t, 2, h.runCount(flow), "the refused hooks started nothing")
}
