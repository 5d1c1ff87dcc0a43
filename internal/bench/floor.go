package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// floor measures this machine's least durable chain step, with no
// stitchd: the bench worker's callback arrives at a loopback server, which
// makes one synchronously committed statement (an UPDATE and an INSERT)
// and POSTs the next step's dispatch to the worker — the parts every
// chain step of stitchd needs, and nothing else. The chain scenario's
// rate read as a share of this one's says how near the engine is to the
// floor (docs/performance.md).
func (r *runner) floor(ctx context.Context) (*Result, error) {
	n := r.opts.ChainLength
	if _, err := r.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_floor_state (run text PRIMARY KEY, step int NOT NULL);
		CREATE TABLE IF NOT EXISTS bench_floor_log (id bigserial PRIMARY KEY, run text NOT NULL, step int NOT NULL,
			at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("error creating the floor's tables: %w", err)
	}
	run := fmt.Sprintf("floor-%d", time.Now().UnixNano())
	if _, err := r.db.ExecContext(ctx, `INSERT INTO bench_floor_state (run, step) VALUES ($1, 0)`, run); err != nil {
		return nil, fmt.Errorf("error starting the floor's run: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("error listening for the floor: %w", err)
	}
	base := "http://" + ln.Addr().String()
	done := make(chan error, 1)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	dispatch := func(step int) error {
		body, _ := json.Marshal(map[string]string{"runId": run, "nodeId": fmt.Sprintf("n%d", step), // strings: always encodes
			"callbackUrl": fmt.Sprintf("%s/cb/%d", base, step)})
		resp, err := post(ctx, client, r.worker.url, body)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("the worker answered %d", resp.StatusCode)
		}
		return nil
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		step, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/cb/"))
		if err != nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		// One statement, committed synchronously: the step's durable write.
		if _, err := r.db.ExecContext(req.Context(), `WITH s AS (UPDATE bench_floor_state SET step = $2 WHERE run = $1 RETURNING run)
			INSERT INTO bench_floor_log (run, step) SELECT run, $2 FROM s`, run, step); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			done <- err
			return
		}
		w.WriteHeader(http.StatusOK)
		if step+1 >= n {
			done <- nil
			return
		}
		// The next dispatch after the answer, as stitchd's commit-then-send.
		go func() {
			if err := dispatch(step + 1); err != nil {
				done <- err
			}
		}()
	})}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	res := &Result{Name: fmt.Sprintf("floor: %d steps of a loopback callback, one synchronous commit, a loopback dispatch", n),
		Completions: int64(n)}
	if err := r.measure(ctx, res, func() error {
		if err := dispatch(0); err != nil {
			return err
		}
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Minute):
			return errors.New("the floor's chain did not end within 10 minutes")
		}
	}); err != nil {
		return nil, err
	}
	res.Latency = distribution(r.worker.chainLatencies([]string{run}, n))
	return res, nil
}
