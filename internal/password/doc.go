// Package password hashes and checks sign-in passwords with argon2id
// (golang.org/x/crypto/argon2), in the PHC string form
// $argon2id$v=19$m=…,t=…,p=…$salt$hash, so the cost can rise later while
// old hashes still verify.
package password
