package web_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestTriggerSecretRotation: POST /api/v1/triggers/{id}/rotate-secret gives
// a webhook trigger a new secret; requests signed with the one replaced
// (Standard Webhooks or X-Hub-Signature-256) are accepted until the grace
// period ends, then 401; a second rotation keeps only the secret it
// replaced; grace_seconds 0 stops the old secret at once. A public
// trigger has nothing to rotate (409), a schedule no secret (400).
func TestTriggerSecretRotation(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)
	const first = "first-secret-0123456789"
	trig := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/triggers",
		body: `{"slug":"rot","secret":"` + first + `"}`}))

	body := []byte(`{"x":1}`)
	standard := func(secret string) req {
		id, ts := "msg_"+uuid.NewString(), time.Now().Unix()
		return req{method: "POST", path: "/hooks/rot", body: string(body), noAuth: true, header: map[string]string{
			"webhook-id": id, "webhook-timestamp": fmt.Sprint(ts),
			"webhook-signature": callbacks.SignWebhook([]byte(secret), id, ts, body)}}
	}
	github := func(secret string) req {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		return req{method: "POST", path: "/hooks/rot", body: string(body), noAuth: true, header: map[string]string{
			"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(m.Sum(nil)), "X-GitHub-Delivery": uuid.NewString()}}
	}
	accepted := func(secret string) {
		t.Helper()
		call(t, h, http.StatusAccepted, standard(secret))
		call(t, h, http.StatusAccepted, github(secret))
	}
	refused := func(secret string) {
		t.Helper()
		requireError(t, http.StatusUnauthorized, "unauthorized", do(t, h, standard(secret)))
		requireError(t, http.StatusUnauthorized, "unauthorized", do(t, h, github(secret)))
	}
	type rotated struct {
		Secret    string     `json:"secret"`
		HasSecret bool       `json:"has_secret"`
		Until     *time.Time `json:"previous_secret_expires_at"`
	}
	rotate := func(body string) rotated {
		return decode[rotated](t, call(t, h, http.StatusOK, req{method: "POST", path: "/api/v1/triggers/" + trig.ID + "/rotate-secret",
			body: body}))
	}
	accepted(first)

	// No body: a generated secret, the default grace (24 h).
	second := rotate("")
	require.Len(t, second.Secret, 64)
	require.True(t, second.HasSecret)
	require.NotNil(t, second.Until)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), *second.Until, time.Minute)
	accepted(second.Secret)
	accepted(first) // the overlap

	// The overlap ends (its end moved to the past): the old secret is refused.
	require.NoError(t, st.Gorm().Exec(`UPDATE triggers SET previous_secret_expires_at = now() - interval '1 second'
		WHERE id = ?`, trig.ID).Error)
	refused(first)
	accepted(second.Secret)

	// A secret named, a grace of a minute: only the secret replaced overlaps.
	const third = "third-secret-0123456789"
	got := rotate(`{"secret":"` + third + `","grace_seconds":60}`)
	require.Equal(t, third, got.Secret)
	require.WithinDuration(t, time.Now().Add(time.Minute), *got.Until, 10*time.Second)
	accepted(third)
	accepted(second.Secret)
	refused(first)

	// grace_seconds 0: the old secret stops at once.
	fourth := rotate(`{"grace_seconds":0}`)
	require.Nil(t, fourth.Until)
	accepted(fourth.Secret)
	refused(third)
	refused(second.Secret)

	// Refusals.
	rot := func(id, body string) req {
		return req{method: "POST", path: "/api/v1/triggers/" + id + "/rotate-secret", body: body}
	}
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, rot(trig.ID, `{"grace_seconds":-1}`)))
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, rot(trig.ID, `{"grace_seconds":604801}`)))
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, rot(trig.ID, `{"secret":"short"}`)))
	requireError(t, http.StatusNotFound, "not_found", do(t, h, rot(uuid.NewString(), "")))
	// A trigger is created with a secret of the same bounds, or none.
	for _, secret := range []string{"short", strings.Repeat("s", 257)} {
		requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "POST",
			path: "/api/v1/flows/" + f.ID + "/triggers", body: `{"slug":"bounds","secret":"` + secret + `"}`}))
	}
	public := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/triggers", body: `{"slug":"pub"}`}))
	requireError(t, http.StatusConflict, "conflict", do(t, h, rot(public.ID, "")))
	sched := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/triggers",
		body: `{"kind":"schedule","cron":"@daily"}`}))
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, rot(sched.ID, "")))
	requireError(t, http.StatusUnauthorized, "unauthorized", do(t, h, req{method: "POST",
		path: "/api/v1/triggers/" + trig.ID + "/rotate-secret", noAuth: true}))
	accepted(fourth.Secret) // none of them changed the secret
}
