package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/internal/brokerconsume"
	"github.com/stitchd/stitchd/internal/maintenance"
	"github.com/stitchd/stitchd/internal/metrics"
	"github.com/stitchd/stitchd/internal/password"
	"github.com/stitchd/stitchd/internal/scheduler"
	"github.com/stitchd/stitchd/internal/secretbox"
	"github.com/stitchd/stitchd/internal/startstop"
	"github.com/stitchd/stitchd/internal/testsignal"
	"github.com/stitchd/stitchd/internal/tracing"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/localpg"
	"github.com/stitchd/stitchd/web"
)

// Config is stitchd's runtime configuration.
type Config struct {
	Addr        string
	DatabaseURL string
	// SessionDatabaseURL is the database for what needs a server session
	// of its own — the LISTEN connection and the migrations' advisory
	// lock — when DatabaseURL goes through a pooler in transaction mode
	// (PgBouncer), which holds neither; empty: DatabaseURL.
	SessionDatabaseURL string
	// BaseURL is the public URL workers call back on (default http://<addr>).
	BaseURL   string
	AuthToken string
	// MetricsToken, when set, is the bearer token GET /metrics requires;
	// empty, /metrics answers without one.
	MetricsToken string
	BodyLimit    int64
	// MaxFanOutItems bounds a Splitter's array (default 100,000): a
	// bigger one fails the Splitter with a clear error.
	MaxFanOutItems int
	// ExprLimits bound every evaluation of an expression (--expr-memory,
	// --expr-timeout; engine.ExprLimits).
	ExprLimits engine.ExprLimits
	// MaxFirings bounds the nodes one transaction fires
	// (engine.DefaultMaxFirings when 0; engine.Config.MaxFirings).
	MaxFirings int
	// MaxRows bounds the node rows one transaction creates before the
	// sub-flow runs it would start wait for later ones
	// (engine.DefaultMaxRows when 0).
	MaxRows int
	// FanOutChunk is how many items of a fan-out are instantiated at a
	// time (engine.DefaultFanOutChunk when 0; engine.Config.FanOutChunk).
	FanOutChunk int
	// MaxRunNodes bounds the node instances of a run and its sub-flow
	// runs (--max-run-nodes; engine.DefaultMaxRunNodes when 0).
	MaxRunNodes int
	// CodeMemory bounds the JavaScript heap of one Code step's run
	// (--code-memory; 64 MiB when 0); CodeConcurrency how many run at once
	// (--code-concurrency; 2 when 0).
	CodeMemory      int64
	CodeConcurrency int
	// NodeTypes are node types beside the built-in ones (an embedding
	// program's, a test's): each is one engine.NodeTypeSpec, whose name
	// must not be a built-in type's.
	NodeTypes []engine.NodeTypeSpec
	Logger    *slog.Logger
	// DispatchWorkers is the number of concurrent outbound deliveries
	// (default 64).
	DispatchWorkers int
	// DispatchHostWorkers bounds the concurrent deliveries to one
	// destination host (default half of DispatchWorkers): a stuck worker
	// holds no more, and other hosts' deliveries keep flowing.
	DispatchHostWorkers int
	// PollInterval is how often due dispatches and overdue nodes are swept.
	PollInterval time.Duration
	// PollRecheck is how often a worker's long poll looks at its queue
	// again without a notification (web.Config.PollRecheck; 1 s when 0).
	PollRecheck time.Duration
	// DispatchTimeout bounds one delivery request.
	DispatchTimeout time.Duration
	// DispatchLease is how long a claimed delivery is this process's before
	// another may take it over (default DispatchTimeout + 5s; it must
	// exceed DispatchTimeout).
	DispatchLease time.Duration
	// DispatchQueue bounds the claimed deliveries waiting for a free
	// dispatch worker (default 1,024, grown up to 16,384 while deliveries
	// are quick; see callbacks.DispatcherConfig).
	DispatchQueue int
	// DataDir holds a throwaway Postgres cluster when no server is found.
	DataDir string
	// LocalPostgres is the local server tried, without DatabaseURL, before
	// a throwaway cluster is started (default localpg.LocalServerURL;
	// localpg.NoLocalServer: none). A cluster this process starts stops
	// with it.
	LocalPostgres string
	// SecretKey seals the secrets of POST /api/v1/secrets (32 bytes,
	// STITCHD_SECRET_KEY). Nil, on a throwaway cluster or with DevSecrets,
	// a development key is kept beside the cluster's data (DevKeyFile);
	// otherwise secrets are off.
	SecretKey []byte
	// DevSecrets uses the development key even on a database that is not
	// a throwaway cluster (serve --demo).
	DevSecrets bool
	// WorkerGuard, when it denies private addresses, refuses dispatches to
	// loopback, private and reserved workers not in its allow list. Nil or
	// not, stitchd's own addresses (listen address, BaseURL) and link-local
	// and cloud-metadata addresses are refused.
	WorkerGuard *callbacks.AddressGuard
	// MetricsGaugeMaxAge is how old /metrics' database-backed gauges may be
	// (default 5s): read at most once in that time, for every scrape.
	MetricsGaugeMaxAge time.Duration
	// DispatchRates limits deliveries to hosts (host:port or host name →
	// deliveries a second), across every process (--dispatch-rate);
	// DispatchMaxTokenWait is how long a delivery waits for a token holding
	// its row (callbacks.DispatcherConfig.MaxTokenWait).
	DispatchRates        map[string]float64
	DispatchMaxTokenWait time.Duration
	// SessionTTL is how long a sign-in lasts (default 12h).
	SessionTTL time.Duration
	// OIDC signs people in through an OpenID Connect provider when its
	// issuer and client id are set (web.OIDCConfig); the provider sends
	// them back to BaseURL + web.OIDCCallbackPath.
	OIDC web.OIDCConfig
	// TrustProxy takes clients' addresses from X-Forwarded-For (only
	// behind a proxy that sets it): for sign-in limits and the audit log.
	TrustProxy bool
	// Retention deletes finished runs that long after they finished (0:
	// keep them, unless their flow sets settings.retentionDays).
	Retention time.Duration
	// AnalyticsRollInterval is the analytics Roller's pause between passes
	// once caught up (0: its default, 30s; negative: no Roller, so that a
	// test rolls with store.RollAnalytics when it means to).
	AnalyticsRollInterval time.Duration
	// ArchiveURL, when set, gets every batch of runs retention deletes —
	// each run with its node states, events and journey — as signed JSON
	// before they are deleted; a batch it does not take (2xx) is kept and
	// sent again (docs/configuration.md).
	ArchiveURL string
	// NotifyURL is the notification webhook (approvals requested, reminded
	// about and timed out; runs failed); empty: none.
	NotifyURL string
	// LoginConcurrency bounds the password checks of sign-ins, and the
	// hashes of user writes setting a password, running at once (default
	// web.DefaultLoginConcurrency); past it a request waits LoginWait
	// (default 1s), then gets 429.
	LoginConcurrency int
	LoginWait        time.Duration
	// PasswordParams is the argon2id cost of new password hashes (default
	// password.Default). Tests lower it: the cost is CPU, which the race
	// detector multiplies.
	PasswordParams password.Params
	// TriggerRate bounds the runs one inbound trigger starts a second
	// (bursts of as many); beyond it a hook is answered 429 with
	// Retry-After. 0 = no limit.
	TriggerRate float64
	// KeyRefresh is how often callback keys are reloaded from the database,
	// so a rotation reaches every instance (default 30s).
	KeyRefresh time.Duration
	// WebhookSecretRefresh is how often the secrets that sign dispatches
	// are read again, so a rotation reaches every instance (default 2s).
	WebhookSecretRefresh time.Duration
	// OTLPEndpoint, when set, exports traces there over OTLP/HTTP
	// (OTEL_EXPORTER_OTLP_ENDPOINT); empty starts nothing.
	OTLPEndpoint string
	// Version is reported in traces (service.version).
	Version string
	// ReadHeaderTimeout and ReadTimeout bound how long a client may take to
	// send a request's headers and the whole request (defaults 10s and
	// 30s): slow clients are cut off. StreamWriteTimeout bounds each write
	// to an event stream or of a streamed run answer (default 30s).
	ReadHeaderTimeout, ReadTimeout, StreamWriteTimeout time.Duration
	// WriteTimeout bounds writing an ordinary (not streamed) answer
	// (web.Config.WriteTimeout, default 30s).
	WriteTimeout time.Duration
	// HookRecheck is how often a hook request waiting for its run reads
	// it again without a notification (web.Config.HookRecheck, default
	// 1s).
	HookRecheck time.Duration
	// Clock tells the process's time (default engine.SystemClock): a
	// test's clock moves it forward. Due work is found by the database's
	// clock (docs/state_machine.md, Time).
	Clock engine.Clock
}

