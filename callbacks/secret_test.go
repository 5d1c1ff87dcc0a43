package callbacks_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
)

func TestWebhookSecretFormat(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{0xab, 0x01}, 16)
	s := callbacks.FormatWebhookSecret(key)
	require.Equal(t, "whsec_qwGrAasBqwGrAasBqwGrAasBqwGrAasBqwGrAasBqwE=", s)
	got, err := callbacks.ParseWebhookSecret("  " + s + "\n")
	require.NoError(t, err)
	require.Equal(t, key, got)

	for _, bad := range []string{"", "qwGrAasB", "whsec_", "whsec_!!!", "whsec_YWJj"} {
		_, err := callbacks.ParseWebhookSecret(bad)
		require.Error(t, err, bad)
	}
}

// TestStandardWebhooksVector checks the test vector of the Standard
// Webhooks specification, quoted in docs/workers.md.
func TestStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	key, err := callbacks.ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	body := []byte(`{"test": 2432232314}`)
	got := callbacks.SignWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)
}
