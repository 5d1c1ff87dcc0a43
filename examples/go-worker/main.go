// Command go-worker is a stitchd worker in Go, on the worker package
// (github.com/stitchd/stitchd/worker, the standard library only). Its job
// greets the input's name.
//
// Push (default): it serves the dispatches stitchd POSTs — the package
// verifies each Standard Webhooks signature, answers 202 at once, runs
// the job and calls back.
//
//	STITCHD_WEBHOOK_SECRET=$(stitchd webhook-secret) go run ./examples/go-worker
//
// Then point a Worker node's webhookUrl at http://127.0.0.1:9001/greet.
//
// Pull (QUEUE set): it polls that queue with a worker token, needing no
// address of its own.
//
//	QUEUE=greetings STITCHD_URL=http://127.0.0.1:8080 STITCHD_WORKER_TOKEN=stp_… go run ./examples/go-worker
//
// Then give a Worker node "queue": "greetings". SIGINT or SIGTERM stops it
// gracefully: running jobs get 30 s to finish.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stitchd/stitchd/worker"
)

// grace is how long running jobs get to finish on shutdown.
const grace = 30 * time.Second

// greet is the job. A real worker would call an API, run a model, send an
// email…
func greet(ctx context.Context, t *worker.Task) (any, error) {
	var in struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(t.Input, &in)
	if in.Name == "" {
		in.Name = "world"
	}
	// Progress for the run view; the package also heartbeats on its own
	// while a job runs, so a long one keeps its deadline or lease.
	if err := t.Heartbeat(ctx, map[string]any{"step": "greeting"}); err != nil {
		return nil, err
	}
	select {
	case <-time.After(100 * time.Millisecond): // the "work"
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return map[string]any{"worker": "go", "greeting": "Hello, " + in.Name + "!", "node": t.NodeID, "attempt": t.Attempt}, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	if queue := os.Getenv("QUEUE"); queue != "" {
		err = pull(ctx, queue)
	} else {
		err = push(ctx)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// push serves dispatches on ADDR until ctx ends.
func push(ctx context.Context) error {
	h, err := worker.NewPushHandler(worker.PushParams{Secret: os.Getenv("STITCHD_WEBHOOK_SECRET"), Handler: greet})
	if err != nil {
		return errors.New("set STITCHD_WEBHOOK_SECRET to the server's webhook secret (whsec_…; `stitchd webhook-secret` prints it)")
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:9001"
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	drained := make(chan error, 1)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		defer cancel()
		_ = srv.Shutdown(sctx)
		drained <- h.Shutdown(sctx) // running jobs finish, or fail as "worker shutting down"
	}()
	log.Printf("go worker listening on http://%s", addr) //nolint:gosec // G706: the operator's own ADDR
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return <-drained
}

// pull works queue's tasks until ctx ends, then stops gracefully.
func pull(ctx context.Context, queue string) error {
	url := os.Getenv("STITCHD_URL")
	if url == "" {
		url = "http://127.0.0.1:8080"
	}
	p, err := worker.NewPuller(worker.PullParams{URL: url, Token: os.Getenv("STITCHD_WORKER_TOKEN"), Queue: queue,
		Worker: os.Getenv("WORKER_ID"), Concurrency: 4, Handler: greet})
	if err != nil {
		return err
	}
	// Not ctx: its end is Stop's to handle, gracefully.
	if err := p.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	log.Printf("go worker polling queue %s at %s", queue, url) //nolint:gosec // G706: the operator's own settings
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	return p.Stop(sctx)
}
