package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/secretbox"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

func newSecretBox(t *testing.T) *secretbox.Box {
	t.Helper()
	k := make([]byte, secretbox.KeySize)
	_, err := rand.Read(k)
	require.NoError(t, err)
	box, err := secretbox.New(k)
	require.NoError(t, err)
	return box
}

// TestSecretStoreRoundTrip: a secret stored is revealed again with the
// same key; replacing it keeps its creation and changes its value; the
// row holds the ciphertext, never the value; another key, a ciphertext
// moved onto another name, an unknown name and no key are refused with
// engine.ErrSecret, the value quoted nowhere.
func TestSecretStoreRoundTrip(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	ctx := context.Background()
	box := newSecretBox(t)
	value := "sk_live_" + "4f9a0c2e7b1d"
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	info, created, err := st.PutSecret(ctx, store.PutSecretParams{Name: "API_TOKEN", Value: []byte(value), Box: box, Actor: "ann@example.com", Now: t0})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "API_TOKEN", info.Name)
	require.Equal(t, "ann@example.com", info.CreatedBy)
	got, err := st.RevealSecrets(ctx, box, "", []string{"API_TOKEN"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"API_TOKEN": value}, got)

	var row store.Secret
	require.NoError(t, st.Gorm().Where("name = ?", "API_TOKEN").First(&row).Error)
	require.Equal(t, box.KeyID(), row.KeyID)
	require.Len(t, row.Nonce, 12)
	require.False(t, bytes.Contains(row.Ciphertext, []byte(value)), "the row holds no plaintext")
	var text string
	require.NoError(t, st.Gorm().Raw(`SELECT row_to_json(s)::text FROM secrets s`).Scan(&text).Error)
	require.NotContains(t, text, value)

	// Replaced: a new value, the same creation.
	info, created, err = st.PutSecret(ctx, store.PutSecretParams{Name: "API_TOKEN", Value: []byte("v2"), Box: box, Actor: "bob@example.com", Now: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "ann@example.com", info.CreatedBy)
	require.Equal(t, "bob@example.com", info.UpdatedBy)
	require.True(t, info.UpdatedAt.After(info.CreatedAt))
	got, err = st.RevealSecrets(ctx, box, "", []string{"API_TOKEN"})
	require.NoError(t, err)
	require.Equal(t, "v2", got["API_TOKEN"])

	// Another key: refused, and said so.
	_, err = st.RevealSecrets(ctx, newSecretBox(t), "", []string{"API_TOKEN"})
	require.ErrorIs(t, err, engine.ErrSecret)
	require.ErrorIs(t, err, secretbox.ErrWrongKey)

	// The ciphertext copied onto another name does not open (the name is
	// the seal's additional data).
	_, _, err = st.PutSecret(ctx, store.PutSecretParams{Name: "OTHER", Value: []byte("other"), Box: box, Now: t0})
	require.NoError(t, err)
	require.NoError(t, st.Gorm().Exec(`UPDATE secrets SET (ciphertext, nonce) = (SELECT ciphertext, nonce FROM secrets WHERE name = 'API_TOKEN')
		WHERE name = 'OTHER'`).Error)
	_, err = st.RevealSecrets(ctx, box, "", []string{"OTHER"})
	require.ErrorIs(t, err, engine.ErrSecret)
	require.ErrorIs(t, err, secretbox.ErrOpen)
	require.NotContains(t, err.Error(), "v2")

	_, err = st.RevealSecrets(ctx, box, "", []string{"API_TOKEN", "NOPE"})
	require.ErrorIs(t, err, engine.ErrSecret)
	require.ErrorContains(t, err, `"NOPE" is not set`)
	_, err = st.RevealSecrets(ctx, nil, "", []string{"API_TOKEN"})
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	_, _, err = st.PutSecret(ctx, store.PutSecretParams{Name: "X", Value: []byte("x"), Now: t0})
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	_, _, err = st.PutSecret(ctx, store.PutSecretParams{Name: "no spaces", Value: []byte("x"), Box: box, Now: t0})
	require.ErrorIs(t, err, engine.ErrInvalidRequest)

	missing, err := st.MissingSecrets(ctx, "", []string{"OTHER", "NOPE", "API_TOKEN", "NOPE"})
	require.NoError(t, err)
	require.Equal(t, []string{"NOPE"}, missing)
}

// TestSecretStorePagesAndDelete: names in order, a page at a time; a
// deleted secret is gone, a second delete is not found.
func TestSecretStorePagesAndDelete(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	ctx := context.Background()
	box := newSecretBox(t)
	for _, n := range []string{"c", "A", "b-1", "B_2"} {
		_, _, err := st.PutSecret(ctx, store.PutSecretParams{Name: n, Value: []byte("value of " + n), Box: box, Now: time.Now()})
		require.NoError(t, err)
	}
	var names []string
	p := store.PageParams{Limit: 3}
	for {
		page, next, err := st.SecretsPage(ctx, p)
		require.NoError(t, err)
		for _, s := range page {
			names = append(names, s.Name)
		}
		if next == "" {
			break
		}
		p.Cursor = next
	}
	require.Equal(t, []string{"A", "B_2", "b-1", "c"}, names)
	require.NoError(t, st.DeleteSecret(ctx, "", "b-1"))
	require.ErrorIs(t, st.DeleteSecret(ctx, "", "b-1"), engine.ErrNotFound)
	_, err := st.RevealSecrets(ctx, box, "", []string{"b-1"})
	require.ErrorIs(t, err, engine.ErrSecret)
}
