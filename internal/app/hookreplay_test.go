package app_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
)

// TestHookReplays: a captured signed delivery replayed with a fresh
// Idempotency-Key starts no second run; GitHub-style deliveries are
// de-duplicated on X-GitHub-Delivery; a public trigger's keys never meet a
// signed trigger's (neither takes the other's run); an Idempotency-Key
// over 255 characters is a 400 (a 6 KB one was a 500).
func TestHookReplays(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("u", "UX", nil)}, nil)
	secret := "hook-secret-signing"
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "signed", "secret": secret}, nil))
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "public"}, nil))
	now := time.Now()
	signed := func(id string, body []byte, extra ...string) map[string]string {
		m := map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(now.Unix(), 10),
			"webhook-signature": callbacks.SignWebhook([]byte(secret), id, now.Unix(), body)}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	github := func(delivery string, body []byte) map[string]string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return map[string]string{"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac.Sum(nil)), "X-GitHub-Delivery": delivery}
	}
	post := func(slug string, body []byte, hdr map[string]string) string {
		t.Helper()
		code, out := h.postHook(slug, body, hdr)
		require.Equal(t, 202, code, "%v", out)
		return as[string](t, out["run_id"])
	}
	body := []byte(`{"order":1}`)

	// Standard Webhooks: the signed webhook-id decides, not Idempotency-Key.
	a := post("signed", body, signed("msg_1", body))
	require.Equal(t, a, post("signed", body, signed("msg_1", body)), "a redelivery")
	require.Equal(t, a, post("signed", body, signed("msg_1", body, "Idempotency-Key", "fresh-1")), "a replay with a fresh Idempotency-Key")
	require.Equal(t, a, post("signed", body, signed("msg_1", body, "Idempotency-Key", "fresh-2")), "and another")
	require.NotEqual(t, a, post("signed", body, signed("msg_2", body)), "another delivery")

	// GitHub-style: X-GitHub-Delivery.
	g := post("signed", body, github("d-1", body))
	require.Equal(t, g, post("signed", body, github("d-1", body)), "a GitHub redelivery")
	require.NotEqual(t, g, post("signed", body, github("d-2", body)), "another GitHub delivery")

	// A public trigger's Idempotency-Key equal to a signed delivery's id
	// takes neither that run nor a future one.
	p := post("public", body, map[string]string{"Idempotency-Key": "msg_1"})
	require.NotEqual(t, a, p, "a public key does not reach the signed delivery's run")
	require.Equal(t, p, post("public", body, map[string]string{"Idempotency-Key": "msg_1"}), "public keys still de-duplicate")
	pre := post("public", body, map[string]string{"Idempotency-Key": "msg_3", "webhook-id": "msg_3"})
	s3 := post("signed", body, signed("msg_3", body))
	require.NotEqual(t, pre, s3, "a public request sent first does not swallow the signed delivery")
	require.NotEqual(t, p, post("public", body, map[string]string{"webhook-id": "msg_1"}), "a public webhook-id is not a key")

	// Key lengths: 255 is fine, more is a 400 (6 KB was a 500).
	ok := strings.Repeat("k", 255)
	first := post("public", body, map[string]string{"Idempotency-Key": ok})
	require.Equal(t, first, post("public", body, map[string]string{"Idempotency-Key": ok}))
	var runsBefore int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs`).Row().Scan(&runsBefore))
	for _, hdr := range []map[string]string{
		{"Idempotency-Key": strings.Repeat("k", 256)},
		{"Idempotency-Key": strings.Repeat("k", 6<<10)},
	} {
		code, out := h.postHook("public", body, hdr)
		require.Equal(t, 400, code, "%v", out)
		require.Contains(t, as[map[string]any](t, out["error"])["message"], "Idempotency-Key is longer than 255 characters")
	}
	long := strings.Repeat("m", 6<<10)
	code, out := h.postHook("signed", body, signed(long, body))
	require.Equal(t, 400, code, "a signed 6 KB webhook-id: %v", out)
	code, out = h.postHook("signed", body, signed("msg_4", body, "Idempotency-Key", long))
	require.Equal(t, 400, code, "an unused 6 KB Idempotency-Key: %v", out)
	var runsAfter int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs`).Row().Scan(&runsAfter))
	require.Equal(t, runsBefore, runsAfter, "refused hooks started nothing")
	// Runs: a, msg_2, g, d-2, p, pre, s3, the public webhook-id one, ok.
	require.Equal(t, 9, runsAfter)
}
