package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// mapEnv is a fake environment.
func mapEnv(m map[string]string) envLookup {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// configSettings is every setting with its default, a value to set through
// the environment and another to set with the flag.
var configSettings = []struct {
	flag, env          string
	def, envVal, flagV string
	get                func(o *options) string
}{
	{"addr", "STITCHD_ADDR", "127.0.0.1:8080", "0.0.0.0:9000", "127.0.0.1:7000", func(o *options) string { return o.addr }},
	{"database-url", "DATABASE_URL", "", "postgres://env@db/env", "postgres://flag@db/flag", func(o *options) string { return o.databaseURL }},
	{"session-database-url", "STITCHD_SESSION_DATABASE_URL", "", "postgres://env@db/direct", "postgres://flag@db/direct",
		func(o *options) string { return o.sessionDatabaseURL }},
	{"base-url", "STITCHD_BASE_URL", "", "https://env.example", "https://flag.example", func(o *options) string { return o.baseURL }},
	{"auth-token", "STITCHD_AUTH_TOKEN", "", "env-token", "flag-token", func(o *options) string { return o.authToken }},
	{"metrics-token", "STITCHD_METRICS_TOKEN", "", "env-secret", "flag-secret", func(o *options) string { return o.metricsToken }},
	{"log-format", "STITCHD_LOG_FORMAT", "text", "json", "text", func(o *options) string { return o.logFormat }},
	{"log-level", "STITCHD_LOG_LEVEL", "info", "debug", "warn", func(o *options) string { return o.logLevel }},
	{"body-limit", "STITCHD_BODY_LIMIT", "1048576", "2048", "4096", func(o *options) string { return strconv.FormatInt(o.bodyLimit, 10) }},
	{"max-fanout-items", "STITCHD_MAX_FANOUT_ITEMS", "100000", "250000", "5", func(o *options) string { return strconv.Itoa(o.maxFanOutItems) }},
	{"expr-memory", "STITCHD_EXPR_MEMORY", "67108864", "2097152", "33554432", func(o *options) string { return strconv.FormatInt(o.exprMemory, 10) }},
	{"code-memory", "STITCHD_CODE_MEMORY", "67108864", "16777216", "33554432", func(o *options) string { return strconv.FormatInt(o.codeMemory, 10) }},
	{"code-concurrency", "STITCHD_CODE_CONCURRENCY", "2", "4", "3", func(o *options) string { return strconv.Itoa(o.codeConcurrency) }},
	{"expr-timeout", "STITCHD_EXPR_TIMEOUT", "1s", "250ms", "5s", func(o *options) string { return o.exprTimeout.String() }},
	{"max-run-nodes", "STITCHD_MAX_RUN_NODES", "1000000", "50000", "7", func(o *options) string { return strconv.Itoa(o.maxRunNodes) }},
	{"data-dir", "STITCHD_DATA_DIR", "", "/env/pg", "/flag/pg", func(o *options) string { return o.dataDir }},
	{"local-postgres", "STITCHD_LOCAL_POSTGRES", "", "none", "postgres://x@127.0.0.1:1/postgres", func(o *options) string { return o.localPostgres }},
	{"dispatch-timeout", "STITCHD_DISPATCH_TIMEOUT", "10s", "3s", "4s", func(o *options) string { return o.dispatchTimeout.String() }},
	{"poll-interval", "STITCHD_POLL_INTERVAL", "1s", "250ms", "2s", func(o *options) string { return o.pollInterval.String() }},
	{"worker-private-addresses", "STITCHD_WORKER_PRIVATE_ADDRESSES", "allow", "deny", "allow", func(o *options) string { return o.privateAddresses }},
	{"worker-allow-cidrs", "STITCHD_WORKER_ALLOW_CIDRS", "", "10.0.0.0/8", "127.0.0.1/32", func(o *options) string { return o.allowCIDRs }},
	{"trigger-rate", "STITCHD_TRIGGER_RATE", "50", "5", "0.5", func(o *options) string { return strconv.FormatFloat(o.triggerRate, 'f', -1, 64) }},
	{"login-concurrency", "STITCHD_LOGIN_CONCURRENCY", "0", "8", "3", func(o *options) string { return strconv.Itoa(o.loginConcurrency) }},
	{"pprof-addr", "STITCHD_PPROF_ADDR", "", "127.0.0.1:6060", "127.0.0.1:6061", func(o *options) string { return o.pprofAddr }},
	{"notify-url", "STITCHD_NOTIFY_URL", "", "https://env.example/n", "https://flag.example/n", func(o *options) string { return o.notifyURL }},
	{"retention", "STITCHD_RETENTION", "", "30d", "P7D", func(o *options) string { return o.retention }},
	{"analytics-roll-interval", "STITCHD_ANALYTICS_ROLL_INTERVAL", "30s", "1m0s", "0s", func(o *options) string { return o.analyticsRollInterval.String() }},
	{"archive-url", "STITCHD_ARCHIVE_URL", "", "https://env.example/a", "https://flag.example/a", func(o *options) string { return o.archiveURL }},
	{"dispatch-rate", "STITCHD_DISPATCH_RATE", "", "a.example=5", "b.example:8080=0.5", func(o *options) string { return o.dispatchRate }},
	{"session-ttl", "STITCHD_SESSION_TTL", "12h0m0s", "1h0m0s", "30m0s", func(o *options) string { return o.sessionTTL.String() }},
	{"trust-proxy", "STITCHD_TRUST_PROXY", "false", "true", "false", func(o *options) string { return strconv.FormatBool(o.trustProxy) }},
	{"oidc-issuer", "STITCHD_OIDC_ISSUER", "", "https://env.example/id", "https://flag.example/id", func(o *options) string { return o.oidcIssuer }},
	{"oidc-client-id", "STITCHD_OIDC_CLIENT_ID", "", "env-client", "flag-client", func(o *options) string { return o.oidcClientID }},
	{"oidc-client-secret", "STITCHD_OIDC_CLIENT_SECRET", "", "env-secret", "flag-secret", func(o *options) string { return o.oidcClientSecret }},
	{"oidc-groups-claim", "STITCHD_OIDC_GROUPS_CLAIM", "groups", "roles", "teams", func(o *options) string { return o.oidcGroupsClaim }},
	{"oidc-default-role", "STITCHD_OIDC_DEFAULT_ROLE", "viewer", "none", "approver", func(o *options) string { return o.oidcDefaultRole }},
	{"oidc-scopes", "STITCHD_OIDC_SCOPES", "openid email profile", "openid,email,groups", "openid email", func(o *options) string { return o.oidcScopes }},
}

// TestConfigSettingsComplete keeps configSettings in step with main.go.
func TestConfigSettingsComplete(t *testing.T) {
	t.Parallel()
	want := map[string]string{}
	for _, s := range settings {
		want[s.flag] = s.env
	}
	got := map[string]string{}
	for _, s := range configSettings {
		got[s.flag] = s.env
	}
	require.Equal(t, want, got)

	// Every server flag has an environment variable.
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var o options
	addServerFlags(fs, &o)
	fs.VisitAll(func(f *pflag.Flag) {
		require.Contains(t, want, f.Name, "flag --%s has no environment variable", f.Name)
	})

	// serve and migrate both take every setting.
	root := newRoot(mapEnv(nil), io.Discard, io.Discard, Params{})
	for _, name := range []string{"serve", "migrate"} {
		cmd, _, err := root.Find([]string{name})
		require.NoError(t, err)
		require.Equal(t, name, cmd.Name())
		for _, s := range settings {
			require.NotNil(t, cmd.Flags().Lookup(s.flag), "%s has no --%s", name, s.flag)
		}
	}
}

func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	for _, s := range configSettings {
		cases := []struct {
			name string
			args []string
			env  map[string]string
			want string
		}{
			{"default", nil, nil, s.def},
			{"env over default", nil, map[string]string{s.env: s.envVal}, s.envVal},
			{"empty env is unset", nil, map[string]string{s.env: ""}, s.def},
			{"flag over default", []string{"--" + s.flag + "=" + s.flagV}, nil, s.flagV},
			{"flag over env", []string{"--" + s.flag, s.flagV}, map[string]string{s.env: s.envVal}, s.flagV},
		}
		if s.def == "false" || s.def == "true" {
			// A boolean flag takes its value only as --flag=value.
			cases[4].args = []string{"--" + s.flag + "=" + s.flagV}
		}
		for _, c := range cases {
			t.Run(s.flag+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
				var o options
				addServerFlags(fs, &o)
				require.NoError(t, fs.Parse(c.args))
				require.NoError(t, applyEnv(fs, mapEnv(c.env)))
				require.Equal(t, c.want, s.get(&o))
				// Every other setting keeps its default: no cross-wiring.
				for _, other := range configSettings {
					if other.flag != s.flag {
						require.Equal(t, other.def, other.get(&o), "--%s changed by %s", other.flag, s.env)
					}
				}
			})
		}
	}
}

func TestConfigAllFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	for _, s := range configSettings {
		env[s.env] = s.envVal
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	var o options
	addServerFlags(fs, &o)
	require.NoError(t, fs.Parse([]string{"--addr", "127.0.0.1:1234"}))
	require.NoError(t, applyEnv(fs, mapEnv(env)))
	for _, s := range configSettings {
		want := s.envVal
		if s.flag == "addr" {
			want = "127.0.0.1:1234"
		}
		require.Equal(t, want, s.get(&o), s.flag)
	}
}

func TestConfigInvalidEnv(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"lots", "1.5", "-", "1MiB"} {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		var o options
		addServerFlags(fs, &o)
		require.NoError(t, fs.Parse(nil))
		err := applyEnv(fs, mapEnv(map[string]string{"STITCHD_BODY_LIMIT": v}))
		require.Error(t, err, v)
		require.Contains(t, err.Error(), "STITCHD_BODY_LIMIT", v)
		require.Contains(t, err.Error(), v)
	}
}

// runRoot runs the CLI in process.
func runRoot(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(mapEnv(env), &out, &errb, Params{})
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out, _, err := runRoot(t, nil, "version")
	require.NoError(t, err)
	require.Equal(t, "stitchd dev\n", out)
}

func TestCommandsApplyEnv(t *testing.T) {
	t.Parallel()
	_, dbURL := storetest.IsolatedDB(t)
	// A database nobody listens on: if a command wrongly went ahead, it
	// fails fast instead of serving.
	nowhere := "postgres://postgres@" + freeAddr(t) + "/x?sslmode=disable"
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string // "" = success
	}{
		{"serve: invalid body limit in env", map[string]string{"STITCHD_BODY_LIMIT": "big", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "STITCHD_BODY_LIMIT"},
		{"migrate: invalid body limit in env", map[string]string{"STITCHD_BODY_LIMIT": "big", "DATABASE_URL": nowhere},
			[]string{"migrate"}, "STITCHD_BODY_LIMIT"},
		{"serve: fan-out limit below 1", map[string]string{"STITCHD_MAX_FANOUT_ITEMS": "0", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--max-fanout-items must be at least 1, not 0"},
		{"serve: expression memory below 1 MiB", map[string]string{"STITCHD_EXPR_MEMORY": "1000", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--expr-memory must be at least 1048576 (1 MiB), not 1000"},
		{"serve: expression time over a minute", map[string]string{"STITCHD_EXPR_TIMEOUT": "2m", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--expr-timeout must be between 1ms and 1m, not 2m0s"},
		{"serve: run nodes below 1", map[string]string{"STITCHD_MAX_RUN_NODES": "0", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--max-run-nodes must be at least 1, not 0"},
		{"serve: negative trigger rate", map[string]string{"STITCHD_TRIGGER_RATE": "-1", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--trigger-rate must be a number of runs a second, 0 or more"},
		{"serve: negative login concurrency", map[string]string{"STITCHD_LOGIN_CONCURRENCY": "-1", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--login-concurrency must be 0 (twice GOMAXPROCS) or more"},
		{"serve: retention too short", map[string]string{"STITCHD_RETENTION": "5m", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--retention must be at least an hour"},
		{"serve: retention unreadable", map[string]string{"STITCHD_RETENTION": "a month", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--retention must be days (30d)"},
		{"serve: notify url not http", map[string]string{"STITCHD_NOTIFY_URL": "ftp://x", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "--notify-url must be an absolute http(s) URL"},
		{"serve: secret key not 32 bytes", map[string]string{"STITCHD_SECRET_KEY": "c2hvcnQ=", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "STITCHD_SECRET_KEY must be 32 bytes"},
		{"serve: secret key neither hex nor base64", map[string]string{"STITCHD_SECRET_KEY": "not a key!", "DATABASE_URL": nowhere},
			[]string{"serve", "--addr", "127.0.0.1:0"}, "it is neither"},
		{"migrate: log format from env", map[string]string{"STITCHD_LOG_FORMAT": "xml", "DATABASE_URL": dbURL}, []string{"migrate"}, "invalid log format"},
		{"migrate: flag beats invalid env", map[string]string{"STITCHD_LOG_FORMAT": "xml", "STITCHD_BODY_LIMIT": "big"},
			[]string{"migrate", "--log-format", "json", "--body-limit", "10", "--database-url", dbURL}, ""},
		{"migrate: database url from env", map[string]string{"DATABASE_URL": dbURL}, []string{"migrate"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, err := runRoot(t, tt.env, tt.args...)
			if tt.wantErr == "" {
				require.NoError(t, err, stderr)
				require.Contains(t, stderr, "database is migrated")
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestMigrateFromEnvDatabaseURL(t *testing.T) {
	t.Parallel()
	dbURL := storetest.EmptyDB(t)
	_, stderr, err := runRoot(t, map[string]string{"DATABASE_URL": dbURL, "STITCHD_LOG_FORMAT": "json"}, "migrate")
	require.NoError(t, err, stderr)
	require.True(t, strings.HasPrefix(strings.TrimSpace(stderr), "{"), "STITCHD_LOG_FORMAT=json gives JSON logs: %s", stderr)
	require.Equal(t, storetest.EveryMigrationOnce(t), storetest.GooseVersions(t, dbURL))
}

// ---------------------------------------------------------------- binary

// stitchdBinary builds cmd/stitchd into the test's temp dir.
func stitchdBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "stitchd")
	out, err := exec.CommandContext(t.Context(), goBin, "build", "-o", bin, "github.com/stitchd/stitchd/cmd/stitchd").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// cleanEnv is the environment without stitchd's variables, so that only
// flags configure the child.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "STITCHD_") || k == "DATABASE_URL" || k == "GOGC" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// server is a running `stitchd serve`.
type server struct {
	cmd    *exec.Cmd
	url    string
	logs   string // path of its stderr
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

func (s *server) log() string {
	b, _ := os.ReadFile(s.logs)
	return string(b)
}

// startServe starts `stitchd serve` (with extra arguments) and waits for
// /readyz to answer 200.
func startServe(t *testing.T, bin, dbURL string, extra ...string) *server {
	t.Helper()
	return startServeEnv(t, bin, dbURL, nil, extra...)
}

// startServeEnv is startServe with variables added to its environment.
func startServeEnv(t *testing.T, bin, dbURL string, env []string, extra ...string) *server {
	t.Helper()
	addr := freeAddr(t)
	logs := filepath.Join(t.TempDir(), "stderr.log")
	lf, err := os.Create(logs)
	require.NoError(t, err)
	t.Cleanup(func() { lf.Close() })
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"serve", "--addr", addr, "--database-url", dbURL, "--auth-token", "x"}, extra...)...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	require.NoError(t, cmd.Start())
	s := &server{cmd: cmd, url: "http://" + addr, logs: logs, exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})

	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/readyz", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		require.True(t, time.Now().Before(deadline), "stitchd not ready within 30s; log:\n%s", s.log())
		select {
		case <-s.exited:
			t.Fatalf("stitchd exited before becoming ready (%v); log:\n%s", s.err, s.log())
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM and requires a clean exit within 15s.
func (s *server) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("stitchd did not exit within 15s of SIGTERM; log:\n%s", s.log())
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		t.Fatalf("stitchd exited with code %d after SIGTERM; log:\n%s", ee.ExitCode(), s.log())
	}
	require.NoError(t, s.err, s.log())
	require.Equal(t, 0, s.cmd.ProcessState.ExitCode())
}

func httpDo(t *testing.T, method, url, auth, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	require.NoError(t, err)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestBinaryMigrateServeShutdown(t *testing.T) {
	t.Parallel()
	bin := stitchdBinary(t)
	dbURL := storetest.EmptyDB(t)

	// Two concurrent `stitchd migrate` on an empty database both succeed
	// and apply each migration once.
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(t.Context(), bin, "migrate", "--database-url", dbURL)
			cmd.Env = cleanEnv()
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range outs {
		require.NoError(t, errs[i], "migrate #%d: %s", i, outs[i])
	}
	require.Equal(t, storetest.EveryMigrationOnce(t), storetest.GooseVersions(t, dbURL))

	s := startServe(t, bin, dbURL)
	code, body := httpDo(t, "GET", s.url+"/healthz", "", "")
	require.Equal(t, http.StatusOK, code, body)
	// The server's garbage collector runs at GOGC=200 unless the
	// environment sets GOGC (docs/configuration.md).
	code, body = httpDo(t, "GET", s.url+"/metrics", "", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "\ngo_gc_gogc_percent 200\n")
	// STITCHD_METRICS_TOKEN closes /metrics to scrapers without it.
	s2 := startServeEnv(t, bin, dbURL, []string{"GOGC=50", "STITCHD_METRICS_TOKEN=scrape-secret"})
	code, body = httpDo(t, "GET", s2.url+"/metrics", "", "")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = httpDo(t, "GET", s2.url+"/metrics", "Bearer scrape-secret", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "\ngo_gc_gogc_percent 50\n")
	s2.stop(t)
	code, body = httpDo(t, "GET", s.url+"/api/v1/flows", "", "")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = httpDo(t, "GET", s.url+"/api/v1/flows", "Bearer wrong", "")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = httpDo(t, "POST", s.url+"/api/v1/flows", "Bearer x",
		`{"name":"e2e","graph":{"nodes":[{"id":"approve","type":"UX","data":{}}],"edges":[]}}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = httpDo(t, "GET", s.url+"/api/v1/flows", "Bearer x", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"e2e"`)

	s.stop(t)
	require.Contains(t, s.log(), "shutting down")
	// The port is released.
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", strings.TrimPrefix(s.url, "http://"))
	require.NoError(t, err)
	l.Close()
}

// TestBinaryShutdownWithOpenStream stops stitchd while a client (a
// dashboard) holds the event stream open: shutdown must still be clean and
// prompt.
func TestBinaryShutdownWithOpenStream(t *testing.T) {
	t.Parallel()
	bin := stitchdBinary(t)
	_, dbURL := storetest.IsolatedDB(t)
	s := startServe(t, bin, dbURL)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/api/v1/events", nil)
	require.NoError(t, err)
	r.Header.Set("Authorization", "Bearer x")
	resp, err := http.DefaultClient.Do(r) //nolint:bodyclose // closed by the defer below (bodyclose misses it: a goroutine reads it too)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
	// Drain the stream in the background; it ends when stitchd closes it.
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
		}
	}()

	start := time.Now()
	s.stop(t)
	t.Logf("stopped in %s", time.Since(start))
	select {
	case <-streamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream was not closed by the shutdown")
	}
}

func TestParseRetention(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "720h": 720 * time.Hour, "P7D": 7 * 24 * time.Hour, "1h": time.Hour} {
		got, err := parseRetention(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "d", "-3d", "59m", "30 days", "999999d"} {
		_, err := parseRetention(in)
		require.Error(t, err, in)
	}
}

func TestParseDispatchRates(t *testing.T) {
	t.Parallel()
	r, err := parseDispatchRates("API.example.com=50, 127.0.0.1:9000=0.5")
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"api.example.com": 50, "127.0.0.1:9000": 0.5}, r)
	for _, bad := range []string{"x", "=5", "a=0", "a=-1", "a=b", "a=5,a=6", "a=Inf", "a/b=1", "a=NaN"} {
		_, err := parseDispatchRates(bad)
		require.Error(t, err, bad)
	}
}

// TestOIDCSettings: the OIDC flags become web.OIDCConfig; "none" (or
// empty) is no default role, since an empty variable counts as unset.
func TestOIDCSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args     []string
		env      map[string]string
		role     string
		scopes   []string
		enabled  bool
		groupsCl string
	}{
		{nil, nil, "viewer", []string{"openid", "email", "profile"}, false, "groups"},
		{[]string{"--oidc-issuer=https://id.example", "--oidc-client-id=s", "--oidc-default-role="}, nil, "", []string{"openid", "email", "profile"}, true, "groups"},
		{nil, map[string]string{"STITCHD_OIDC_ISSUER": "https://id.example", "STITCHD_OIDC_CLIENT_ID": "s", "STITCHD_OIDC_DEFAULT_ROLE": "None",
			"STITCHD_OIDC_SCOPES": "openid, email,groups", "STITCHD_OIDC_GROUPS_CLAIM": "roles"}, "", []string{"openid", "email", "groups"}, true, "roles"},
	} {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		var o options
		addServerFlags(fs, &o)
		require.NoError(t, fs.Parse(c.args))
		require.NoError(t, applyEnv(fs, mapEnv(c.env)))
		cfg := o.config(slog.New(slog.DiscardHandler)).OIDC
		require.Equal(t, c.role, cfg.DefaultRole, c.args)
		require.Equal(t, c.scopes, cfg.Scopes, c.args)
		require.Equal(t, c.enabled, cfg.Enabled(), c.args)
		require.Equal(t, c.groupsCl, cfg.GroupsClaim, c.args)
		require.NoError(t, cfg.Check())
	}
}

func TestVersionOf(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1.2.3", versionOf("1.2.3", nil))
	require.Equal(t, "dev", versionOf("dev", nil))
	require.Equal(t, "v0.4.0", versionOf("dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}))
	bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-25T14:00:00Z"},
		{Key: "vcs.modified", Value: "true"}}}
	require.Equal(t, "dev 0123456789ab 2026-11-25T14:00:00Z (modified)", versionOf("dev", bi))
	require.Equal(t, "dev", versionOf("dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}))
}

// TestServeStopsItsOwnClusterOnCtrlC: with no server to use, serve starts a
// throwaway cluster (make run on a machine without Postgres); Ctrl-C
// (SIGINT) stops stitchd and that cluster with it — no postmaster left, its
// port closed. As root, the data directory's parents are left as they were.
func TestServeStopsItsOwnClusterOnCtrlC(t *testing.T) {
	t.Parallel()
	bin := stitchdBinary(t)
	parent, err := os.MkdirTemp("", "stitchd-run-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	dir := filepath.Join(parent, "pg")
	s := startServe(t, bin, "", "--local-postgres", "none", "--data-dir", dir)
	require.Contains(t, s.log(), "started a throwaway PostgreSQL cluster in "+dir)
	pid, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	require.NoError(t, err, "the cluster runs")
	lines := strings.Split(string(pid), "\n")
	require.GreaterOrEqual(t, len(lines), 4)
	port := strings.TrimSpace(lines[3])
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", "127.0.0.1:"+port)
	require.NoError(t, err, "the cluster listens on %s", port)
	conn.Close()

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("stitchd did not exit within 30s of SIGINT; log:\n%s", s.log())
	}
	require.NoError(t, s.err, s.log())
	require.Contains(t, s.log(), "stopped the throwaway PostgreSQL cluster")
	_, err = os.Stat(filepath.Join(dir, "postmaster.pid"))
	require.ErrorIs(t, err, os.ErrNotExist, "no postmaster is left")
	_, err = (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", "127.0.0.1:"+port)
	require.Error(t, err, "nothing listens on the cluster's port")
	st, err := os.Stat(parent)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm(), "the parent's mode is unchanged")
}
