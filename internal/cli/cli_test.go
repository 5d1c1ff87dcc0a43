package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/client"
	"github.com/stitchd/stitchd/internal/demo"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

const cliToken = "cli-token"

// liveServer is a real stitchd (in process, isolated database) with the
// demo loaded and the demo worker on a loopback port.
type liveServer struct {
	app    *app.App
	env    map[string]string
	loaded *demo.Loaded
}

func startLive(t *testing.T, opts ...func(*app.Config)) *liveServer {
	t.Helper()
	_, dbURL := storetest.IsolatedDB(t)
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	cfg := app.Config{Addr: "127.0.0.1:0", DatabaseURL: dbURL, AuthToken: cliToken,
		PollInterval: 50 * time.Millisecond, DispatchTimeout: 2 * time.Second, Logger: quiet}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := app.New(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
	})
	secret, err := a.Store.WebhookSecret(ctx)
	require.NoError(t, err)
	w := demo.NewWorker(demo.WorkerConfig{Secret: secret, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, Logger: quiet})
	ws := httptest.NewServer(w)
	t.Cleanup(func() { ws.Close(); w.Close() })
	loaded, err := demo.Load(ctx, a.Store, demo.Options{WorkerURL: ws.URL})
	require.NoError(t, err)
	return &liveServer{app: a, loaded: loaded, env: map[string]string{"STITCHD_URL": a.URL, "STITCHD_AUTH_TOKEN": cliToken}}
}

