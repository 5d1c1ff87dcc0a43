package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/demo"
)

// demoSettings bind `serve`'s demo flags to the environment.
var demoSettings = []setting{
	{"demo", "STITCHD_DEMO"},
	{"demo-worker", "STITCHD_DEMO_WORKER"},
	{"demo-worker-addr", "STITCHD_DEMO_WORKER_ADDR"},
	{"demo-min-delay", "STITCHD_DEMO_MIN_DELAY"},
	{"demo-max-delay", "STITCHD_DEMO_MAX_DELAY"},
}

// workerSettings bind `worker demo`'s flags to the environment.
var workerSettings = []setting{
	{"addr", "STITCHD_DEMO_WORKER_ADDR"},
	{"secret", "STITCHD_WEBHOOK_SECRET"},
	{"min-delay", "STITCHD_DEMO_MIN_DELAY"},
	{"max-delay", "STITCHD_DEMO_MAX_DELAY"},
	{"fail-rate", "STITCHD_DEMO_FAIL_RATE"},
	{"server", "STITCHD_URL"},
	{"token", "STITCHD_AUTH_TOKEN"},
	{"log-format", "STITCHD_LOG_FORMAT"},
	{"log-level", "STITCHD_LOG_LEVEL"},
}

type demoOptions struct {
	enabled, worker    bool
	workerAddr         string
	minDelay, maxDelay time.Duration
}

const defaultDemoWorkerAddr = "127.0.0.1:8090"

func addDemoFlags(fs *pflag.FlagSet, o *demoOptions) {
	fs.BoolVar(&o.enabled, "demo", false, "load the Lead qualification demo (board, flow, POST /hooks/lead) at start-up (env STITCHD_DEMO)")
	fs.BoolVar(&o.worker, "demo-worker", true, "with --demo, also run the demo worker in this process (env STITCHD_DEMO_WORKER)")
	fs.StringVar(&o.workerAddr, "demo-worker-addr", defaultDemoWorkerAddr, "where the demo worker listens; the demo flow calls it there (env STITCHD_DEMO_WORKER_ADDR)")
	fs.DurationVar(&o.minDelay, "demo-min-delay", 300*time.Millisecond, "shortest time a demo job takes (env STITCHD_DEMO_MIN_DELAY)")
	fs.DurationVar(&o.maxDelay, "demo-max-delay", 2*time.Second, "longest time a demo job takes (env STITCHD_DEMO_MAX_DELAY)")
}

// devToken is the admin token `make run` gives (the Makefile's
// STITCHD_AUTH_TOKEN): the banner names it, as it is no secret.
const devToken = "dev-token"

// startDemo loads the demo into a's database and, unless told not to, runs
// the demo worker; token is the admin token, named in the banner when it
// is `make run`'s. The returned function stops the worker.
func startDemo(ctx context.Context, a *app.App, o demoOptions, token string, log *slog.Logger, out io.Writer) (func(), error) {
	stop := func() {}
	if a.DeniesPrivateWorkers() {
		log.Warn("demo: --worker-private-addresses deny refuses the demo worker's loopback address; the demo's runs will fail")
	}
	if o.worker {
		secret, err := a.Store.WebhookSecret(ctx)
		if err != nil {
			return nil, err
		}
		var addr string
		stop, addr, err = serveDemoWorker(ctx, o.workerAddr, demo.WorkerConfig{Secret: secret, MinDelay: o.minDelay,
			MaxDelay: o.maxDelay, Logger: log.With("component", "demo-worker")})
		if err != nil {
			return nil, err
		}
		o.workerAddr = addr
	}
	loaded, err := demo.Load(ctx, a.Store, demo.Options{WorkerURL: "http://" + o.workerAddr})
	if err != nil {
		stop()
		return nil, err
	}
	for _, w := range loaded.Warnings {
		log.Warn("demo: " + w)
	}
	created := "already loaded"
	if len(loaded.Created) > 0 {
		created = "created " + strings.Join(loaded.Created, ", ")
	}
	log.Info("demo loaded", "board_id", loaded.BoardID, "flow_id", loaded.FlowID, "what", created)
	signIn := "sign in with the API token: --auth-token / STITCHD_AUTH_TOKEN"
	if token == devToken {
		signIn = "sign in with the API token dev-token, make run's STITCHD_AUTH_TOKEN"
	}
	fmt.Fprintf(out, `
  stitchd demo — "Lead qualification" (%s)

  Fire a lead:
    curl -X POST %[2]s/hooks/lead -H 'Content-Type: application/json' \
      -d '{"name":"Ada Lovelace","email":"ada@example.com","contacts":[{"name":"Ada Lovelace","title":"CEO"},{"name":"Charles Babbage","title":"Engineer"}]}'

  Watch it:  %[2]s/boards/%[3]s   (%[4]s)
  Approve:   %[2]s/approvals, or: stitchd approve <run id> approve
  API:       curl -H "Authorization: Bearer $STITCHD_AUTH_TOKEN" %[2]s/api/v1/boards/%[3]s

`, created, a.URL, loaded.BoardID, signIn)
	return stop, nil
}

