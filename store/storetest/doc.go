// Package storetest is the test harness for code that talks to Postgres.
//
// The first use in a test binary creates (once per migration set, shared
// across binaries) a migrated template database, then clones one database
// for the package with CREATE DATABASE … TEMPLATE. Tests get either a
// per-test transaction that is rolled back at cleanup (TestTx: fast,
// isolated, parallel) or a database of their own (IsolatedDB: for code that
// commits, LISTENs or runs concurrently).
//
// The server is DATABASE_URL if set, else the local server on
// 127.0.0.1:5432, else a throwaway cluster started with initdb/pg_ctl.
// Tests never skip because Postgres is absent.
//
// Call Main from the package's TestMain so cloned databases are dropped:
// under it a finished test's database is dropped in the background, a few
// together (each DROP DATABASE is a checkpoint; requests made together
// share one), and Main waits for those drops.
package storetest
