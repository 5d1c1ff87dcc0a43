package app_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store"
)

// TestDispatchSecretRotation: dispatches to a real worker carry one
// Standard Webhooks signature per secret in webhook-signature. A rotation
// of the server's secret signs with the new and the old one until the old
// one's grace ends; a flow's own secret signs its dispatches only (with
// the server's beside it for the overlap), other flows keep the server's;
// dropping it returns the flow to the server's; rotations keep at most
// store.MaxSigningSecrets signatures.
func TestDispatchSecretRotation(t *testing.T) {
	t.Parallel()
	const refresh = 50 * time.Millisecond
	h := newHarness(t, func(c *app.Config) { c.WebhookSecretRefresh = refresh })
	flowA := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	flowB := h.createFlow([]map[string]any{wnode(h, "b")}, nil)

	// sigs dispatches a run of flow and returns the signatures of its
	// dispatch, checking each against the secrets it should be made with.
	sigs := func(flow, key string, want ...string) []string {
		t.Helper()
		h.clock.Advance(2 * refresh) // every process reads the secrets again within refresh
		r := h.startRun(flow, map[string]any{})
		d := h.waitDispatch(r.ID, key, 0)
		fields := strings.Fields(d.Header.Get("webhook-signature"))
		require.Len(t, fields, len(want), "signatures: %q", fields)
		ts, err := strconv.ParseInt(d.Header.Get("webhook-timestamp"), 10, 64)
		require.NoError(t, err)
		for i, w := range want {
			key, err := callbacks.ParseWebhookSecret(w)
			require.NoError(t, err)
			require.Equal(t, callbacks.SignWebhook(key, d.Header.Get("webhook-id"), ts, d.Body), fields[i], "signature %d", i)
			// What a worker checks: any one signature verifies.
			require.NoError(t, callbacks.VerifyWebhook(key, d.Header.Get("webhook-id"), d.Header.Get("webhook-timestamp"),
				d.Header.Get("webhook-signature"), d.Body, time.Now(), time.Minute))
		}
		return fields
	}
	type secretJSON struct {
		Secret string     `json:"secret"`
		Scope  string     `json:"scope"`
		Until  *time.Time `json:"previous_secret_expires_at"`
	}
	get := func(path string) secretJSON {
		var s secretJSON
		require.Equal(t, http.StatusOK, h.do("GET", path, nil, &s))
		return s
	}
	rotate := func(path string, body any) secretJSON {
		var s secretJSON
		require.Equal(t, http.StatusOK, h.do("POST", path, body, &s))
		return s
	}

	s0 := get("/api/v1/webhook-secret").Secret
	sigs(flowA, "a", s0)

	// The server's secret rotates: both sign for the grace period.
	r1 := rotate("/api/v1/webhook-secret/rotate", map[string]any{"grace_seconds": 3600})
	require.Equal(t, "server", r1.Scope)
	require.NotNil(t, r1.Until)
	require.WithinDuration(t, time.Now().Add(time.Hour), *r1.Until, time.Minute)
	s1 := r1.Secret
	require.NotEqual(t, s0, s1)
	require.Equal(t, s1, get("/api/v1/webhook-secret").Secret)
	sigs(flowB, "b", s1, s0)

	// Flow A gets its own secret: its dispatches are signed with it and,
	// for the overlap, the server's current one; flow B's are unchanged.
	fa := rotate("/api/v1/flows/"+flowA+"/webhook-secret/rotate", nil)
	require.Equal(t, "flow", fa.Scope)
	require.Equal(t, secretJSON{Secret: fa.Secret, Scope: "flow"}, get("/api/v1/flows/"+flowA+"/webhook-secret"))
	require.Equal(t, secretJSON{Secret: s1, Scope: "server"}, get("/api/v1/flows/"+flowB+"/webhook-secret"))
	sigs(flowA, "a", fa.Secret, s1)
	sigs(flowB, "b", s1, s0)

	// The overlaps end: one signature each, the current secret's.
	require.NoError(t, h.app.Store.Gorm().Exec(`UPDATE webhook_secrets SET expires_at = now() - interval '1 second'
		WHERE expires_at IS NOT NULL`).Error)
	sigs(flowA, "a", fa.Secret)
	sigs(flowB, "b", s1)

	// Flow A drops its secret at once: back to the server's.
	require.Equal(t, http.StatusNoContent, h.do("DELETE", "/api/v1/flows/"+flowA+"/webhook-secret?grace_seconds=0", nil, nil))
	sigs(flowA, "a", s1)
	require.Equal(t, secretJSON{Secret: s1, Scope: "server"}, get("/api/v1/flows/"+flowA+"/webhook-secret"))

	// Many rotations in a grace period: at most MaxSigningSecrets signatures,
	// the newest secrets.
	var newest []string
	for range store.MaxSigningSecrets + 2 {
		newest = append([]string{rotate("/api/v1/webhook-secret/rotate", nil).Secret}, newest...)
	}
	sigs(flowB, "b", newest[:store.MaxSigningSecrets]...)

	// A named secret; refusals.
	named := callbacks.FormatWebhookSecret([]byte("0123456789abcdef0123456789abcdef"))
	require.Equal(t, named, rotate("/api/v1/webhook-secret/rotate", map[string]any{"secret": named, "grace_seconds": 0}).Secret)
	sigs(flowB, "b", named)
	for _, bad := range []map[string]any{{"secret": "plain"}, {"grace_seconds": -1}, {"grace_seconds": 604801}} {
		code, _ := h.refused(http.StatusBadRequest, "POST", "/api/v1/webhook-secret/rotate", bad)
		require.Equal(t, "invalid_request", code)
	}
	h.refused(http.StatusNotFound, "POST", "/api/v1/flows/00000000-0000-0000-0000-000000000001/webhook-secret/rotate", nil)
	h.refused(http.StatusNotFound, "DELETE", "/api/v1/flows/"+flowB+"/webhook-secret", nil)
}
