package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/jsbox"
	"github.com/stitchd/stitchd/internal/secretbox"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/web"
)

// Params are what a stitchd binary brings to its commands.
type Params struct {
	// Version is the binary's version ("dev" when empty).
	Version string
	// NodeTypes are node types beside the built-in ones (app.Config.NodeTypes).
	NodeTypes []engine.NodeTypeSpec
}

// Main runs the command line with args (without the program's name) in
// ctx, reading the environment with os.LookupEnv.
func Main(ctx context.Context, args []string, p Params) error {
	root := newRoot(os.LookupEnv, os.Stdout, os.Stderr, p)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// envLookup reads an environment variable (os.LookupEnv, or a map in tests).
type envLookup func(string) (string, bool)

// setting binds a flag to its environment variable.
type setting struct {
	flag, env string
}

var settings = []setting{
	{"addr", "STITCHD_ADDR"},
	{"database-url", "DATABASE_URL"},
	{"session-database-url", "STITCHD_SESSION_DATABASE_URL"},
	{"base-url", "STITCHD_BASE_URL"},
	{"auth-token", "STITCHD_AUTH_TOKEN"},
	{"metrics-token", "STITCHD_METRICS_TOKEN"},
	{"log-format", "STITCHD_LOG_FORMAT"},
	{"log-level", "STITCHD_LOG_LEVEL"},
	{"body-limit", "STITCHD_BODY_LIMIT"},
	{"max-fanout-items", "STITCHD_MAX_FANOUT_ITEMS"},
	{"expr-memory", "STITCHD_EXPR_MEMORY"},
	{"code-memory", "STITCHD_CODE_MEMORY"},
	{"code-concurrency", "STITCHD_CODE_CONCURRENCY"},
	{"expr-timeout", "STITCHD_EXPR_TIMEOUT"},
	{"max-run-nodes", "STITCHD_MAX_RUN_NODES"},
	{"data-dir", "STITCHD_DATA_DIR"},
	{"local-postgres", "STITCHD_LOCAL_POSTGRES"},
	{"dispatch-timeout", "STITCHD_DISPATCH_TIMEOUT"},
	{"poll-interval", "STITCHD_POLL_INTERVAL"},
	{"worker-private-addresses", "STITCHD_WORKER_PRIVATE_ADDRESSES"},
	{"worker-allow-cidrs", "STITCHD_WORKER_ALLOW_CIDRS"},
	{"trigger-rate", "STITCHD_TRIGGER_RATE"},
	{"login-concurrency", "STITCHD_LOGIN_CONCURRENCY"},
	{"pprof-addr", "STITCHD_PPROF_ADDR"},
	{"notify-url", "STITCHD_NOTIFY_URL"},
	{"retention", "STITCHD_RETENTION"},
	{"archive-url", "STITCHD_ARCHIVE_URL"},
	{"analytics-roll-interval", "STITCHD_ANALYTICS_ROLL_INTERVAL"},
	{"dispatch-rate", "STITCHD_DISPATCH_RATE"},
	{"session-ttl", "STITCHD_SESSION_TTL"},
	{"trust-proxy", "STITCHD_TRUST_PROXY"},
	{"oidc-issuer", "STITCHD_OIDC_ISSUER"},
	{"oidc-client-id", "STITCHD_OIDC_CLIENT_ID"},
	{"oidc-client-secret", "STITCHD_OIDC_CLIENT_SECRET"},
	{"oidc-groups-claim", "STITCHD_OIDC_GROUPS_CLAIM"},
	{"oidc-default-role", "STITCHD_OIDC_DEFAULT_ROLE"},
	{"oidc-scopes", "STITCHD_OIDC_SCOPES"},
}

// applyEnv gives every flag not set on the command line the value of its
// environment variable, if that is set: flag > environment > default.
func applyEnv(fs *pflag.FlagSet, env envLookup) error { return applyEnvFrom(fs, env, settings) }

// applyEnvFrom is applyEnv for another list of settings.
func applyEnvFrom(fs *pflag.FlagSet, env envLookup, list []setting) error {
	for _, s := range list {
		f := fs.Lookup(s.flag)
		if f == nil || f.Changed {
			continue
		}
		if v, ok := env(s.env); ok && v != "" {
			if err := fs.Set(s.flag, v); err != nil {
				return fmt.Errorf("invalid %s=%q: %w", s.env, v, err)
			}
		}
	}
	return nil
}

type options struct {
	// build is the binary's (Params).
	build                                       Params
	addr, databaseURL, baseURL, authToken       string
	sessionDatabaseURL                          string
	metricsToken                                string
	logFormat, logLevel, dataDir, localPostgres string
	bodyLimit                                   int64
	maxFanOutItems                              int
	exprMemory                                  int64
	codeMemory                                  int64
	codeConcurrency                             int
	exprTimeout                                 time.Duration
	maxRunNodes                                 int
	dispatchTimeout, pollInterval               time.Duration
	privateAddresses, allowCIDRs                string
	triggerRate                                 float64
	loginConcurrency                            int
	pprofAddr                                   string
	notifyURL, archiveURL                       string
	retention                                   string
	analyticsRollInterval                       time.Duration
	retentionPeriod                             time.Duration // retention, parsed by runServe
	dispatchRate                                string
	dispatchRates                               map[string]float64 // dispatchRate, parsed by runServe
	sessionTTL                                  time.Duration
	trustProxy                                  bool
	oidcIssuer, oidcClientID                    string
	oidcClientSecret, oidcGroupsClaim           string
	oidcDefaultRole, oidcScopes                 string
	// otlpEndpoint is OTEL_EXPORTER_OTLP_ENDPOINT (traces; no flag).
	otlpEndpoint string
	// secretKey is STITCHD_SECRET_KEY (no flag: a key on the command line
	// is in every process listing); secretKeyBytes, parsed by runServe.
	secretKey      string
	secretKeyBytes []byte
	// devSecrets keeps a development secret key (serve --demo).
	devSecrets bool
}

// addDatabaseFlags are the flags of a command that only opens the
// database (keys, user create): where it is, and the log.
func addDatabaseFlags(fs *pflag.FlagSet, o *options) {
	fs.StringVar(&o.databaseURL, "database-url", "", "Postgres URL; empty = local server or a throwaway cluster (env DATABASE_URL)")
	fs.StringVar(&o.sessionDatabaseURL, "session-database-url", "", "Postgres URL for the LISTEN connection and migrations, direct or through a "+
		"session-mode pooler, when --database-url goes through PgBouncer in transaction mode; empty = --database-url (env STITCHD_SESSION_DATABASE_URL)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json (env STITCHD_LOG_FORMAT)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error (env STITCHD_LOG_LEVEL)")
	fs.StringVar(&o.dataDir, "data-dir", "", "where a throwaway Postgres cluster lives (env STITCHD_DATA_DIR)")
	fs.StringVar(&o.localPostgres, "local-postgres", "", "without --database-url: the local server to try before starting a throwaway cluster (default "+
		"postgres://postgres@127.0.0.1:5432/postgres; none: always the throwaway cluster) (env STITCHD_LOCAL_POSTGRES)")
}

func addServerFlags(fs *pflag.FlagSet, o *options) {
	addDatabaseFlags(fs, o)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address (env STITCHD_ADDR)")
	fs.StringVar(&o.baseURL, "base-url", "", "public URL workers call back on; default http://<addr> (env STITCHD_BASE_URL)")
	fs.StringVar(&o.authToken, "auth-token", "", "admin API token; empty = a random one, printed at start-up (env STITCHD_AUTH_TOKEN)")
	fs.StringVar(&o.metricsToken, "metrics-token", "", "bearer token GET /metrics requires; empty = none (env STITCHD_METRICS_TOKEN)")
	fs.Int64Var(&o.bodyLimit, "body-limit", 1<<20, "request body limit in bytes (env STITCHD_BODY_LIMIT)")
	fs.Int64Var(&o.codeMemory, "code-memory", jsbox.DefaultMemory, "most bytes of JavaScript heap one Code step's script may use; past it the step fails with code_limit (env STITCHD_CODE_MEMORY)")
	fs.IntVar(&o.codeConcurrency, "code-concurrency", 2, "Code steps' scripts run at once (each within --code-memory) (env STITCHD_CODE_CONCURRENCY)")
	fs.Int64Var(&o.exprMemory, "expr-memory", engine.DefaultExprMemory, "most bytes one evaluation of an expression may build; past it the node fails with expression_limit (env STITCHD_EXPR_MEMORY)")
	fs.DurationVar(&o.exprTimeout, "expr-timeout", engine.DefaultExprTime, "longest one evaluation of an expression may run; past it the node fails with expression_limit (env STITCHD_EXPR_TIMEOUT)")
	fs.IntVar(&o.maxRunNodes, "max-run-nodes", engine.DefaultMaxRunNodes, "most node instances a run and its sub-flow runs may hold, all levels; a fan-out or sub-flow past it fails its node with run_tree_limit (env STITCHD_MAX_RUN_NODES)")
	fs.IntVar(&o.maxFanOutItems, "max-fanout-items", handlers.DefaultMaxItems, "most items a Splitter fans out; a bigger array fails it (env STITCHD_MAX_FANOUT_ITEMS)")
	fs.DurationVar(&o.dispatchTimeout, "dispatch-timeout", 10*time.Second, "timeout of one delivery to a worker (env STITCHD_DISPATCH_TIMEOUT)")
	fs.DurationVar(&o.pollInterval, "poll-interval", time.Second, "how often due retries and overdue nodes are swept (env STITCHD_POLL_INTERVAL)")
	fs.StringVar(&o.privateAddresses, "worker-private-addresses", "allow", "allow or deny worker URLs resolving to loopback, private or link-local addresses (env STITCHD_WORKER_PRIVATE_ADDRESSES)")
	fs.StringVar(&o.allowCIDRs, "worker-allow-cidrs", "", "comma-separated CIDRs allowed when private addresses are denied (env STITCHD_WORKER_ALLOW_CIDRS)")
	fs.Float64Var(&o.triggerRate, "trigger-rate", defaultTriggerRate, "runs one inbound trigger may start a second (bursts of as many); beyond, 429 with Retry-After; 0 = no limit (env STITCHD_TRIGGER_RATE)")
	fs.IntVar(&o.loginConcurrency, "login-concurrency", 0, "password checks of sign-ins, and hashes of user writes setting a password, run at once in this process (19 MiB each); "+
		"past it a request waits a second, then gets 429 with Retry-After; 0 = twice GOMAXPROCS (env STITCHD_LOGIN_CONCURRENCY)")
	fs.StringVar(&o.archiveURL, "archive-url", "", "retention sends each batch of runs it deletes there first (signed JSON: runs with their node states, events and journey); a batch not taken (2xx) is kept and sent again; empty = none (env STITCHD_ARCHIVE_URL)")
	fs.DurationVar(&o.analyticsRollInterval, "analytics-roll-interval", 30*time.Second, "pause between the analytics roller's passes once caught up (whole days rolled two days after they end); 0 = no roller, analytics read raw rows (env STITCHD_ANALYTICS_ROLL_INTERVAL)")
	fs.StringVar(&o.retention, "retention", "", "delete finished runs this long after they finished: 30d, 720h, P30D; empty = keep (a flow's settings.retentionDays still applies) (env STITCHD_RETENTION)")
	fs.StringVar(&o.notifyURL, "notify-url", "", "notification webhook: approvals requested, reminders, timed out, runs failed are POSTed there, signed; empty = none (env STITCHD_NOTIFY_URL)")
	fs.StringVar(&o.dispatchRate, "dispatch-rate", "", "limit deliveries to hosts, across every process: HOST=RPS[,HOST=RPS…], HOST a host:port or a host name for every port, e.g. api.example.com=50 (env STITCHD_DISPATCH_RATE)")
	fs.DurationVar(&o.sessionTTL, "session-ttl", 12*time.Hour, "how long a UI sign-in lasts (env STITCHD_SESSION_TTL)")
	fs.BoolVar(&o.trustProxy, "trust-proxy", false, "take clients' addresses from X-Forwarded-For, for sign-in limits and the audit log; set only behind a proxy that sets it (env STITCHD_TRUST_PROXY)")
	fs.StringVar(&o.oidcIssuer, "oidc-issuer", "", "OIDC sign-in: the provider's issuer URL; on with --oidc-client-id (env STITCHD_OIDC_ISSUER)")
	fs.StringVar(&o.oidcClientID, "oidc-client-id", "", "OIDC sign-in: stitchd's client id at the provider (env STITCHD_OIDC_CLIENT_ID)")
	fs.StringVar(&o.oidcClientSecret, "oidc-client-secret", "", "OIDC sign-in: the client's secret; prefer the environment variable (env STITCHD_OIDC_CLIENT_SECRET)")
	fs.StringVar(&o.oidcGroupsClaim, "oidc-groups-claim", "groups", "OIDC sign-in: the ID token claim whose names replace a user's groups at each sign-in (env STITCHD_OIDC_GROUPS_CLAIM)")
	fs.StringVar(&o.oidcDefaultRole, "oidc-default-role", "viewer", "OIDC sign-in: the role of a person signing in for the first time; empty or none = only existing users may sign in (env STITCHD_OIDC_DEFAULT_ROLE)")
	fs.StringVar(&o.oidcScopes, "oidc-scopes", "openid email profile", "OIDC sign-in: the scopes asked for, space- or comma-separated (add groups if the provider gives groups only then) (env STITCHD_OIDC_SCOPES)")
	fs.StringVar(&o.pprofAddr, "pprof-addr", "", "serve Go's pprof profiles on this address, e.g. 127.0.0.1:6060; empty = off (env STITCHD_PPROF_ADDR)")
}

// versionOf is the version to print: the one set at build time, else
// the module's, else the commit Go stamped into the binary (its revision,
// time, and whether the tree had changes), else "dev".
func versionOf(set string, bi *debug.BuildInfo) string {
	if set != "" && set != "dev" {
		return set
	}
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	out := "dev " + rev[:min(12, len(rev))]
	if at != "" {
		out += " " + at
	}
	if modified == "true" {
		out += " (modified)"
	}
	return out
}

// parseDispatchRates reads --dispatch-rate: HOST=RPS, comma-separated;
// hosts lower case, rates above 0.
func parseDispatchRates(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		host, rate, ok := strings.Cut(strings.TrimSpace(part), "=")
		host = strings.ToLower(strings.TrimSpace(host))
		r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		if !ok || host == "" || strings.ContainsAny(host, "/ ") || err != nil || !(r > 0) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("--dispatch-rate takes HOST=RPS[,HOST=RPS…] with a rate above 0 (e.g. api.example.com=50), not %q", part)
		}
		if _, dup := out[host]; dup {
			return nil, fmt.Errorf("--dispatch-rate names %s twice", host)
		}
		out[host] = r
	}
	return out, nil
}

