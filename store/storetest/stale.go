package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/stitchd/stitchd/store/localpg"
)

// hostTag names this machine, boot and pid namespace in a test database's name
// (stitchd_t_<tag>_<pid>_…): a database whose tag is ours and whose pid is
// no living process here was left by a test binary that died (a timeout's
// panic, a kill) before it could drop it. Another machine or boot sharing
// the server has another tag, and its databases are never touched.
func hostTag() string {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	// Containers sharing a host name and a kernel see other pids: their
	// pid namespaces tell them apart.
	ns, _ := os.Readlink("/proc/self/ns/pid")
	sum := sha256.Sum256([]byte(host + "\n" + strings.TrimSpace(string(boot)) + "\n" + ns))
	return hex.EncodeToString(sum[:])[:8]
}

// dbPrefix is the start of every test database name this harness makes.
const dbPrefix = "stitchd_t_"

// staleOwner returns the pid named by test database name when its tag is
// tag, and reports whether it names one.
func staleOwner(name, tag string) (int, bool) {
	rest, ok := strings.CutPrefix(name, dbPrefix+tag+"_")
	if !ok {
		return 0, false
	}
	pidText, _, _ := strings.Cut(rest, "_")
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

// alive reports whether process pid exists on this machine (one of
// another user's counts: EPERM).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// dropStale drops the test databases of tag whose process is gone and to
// which nobody is connected, and returns their names. It drops without
// FORCE: a database someone uses after all stays.
func dropStale(ctx context.Context, db *sql.DB, tag string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT datname FROM pg_database d WHERE datname LIKE $1
		AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datid = d.oid)`, dbPrefix+tag+"_%")
	if err != nil {
		return nil, fmt.Errorf("error listing test databases: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("error listing test databases: %w", err)
		}
		if pid, ok := staleOwner(n, tag); ok && !alive(pid) {
			names = append(names, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error listing test databases: %w", err)
	}
	var dropped []string
	for _, n := range names {
		if _, err := db.ExecContext(ctx, `DROP DATABASE IF EXISTS `+localpg.QuoteIdent(n)); err != nil {
			continue // connected to since it was listed: not stale
		}
		dropped = append(dropped, n)
	}
	return dropped, nil
}