// TestSignals are test hooks (internal/testsignal): they do nothing
// unless a test calls Init before Start.
type TestSignals struct {
	// SweepDone is sent after each pass of the sweeper (deadlines,
	// timers, approvals, event waits, run deadlines), and ScheduleDone
	// after each pass of the scheduler, with the time the pass began.
	SweepDone, ScheduleDone testsignal.Signal[time.Time]
	// PasswordChecks is sent, as a password check (sign-in) or hash (a
	// user write) starts, how many run.
	PasswordChecks testsignal.Signal[int]
}

// Init makes every signal record.
func (s *TestSignals) Init() {
	s.SweepDone.Init()
	s.ScheduleDone.Init()
	s.PasswordChecks.Init()
}

// App is a running stitchd.
type App struct {
	cfg        Config
	Store      *store.Store
	Engine     *engine.Engine
	Dispatcher *callbacks.Dispatcher
	// Notifications delivers the notification webhook (nil: none).
	Notifications *callbacks.Notifier
	Hub           *web.Hub
	// TaskHub wakes long polls of task queues (store.TasksChannel).
	TaskHub *web.Hub
	Server  *web.Server
	Keys    *callbacks.Keyring
	// SecretBox seals and opens the named secrets (nil: secrets are off).
	SecretBox *secretbox.Box
	// Metrics is this process's Prometheus registry, served at GET /metrics.
	Metrics *metrics.Metrics
	tracing *tracing.Tracing
	// notifier tells listeners (event streams of every process) which runs
	// have new events, after commit.
	notifier *store.Notifier
	http     *http.Server
	listener net.Listener
	cluster  *localpg.Cluster
	// guard checks the addresses dispatches, notifications, broker
	// triggers and the archive connect to.
	guard  *callbacks.AddressGuard
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// services are the goroutine owners Start starts, in order, and Stop
	// stops, in reverse (startstop).
	services []startstop.Service
	stopOnce sync.Once
	stopErr  error
	// URL is the address the server listens on (http://host:port).
	URL string
	// TestSignals are tests' hooks into the sweeper and the scheduler.
	TestSignals TestSignals

	// The background services (internal/maintenance, internal/scheduler,
	// internal/brokerconsume). deferred is poked by commits that left
	// nodes to fire later; brokers is made by Start.
	sweeper   *maintenance.Sweeper
	deferred  *maintenance.DeferredFirer
	retainer  *maintenance.Retainer
	roller    *maintenance.Roller
	scheduler *scheduler.Scheduler
	brokers   *brokerconsume.Service
}

