// Package jsonlimit checks untrusted JSON before it is decoded and stored:
// valid UTF-8, bounded nesting, and no NUL characters (which Postgres jsonb
// cannot store). It is pure and allocation-free.
package jsonlimit
