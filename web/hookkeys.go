package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/stitchd/stitchd/store"
)

// maxIdempotencyKey bounds Idempotency-Key (as on run start) and the ids
// inbound hooks are de-duplicated on: a longer key is a 400, not a
// database index error.
const maxIdempotencyKey = 255

// hookIdempotencyKey returns the key a hook's run is de-duplicated on (""
// for none), after the request's signature was verified. Keys are scoped by
// trigger and by where they come from, so that no request to one trigger —
// a public one above all — can take the key of another's delivery and be
// answered with its run (or make it start none):
//
//   - Standard Webhooks: the signed webhook-id; an Idempotency-Key (which
//     the signature does not cover) is ignored, or a captured request
//     replayed with a fresh one would start a run for 5 minutes.
//   - X-Hub-Signature-256: X-GitHub-Delivery (the same on GitHub's
//     redeliveries), else Idempotency-Key. Neither is signed: a replay with
//     a new one is not caught (the scheme signs the body only).
//   - no secret: Idempotency-Key.
func hookIdempotencyKey(t *store.Trigger, h http.Header) (string, error) {
	header, kind := "Idempotency-Key", "key"
	if t.Secret != nil {
		switch {
		case h.Get("webhook-signature") != "":
			header, kind = "webhook-id", "webhook-id"
		case h.Get("X-GitHub-Delivery") != "":
			header, kind = "X-GitHub-Delivery", "github"
		}
	}
	v := strings.TrimSpace(h.Get(header))
	// Every header that could name the run is bounded, used or not.
	for _, name := range []string{"Idempotency-Key", "webhook-id", "X-GitHub-Delivery"} {
		if len(strings.TrimSpace(h.Get(name))) > maxIdempotencyKey {
			return "", badRequest(name + " is longer than " + strconv.Itoa(maxIdempotencyKey) + " characters")
		}
	}
	if v == "" {
		return "", nil
	}
	return "hook:" + t.ID + ":" + kind + ":" + v, nil
}
