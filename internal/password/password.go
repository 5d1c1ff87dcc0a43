package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id's costs. Default follows OWASP's password storage
// guidance (19 MiB, two passes, one lane).
type Params struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// Default is the cost new hashes are made with.
var Default = Params{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
	// MinLength is the shortest password accepted.
	MinLength = 8
	// MaxLength bounds a password (a longer one only costs hashing time).
	MaxLength = 256
)

// ErrMalformed is a stored hash that is not one this package made.
var ErrMalformed = errors.New("malformed password hash")

// Check says what is wrong with a new password ("" when nothing).
func Check(pw string) string {
	switch {
	case len(pw) < MinLength:
		return fmt.Sprintf("password must be at least %d characters", MinLength)
	case len(pw) > MaxLength:
		return fmt.Sprintf("password must be at most %d bytes", MaxLength)
	}
	return ""
}

// Hash hashes pw with a fresh random salt.
func Hash(pw string, p Params) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("error making a salt: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// Verify reports whether pw matches hash, comparing in constant time.
func Verify(pw, hash string) (bool, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, ErrMalformed
	}
	var v int
	var p Params
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false, ErrMalformed
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil ||
		p.Time == 0 || p.Threads == 0 || p.MemoryKiB > 1<<22 {
		return false, ErrMalformed
	}
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil {
		return false, ErrMalformed
	}
	want, err := enc.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, ErrMalformed
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want))) //nolint:gosec // G115: a stored hash's key length (32 bytes)
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
