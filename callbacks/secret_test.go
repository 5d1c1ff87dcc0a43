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
