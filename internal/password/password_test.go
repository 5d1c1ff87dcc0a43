package password

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cheap keeps the tests fast; the format is the same.
var cheap = Params{MemoryKiB: 64, Time: 1, Threads: 1}

func TestHashVerify(t *testing.T) {
	h, err := Hash("correct horse battery", cheap)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$"), h)

	ok, err := Verify("correct horse battery", h)
	require.NoError(t, err)
	require.True(t, ok)

	ok, err = Verify("correct horse batterY", h)
	require.NoError(t, err)
	require.False(t, ok)

	h2, err := Hash("correct horse battery", cheap)
	require.NoError(t, err)
	require.NotEqual(t, h, h2, "each hash has its own salt")
}

func TestDefaultCostVerifies(t *testing.T) {
	h, err := Hash("s3cret-pass", Default)
	require.NoError(t, err)
	require.Contains(t, h, "$m=19456,t=2,p=1$")
	ok, err := Verify("s3cret-pass", h)
	require.NoError(t, err)
	require.True(t, ok)
}

func TestVerifyMalformed(t *testing.T) {
	for _, h := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdA$a2V5", "$argon2id$v=18$m=64,t=1,p=1$c2FsdA$a2V5",
		"$argon2id$v=19$m=64,t=0,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=64,t=1,p=1$!!$a2V5", "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$",
		"$argon2id$v=19$m=99999999,t=1,p=1$c2FsdA$a2V5"} {
		_, err := Verify("x", h)
		require.ErrorIs(t, err, ErrMalformed, h)
	}
}

func TestCheck(t *testing.T) {
	require.NotEmpty(t, Check("short"))
	require.NotEmpty(t, Check(strings.Repeat("x", MaxLength+1)))
	require.Empty(t, Check("long enough"))
}