// rollInterval is --analytics-roll-interval as app.Config takes it: 0 (or
// less) is no roller.
func rollInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// parseRetention reads --retention: whole days ("30d"), a Go duration
// ("720h") or an ISO-8601 one ("P30D"), at least an hour.
func parseRetention(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && strings.Trim(n, "0123456789") == "" && len(n) <= 5 {
		days, _ := strconv.Atoi(n)
		d = time.Duration(days) * 24 * time.Hour
	} else if v, err := engine.ParseWaitDuration(s); err == nil {
		d = v
	} else {
		return 0, fmt.Errorf("--retention must be days (30d), a duration (720h) or ISO-8601 (P30D), not %q", s)
	}
	if d < time.Hour {
		return 0, fmt.Errorf("--retention must be at least an hour, not %q", s)
	}
	return d, nil
}

// defaultTriggerRate bounds the runs a second one trigger starts: far
// above what a webhook sender usually sends, far below a loop's pace (one
// request once started 2,136 runs in 1.5 s through a flow calling its own
// hook).
const defaultTriggerRate = 50

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid log level %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("invalid log format %q (text or json)", format)
}

// defaultGCPercent is the serve process's GOGC unless the environment sets
// one. stitchd's live heap is small, so Go's default of 100 collected
// several times a second under load, a good share of its CPU; 200 gives
// that CPU back for little memory
// (docs/performance.md#measurements-behind-the-code).
const defaultGCPercent = 200

