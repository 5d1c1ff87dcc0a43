// Package secretbox seals the values of named secrets (POST
// /api/v1/secrets) with AES-256-GCM under the server's key
// (STITCHD_SECRET_KEY), and opens them again when an HTTP node's request
// is sent. The secret's name is the additional data of its seal, so a
// ciphertext copied onto another name does not open; each seal names the
// key it was made with (KeyID), so a wrong key is reported as such rather
// than as a corrupt row.
//
// The package only does cryptography and key handling (ParseKey,
// LoadOrCreateKeyFile for development): storage is the store's.
package secretbox
