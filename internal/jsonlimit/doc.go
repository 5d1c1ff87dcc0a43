// Package jsonlimit checks untrusted JSON before it is decoded and stored:
// valid UTF-8, bounded nesting, no NUL characters and no lone surrogate
// escapes (which Postgres jsonb cannot store) and no number whose stored
// form (Postgres prints numbers in full) would be longer than MaxNumberLen.
// It is pure and allocates only to report a refused value's path.
package jsonlimit