func newRoot(env envLookup, stdout, stderr io.Writer, p Params) *cobra.Command {
	if p.Version == "" {
		p.Version = "dev"
	}
	root := &cobra.Command{Use: "stitchd", Short: "stitchd runs flows drawn on a canvas", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(stdout)
	root.SetErr(stderr)

	o := options{build: p}
	var do demoOptions
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run the stitchd server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), env); err != nil {
				return err
			}
			if err := applyEnvFrom(cmd.Flags(), env, demoSettings); err != nil {
				return err
			}
			o.otlpEndpoint, _ = env("OTEL_EXPORTER_OTLP_ENDPOINT")
			o.secretKey, _ = env(secretbox.EnvKey)
			if _, set := env("GOGC"); !set {
				debug.SetGCPercent(defaultGCPercent)
			}
			return runServe(cmd.Context(), o, do, stderr)
		},
	}
	addServerFlags(serve.Flags(), &o)
	addDemoFlags(serve.Flags(), &do)

	mo := options{build: p}
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations and exit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), env); err != nil {
				return err
			}
			return runMigrate(cmd.Context(), mo, stderr)
		},
	}
	addServerFlags(migrate.Flags(), &mo)

	ver := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprintln(cmd.OutOrStdout(), "stitchd", versionOf(p.Version, bi))
		},
	}
	root.AddCommand(serve, migrate, ver, newKeysCmd(env, stderr), newFlowCmd(env), newRunCmd(env), newTriggerCmd(env), newApproveCmd(env),
		newWebhookSecretCmd(env), newWorkerCmd(env, stderr), newBenchCmd(env, stderr), newUserCmd(env, stderr),
		newApprovalsCmd(env), newSecretCmd(env), newWorkspaceCmd(env))
	return root
}

