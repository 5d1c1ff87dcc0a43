package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("error finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func startStitchd(ctx context.Context, binary, dbURL, token, logPath string, profile bool) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logs, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("error creating %s: %w", logPath, err)
	}
	args := []string{"serve", "--addr", addr, "--database-url", dbURL, "--auth-token", token, "--log-level", "warn"}
	var pprofURL string
	if profile {
		paddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args = append(args, "--pprof-addr", paddr)
		pprofURL = "http://" + paddr + "/debug/pprof"
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=")
	if err := cmd.Start(); err != nil {
		_ = logs.Close()
		return nil, fmt.Errorf("error starting %s: %w", binary, err)
	}
	p := &proc{cmd: cmd, url: "http://" + addr, logs: logs, pprof: pprofURL}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.url + "/readyz")
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("error reading process stats: %w", err)
	}
	s := string(b)
	// Fields after the command name (which may hold spaces) start at ") ".
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks, nil
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
