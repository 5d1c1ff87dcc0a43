package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of the key: 32 bytes (AES-256).
const KeySize = 32

// EnvKey is the environment variable that holds the key.
const EnvKey = "STITCHD_SECRET_KEY"

var (
	// ErrNoKey means the server has no key, so secrets can be neither stored
	// nor read.
	ErrNoKey = errors.New("secrets are off on this server: " + EnvKey + " is not set")
	// ErrWrongKey means the value was sealed under another key than the
	// server's.
	ErrWrongKey = errors.New("the secret was stored under another " + EnvKey)
	// ErrOpen means the seal does not open (the row was altered, or copied from
	// another name).
	ErrOpen = errors.New("the secret cannot be decrypted: its row was altered or copied from another name")
)

// Box seals and opens secret values under one key.
type Box struct {
	aead  cipher.AEAD
	keyID string
}

// Sealed is a sealed value: what the database holds.
type Sealed struct {
	Ciphertext []byte
	Nonce      []byte
	// KeyID names the key that sealed it (Box.KeyID).
	KeyID string
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("the secret key must be %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("error making the secret cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("error making the secret cipher: %w", err)
	}
	return &Box{aead: aead, keyID: keyID(key)}, nil
}

// keyID is a short public name of a key: the start of a hash of it,
// enough to tell keys apart, nothing to learn the key from.
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("stitchd secret key id\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// KeyID names the box's key.
func (b *Box) KeyID() string { return b.keyID }

// additionalData binds a seal to its secret's name.
func additionalData(name string) []byte { return []byte("stitchd secret v1\x00" + name) }

// Seal encrypts value for the secret name, with a fresh random nonce.
func (b *Box) Seal(name string, value []byte) (Sealed, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, fmt.Errorf("error making a nonce for secret %s: %w", name, err)
	}
	return Sealed{Ciphertext: b.aead.Seal(nil, nonce, value, additionalData(name)), Nonce: nonce, KeyID: b.keyID}, nil
}

// Open decrypts the value of the secret name: ErrWrongKey when another
// key sealed it, ErrOpen when it does not open.
func (b *Box) Open(name string, s Sealed) ([]byte, error) {
	if s.KeyID != b.keyID {
		return nil, fmt.Errorf("secret %s: %w (key %s; the server's is %s)", name, ErrWrongKey, s.KeyID, b.keyID)
	}
	if len(s.Nonce) != b.aead.NonceSize() {
		return nil, fmt.Errorf("secret %s: %w", name, ErrOpen)
	}
	v, err := b.aead.Open(nil, s.Nonce, s.Ciphertext, additionalData(name))
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, ErrOpen)
	}
	return v, nil
}

// ParseKey reads a key written as 64 hex digits or in base64 (standard or
// URL alphabet, padded or not): 32 bytes either way. Spaces around it (a
// file's newline) do not count. The error never quotes the key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New(EnvKey + " is empty")
	}
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		k, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(k) != KeySize {
			return nil, fmt.Errorf("%s must be %d bytes (64 hex digits, or base64 such as `openssl rand -base64 32` gives); it decodes to %d bytes",
				EnvKey, KeySize, len(k))
		}
		return k, nil
	}
	return nil, fmt.Errorf("%s must be %d bytes written as 64 hex digits or in base64 (`openssl rand -base64 32`); it is neither (%d characters)",
		EnvKey, KeySize, len(s))
}

// LoadOrCreateKeyFile reads the key kept in path (hex), or, when there is
// no such file, makes a random one and writes it there (mode 0600): a
// development server's key, kept beside its database so that a restart
// still opens the secrets stored before it. created reports a new key.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the key file the operator configured
	if err == nil {
		k, err := ParseKey(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("error reading the secret key in %s: %w", path, err)
		}
		return k, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("error reading the secret key in %s: %w", path, err)
	}
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, false, fmt.Errorf("error making a secret key: %w", err)
	}
	// 0755 as localpg makes a cluster's parents (the postgres user must
	// pass through them when stitchd runs as root); the file is 0600.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // G301: 0755 on purpose, see above
		return nil, false, fmt.Errorf("error creating the directory of %s: %w", path, err)
	}
	// Written aside, then linked into place: a process starting at the
	// same time never reads half a key, and the first link wins.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-key-*")
	if err != nil {
		return nil, false, fmt.Errorf("error writing the secret key to %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(hex.EncodeToString(k) + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, false, fmt.Errorf("error writing the secret key to %s: %w", path, werr)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return LoadOrCreateKeyFile(path)
	} else if err != nil {
		return nil, false, fmt.Errorf("error writing the secret key to %s: %w", path, err)
	}
	return k, true, nil
}