func (o options) config(log *slog.Logger) app.Config {
	return app.Config{Addr: o.addr, DatabaseURL: o.databaseURL, SessionDatabaseURL: o.sessionDatabaseURL, BaseURL: strings.TrimRight(o.baseURL, "/"),
		AuthToken: o.authToken, MetricsToken: o.metricsToken, BodyLimit: o.bodyLimit, MaxFanOutItems: o.maxFanOutItems,
		ExprLimits: engine.ExprLimits{MemoryBytes: o.exprMemory, Time: o.exprTimeout}, MaxRunNodes: o.maxRunNodes, CodeMemory: o.codeMemory, CodeConcurrency: o.codeConcurrency, Logger: log, DataDir: o.dataDir, LocalPostgres: o.localPostgres,
		DispatchTimeout: o.dispatchTimeout, PollInterval: o.pollInterval, TriggerRate: o.triggerRate, LoginConcurrency: o.loginConcurrency, OTLPEndpoint: o.otlpEndpoint, Version: o.build.Version, NodeTypes: o.build.NodeTypes,
		NotifyURL: o.notifyURL, ArchiveURL: o.archiveURL, Retention: o.retentionPeriod, AnalyticsRollInterval: rollInterval(o.analyticsRollInterval), SessionTTL: o.sessionTTL, TrustProxy: o.trustProxy,
		DispatchRates: o.dispatchRates, OIDC: o.oidc(), SecretKey: o.secretKeyBytes, DevSecrets: o.devSecrets}
}

