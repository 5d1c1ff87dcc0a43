package storetest

import (
	"database/sql"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/stitchd/stitchd/migrations"
)

// GooseVersions returns how many rows goose_db_version of the database at
// url holds per version.
func GooseVersions(tb testing.TB, url string) map[int64]int {
	tb.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(tb.Context(), `SELECT version_id, count(*) FROM goose_db_version GROUP BY version_id`)
	if err != nil {
		tb.Fatalf("storetest: error reading goose_db_version: %v", err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var v int64
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			tb.Fatalf("storetest: %v", err)
		}
		out[v] = n
	}
	if err := rows.Err(); err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	return out
}

// EveryMigrationOnce is what goose_db_version holds after a new database
// is migrated: the initial row 0 and each migration in migrations/ once.
func EveryMigrationOnce(tb testing.TB) map[int64]int {
	tb.Helper()
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) == 0 {
		tb.Fatalf("storetest: no migrations found (%v)", err)
	}
	out := map[int64]int{0: 1}
	for _, f := range files {
		v, err := strconv.ParseInt(strings.SplitN(f, "_", 2)[0], 10, 64)
		if err != nil {
			tb.Fatalf("storetest: migration %s is not numbered: %v", f, err)
		}
		out[v]++
	}
	return out
}
