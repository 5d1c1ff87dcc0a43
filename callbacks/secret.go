package callbacks

import (
	"encoding/base64"
	"errors"
	"strings"
)

// WebhookSecretPrefix prefixes the webhook secret as shown to people, the
// form Standard Webhooks libraries take: whsec_<base64 of the key bytes>.
const WebhookSecretPrefix = "whsec_"

// FormatWebhookSecret renders the key that signs dispatches for people and
// workers.
func FormatWebhookSecret(secret []byte) string {
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(secret)
}

// ParseWebhookSecret reads a secret in FormatWebhookSecret's form.
func ParseWebhookSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), WebhookSecretPrefix)
	if !ok {
		return nil, errors.New("webhook secret must look like whsec_<base64>")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("webhook secret: the part after whsec_ is not valid base64")
	}
	if len(key) < 16 {
		return nil, errors.New("webhook secret is shorter than 16 bytes")
	}
	return key, nil
}