// oidc is the OIDC sign-in settings: a default role of "none" is none (an
// empty environment variable counts as unset).
func (o options) oidc() web.OIDCConfig {
	role := o.oidcDefaultRole
	if strings.EqualFold(role, "none") {
		role = ""
	}
	return web.OIDCConfig{Issuer: o.oidcIssuer, ClientID: o.oidcClientID, ClientSecret: o.oidcClientSecret,
		GroupsClaim: o.oidcGroupsClaim, DefaultRole: role,
		Scopes: strings.FieldsFunc(o.oidcScopes, func(r rune) bool { return r == ',' || r == ' ' })}
}

func runServe(ctx context.Context, o options, do demoOptions, stderr io.Writer) error {
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	allow, err := callbacks.ParseCIDRs(o.allowCIDRs)
	if err != nil {
		return fmt.Errorf("--worker-allow-cidrs: %w", err)
	}
	if o.codeMemory < 1<<20 {
		return fmt.Errorf("--code-memory must be at least 1048576 (1 MiB), not %d", o.codeMemory)
	}
	if o.codeConcurrency < 1 {
		return fmt.Errorf("--code-concurrency must be at least 1, not %d", o.codeConcurrency)
	}
	if o.exprMemory < 1<<20 {
		return fmt.Errorf("--expr-memory must be at least 1048576 (1 MiB), not %d", o.exprMemory)
	}
	if o.exprTimeout < time.Millisecond || o.exprTimeout > time.Minute {
		return fmt.Errorf("--expr-timeout must be between 1ms and 1m, not %s", o.exprTimeout)
	}
	if o.maxRunNodes < 1 {
		return fmt.Errorf("--max-run-nodes must be at least 1, not %d", o.maxRunNodes)
	}
	if o.maxFanOutItems < 1 {
		return fmt.Errorf("--max-fanout-items must be at least 1, not %d", o.maxFanOutItems)
	}
	if o.triggerRate < 0 || math.IsNaN(o.triggerRate) || math.IsInf(o.triggerRate, 0) {
		return fmt.Errorf("--trigger-rate must be a number of runs a second, 0 or more, not %v", o.triggerRate)
	}
	if o.loginConcurrency < 0 {
		return fmt.Errorf("--login-concurrency must be 0 (twice GOMAXPROCS) or more, not %d", o.loginConcurrency)
	}
	if o.retention != "" {
		d, err := parseRetention(o.retention)
		if err != nil {
			return err
		}
		o.retentionPeriod = d
	}
	if o.dispatchRate != "" {
		r, err := parseDispatchRates(o.dispatchRate)
		if err != nil {
			return err
		}
		o.dispatchRates = r
	}
	if u, err := url.Parse(o.notifyURL); o.notifyURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fmt.Errorf("--notify-url must be an absolute http(s) URL, not %q", o.notifyURL)
	}
	if u, err := url.Parse(o.archiveURL); o.archiveURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fmt.Errorf("--archive-url must be an absolute http(s) URL, not %q", o.archiveURL)
	}
	if strings.TrimSpace(o.secretKey) != "" {
		if o.secretKeyBytes, err = secretbox.ParseKey(o.secretKey); err != nil {
			return err
		}
	}
	o.devSecrets = do.enabled
	if o.privateAddresses != "allow" && o.privateAddresses != "deny" {
		return fmt.Errorf("--worker-private-addresses must be allow or deny, not %q", o.privateAddresses)
	}
	if o.authToken == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		o.authToken = hex.EncodeToString(b)
		log.Warn("no --auth-token / STITCHD_AUTH_TOKEN set; generated one for this process", "auth_token", o.authToken)
	}
	if o.pprofAddr != "" {
		_, stopProfiles, err := servePprof(ctx, o.pprofAddr, log)
		if err != nil {
			return err
		}
		defer stopProfiles()
	}
	cfg := o.config(log)
	cfg.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: o.privateAddresses == "deny", Allow: allow}
	a, err := app.New(ctx, cfg)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	stopDemo := func() {}
	if do.enabled {
		if stopDemo, err = startDemo(ctx, a, do, o.authToken, log, stderr); err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = a.Stop(sctx)
			return err
		}
	}
	<-ctx.Done()
	log.Info("shutting down")
	stopDemo()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return a.Stop(sctx)
}