// ResolveDatabase returns the configured URL, or finds/starts a local server.
func ResolveDatabase(ctx context.Context, cfg Config) (string, *localpg.Cluster, error) {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL, nil, nil
	}
	return localpg.Resolve(ctx, localpg.Options{DataDir: cfg.DataDir, LocalURL: cfg.LocalPostgres, Logf: func(f string, a ...any) {
		if cfg.Logger != nil {
			cfg.Logger.Info(fmt.Sprintf(f, a...))
		}
	}})
}

// Migrate applies pending migrations to st's database, through
// cfg.SessionDatabaseURL when it is set (goose's lock is a session's).
func Migrate(ctx context.Context, st *store.Store, cfg Config) error { return migrate(ctx, st, cfg) }

func migrate(ctx context.Context, st *store.Store, cfg Config) error {
	if cfg.SessionDatabaseURL == "" {
		return st.Migrate(ctx, cfg.Logger)
	}
	direct, err := store.Open(ctx, cfg.SessionDatabaseURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer direct.Close()
	return direct.Migrate(ctx, cfg.Logger)
}

// sessionURL is the URL of the LISTEN connection and of migrations.
func (a *App) sessionURL() string {
	if a.cfg.SessionDatabaseURL != "" {
		return a.cfg.SessionDatabaseURL
	}
	return a.Store.URL()
}

// New connects, migrates and wires stitchd; call Start to serve.
func New(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.DispatchTimeout <= 0 {
		cfg.DispatchTimeout = 10 * time.Second
	}
	if cfg.DispatchLease <= 0 {
		cfg.DispatchLease = cfg.DispatchTimeout + 5*time.Second
	}
	if cfg.DispatchLease <= cfg.DispatchTimeout {
		return nil, fmt.Errorf("the dispatch lease (%s) must exceed the dispatch timeout (%s)", cfg.DispatchLease, cfg.DispatchTimeout)
	}
	if err := cfg.OIDC.Check(); err != nil {
		return nil, err
	}
	url, cluster, err := ResolveDatabase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, cluster: cluster}
	a.Store, err = store.Open(ctx, url, store.Options{})
	if err != nil {
		_ = a.stopCluster()
		return nil, err
	}
	if err := migrate(ctx, a.Store, cfg); err != nil {
		a.Store.Close()
		_ = a.stopCluster()
		return nil, err
	}
	a.listener, err = (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		a.Store.Close()
		return nil, fmt.Errorf("error listening on %s: %w", cfg.Addr, err)
	}
	a.URL = "http://" + a.listener.Addr().String()
	if cfg.OIDC.Enabled() {
		redirect := strings.TrimRight(cfg.BaseURL, "/") + web.OIDCCallbackPath
		if cfg.BaseURL == "" {
			redirect = a.URL + web.OIDCCallbackPath
			cfg.Logger.Warn("OIDC sign-in without --base-url: the provider sends people back to this process's own address; set --base-url to the address people use")
		}
		cfg.Logger.Info("OIDC sign-in is on; register the redirect URL at the provider", "issuer", cfg.OIDC.Issuer, "redirect_url", redirect)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = a.URL
	}
	a.cfg.BaseURL = cfg.BaseURL
	cur, old, err := loadKeys(ctx, a.Store)
	if err != nil {
		return nil, a.closeEarly(err)
	}
	ring, err := callbacks.NewKeyring(cur, old...)
	if err != nil {
		return nil, a.closeEarly(err)
	}
	a.Keys = ring
	if a.SecretBox, err = a.secretBox(); err != nil {
		return nil, a.closeEarly(err)
	}
	secret, err := a.Store.WebhookSecret(ctx)
	if err != nil {
		return nil, a.closeEarly(err)
	}
	a.Metrics = metrics.New(metrics.Config{OutboxDepth: a.Store.OutboxDepth, Queues: a.queueGauges, GaugeMaxAge: cfg.MetricsGaugeMaxAge,
		Logger: cfg.Logger})
	a.tracing, err = tracing.Setup(ctx, tracing.Options{Endpoint: cfg.OTLPEndpoint, Version: cfg.Version})
	if err != nil {
		return nil, a.closeEarly(err)
	}
	if a.tracing != nil {
		cfg.Logger.Info("exporting traces", "endpoint", cfg.OTLPEndpoint)
	}
	a.notifier = a.Store.NewNotifier(store.EventsChannel, 0, cfg.Logger)
	var clock engine.Clock = engine.SystemClock{}
	if cfg.Clock != nil {
		clock = cfg.Clock
	}
	claims := engine.NewClaims()
	types, err := nodeTypes(handlers.Types(handlers.Options{MaxFanOutItems: cfg.MaxFanOutItems}), cfg.NodeTypes)
	if err != nil {
		return nil, a.closeEarly(err)
	}
	var tracer engine.Tracer
	if a.tracing != nil { // a nil *Tracing in the interface would not be nil
		tracer = a.tracing
	}
	a.Engine, err = engine.New(engine.Config{
		Tracer:      tracer,
		Store:       a.Store,
		Types:       types,
		Minter:      &callbacks.Minter{Keys: ring, BaseURL: cfg.BaseURL, Clock: clock},
		Claims:      claims,
		ClaimLease:  cfg.DispatchLease,
		NewID:       timeOrderedID,
		Clock:       clock,
		ExprLimits:  cfg.ExprLimits,
		MaxFirings:  cfg.MaxFirings,
		MaxRows:     cfg.MaxRows,
		FanOutChunk: cfg.FanOutChunk,
		MaxRunNodes: cfg.MaxRunNodes,
		Logger:      cfg.Logger,
		Notify:      cfg.NotifyURL != "",
		OnCommit: func(ci engine.CommitInfo) {
			a.Metrics.OnCommit(ci)
			logFailures(cfg.Logger, ci)
			a.notifier.Notify(ci.RunID)
			if ci.Deferred > 0 && a.deferred != nil {
				a.deferred.Poke()
			}
			if ci.Notifications > 0 && a.Notifications != nil {
				a.Notifications.Poke()
			}
		},
	})
	if err != nil {
		return nil, a.closeEarly(err)
	}
	a.deferred = maintenance.NewDeferredFirer(maintenance.DeferredFirerParams{Claim: a.Store.DueTimers, Wake: a.Engine.Wake,
		Metrics: a.Metrics, Logger: cfg.Logger})
	a.Metrics.WatchBacklog(a.Engine.Waiting)
	a.Metrics.WatchTogether(a.Engine.CompletedTogether)
	// Whatever the configured guard, dispatches to stitchd's own listen
	// address or base URL are refused: a flow whose worker is its own hook
	// would start runs in a loop.
	listen, err := netip.ParseAddrPort(a.listener.Addr().String())
	if err != nil {
		return nil, a.closeEarly(fmt.Errorf("error reading the listen address: %w", err))
	}
	guard, err := cfg.WorkerGuard.ForServer(callbacks.ServerAddresses{Listen: listen, BaseURL: cfg.BaseURL})
	if err != nil {
		return nil, a.closeEarly(err)
	}
	a.guard = guard
	client := callbacks.NewHTTPClient(cfg.DispatchTimeout, guard)
	client.Transport = a.tracing.Transport(client.Transport)
	disp := callbacks.NewDispatcher(callbacks.DispatcherConfig{Store: a.Metrics.DispatchStore(a.Store),
		Recorder: a.Metrics.Recorder(a.Engine), Secret: secret,
		Signer:  &store.DispatchSigner{Store: a.Store, MaxAge: cfg.WebhookSecretRefresh, Clock: clock},
		Secrets: &store.SecretReader{Store: a.Store, Box: a.SecretBox},
		Client:  client, Logger: cfg.Logger, Workers: cfg.DispatchWorkers, HostWorkers: cfg.DispatchHostWorkers,
		Rates: cfg.DispatchRates, RateStore: a.Store, MaxTokenWait: cfg.DispatchMaxTokenWait,
		PollInterval: cfg.PollInterval, Lease: cfg.DispatchLease, QueueSize: cfg.DispatchQueue, Clock: clock, Claims: claims,
		CodeMemory: cfg.CodeMemory, CodeConcurrency: cfg.CodeConcurrency,
		Credentials: &store.CredentialReader{Store: a.Store, Box: a.SecretBox}, Dialer: guard.Dialer(30 * time.Second)})
	a.Dispatcher = disp
	a.sweeper = maintenance.NewSweeper(maintenance.SweeperParams{Store: a.Store, Engine: a.Engine, Metrics: a.Metrics,
		Clock: clock, Logger: cfg.Logger, PollInterval: cfg.PollInterval, Done: &a.TestSignals.SweepDone, NotifySLA: cfg.NotifyURL != ""})
	// The archive is the operator's, but in deny mode it is held to the
	// guard too (--worker-allow-cidrs opens its address): a URL set
	// through the environment is no reason to reach the machine itself.
	a.retainer = maintenance.NewRetainer(maintenance.RetainerParams{Store: a.Store, Retention: cfg.Retention,
		ArchiveURL: cfg.ArchiveURL, ArchiveClient: callbacks.NewHTTPClient(30*time.Second, guard), Clock: clock,
		Metrics: a.Metrics, Logger: cfg.Logger, PollInterval: cfg.PollInterval})
	if cfg.AnalyticsRollInterval >= 0 {
		a.roller = maintenance.NewRoller(maintenance.RollerParams{Store: a.Store, Metrics: a.Metrics, Logger: cfg.Logger,
			Interval: cfg.AnalyticsRollInterval})
	}
	a.scheduler = scheduler.New(scheduler.Params{Store: a.Store, Engine: a.Engine, Metrics: a.Metrics, Clock: clock,
		Logger: cfg.Logger, PollInterval: cfg.PollInterval, Done: &a.TestSignals.ScheduleDone})
	// Always: without a notification webhook the outbox still carries the
	// workers' cancel notices (to their nodes' cancelUrl).
	a.Notifications = callbacks.NewNotifier(callbacks.NotifierConfig{Store: a.Store, URL: cfg.NotifyURL, Secret: secret,
		Signer: &store.DispatchSigner{Store: a.Store, MaxAge: cfg.WebhookSecretRefresh, Clock: clock}, Client: client, Clock: clock,
		Logger: cfg.Logger, PollInterval: cfg.PollInterval,
		Links: &callbacks.ActionLinker{Keys: ring, BaseURL: cfg.BaseURL, Members: a.Store, Clock: clock}})
	a.Metrics.WatchDispatchBacklog(disp.Backlog)
	a.Hub = web.NewHub()
	a.TaskHub = web.NewHub()
	a.Server = web.New(web.Config{Store: a.Store, Engine: a.Engine, Keys: ring, Secrets: a.SecretBox, Hub: a.Hub, Tasks: a.TaskHub, PollRecheck: cfg.PollRecheck, AuthToken: cfg.AuthToken,
		BodyLimit: cfg.BodyLimit, StreamWriteTimeout: cfg.StreamWriteTimeout, WriteTimeout: cfg.WriteTimeout, Clock: clock, Logger: cfg.Logger,
		TriggerRate: cfg.TriggerRate, Notify: a.notifier.Notify, SessionTTL: cfg.SessionTTL, TrustProxy: cfg.TrustProxy,
		BaseURL: cfg.BaseURL, OIDC: cfg.OIDC, NodeTypes: types, LoginConcurrency: cfg.LoginConcurrency, LoginWait: cfg.LoginWait, PasswordParams: cfg.PasswordParams,
		PasswordChecks: &a.TestSignals.PasswordChecks, TryRequest: disp.TryRequest, HookRecheck: cfg.HookRecheck})
	a.http = &http.Server{Handler: a.handler(), ReadHeaderTimeout: orDefault(cfg.ReadHeaderTimeout, 10*time.Second),
		ReadTimeout: orDefault(cfg.ReadTimeout, 30*time.Second), IdleTimeout: 120 * time.Second}
	return a, nil
}

