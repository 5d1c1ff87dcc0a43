package secretbox_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/secretbox"
)

func newKey(t *testing.T) []byte {
	k := make([]byte, secretbox.KeySize)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

// TestSecretBoxSealOpen: a value opens under its own name and key; under
// another key it is ErrWrongKey, under another name (the ciphertext moved)
// or altered it is ErrOpen; the ciphertext does not hold the value.
func TestSecretBoxSealOpen(t *testing.T) {
	t.Parallel()
	box, err := secretbox.New(newKey(t))
	require.NoError(t, err)
	value := []byte("tok-" + strings.Repeat("x", 40))
	s, err := box.Seal("API_TOKEN", value)
	require.NoError(t, err)
	require.Equal(t, box.KeyID(), s.KeyID)
	require.False(t, bytes.Contains(s.Ciphertext, value))
	got, err := box.Open("API_TOKEN", s)
	require.NoError(t, err)
	require.Equal(t, value, got)

	again, err := box.Seal("API_TOKEN", value)
	require.NoError(t, err)
	require.NotEqual(t, s.Nonce, again.Nonce, "a fresh nonce each seal")

	_, err = box.Open("OTHER", s)
	require.ErrorIs(t, err, secretbox.ErrOpen, "the name is the seal's additional data")

	other, err := secretbox.New(newKey(t))
	require.NoError(t, err)
	_, err = other.Open("API_TOKEN", s)
	require.ErrorIs(t, err, secretbox.ErrWrongKey)
	// The same key id forged onto the seal: the seal itself does not open.
	s2 := s
	s2.KeyID = other.KeyID()
	_, err = other.Open("API_TOKEN", s2)
	require.ErrorIs(t, err, secretbox.ErrOpen)

	s3 := s
	s3.Ciphertext = append([]byte(nil), s.Ciphertext...)
	s3.Ciphertext[0] ^= 1
	_, err = box.Open("API_TOKEN", s3)
	require.ErrorIs(t, err, secretbox.ErrOpen)
	require.NotContains(t, err.Error(), string(value))
}

// TestSecretBoxParseKey: hex and base64 of 32 bytes; anything else is a
// clear error that never quotes the key.
func TestSecretBoxParseKey(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	for _, s := range []string{hex.EncodeToString(k), base64.StdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k),
		" " + base64.StdEncoding.EncodeToString(k) + "\n"} {
		got, err := secretbox.ParseKey(s)
		require.NoError(t, err, s)
		require.Equal(t, k, got)
	}
	short := base64.StdEncoding.EncodeToString(k[:16])
	for _, s := range []string{"", "not a key!", short, hex.EncodeToString(k[:31]) + "zz"} {
		_, err := secretbox.ParseKey(s)
		require.Error(t, err, s)
		require.Contains(t, err.Error(), "STITCHD_SECRET_KEY")
		if s != "" {
			require.NotContains(t, err.Error(), s)
		}
	}
	_, err := secretbox.New(k[:16])
	require.Error(t, err)
}

// TestSecretBoxKeyFile: the first call makes a key (0600), later calls
// read the same one.
func TestSecretBoxKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "secret.key")
	k1, created, err := secretbox.LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	require.True(t, created)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	k2, created, err := secretbox.LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, k1, k2)
	require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o600))
	_, _, err = secretbox.LoadOrCreateKeyFile(path)
	require.ErrorContains(t, err, path)
}