func (s *liveServer) cli(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return runRoot(t, s.env, args...)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

const uxGraph = `{"nodes":[{"id":"approve","type":"UX","data":{"label":"OK?"}}],"edges":[]}`

func TestCLIFlowApplyAndList(t *testing.T) {
	t.Parallel()
	s := startLive(t)

	good := writeFile(t, "flow.json", `{"name":"cli-apply","graph":`+uxGraph+`}`)
	out, _, err := s.cli(t, "flow", "apply", good)
	require.NoError(t, err)
	fields := strings.Split(strings.TrimSpace(out), "\t")
	require.Len(t, fields, 4, out)
	require.True(t, isUUID(fields[0]), out)
	require.Equal(t, []string{"version 1", "created", "cli-apply"}, fields[1:])
	id := fields[0]

	out, _, err = s.cli(t, "flow", "apply", good)
	require.NoError(t, err)
	require.Equal(t, id+"\tversion 1\tunchanged\tcli-apply\n", out, "the same file again makes no version")

	changed := writeFile(t, "flow2.json", `{"name":"cli-apply","graph":{"nodes":[{"id":"approve","type":"UX","data":{"label":"Sure?"}}],"edges":[]}}`)
	out, _, err = s.cli(t, "flow", "apply", changed)
	require.NoError(t, err)
	require.Equal(t, id+"\tversion 2\tupdated\tcli-apply\n", out)

	out, _, err = s.cli(t, "flow", "apply", changed, "--json")
	require.NoError(t, err)
	var f client.Flow
	require.NoError(t, json.Unmarshal([]byte(out), &f))
	require.Equal(t, id, f.Id.String())
	require.Equal(t, 2, f.Version.Number)

	out, _, err = s.cli(t, "flow", "list")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out) // header, the demo, cli-apply
	require.Regexp(t, `^ID\s+NAME\s+VERSION\s+UPDATED$`, lines[0])
	require.Regexp(t, "(?m)^"+id+`\s+cli-apply\s+2\s`, out)
	require.Regexp(t, "(?m)^"+s.loaded.FlowID+`\s+Lead qualification\s+1\s`, out)

	// A second flow of the same name (the API allows it): apply changes
	// neither, as run start picks neither.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.app.URL+"/api/v1/flows",
		strings.NewReader(`{"name":"cli-apply","graph":`+uxGraph+`}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+cliToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	_, _, err = s.cli(t, "flow", "apply", good)
	require.ErrorContains(t, err, `several flows are named "cli-apply"`)
	out, _, err = s.cli(t, "flow", "list")
	require.NoError(t, err)
	require.Regexp(t, "(?m)^"+id+`\s+cli-apply\s+2\s`, out, "unchanged")
}

func TestCLIFlowApplyErrors(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	bad := writeFile(t, "bad.json", `{"name":"broken","graph":{"nodes":[
		{"id":"fetch","type":"Worker","data":{}},
		{"id":"split","type":"Splitter","data":{}}],
		"edges":[{"id":"e1","source":"fetch","target":"nowhere"}]}}`)
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantErr   string
		wantInErr []string // lines of stderr
	}{
		{"compile errors", []string{"flow", "apply", bad}, nil, "was refused",
			[]string{"nodes[0].data.webhookUrl, node fetch: worker \"fetch\" needs a webhookUrl (push) or a queue (pull)", "nodes[1].data.arrayPath, node split:", "edge e1"}},
		{"missing file", []string{"flow", "apply", filepath.Join(t.TempDir(), "none.json")}, nil, "no such file", nil},
		{"not JSON", []string{"flow", "apply", writeFile(t, "x.json", "name: x")}, nil, "not valid JSON: line 1, column 2: invalid character 'a'", nil},
		{"a slip on line 3", []string{"flow", "apply", writeFile(t, "slip.json", "{\"name\": \"x\",\n \"graph\": {\"nodes\": [],\n   \"edges\": [}}")},
			nil, "not valid JSON: line 3, column 14: invalid character '}'", nil},
		{"no name", []string{"flow", "apply", writeFile(t, "n.json", `{"graph":`+uxGraph+`}`)}, nil, "name is required", nil},
		{"wrong token", []string{"flow", "list"}, map[string]string{"STITCHD_AUTH_TOKEN": "nope"}, "401", nil},
		{"token flag beats env", []string{"flow", "list", "--token", "nope"}, nil, "401", nil},
		{"unknown flow", []string{"run", "start", "no-such-flow"}, nil, `no flow with id or name "no-such-flow"`, nil},
		{"bad input", []string{"run", "start", "Lead qualification", "--input", "{"}, nil, "--input is not valid JSON", nil},
		{"unknown run", []string{"run", "get", "00000000-0000-0000-0000-000000000000"}, nil, "404", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			for k, v := range s.env {
				env[k] = v
			}
			for k, v := range tt.env {
				env[k] = v
			}
			_, stderr, err := runRoot(t, env, tt.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr)
			for _, w := range tt.wantInErr {
				require.Contains(t, stderr, w)
			}
		})
	}
}

func TestCLIRunWatchApprove(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	_, _, err := s.cli(t, "flow", "apply", writeFile(t, "f.json", `{"name":"cli-ux","graph":`+uxGraph+`}`))
	require.NoError(t, err)

	cases := []struct {
		name       string
		approve    []string
		wantErr    string
		wantOutput string
	}{
		// The output: the node's input with the decision (the answer in it).
		{"approved", []string{"--output", `{"ok":1}`}, "", `"answer":{"ok":1}`},
		{"commented", []string{"--outcome", "approve", "--comment", "go"}, "", `"comment":"go"`},
		{"rejected", []string{"--reject", "no budget"}, "failed: no budget", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, _, err := s.cli(t, "run", "start", "cli-ux", "--input", `{"who":"ada"}`)
			require.NoError(t, err)
			runID := strings.TrimSpace(out)
			require.True(t, isUUID(runID), out)

			type result struct {
				out string
				err error
			}
			watched := make(chan result, 1)
			go func() {
				o, _, err := runRoot(t, s.env, "run", "watch", runID)
				watched <- result{o, err}
			}()
			waitFor(t, "the approval", func() bool {
				r, err := (&client.Client{BaseURL: s.app.URL, Token: cliToken}).GetRun(context.Background(), runID)
				require.NoError(t, err)
				return (*r.Nodes)["approve"].Status == "waiting_for_user"
			})
			if c.name == "commented" {
				_, stderr, err := s.cli(t, "approve", runID, "approve", "--outcome", "maybe")
				require.Error(t, err, "an outcome the node does not have")
				require.Contains(t, stderr+err.Error(), `outcome "maybe" is not one of`)
			}
			out, _, err = s.cli(t, append([]string{"approve", runID, "approve"}, c.approve...)...)
			require.NoError(t, err)
			require.Contains(t, out, runID)

			var res result
			select {
			case res = <-watched:
			case <-time.After(20 * time.Second):
				t.Fatal("run watch did not end with the run")
			}
			require.Contains(t, res.out, "run started")
			require.Contains(t, res.out, "approve with: stitchd approve "+runID+" approve")
			if c.wantErr != "" {
				require.Error(t, res.err)
				require.Contains(t, res.err.Error(), c.wantErr)
				require.Contains(t, res.out, "run failed")
				return
			}
			require.NoError(t, res.err)
			require.Contains(t, res.out, "run completed")
			require.Contains(t, res.out, c.wantOutput)

			out, _, err = s.cli(t, "run", "get", runID)
			require.NoError(t, err)
			require.Regexp(t, `status\s+completed`, out)
			require.Regexp(t, `approve\s+UX\s+completed\s+1`, out)

			// Watching a finished run replays it and ends at once.
			out, _, err = s.cli(t, "run", "watch", runID)
			require.NoError(t, err)
			require.Contains(t, out, "run completed")
		})
	}
}

func TestCLIWatchDemoRun(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	// Through the demo's hook: the run carries a lead across the board.
	code, body := httpDo(t, "POST", s.app.URL+"/hooks/lead", "",
		`{"name":"Ada","email":"ada@example.com","contacts":[{"name":"Ada","title":"CEO"},{"name":"Bob","title":"Intern"}]}`)
	require.Equal(t, http.StatusAccepted, code, body)
	var hook struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &hook))
	runID := hook.RunID
	done := make(chan error, 1)
	var watchOut string
	go func() {
		o, _, err := runRoot(t, s.env, "run", "watch", runID)
		watchOut = o
		done <- err
	}()
	waitFor(t, "the approval", func() bool {
		o, _, err := s.cli(t, "run", "get", runID, "--json")
		require.NoError(t, err)
		var r client.Run
		require.NoError(t, json.Unmarshal([]byte(o), &r))
		return (*r.Nodes)["approve"].Status == "waiting_for_user"
	})
	_, _, err := s.cli(t, "approve", runID, "approve")
	require.NoError(t, err)
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("run watch did not end")
	}
	require.NoError(t, err)
	for _, want := range []string{"enrich           running", "split            split into 2 items", "score_1          completed",
		"collect          completed", "qualify          completed", "handoff          completed", "nurture          skipped",
		"run completed", `"decision":{"answer":{"approved":true}`, `"outcome":"approve"`,
		"entity moved to Enriched", "entity moved to Qualified"} {
		require.Contains(t, watchOut, want)
	}
}

func TestCLIWebhookSecret(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	out, _, err := s.cli(t, "webhook-secret")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "whsec_"), out)
	resp := must(http.NewRequestWithContext(t.Context(), http.MethodGet, s.app.URL+"/api/v1/webhook-secret", nil))
	resp.Header.Set("Authorization", "Bearer "+cliToken)
	r, err := http.DefaultClient.Do(resp)
	require.NoError(t, err)
	defer r.Body.Close()
	var b struct {
		Secret string `json:"secret"`
	}
	require.NoError(t, json.NewDecoder(r.Body).Decode(&b))
	require.Equal(t, b.Secret+"\n", out)
}

// TestCLIWebhookSecretRotate: `stitchd webhook-secret rotate` prints the
// new secret, which the server then answers; the old one's overlap ends
// --grace later. With --flow it gives the flow a secret of its own.
func TestCLIWebhookSecretRotate(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	old, _, err := s.cli(t, "webhook-secret")
	require.NoError(t, err)
	out, stderr, err := s.cli(t, "webhook-secret", "rotate", "--grace", "1h")
	require.NoError(t, err, stderr)
	require.True(t, strings.HasPrefix(out, "whsec_"), out)
	require.NotEqual(t, old, out)
	require.Contains(t, stderr, "the old secret signs too until")
	now, _, err := s.cli(t, "webhook-secret")
	require.NoError(t, err)
	require.Equal(t, out, now)

	flow, _, err := s.cli(t, "flow", "apply", writeFile(t, "f.json", `{"name":"f","graph":`+uxGraph+`}`))
	require.NoError(t, err)
	flowID := strings.Split(flow, "\t")[0]
	require.True(t, isUUID(flowID), flow)
	own, _, err := s.cli(t, "webhook-secret", "rotate", "--flow", flowID, "--grace", "0s", "--json")
	require.NoError(t, err)
	var r struct {
		Secret string `json:"secret"`
		Scope  string `json:"scope"`
	}
	require.NoError(t, json.Unmarshal([]byte(own), &r), own)
	require.Equal(t, "flow", r.Scope)
	require.NotEqual(t, strings.TrimSpace(now), r.Secret)
	_, _, err = s.cli(t, "webhook-secret", "rotate", "--grace", "200h")
	require.Error(t, err, "past 7 days")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func isUUID(s string) bool {
	return len(s) == 36 && strings.Count(s, "-") == 4
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, cond, "%s", what)
}

// TestBinaryServeDemo is `make run`: `stitchd serve --demo` loads the demo
// (once), runs the demo worker in process, a lead fired with curl's request
// reaches the approval, and SIGTERM stops both.
func TestBinaryServeDemo(t *testing.T) {
	t.Parallel()
	bin := stitchdBinary(t)
	_, dbURL := storetest.IsolatedDB(t)
	workerAddr := freeAddr(t)
	// --demo keeps a development secret key in the data directory: a
	// temporary one, not the home directory's.
	dataDir := t.TempDir()
	start := func() *server {
		return startServeEnv(t, bin, dbURL, []string{"STITCHD_DATA_DIR=" + dataDir}, "--demo", "--demo-worker-addr", workerAddr,
			"--demo-min-delay", "10ms", "--demo-max-delay", "50ms")
	}
	s := start()
	waitFor(t, "the demo banner", func() bool { return strings.Contains(s.log(), "Fire a lead") })
	require.Contains(t, s.log(), "created board, flow, trigger")
	require.Contains(t, s.log(), "(sign in with the API token: --auth-token / STITCHD_AUTH_TOKEN)", "not make run's dev-token")

	code, body := httpDo(t, "POST", s.url+"/hooks/lead", "", `{"name":"Ada Lovelace","email":"ada@example.com","contacts":[{"name":"Ada","title":"CEO"}]}`)
	require.Equal(t, http.StatusAccepted, code, body)
	var hook struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &hook))
	c := &client.Client{BaseURL: s.url, Token: "x"}
	waitFor(t, "the approval", func() bool {
		r, err := c.GetRun(context.Background(), hook.RunID)
		require.NoError(t, err)
		return (*r.Nodes)["approve"].Status == "waiting_for_user"
	})
	require.Contains(t, s.log(), "demo worker: called back")
	s.stop(t)
	// The worker's port is released with the server.
	conn, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp", workerAddr)
	if err == nil {
		conn.Close()
		t.Fatal("the demo worker still listens after SIGTERM")
	}

	again := start()
	waitFor(t, "the demo banner", func() bool { return strings.Contains(again.log(), "Fire a lead") })
	require.Contains(t, again.log(), "(already loaded)")
	boards := struct {
		Boards []json.RawMessage `json:"boards"`
	}{}
	c.BaseURL = again.url
	require.NoError(t, c.Do(context.Background(), "GET", "/api/v1/boards", nil, &boards))
	require.Len(t, boards.Boards, 1)
	again.stop(t)
}

// TestVerbSettings: every setting of the demo, worker and client verbs names
// a flag of its command, and its environment variable sets it.
func TestVerbSettings(t *testing.T) {
	t.Parallel()
	root := newRoot(mapEnv(nil), io.Discard, io.Discard, Params{})
	values := map[string]string{"demo": "true", "demo-worker": "false", "fail-rate": "0.5", "min-delay": "5ms",
		"max-delay": "7ms", "demo-min-delay": "5ms", "demo-max-delay": "7ms", "log-format": "json", "log-level": "debug"}
	tests := []struct {
		cmd  []string
		list []setting
	}{
		{[]string{"serve"}, demoSettings},
		{[]string{"worker", "demo"}, workerSettings},
		{[]string{"flow", "apply"}, clientSettings},
		{[]string{"flow", "list"}, clientSettings},
		{[]string{"run", "start"}, clientSettings},
		{[]string{"run", "get"}, clientSettings},
		{[]string{"run", "watch"}, clientSettings},
		{[]string{"approve"}, clientSettings},
		{[]string{"webhook-secret"}, clientSettings},
		{[]string{"webhook-secret", "rotate"}, clientSettings},
	}
	for _, tt := range tests {
		cmd, _, err := root.Find(tt.cmd)
		require.NoError(t, err)
		for _, s := range tt.list {
			f := cmd.Flags().Lookup(s.flag)
			require.NotNil(t, f, "%v has no --%s", tt.cmd, s.flag)
			v, ok := values[s.flag]
			if !ok {
				v = "from-env-" + s.flag
			}
			fs := cmd.Flags()
			require.NoError(t, applyEnvFrom(fs, mapEnv(map[string]string{s.env: v}), tt.list))
			require.Equal(t, v, f.Value.String(), "%v --%s from %s", tt.cmd, s.flag, s.env)
			require.NoError(t, f.Value.Set(f.DefValue))
		}
	}
}

// TestWorkerDemoCommand runs `stitchd worker demo` on its own: it asks the
// server for the webhook secret, verifies the dispatches and calls back.
func TestWorkerDemoCommand(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	root := newRoot(mapEnv(map[string]string{"STITCHD_URL": s.app.URL, "STITCHD_AUTH_TOKEN": cliToken}), io.Discard, &logs, Params{})
	root.SetArgs([]string{"worker", "demo", "--addr", addr, "--min-delay", "1ms", "--max-delay", "5ms"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	waitFor(t, "the demo worker to listen", func() bool {
		c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	loaded, err := demo.Load(context.Background(), s.app.Store, demo.Options{WorkerURL: "http://" + addr})
	require.NoError(t, err)
	require.Equal(t, []string{"flow version"}, loaded.Created, "the demo flow now points at this worker")

	c := &client.Client{BaseURL: s.app.URL, Token: cliToken}
	r, err := c.StartRun(context.Background(), loaded.FlowID, json.RawMessage(`{"name":"Ada","email":"ada@example.com"}`))
	require.NoError(t, err)
	waitFor(t, "the approval", func() bool {
		r, err = c.GetRun(context.Background(), r.Id.String())
		require.NoError(t, err)
		require.NotEqual(t, "failed", string(r.Status))
		return (*r.Nodes)["approve"].Status == "waiting_for_user"
	})
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("worker demo did not stop with its context")
	}

	// Without a secret and without a usable token, it says why it cannot start.
	_, _, err = runRoot(t, map[string]string{"STITCHD_URL": s.app.URL, "STITCHD_AUTH_TOKEN": "wrong"}, "worker", "demo", "--addr", freeAddr(t))
	require.ErrorContains(t, err, "no --secret given, and asking "+s.app.URL+" for it failed")
	_, _, err = runRoot(t, nil, "worker", "demo", "--secret", "not-a-secret", "--addr", freeAddr(t))
	require.ErrorContains(t, err, "whsec_")
}

// TestCLIRunListCancelRetryApprovals: run list (filtered), run cancel,
// run retry's refusal in the server's words, approvals list.
func TestCLIRunListCancelRetryApprovals(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	_, _, err := s.cli(t, "flow", "apply", writeFile(t, "f.json", `{"name":"cli-list","graph":`+uxGraph+`}`))
	require.NoError(t, err)
	var ids []string
	for range 2 {
		out, _, err := s.cli(t, "run", "start", "cli-list", "--input", `{"who":"ada"}`)
		require.NoError(t, err)
		ids = append(ids, strings.TrimSpace(out))
	}
	waitFor(t, "both approvals", func() bool {
		out, _, err := s.cli(t, "approvals", "list")
		return err == nil && strings.Contains(out, ids[0]) && strings.Contains(out, ids[1])
	})
	out, _, err := s.cli(t, "approvals", "list")
	require.NoError(t, err)
	require.Regexp(t, ids[0]+`\s+approve\s+\S+\s+approve\|reject\s+\S+\s+anyone`, out)

	out, _, err = s.cli(t, "run", "list", "--flow", "cli-list", "--status", "running")
	require.NoError(t, err)
	require.Contains(t, out, ids[0])
	require.Contains(t, out, ids[1])

	out, _, err = s.cli(t, "run", "cancel", ids[0])
	require.NoError(t, err)
	require.Contains(t, out, "run "+ids[0]+" is cancelled")
	out, _, err = s.cli(t, "run", "list", "--flow", "cli-list", "--status", "cancelled", "--json")
	require.NoError(t, err)
	require.Contains(t, out, ids[0])
	require.NotContains(t, out, ids[1])
	out, _, err = s.cli(t, "approvals", "list")
	require.NoError(t, err)
	require.NotContains(t, out, ids[0], "a cancelled run waits for no one")

	_, stderr, err := s.cli(t, "run", "retry", ids[1], "approve")
	require.Error(t, err, "the node has not failed")
	require.Contains(t, stderr+err.Error(), "waiting_for_user")
	_, _, err = s.cli(t, "run", "list", "--status", "bogus")
	require.Error(t, err)
	for _, limit := range []string{"0", "-1", "501"} {
		_, _, err = s.cli(t, "run", "list", "--limit", limit)
		require.ErrorContains(t, err, "--limit must be from 1 to 500", limit)
	}
	out, _, err = s.cli(t, "run", "list", "--limit", "1")
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2, "a header and one run")
}

// TestCLIWrongTokenSaysHow: a refused token's error says how to give one.
func TestCLIWrongTokenSaysHow(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	env["STITCHD_AUTH_TOKEN"] = "wrong"
	_, _, err := runRoot(t, env, "flow", "list")
	require.Error(t, err)
	require.Contains(t, err.Error(), "missing or invalid API token")
	require.Contains(t, err.Error(), "STITCHD_AUTH_TOKEN")
}

// TestCLIRunStartWithEntity: run start --entity attaches an entity.
func TestCLIRunStartWithEntity(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	c := &client.Client{BaseURL: s.app.URL, Token: cliToken}
	var board struct{ ID string }
	require.NoError(t, c.Do(context.Background(), "POST", "/api/v1/boards",
		map[string]any{"name": "cli board", "sections": []map[string]any{{"id": "new", "name": "New"}}}, &board))
	var ent struct{ ID string }
	require.NoError(t, c.Do(context.Background(), "POST", "/api/v1/entities",
		map[string]any{"board_id": board.ID, "type": "lead", "name": "Ada"}, &ent))
	_, _, err := s.cli(t, "flow", "apply", writeFile(t, "f.json", `{"name":"cli-entity","board_id":"`+board.ID+`","graph":`+uxGraph+`}`))
	require.NoError(t, err)
	out, _, err := s.cli(t, "run", "start", "cli-entity", "--entity", ent.ID)
	require.NoError(t, err)
	r, err := c.GetRun(context.Background(), strings.TrimSpace(out))
	require.NoError(t, err)
	require.NotNil(t, r.EntityId)
	require.Equal(t, ent.ID, r.EntityId.String())
	_, stderr, err := s.cli(t, "run", "start", "cli-entity", "--entity", "not-a-uuid")
	require.Error(t, err)
	require.Contains(t, stderr+err.Error(), "entity_id must be a UUID")
}

// TestCLIRunGetSummariesTriggersRerun: run get sums a fan-out up (counts
// by status, the first failures, how many more) unless --all; trigger
// list names each trigger; run rerun runs a finished node again.
func TestCLIRunGetSummariesTriggersRerun(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	// Six items: four fail in their Transform (not numbers), two pass.
	graph := `{"nodes":[
		{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"num","type":"Transform","data":{"expression":"int(input) * 2"}},
		{"id":"gather","type":"Collector","data":{}}],
	"edges":[{"id":"e1","source":"split","target":"num"},{"id":"e2","source":"num","target":"gather"}]}`
	_, _, err := s.cli(t, "flow", "apply", writeFile(t, "f.json", `{"name":"cli-fan","graph":`+graph+`}`))
	require.NoError(t, err)
	out, _, err := s.cli(t, "run", "start", "cli-fan", "--input", `{"items":["1","a","b","2","c","d"]}`)
	require.NoError(t, err)
	id := strings.TrimSpace(out)
	waitFor(t, "the run to fail", func() bool {
		out, _, err := s.cli(t, "run", "get", id)
		return err == nil && strings.Contains(out, "status   failed")
	})
	out, _, err = s.cli(t, "run", "get", id)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^num ×6\s+Transform\s+completed 2, failed 4\s*$`, out)
	require.Regexp(t, `(?m)^  num_1\s+Transform\s+failed\s+1\s+\S`, out, "the first failures, by index")
	require.Contains(t, out, "  num_2 ")
	require.Contains(t, out, "  num_4 ")
	require.NotContains(t, out, "num_5", "past the first three")
	require.Contains(t, out, "… 1 more failed (--all lists them)")
	require.NotContains(t, out, "num_0", "a completed instance is counted, not listed")
	all, _, err := s.cli(t, "run", "get", id, "--all")
	require.NoError(t, err)
	for i := range 6 {
		require.Regexp(t, fmt.Sprintf(`(?m)^num_%d\s+Transform\s+(completed|failed)`, i), all)
	}
	require.NotContains(t, all, "×6")

	// trigger list: the demo flow's webhook.
	out, _, err = s.cli(t, "trigger", "list", "Lead qualification")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^ID\s+KIND\s+WHAT\s+ENABLED$`, out)
	require.Regexp(t, `(?m)^\S+\s+webhook\s+POST /hooks/lead\s+true$`, out)
	_, _, err = s.cli(t, "trigger", "list", "no-such-flow")
	require.Error(t, err)

	// run rerun: a completed UX step runs again, so the run waits again.
	_, _, err = s.cli(t, "flow", "apply", writeFile(t, "ux.json", `{"name":"cli-rerun","graph":`+uxGraph+`}`))
	require.NoError(t, err)
	out, _, err = s.cli(t, "run", "start", "cli-rerun")
	require.NoError(t, err)
	rid := strings.TrimSpace(out)
	waitFor(t, "the approval", func() bool {
		out, _, err := s.cli(t, "approvals", "list")
		return err == nil && strings.Contains(out, rid)
	})
	_, _, err = s.cli(t, "approve", rid, "approve")
	require.NoError(t, err)
	waitFor(t, "the run to complete", func() bool {
		out, _, err := s.cli(t, "run", "get", rid)
		return err == nil && strings.Contains(out, "status   completed")
	})
	out, _, err = s.cli(t, "run", "rerun", rid, "approve")
	require.NoError(t, err)
	require.Contains(t, out, "reran approve; run "+rid+" is running")
	_, stderr, err := s.cli(t, "run", "rerun", rid, "nowhere")
	require.Error(t, err)
	require.Contains(t, stderr+err.Error(), "nowhere")
}

// TestCLIWorkspace: --workspace (or STITCHD_WORKSPACE) makes the verbs act
// in a workspace: a flow applied there is listed there only.
func TestCLIWorkspace(t *testing.T) {
	t.Parallel()
	s := startLive(t)
	_, err := s.app.Store.CreateWorkspace(context.Background(), store.Workspace{Slug: "sales", Name: "Sales", CreatedAt: time.Now(), UpdatedAt: time.Now()})
	require.NoError(t, err)
	good := writeFile(t, "flow.json", `{"name":"sales-only","graph":`+uxGraph+`}`)
	_, _, err = s.cli(t, "flow", "apply", good, "--workspace", "sales")
	require.NoError(t, err)
	out, _, err := s.cli(t, "flow", "list", "--workspace", "sales")
	require.NoError(t, err)
	require.Contains(t, out, "sales-only")
	require.NotContains(t, out, "Lead qualification")
	out, _, err = runRoot(t, map[string]string{"STITCHD_URL": s.app.URL, "STITCHD_AUTH_TOKEN": cliToken, "STITCHD_WORKSPACE": "sales"}, "flow", "list")
	require.NoError(t, err)
	require.Contains(t, out, "sales-only")
	out, _, err = s.cli(t, "flow", "list")
	require.NoError(t, err)
	require.NotContains(t, out, "sales-only")
	require.Contains(t, out, "Lead qualification")
	// The admin token belongs to every workspace.
	out, _, err = s.cli(t, "workspace", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^default\s+Default\s+admin$`, out)
	require.Regexp(t, `(?m)^sales\s+Sales\s+admin$`, out)
}