// DevSecretKeyName is the file that keeps the development secret key.
const DevSecretKeyName = "stitchd_secret.key"

// DevKeyFile is where a development server keeps its secret key: in
// dataDir (--data-dir, where its throwaway cluster lives), else beside the
// default cluster's directory (~/.cache/stitchd).
func DevKeyFile(dataDir string) string {
	if dataDir != "" {
		return filepath.Join(dataDir, DevSecretKeyName)
	}
	return filepath.Join(filepath.Dir(localpg.DefaultDataDir()), DevSecretKeyName)
}

// secretBox is the box of the configured key; without one, on a
// throwaway cluster or with DevSecrets, of the development key (made
// once, kept in a file, so restarts still open the secrets stored
// before); else nil: secrets are off.
func (a *App) secretBox() (*secretbox.Box, error) {
	cfg := a.cfg
	if cfg.SecretKey != nil {
		return secretbox.New(cfg.SecretKey)
	}
	if a.cluster == nil && !cfg.DevSecrets {
		cfg.Logger.Warn("secrets are off: " + secretbox.EnvKey + " is not set (POST /api/v1/secrets answers 503, and HTTP nodes using {{ secret }} fail)")
		return nil, nil
	}
	path := DevKeyFile(cfg.DataDir)
	key, created, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil {
		return nil, err
	}
	if created {
		cfg.Logger.Warn("secrets: made a development key; set "+secretbox.EnvKey+" in production", "file", path)
	} else {
		cfg.Logger.Info("secrets: using the development key", "file", path)
	}
	return secretbox.New(key)
}

