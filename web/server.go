package web

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/jsonlimit"
	"github.com/stitchd/stitchd/internal/password"
	"github.com/stitchd/stitchd/internal/secretbox"
	"github.com/stitchd/stitchd/internal/testsignal"
	"github.com/stitchd/stitchd/store"
)

// Config wires a Server.
type Config struct {
	Store  *store.Store
	Engine *engine.Engine
	Keys   *callbacks.Keyring
	// Secrets seals the values POST /api/v1/secrets stores (nil: the
	// server has no STITCHD_SECRET_KEY, and that route answers 503).
	Secrets *secretbox.Box
	Hub     *Hub
	// Tasks wakes long polls: feed it the queue names NOTIFYed on
	// store.TasksChannel (nil: a poll does not wait).
	Tasks *Hub
	// PollRecheck is how often a long poll looks at its queue again
	// without a notification (1 s when 0).
	PollRecheck time.Duration
	AuthToken   string
	// BodyLimit bounds request bodies (default 1 MiB).
	BodyLimit int64
	// StreamWriteTimeout bounds each write to an event stream or of a
	// streamed run answer (default 30s): a client that stops reading is
	// dropped, not waited for.
	StreamWriteTimeout time.Duration
	// WriteTimeout bounds the writing of every other answer, from its
	// header on (default 30s): a client that reads a big answer slowly,
	// or not at all, is cut off and the answer's memory freed, instead of
	// held for as long as the client keeps the connection.
	WriteTimeout time.Duration
	// StreamMaxRuns bounds the runs GET /api/v1/events follows for one
	// client (default DefaultStreamMaxRuns): past it the stream ends with
	// an event stream.end naming the id to resume from.
	StreamMaxRuns int
	Clock         engine.Clock
	Logger        *slog.Logger
	// NodeTypes are the node types flows may use (GET /api/v1/node-types;
	// handlers.Types and any added).
	NodeTypes []engine.NodeTypeSpec
	// TryRequest sends the request of an HTTP step tried alone
	// (callbacks.Dispatcher.TryRequest); nil: such a step is not testable.
	// Its secrets and credentials are workspace ws's.
	TryRequest func(ctx context.Context, ws, url string, rq *engine.HTTPRequest, payload []byte) engine.Response
	// TriggerRate bounds the runs one inbound trigger starts a second, in
	// this process (bursts of as many, at least 1): beyond it POST
	// /hooks/{slug} is answered 429 with Retry-After. 0 = no limit.
	TriggerRate float64
	// SessionTTL is how long a sign-in lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	// PasswordParams is the cost of new password hashes (default
	// password.Default).
	PasswordParams password.Params
	// LoginConcurrency bounds the password checks of sign-ins, and the
	// hashes of user writes that set a password, running at once in this
	// process (each holds 19 MiB while it runs; default
	// DefaultLoginConcurrency). A request waits LoginWait (default 1s) for
	// its turn, then is answered 429 with Retry-After.
	LoginConcurrency int
	LoginWait        time.Duration
	// PasswordChecks, a test hook, is sent how many password checks and
	// hashes run each time one starts.
	PasswordChecks *testsignal.Signal[int]
	// BaseURL is the server's public URL: an https one marks the session
	// cookie Secure even behind a proxy that does not say so.
	BaseURL string
	// TrustProxy takes a client's address from X-Forwarded-For (set only
	// behind a proxy that sets it); otherwise the connection's address
	// counts, for sign-in limits and the audit log.
	TrustProxy bool
	// OIDC, when its issuer and client id are set, signs people in
	// through an OpenID Connect provider (oidc.go); the provider sends
	// them back to BaseURL + OIDCCallbackPath.
	OIDC OIDCConfig
	// HookRecheck is how often a hook request waiting for its run (a
	// trigger's respond.mode "wait") reads the run again without a
	// notification of it (default 1s): a notification lost (a listener
	// reconnecting) delays the answer by that much at most.
	HookRecheck time.Duration
	// Notify, if set, is told the key of a change made outside the engine
	// ("entity:<id>" for a manual move) once it is committed, for the
	// event streams of every process (store.Notifier.Notify).
	Notify func(key string)
}

// Server is the HTTP API.
type Server struct {
	cfg  Config
	echo *echo.Echo
	log  *slog.Logger
	// hookRate limits run starts per trigger (nil: no limit).
	hookRate *rateLimiter
	// dummyHash is checked when a sign-in names no account, so it takes
	// as long as one that does (made on first use).
	dummyHash func() (string, error)
	// inputSchemas caches webhook triggers' compiled input_schema: a hook
	// checks its body without compiling it again.
	inputSchemas engine.FormCache
	// oidc signs people in through an OIDC provider (nil: off).
	oidc *oidcAuth
	// hashSlots holds a token per password check or hash running (the
	// bound of sign-ins and user writes together); hashing counts them for
	// PasswordChecks.
	hashSlots chan struct{}
	hashing   atomic.Int32
	// spec is openapi.yaml with servers naming BaseURL (admin.go).
	spec []byte
	// methods answers a known path asked with a wrong method (methods.go).
	methods *methodTable
}

