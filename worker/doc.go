// Package worker runs stitchd workers: the code behind a Worker node,
// in either of the two ways stitchd hands out work (docs/workers.md).
//
// Push: stitchd POSTs each task to your HTTP endpoint. A PushHandler is
// that endpoint: it verifies the Standard Webhooks signature, answers 202
// at once, runs the Handler in the background and calls back with its
// output or error.
//
//	h, err := worker.NewPushHandler(worker.PushParams{
//		Secret:  os.Getenv("STITCHD_WEBHOOK_SECRET"),
//		Handler: score,
//	})
//	…
//	srv := &http.Server{Addr: ":9001", Handler: h}
//	go srv.ListenAndServe()
//	…
//	srv.Shutdown(ctx)
//	h.Shutdown(ctx) // in-flight handlers finish, or are failed as "worker shutting down"
//
// Pull: the worker asks stitchd for work (POST /api/v1/tasks/poll) and
// needs no address of its own, for workers behind NAT or a firewall. A
// Puller long-polls one queue with a worker token, holds at most
// Concurrency tasks at a time (each poll asks for the free slots only),
// heartbeats while a handler works so the lease does not run out, backs
// off when polls fail, and stops gracefully.
//
//	p, err := worker.NewPuller(worker.PullParams{
//		URL: "https://stitchd.example.com", Token: os.Getenv("STITCHD_WORKER_TOKEN"),
//		Queue: "billing", Concurrency: 8, Handler: bill,
//	})
//	…
//	if err := p.Start(ctx); err != nil { … }
//	<-sigterm
//	p.Stop(graceCtx)
//
// Both run the same Handler: its output becomes the node's output, its
// error fails the attempt (retried by the node's retry policy, unless the
// error is NonRetryable), and its context is cancelled when stitchd no
// longer runs the attempt (cause ErrStale) or a shutdown's grace period
// ends (cause ErrShuttingDown).
//
// The package imports the standard library only.
package worker