func runMigrate(ctx context.Context, o options, stderr io.Writer) error {
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	url, _, err := app.ResolveDatabase(ctx, o.config(log))
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, url, store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := app.Migrate(ctx, st, o.config(log)); err != nil {
		return err
	}
	v, err := st.MigrationVersion(ctx)
	if err != nil {
		return err
	}
	log.Info("database is migrated", "version", v)
	return nil
}

func newKeysCmd(env envLookup, stderr io.Writer) *cobra.Command {
	keys := &cobra.Command{Use: "keys", Short: "Manage callback signing keys"}
	var o options
	open := func(cmd *cobra.Command) (*store.Store, error) { return openStore(cmd, env, &o, stderr) }
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Add a new signing key; older keys keep verifying until retired",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			if _, err := st.CallbackKeys(cmd.Context()); err != nil {
				return err
			}
			id := store.NewCallbackKeyID(time.Now())
			if _, err := st.RotateCallbackKey(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), id)
			return nil
		},
	}
	retire := &cobra.Command{
		Use:   "retire KEY_ID",
		Short: "Stop accepting callbacks signed with a key",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			return st.RetireCallbackKey(cmd.Context(), args[0])
		},
	}
	for _, c := range []*cobra.Command{rotate, retire} {
		addDatabaseFlags(c.Flags(), &o)
	}
	keys.AddCommand(rotate, retire)
	return keys
}
