// Package localpg finds a PostgreSQL server for stitchd when no database URL
// is configured: the local server on 127.0.0.1:5432, or else a throwaway
// cluster started with initdb and pg_ctl under a data directory. It is used
// by `stitchd serve`/`migrate` and by store/storetest, so that a newcomer and
// the test suite need nothing installed by hand beyond PostgreSQL itself.
package localpg
