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
//
// A binary that dies (a timeout's panic, a kill) cannot drop its
// databases. Their names carry a tag of the machine and boot and the
// binary's pid (stitchd_t_<tag>_<pid>_…), so the next binary to start on
// the same machine drops those whose process is gone and which nobody is
// connected to; other machines' databases on a shared server are left
// alone.
package storetest