// serveDemoWorker runs the demo worker on addr until the returned function
// is called.
func serveDemoWorker(ctx context.Context, addr string, cfg demo.WorkerConfig) (stop func(), bound string, err error) {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("error starting the demo worker on %s (is `stitchd worker demo` already running there? "+
			"then use --demo-worker=false, or another --demo-worker-addr): %w", addr, err)
	}
	w := demo.NewWorker(cfg)
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("demo worker", "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
		w.Close()
	}, l.Addr().String(), nil
}

type workerOptions struct {
	addr, secret       string
	minDelay, maxDelay time.Duration
	failRate           float64
	client             clientOptions
	logFormat, logLvl  string
}

func newWorkerCmd(env envLookup, stderr io.Writer) *cobra.Command {
	worker := &cobra.Command{Use: "worker", Short: "Built-in workers"}
	var o workerOptions
	d := &cobra.Command{
		Use:   "demo",
		Short: "Serve the demo flow's workers (POST /enrich, /score, /qualify, /echo)",
		Long: "The demo worker verifies each dispatch's Standard Webhooks signature, answers 202 at once and calls\n" +
			"back after a random delay. It needs the server's webhook secret: --secret (env STITCHD_WEBHOOK_SECRET),\n" +
			"or else it asks the server for it (GET /api/v1/webhook-secret with --server and --token).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnvFrom(cmd.Flags(), env, workerSettings); err != nil {
				return err
			}
			log, err := newLogger(stderr, o.logFormat, o.logLvl)
			if err != nil {
				return err
			}
			if o.failRate < 0 || o.failRate > 1 {
				return fmt.Errorf("--fail-rate must be between 0 and 1, not %v", o.failRate)
			}
			ctx := cmd.Context()
			secretText := o.secret
			if secretText == "" {
				if secretText, err = o.client.client().WebhookSecret(ctx); err != nil {
					return fmt.Errorf("no --secret given, and asking %s for it failed: %w", o.client.server, err)
				}
			}
			secret, err := callbacks.ParseWebhookSecret(secretText)
			if err != nil {
				return err
			}
			stop, addr, err := serveDemoWorker(ctx, o.addr, demo.WorkerConfig{Secret: secret, MinDelay: o.minDelay,
				MaxDelay: o.maxDelay, FailRate: o.failRate, Logger: log})
			if err != nil {
				return err
			}
			log.Info("demo worker listening", "url", "http://"+addr)
			<-ctx.Done()
			log.Info("shutting down")
			stop()
			return nil
		},
	}
	fs := d.Flags()
	fs.StringVar(&o.addr, "addr", defaultDemoWorkerAddr, "listen address (env STITCHD_DEMO_WORKER_ADDR)")
	fs.StringVar(&o.secret, "secret", "", "webhook secret, whsec_… (env STITCHD_WEBHOOK_SECRET); empty = ask --server")
	fs.DurationVar(&o.minDelay, "min-delay", 300*time.Millisecond, "shortest time a job takes (env STITCHD_DEMO_MIN_DELAY)")
	fs.DurationVar(&o.maxDelay, "max-delay", 2*time.Second, "longest time a job takes (env STITCHD_DEMO_MAX_DELAY)")
	fs.Float64Var(&o.failRate, "fail-rate", 0, "probability that a job reports a failure, to see retries (env STITCHD_DEMO_FAIL_RATE)")
	fs.StringVar(&o.client.server, "server", "http://127.0.0.1:8080", "stitchd to ask for the secret (env STITCHD_URL)")
	fs.StringVar(&o.client.token, "token", "", "API token for --server (env STITCHD_AUTH_TOKEN)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json (env STITCHD_LOG_FORMAT)")
	fs.StringVar(&o.logLvl, "log-level", "info", "log level: debug, info, warn, error (env STITCHD_LOG_LEVEL)")
	worker.AddCommand(d)
	return worker
}