// DeniesPrivateWorkers reports whether dispatches to loopback and private
// addresses are refused (--worker-private-addresses deny).
func (a *App) DeniesPrivateWorkers() bool {
	return a.cfg.WorkerGuard != nil && a.cfg.WorkerGuard.DenyPrivate
}

// handler is the API with GET /metrics beside it, callbacks timed, and
// every request traced when tracing is on.
func (a *App) handler() http.Handler {
	api, prom := a.Server.Handler(), a.Metrics.Handler()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			// As every API answer (web's noStore).
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Cache-Control", "no-store")
			// Spaces around the configured token (a secret file's trailing
			// newline) do not count; none configured, /metrics is open.
			if want := strings.TrimSpace(a.cfg.MetricsToken); want != "" && !web.BearerMatches(r, want) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":{"code":"unauthorized","message":"missing or invalid metrics token"}}`+"\n")
				return
			}
			prom.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/metrics" {
			// As the API's other paths answer a wrong method (web/methods.go).
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Allow", "GET, HEAD")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = io.WriteString(w, `{"error":{"code":"method_not_allowed","message":"/metrics allows GET, HEAD"}}`+"\n")
			return
		}
		api.ServeHTTP(w, r)
	})
	return a.tracing.Middleware(a.Metrics.Middleware(h))
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// loadKeys reads the callback keys, newest (signing) first.
func loadKeys(ctx context.Context, st *store.Store) (callbacks.Key, []callbacks.Key, error) {
	keys, err := st.CallbackKeys(ctx)
	if err != nil {
		return callbacks.Key{}, nil, err
	}
	var old []callbacks.Key
	for _, k := range keys[1:] {
		old = append(old, callbacks.Key{ID: k.ID, Secret: k.Secret})
	}
	return callbacks.Key{ID: keys[0].ID, Secret: keys[0].Secret}, old, nil
}

