package bench

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is the stitchd process under test.
type proc struct {
	cmd  *exec.Cmd
	url  string
	logs *os.File
	// pprof is the base URL of its profiles ("" when not profiling).
	pprof string
}

func freeAddr(ctx context.Context) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("error finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func startStitchd(ctx context.Context, binary, dbURL, token, logPath string, profile bool, extra ...string) (*proc, error) {
	addr, err := freeAddr(ctx)
	if err != nil {
		return nil, err
	}
	logs, err := os.Create(logPath) //nolint:gosec // G304: the bench's own work directory
	if err != nil {
		return nil, fmt.Errorf("error creating %s: %w", logPath, err)
	}
	args := []string{"serve", "--addr", addr, "--database-url", dbURL, "--auth-token", token, "--log-level", "warn"}
	args = append(args, extra...)
	var pprofURL string
	if profile {
		paddr, err := freeAddr(ctx)
		if err != nil {
			return nil, err
		}
		args = append(args, "--pprof-addr", paddr)
		pprofURL = "http://" + paddr + "/debug/pprof"
	}
	// Not CommandContext: stop ends stitchd gracefully (SIGINT, then kill
	// after 15 s), also when the bench was cancelled.
	cmd := exec.Command(binary, args...) //nolint:noctx,gosec // stopped by p.stop, see above; G204: the stitchd binary the bench was given
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
	if err := cmd.Start(); err != nil {
		_ = logs.Close()
		return nil, fmt.Errorf("error starting %s: %w", binary, err)
	}
	p := &proc{cmd: cmd, url: "http://" + addr, logs: logs, pprof: pprofURL}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := get(ctx, p.url+"/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			return nil, fmt.Errorf("stitchd did not become ready (see %s)", logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	_ = p.logs.Close()
}

// cpu returns the process's user+system CPU time from /proc.
func (p *proc) cpu() (time.Duration, error) {
	t, err := readProcStat(p.cmd.Process.Pid)
	return t.self, err
}

// memory returns the resident set size now and at its peak, in bytes.
func (p *proc) memory() (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, fmt.Errorf("error reading process memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return rss, peak, sc.Err()
}

// procTimes is what /proc/<pid>/stat tells of a process's CPU: its own
// and that of the children it reaped (a Postgres backend that exits is
// counted in the postmaster's).
type procTimes struct {
	ppid           int
	comm           string
	self, children time.Duration
}

// parseProcStat reads the contents of a /proc/<pid>/stat file.
func parseProcStat(s string) (procTimes, error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || len(s) < end+2 {
		return procTimes{}, fmt.Errorf("malformed process stat %.60q", s)
	}
	// Fields after the command name (which may hold spaces) start at ") ":
	// state, ppid, …; utime, stime, cutime and cstime are the 14th to 17th
	// fields of the line, the 12th to 15th after the name.
	f := strings.Fields(s[end+2:])
	if len(f) < 15 {
		return procTimes{}, fmt.Errorf("malformed process stat %.60q", s)
	}
	var v [5]int64
	for i, at := range []int{1, 11, 12, 13, 14} {
		n, err := strconv.ParseInt(f[at], 10, 64)
		if err != nil {
			return procTimes{}, fmt.Errorf("malformed process stat %.60q: %w", s, err)
		}
		v[i] = n
	}
	const ticks = 100 // USER_HZ on Linux
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / ticks }
	return procTimes{ppid: int(v[0]), comm: s[open+1 : end], self: tick(v[1] + v[2]), children: tick(v[3] + v[4])}, nil
}

func readProcStat(pid int) (procTimes, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procTimes{}, fmt.Errorf("error reading the stats of process %d: %w", pid, err)
	}
	return parseProcStat(string(b))
}

// pgServer is a Postgres server running on this machine, seen through
// /proc: its postmaster and the processes the postmaster started.
type pgServer struct{ postmaster int }

// findPostgres returns the server db is connected to when it runs on this
// machine: a loopback or Unix-socket address, and the connection's backend
// visible here as a postgres process whose title names the database (so a
// server in a container, whose pids are another namespace's, is not
// mistaken for a local one). The error says why not.
func findPostgres(ctx context.Context, db *sql.DB, dbURL string) (*pgServer, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, fmt.Errorf("error parsing the database URL: %w", err)
	}
	host := u.Hostname()
	if h := u.Query().Get("host"); h != "" {
		host = h
	}
	if ip := net.ParseIP(host); host != "localhost" && !strings.HasPrefix(host, "/") && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("the server %q is not a loopback or socket address", host)
	}
	var backend int
	var name string
	if err := db.QueryRowContext(ctx, `SELECT pg_backend_pid(), current_database()`).Scan(&backend, &name); err != nil {
		return nil, fmt.Errorf("error asking for the backend's pid: %w", err)
	}
	b, err := readProcStat(backend)
	if err != nil || b.comm != "postgres" {
		return nil, fmt.Errorf("the backend (pid %d) is not a postgres process here", backend)
	}
	title, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", backend))
	if err != nil || !strings.Contains(string(title), " "+name+" ") {
		return nil, fmt.Errorf("process %d's title does not name database %s", backend, name)
	}
	pm, err := readProcStat(b.ppid)
	if err != nil || pm.comm != "postgres" {
		return nil, fmt.Errorf("the backend's parent (pid %d) is not a postgres process", b.ppid)
	}
	return &pgServer{postmaster: b.ppid}, nil
}

// cpu is the server's CPU time so far: the postmaster's, with the children
// it reaped, and its live children's. A child reaped between the two reads
// would be in neither (or both): the sum is taken again when the
// postmaster's count of reaped children moved meanwhile.
func (s *pgServer) cpu() (time.Duration, error) {
	// Tried again while backends exit meanwhile: a server that many
	// clients connect to and leave (the test suite's) reaps some at most
	// reads.
	for range 50 {
		pm, err := readProcStat(s.postmaster)
		if err != nil {
			return 0, fmt.Errorf("error reading the postmaster's CPU: %w", err)
		}
		total := pm.self + pm.children
		dirs, err := os.ReadDir("/proc")
		if err != nil {
			return 0, fmt.Errorf("error listing processes: %w", err)
		}
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == s.postmaster {
				continue
			}
			p, err := readProcStat(pid)
			if err != nil || p.ppid != s.postmaster {
				continue // gone meanwhile, or not the server's
			}
			total += p.self
		}
		again, err := readProcStat(s.postmaster)
		if err != nil {
			return 0, fmt.Errorf("error reading the postmaster's CPU: %w", err)
		}
		if again.children == pm.children {
			return total, nil
		}
	}
	return 0, errors.New("the Postgres server's processes kept exiting while their CPU was summed")
}

// selfCPU is this process's CPU time: the bench's worker, its watcher and
// its API client (not stitchd, a child process).
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("error reading the bench's CPU: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// parseCPULine reads the machine's busy and total CPU time, in ticks, from
// the "cpu" line of /proc/stat: user nice system idle iowait irq softirq
// steal …; idle and iowait are not busy.
func parseCPULine(line string) (busy, total int64, err error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("malformed cpu line %.60q", line)
	}
	for i, v := range f[1:] {
		if i >= 8 { // guest time is counted in user already
			break
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("malformed cpu line %.60q: %w", line, err)
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, total, nil
}

func machineCPU() (busy, total int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("error reading /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPULine(line)
}

// get GETs url with http.DefaultClient.
func get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}
