package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const token = "chaos-token"

// stitchdFlags are the serve flags of every instance: short delivery
// timeout and lease (2 s + 5 s) and a fast sweeper, so that kills and
// hanging workers are recovered within seconds.
var stitchdFlags = []string{"--dispatch-timeout", "2s", "--poll-interval", "200ms", "--log-level", "warn"}

// dispatchTimeout matches --dispatch-timeout above.
const dispatchTimeout = 2 * time.Second

// buildStitchd builds cmd/stitchd into dir, with the race detector if race.
func buildStitchd(t *testing.T, dir string, race bool) string {
	t.Helper()
	bin, out, err := build(t.Context(), dir, race)
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// build builds cmd/stitchd into dir, with the race detector if race, and
// returns the binary and go build's output.
func build(ctx context.Context, dir string, race bool) (string, []byte, error) {
	bin := filepath.Join(dir, "stitchd")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "../../cmd/stitchd")
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	return bin, out, err
}

// buildInBackground builds stitchd into dir (with the race detector if
// -chaos.race) while the caller sets up a database; the returned func
// waits for the build and returns the binary.
func buildInBackground(t *testing.T, dir string) func() string {
	var bin string
	var out []byte
	var err error
	built := make(chan struct{})
	go func() {
		defer close(built)
		bin, out, err = build(t.Context(), dir, *flagRace)
	}()
	return func() string {
		t.Helper()
		<-built
		require.NoError(t, err, "go build: %s", out)
		return bin
	}
}

// instance is one stitchd process on a fixed address; it can be killed and
// started again on the same address.
type instance struct {
	name   string
	bin    string
	addr   string
	dbURL  string
	logDir string
	// extra are serve flags of this instance beyond stitchdFlags.
	extra []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	gen    int
	live   atomic.Bool
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func (in *instance) url() string { return "http://" + in.addr }

// logPath is the log file of the current (or last) process.
func (in *instance) logPath() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return filepath.Join(in.logDir, fmt.Sprintf("%s-%d.log", in.name, in.gen))
}

// start starts the process and waits until /readyz answers 200. A process
// that exits before it is ready (the database is down) is started again
// until ctx ends.
func (in *instance) start(ctx context.Context) error {
	for {
		err := in.startOnce(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("error starting %s: %w (last: %v)", in.name, ctx.Err(), err)
		}
	}
}

func (in *instance) startOnce(ctx context.Context) error {
	in.mu.Lock()
	in.gen++
	logf, err := os.Create(filepath.Join(in.logDir, fmt.Sprintf("%s-%d.log", in.name, in.gen)))
	if err != nil {
		in.mu.Unlock()
		return err
	}
	args := append([]string{"serve", "--addr", in.addr, "--database-url", in.dbURL, "--auth-token", token}, stitchdFlags...)
	args = append(args, in.extra...)
	cmd := exec.Command(in.bin, args...) //nolint:noctx // its life is the chaos's: ended by kill and stop, as the test decides
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		in.mu.Unlock()
		logf.Close()
		return fmt.Errorf("error starting %s: %w", in.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	in.cmd, in.exited = cmd, exited
	in.mu.Unlock()

	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready: %s", in.name, tail(in.logPath(), 5))
		default:
		}
		if resp, err := httpGet(ctx, client, in.url()+"/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				in.live.Store(true)
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			in.kill()
			return fmt.Errorf("%s not ready in time: %s", in.name, tail(in.logPath(), 5))
		}
		time.Sleep(50 * time.Millisecond) // polling /readyz of a process starting: it signals nothing else
	}
}

// pid is the current process's id (0 when none was started).
func (in *instance) pid() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil || in.cmd.Process == nil {
		return 0
	}
	return in.cmd.Process.Pid
}

// exitedNow reports whether the current process has ended.
func (in *instance) exitedNow() bool {
	in.mu.Lock()
	exited := in.exited
	in.mu.Unlock()
	select {
	case <-exited:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (in *instance) kill() {
	in.live.Store(false)
	in.mu.Lock()
	cmd, exited := in.cmd, in.exited
	in.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cluster routes requests to a random live instance, as a load balancer
// would.
type cluster struct {
	instances []*instance
	next      atomic.Uint64
}

// pick returns a live instance, or nil when none is.
func (c *cluster) pick() *instance {
	n := len(c.instances)
	start := int(c.next.Add(1))
	for i := 0; i < n; i++ {
		in := c.instances[(start+i)%n]
		if in.live.Load() {
			return in
		}
	}
	return nil
}

// httpGet is c.Get(url), bound to ctx.
func httpGet(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}