// refreshKeys reloads the callback keys periodically (rotation, retirement).
func (a *App) refreshKeys(ctx context.Context) {
	every := a.cfg.KeyRefresh
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, old, err := loadKeys(ctx, a.Store)
		if err == nil {
			err = a.Keys.Replace(cur, old...)
		}
		if err != nil && ctx.Err() == nil {
			a.cfg.Logger.Warn("error reloading callback keys", "error", err)
		}
	}
}

// stopCluster stops the throwaway cluster this process started, if any:
// make run's own Postgres goes with it (Ctrl-C stops everything).
func (a *App) stopCluster() error {
	if a.cluster == nil || !a.cluster.Started() {
		return nil
	}
	if err := a.cluster.Stop(); err != nil {
		return err
	}
	a.cfg.Logger.Info("stopped the throwaway PostgreSQL cluster", "data_dir", a.cluster.DataDir)
	return nil
}

func (a *App) closeEarly(err error) error {
	a.listener.Close()
	a.Store.Close()
	if cerr := a.stopCluster(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// Start serves HTTP and runs the dispatcher, the sweeper and the event
// listener until Stop.
func (a *App) Start(ctx context.Context) error {
	ctx, a.cancel = context.WithCancel(ctx)
	// One listening connection: runs' events and task queues.
	if err := store.ListenAll(ctx, a.sessionURL(), a.cfg.Logger, map[string]func(string){
		store.EventsChannel: a.Hub.Notify, store.TasksChannel: a.TaskHub.Notify}); err != nil {
		return err
	}
	// The engine first and last: every other service, the HTTP server and
	// the broker consumers submit operations to it.
	if err := a.Engine.Start(ctx); err != nil {
		return fmt.Errorf("error starting the engine: %w", err)
	}
	a.services = []startstop.Service{a.Dispatcher}
	if a.Notifications != nil {
		a.services = append(a.services, a.Notifications)
	}
	a.services = append(a.services, a.scheduler, startstop.NewLoop(a.notifier.Run),
		startstop.NewLoop(a.refreshKeys), a.sweeper, a.retainer, a.deferred)
	if a.roller != nil {
		a.services = append(a.services, a.roller)
	}
	for _, svc := range a.services {
		if err := svc.Start(ctx); err != nil {
			return fmt.Errorf("error starting services: %w", err)
		}
	}
	// The brokers are where an editor says, as a Worker's URL: the same
	// guard checks the address dialled.
	a.brokers = brokerconsume.New(brokerconsume.Params{Store: a.Store, Engine: a.Engine, Dialer: a.guard.Dialer(5 * time.Second),
		PollInterval: a.cfg.PollInterval, BodyLimit: a.cfg.BodyLimit, Logger: a.cfg.Logger})
	if err := a.brokers.Start(ctx); err != nil {
		return fmt.Errorf("error starting the broker consumers: %w", err)
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.http.Serve(a.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.cfg.Logger.Error("http server", "error", err)
		}
	}()
	a.cfg.Logger.Info("stitchd listening", "url", a.URL, "base_url", a.cfg.BaseURL)
	return nil
}

// Stop shuts down gracefully: stop accepting requests, finish in-flight
// ones, stop the dispatcher and sweeper, write the pending delivered
// marks, close the database. Later calls return the first one's result.
func (a *App) Stop(ctx context.Context) error {
	a.stopOnce.Do(func() { a.stopErr = a.stop(ctx) })
	return a.stopErr
}

func (a *App) stop(ctx context.Context) error {
	a.Hub.Close()
	a.TaskHub.Close() // long polls answer at once: the shutdown waits for no one
	err := a.http.Shutdown(ctx)
	if a.cancel != nil {
		a.cancel()
	}
	for i := len(a.services) - 1; i >= 0; i-- {
		a.services[i].Stop()
	}
	a.wg.Wait()
	if a.brokers != nil {
		a.brokers.Close(ctx)
	}
	a.Engine.Stop()
	if merr := a.Engine.FlushDeliveryMarks(ctx); merr != nil && err == nil {
		err = fmt.Errorf("error writing delivered marks: %w", merr)
	}
	if terr := a.tracing.Shutdown(ctx); terr != nil && err == nil {
		err = fmt.Errorf("error flushing traces: %w", terr)
	}
	a.Store.Close()
	if cerr := a.stopCluster(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// timeOrderedID returns a UUIDv7: runs, dispatches and journey events get ids
// that grow with time, so their primary-key indexes are appended to at the
// right edge instead of at random pages (fewer pages touched and split, fewer
// full-page images in the WAL after a checkpoint).
func timeOrderedID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// logFailures logs, at WARN, the node failures and the run failure a
// committed transaction made: what an operator watching the logs must
// see (the run's events hold the rest).
func logFailures(log *slog.Logger, ci engine.CommitInfo) {
	for _, tr := range ci.Transitions {
		if tr.To == engine.StatusFailed {
			log.Warn("node failed", "run_id", ci.RunID, "node_key", tr.Key, "node_id", tr.NodeID, "type", tr.Type,
				"attempt", tr.Attempt, "error", tr.Error)
		}
	}
	if ci.RunFinished == engine.RunFailed {
		log.Warn("run failed", "run_id", ci.RunID)
	}
}

// nodeTypes is the built-in node types followed by the added ones, each
// checked: a name of its own (no built-in's, in any case), a handler.
func nodeTypes(builtin, added []engine.NodeTypeSpec) ([]engine.NodeTypeSpec, error) {
	all := slices.Clone(builtin)
	for _, t := range added {
		if t.Type == "" || t.Handler == nil {
			return nil, fmt.Errorf("error adding node type %q: it needs a name and a handler", t.Type)
		}
		for _, o := range all {
			if strings.EqualFold(string(o.Type), string(t.Type)) {
				return nil, fmt.Errorf("error adding node type %q: the name is taken", t.Type)
			}
		}
		if len(t.ConfigSchema) > 0 {
			if _, err := engine.CompileForm(t.ConfigSchema); err != nil {
				return nil, fmt.Errorf("error adding node type %q: its config schema: %w", t.Type, err)
			}
		}
		t.Builtin = false
		all = append(all, t)
	}
	return all, nil
}

// queueGauges reads the task queues for the metrics.
func (a *App) queueGauges(ctx context.Context) ([]metrics.QueueGauge, error) {
	// Every workspace's queues (a scrape is cached: GaugeMaxAge).
	spaces, err := a.Store.WorkspacesOf(ctx, "", true)
	if err != nil {
		return nil, err
	}
	var out []metrics.QueueGauge
	for _, w := range spaces {
		qs, err := a.Store.Queues(ctx, w.Slug)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			out = append(out, metrics.QueueGauge{Workspace: w.Slug, Name: q.Name, Pending: q.Pending, Leased: q.Leased,
				OldestPendingSeconds: q.OldestPendingSeconds})
		}
	}
	return out, nil
}
