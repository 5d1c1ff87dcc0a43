// Package jsonlimit checks untrusted JSON before it is decoded and stored:
// valid UTF-8, bounded nesting, no NUL characters (which Postgres jsonb
// cannot store) and no number whose stored form (Postgres prints numbers in
// full) would be longer than MaxNumberLen. It is pure and allocates only to
// report a refused number's path.
package jsonlimit