// New builds the router.
func New(cfg Config) *Server {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.StreamMaxRuns <= 0 {
		cfg.StreamMaxRuns = DefaultStreamMaxRuns
	}
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.PasswordParams == (password.Params{}) {
		cfg.PasswordParams = password.Default
	}
	if cfg.LoginConcurrency <= 0 {
		cfg.LoginConcurrency = DefaultLoginConcurrency()
	}
	if cfg.LoginWait <= 0 {
		cfg.LoginWait = time.Second
	}
	s := &Server{cfg: cfg, echo: echo.New(), log: cfg.Logger, hookRate: newRateLimiter(cfg.TriggerRate),
		hashSlots: make(chan struct{}, cfg.LoginConcurrency)}
	s.inputSchemas.Now = cfg.Clock.Now
	if cfg.OIDC.Enabled() {
		s.oidc = newOIDCAuth(cfg.OIDC, cfg.BaseURL, cfg.Logger)
	}
	s.spec = specFor(cfg.BaseURL)
	s.dummyHash = sync.OnceValues(func() (string, error) { return password.Hash("no such account", cfg.PasswordParams) })
	e := s.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = echo.ExtractIPDirect()
	if cfg.TrustProxy {
		e.IPExtractor = echo.ExtractIPFromXFFHeader()
	}
	e.Use(noStore)
	e.Use(s.writeDeadline)
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit(strconv.FormatInt(cfg.BodyLimit, 10) + "B"))
	e.Use(validText)

	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", s.readyz)
	e.POST("/callbacks/:token", s.callback)
	e.POST("/hooks/:slug", s.hook)
	// What people do carries a request id (X-Request-Id, given or made):
	// the audit trail names it. Worker callbacks and hooks, the hot path,
	// go without.
	reqID := middleware.RequestID()
	e.GET("/approve/:token", s.approveForm, reqID)
	e.POST("/approve/:token", s.approveSubmit, reqID)

	// The contract is public: a client generator needs no credential.
	e.GET("/openapi.yaml", s.openAPI)
	e.GET("/api/v1/openapi.yaml", s.openAPI)
	e.POST("/api/v1/auth/login", s.login, reqID)
	e.GET("/api/v1/auth/providers", s.authProviders)
	e.GET(OIDCLoginPath, s.oidcLogin, reqID)
	e.GET(OIDCCallbackPath, s.oidcCallback, reqID)
	api := e.Group("/api/v1", reqID, s.auth)
	api.POST("/auth/logout", s.logout)
	api.GET("/me", s.me)
	api.POST("/tokens", s.createToken)
	api.GET("/tokens", s.listTokens)
	api.DELETE("/tokens/:id", s.revokeToken)
	api.POST("/users", s.createUser)
	api.GET("/users", s.listUsers)
	api.GET("/users/:id", s.getUser)
	api.PATCH("/users/:id", s.patchUser)
	api.DELETE("/users/:id", s.deleteUser)
	api.GET("/audit", s.listAudit)
	api.POST("/workspaces", s.createWorkspace)
	api.GET("/workspaces", s.listWorkspaces)
	api.GET("/workspaces/:slug", s.getWorkspace)
	api.PATCH("/workspaces/:slug", s.patchWorkspace)
	api.GET("/workspaces/:slug/members", s.listMembers)
	api.PUT("/workspaces/:slug/members/:email", s.putMember)
	api.DELETE("/workspaces/:slug/members/:email", s.deleteMember)
	api.POST("/flows", s.createFlow)
	api.GET("/flows", s.listFlows)
	api.GET("/flows/:id", s.getFlow)
	api.GET("/flows/:id/analytics", s.flowAnalytics)
	api.PUT("/flows/:id", s.updateFlow)
	api.DELETE("/flows/:id", s.deleteFlow)
	api.GET("/flows/:id/versions", s.listVersions)
	api.GET("/flows/:id/versions/:number", s.getVersion)
	api.POST("/flows/:id/runs", s.startRun)
	api.POST("/flows/:id/nodes/:key/test", s.tryNode)
	api.POST("/nodes/:key/test", s.tryDraftNode)
	api.GET("/runs", s.listRuns)
	api.GET("/runs/:id", s.getRun)
	api.POST("/events", s.postEvent)
	api.POST("/runs/:id/cancel", s.cancelRun)
	api.POST("/runs/bulk", s.bulkRuns)
	api.POST("/runs/:id/pause", s.pauseRun)
	api.POST("/runs/:id/resume", s.resumeRun)
	api.POST("/runs/:id/nodes/:key/skip", s.skipNode)
	api.POST("/runs/:id/nodes/:key/rerun", s.rerunNode)
	api.POST("/runs/:id/migrate", s.migrateRun)
	api.POST("/runs/:id/nodes/:key/retry", s.retryNode)
	api.POST("/runs/:id/nodes/:key/complete", s.completeNode)
	api.POST("/runs/:id/nodes/:key/claim", s.claimTask)
	api.POST("/runs/:id/nodes/:key/unclaim", s.unclaimTask)
	api.POST("/runs/:id/nodes/:key/reassign", s.reassignTask)
	api.POST("/runs/:id/nodes/:key/delegate", s.delegateTask)
	api.GET("/runs/:id/nodes/:key/task", s.getTask)
	api.GET("/runs/:id/events", s.runEvents)
	api.GET("/events", s.allEvents)
	api.GET("/approvals", s.approvals)
	api.GET("/approvals/stream", s.approvalsStream)
	api.POST("/boards", s.createBoard)
	api.GET("/boards", s.listBoards)
	api.GET("/webhook-secret", s.webhookSecret)
	api.POST("/webhook-secret/rotate", s.rotateWebhookSecret)
	api.GET("/flows/:id/webhook-secret", s.flowWebhookSecret)
	api.POST("/flows/:id/webhook-secret/rotate", s.rotateFlowWebhookSecret)
	api.DELETE("/flows/:id/webhook-secret", s.dropFlowWebhookSecret)
	api.GET("/node-types", s.listNodeTypes)
	api.GET("/boards/:id", s.getBoard)
	api.GET("/boards/:id/analytics", s.boardAnalytics)
	api.PATCH("/boards/:id", s.patchBoard)
	api.DELETE("/boards/:id", s.deleteBoard)
	api.POST("/boards/:id/sections", s.addSection)
	api.PATCH("/boards/:id/sections/:section", s.patchSection)
	api.DELETE("/boards/:id/sections/:section", s.deleteSection)
	api.PATCH("/entities/:id", s.patchEntity)
	api.DELETE("/entities/:id", s.deleteEntity)
	api.POST("/entities", s.createEntity)
	api.GET("/entities/:id", s.getEntity)
	api.POST("/entities/:id/move", s.moveEntity)
	api.POST("/secrets", s.putSecret)
	api.GET("/secrets", s.listSecrets)
	api.PUT("/secrets/:name", s.updateSecret)
	api.DELETE("/secrets/:name", s.deleteSecret)
	api.POST("/tasks/poll", s.pollTasks)
	api.GET("/queues", s.queues)
	api.POST("/credentials", s.postCredential)
	api.GET("/credentials", s.listCredentials)
	api.GET("/credentials/:name", s.getCredential)
	api.PUT("/credentials/:name", s.putCredential)
	api.DELETE("/credentials/:name", s.deleteCredential)
	api.POST("/flows/:id/triggers", s.createTrigger)
	api.GET("/flows/:id/triggers", s.listTriggers)
	api.GET("/triggers/:id", s.getTrigger)
	api.PATCH("/triggers/:id", s.patchTrigger)
	api.DELETE("/triggers/:id", s.deleteTrigger)
	api.POST("/triggers/:id/rotate-secret", s.rotateTriggerSecret)

	// The web UI: every other GET (web/ui.go).
	e.GET("/*", s.ui)
	s.methods = newMethodTable(e.Routes())
	e.Pre(s.methodNotAllowed)
	return s
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Routes lists the registered routes (method, path).
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }

// noStore marks every answer nosniff (a JSON body is never to be read as
// HTML) and not to be stored by any cache: answers hold run data, the
// webhook secret, callback results. ui.go replaces Cache-Control for the
// UI's own files (hashed assets are cacheable for a year).
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		return next(c)
	}
}

// writeDeadline gives each answer WriteTimeout to reach the client from
// the moment its header is written. Event streams and streamed run
// answers then move the deadline on before each write (arm), by
// StreamWriteTimeout.
func (s *Server) writeDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		res.Before(func() {
			_ = http.NewResponseController(res.Writer).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		})
		return next(c)
	}
}

// BearerMatches reports whether r carries "Authorization: Bearer <want>"
// (the scheme in any case, the token compared in constant time, spaces
// around it not counted). An empty want matches nothing.
func BearerMatches(r *http.Request, want string) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && want != "" && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(want)) == 1
}

func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	if err := s.cfg.Store.Ready(ctx); err != nil {
		s.log.Warn("not ready", "error", err)
		msg := "the database is unreachable"
		if strings.Contains(err.Error(), "migrations pending") {
			msg = "database migrations are pending"
		}
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"error": errorf(503, "unavailable", msg)})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// bind decodes a JSON body strictly enough: malformed JSON is a 400.
func bind(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return badRequest("error reading request body")
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return badRequest("request body must be a JSON object")
	}
	if err := jsonlimit.Check(body, jsonlimit.MaxDepth); err != nil {
		return bodyError(err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return malformedJSON(body, err)
	}
	return nil
}

// malformedJSON is the 400 for a body that does not decode: where the
// decoder stopped, as a line and column (a flow file edited by hand is
// found at once), and why.
func malformedJSON(body []byte, err error) *apiError {
	why := jsonlimit.DecodeMessage(err)
	if line, col, ok := jsonlimit.Position(body, err); ok {
		return badRequest(fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, why))
	}
	return badRequest("malformed JSON: " + why)
}

func validUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

func (s *Server) pathUUID(c echo.Context, name, what string) (string, error) {
	id := c.Param(name)
	if !validUUID(id) {
		return "", errorf(http.StatusNotFound, "not_found", what+" "+id+" not found")
	}
	return id, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
