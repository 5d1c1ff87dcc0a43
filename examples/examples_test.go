// Package examples_test runs every example worker against a real stitchd:
// a run whose Worker node points at the example (push) or waits in the
// queue it polls (pull) completes with the example's output, a dispatch
// with a bad signature is refused, and a pulling example stops gracefully
// on SIGTERM.
package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/client"
	"github.com/stitchd/stitchd/internal/syncbuf"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/internal/testkit/instance"
	"github.com/stitchd/stitchd/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const token = "examples-token"

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// buildGoWorker compiles examples/go-worker.
func buildGoWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "go-worker")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./go-worker").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// startWorker runs an example worker (or a stitchd program) on a free
// port and waits until it accepts connections.
func startWorker(t *testing.T, secret string, argv ...string) (url string, logs *syncbuf.Buffer) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...)
	// ADDR for a worker, STITCHD_ADDR for a stitchd program.
	cmd.Env = append(os.Environ(), "STITCHD_WEBHOOK_SECRET="+secret, "ADDR="+addr, "STITCHD_ADDR="+addr)
	logs = &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	listening := false
	testkit.Eventually(t, 30*time.Second, func() bool {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", addr)
		if err == nil {
			c.Close()
			listening = true
			return true
		}
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}, "%v to listen:\n%s", argv, logs)
	require.True(t, listening, "%v exited before listening:\n%s", argv, logs)
	return "http://" + addr, logs
}

// TestExampleWorkers: each example worker against one real stitchd,
// pushed to (its dispatches signed: an unsigned or wrongly signed one is
// refused) and pulling (examplePull).
func TestExampleWorkers(t *testing.T) {
	t.Parallel()
	s := instance.Start(t)
	ctx := context.Background()
	c := s.Client
	secret, err := c.WebhookSecret(ctx) // as a person would: stitchd webhook-secret
	require.NoError(t, err)
	workerToken := s.WorkerToken("examples")

	for lang, argvOf := range exampleArgv(t) {
		argv := argvOf(t) // the Go example built once
		t.Run(lang+"/pull", func(t *testing.T) {
			t.Parallel()
			examplePull(t, s, workerToken, lang, argv)
		})
		t.Run(lang+"/push", func(t *testing.T) {
			t.Parallel()
			url, logs := startWorker(t, secret, argv...)

			// A dispatch that is not signed with the secret is refused.
			for _, bad := range []string{"", callbacks.SignWebhook([]byte("another key, 16+ bytes"), "msg_x", time.Now().Unix(), []byte(`{}`))} {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/greet", strings.NewReader(`{}`))
				require.NoError(t, err)
				req.Header.Set("webhook-id", "msg_x")
				req.Header.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
				if bad != "" {
					req.Header.Set("webhook-signature", bad)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "signature %q", bad)
			}

			graph := fmt.Sprintf(`{"nodes":[{"id":"greet","type":"Worker","data":{"webhookUrl":%q,"timeoutSeconds":30}}],"edges":[]}`, url+"/greet")
			f, err := c.CreateFlow(ctx, client.FlowSpec{Name: "example " + lang, Graph: instance.Graph(t, graph)})
			require.NoError(t, err)
			for i, name := range []string{"Ada", "Grace"} {
				r, err := c.StartRun(ctx, f.Id.String(), json.RawMessage(`{"name":"`+name+`"}`))
				require.NoError(t, err)
				testkit.Eventually(t, 30*time.Second, func() bool {
					r, err = c.GetRun(ctx, r.Id.String())
					require.NoError(t, err)
					return client.Finished(r)
				}, "run %d to finish; worker log:\n%s", i, logs)
				require.Equal(t, "completed", string(r.Status), "worker log:\n%s", logs)
				var out struct {
					Worker   string `json:"worker"`
					Greeting string `json:"greeting"`
					Node     string `json:"node"`
					Attempt  int    `json:"attempt"`
				}
				require.NoError(t, json.Unmarshal([]byte(instance.JSON(t, r.Output)), &out), instance.JSON(t, r.Output))
				require.Equal(t, lang, out.Worker)
				require.Equal(t, "Hello, "+name+"!", out.Greeting)
				require.Equal(t, "greet", out.Node)
				require.Equal(t, 1, out.Attempt)
			}
			// The worker sent a heartbeat before its result.
			var events []client.Event
			runs := struct {
				Runs []client.Run `json:"runs"`
			}{}
			require.NoError(t, c.Do(ctx, "GET", "/api/v1/runs?flow_id="+f.Id.String(), nil, &runs))
			require.Len(t, runs.Runs, 2)
			require.NoError(t, c.RunEvents(ctx, runs.Runs[0].Id.String(), 0, func(e client.Event) error {
				events = append(events, e)
				if e.Type == "run.completed" {
					return client.ErrStop
				}
				return nil
			}))
			var types []string
			for _, e := range events {
				types = append(types, e.Type)
			}
			require.Contains(t, types, "node.heartbeat")
		})
	}
}

// exampleArgv is how each example worker is started.
func exampleArgv(t *testing.T) map[string]func(t *testing.T) []string {
	t.Helper()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 is needed for the Python example")
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed for the Node example")
	return map[string]func(t *testing.T) []string{
		"go":     func(t *testing.T) []string { return []string{buildGoWorker(t)} },
		"python": func(*testing.T) []string { return []string{python, "python-worker/worker.py"} },
		"node":   func(*testing.T) []string { return []string{node, "node-worker/worker.js"} },
	}
}

// examplePull: an example worker with QUEUE set polls that queue with a
// worker token: runs of a Worker node waiting there complete with its
// output (a heartbeat before it), the attempt names the worker, and
// SIGTERM stops it gracefully (exit status 0).
func examplePull(t *testing.T, s *instance.Stitchd, token, lang string, args []string) {
	queue := "examples-" + lang
	cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "QUEUE="+queue, "STITCHD_URL="+s.URL, "STITCHD_WORKER_TOKEN="+token,
		"WORKER_ID="+lang+"-example")
	logs := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	testkit.Eventually(t, 30*time.Second, func() bool {
		return len(s.Queue(queue).Workers) == 1
	}, "the %s example to poll %s; log:\n%s", lang, queue, logs)

	flow := s.Flow("pull example "+lang, map[string]any{"queue": queue})
	for _, name := range []string{"Ada", "Grace"} {
		id := s.StartRun(flow, map[string]any{"name": name})
		r := s.WaitRun(id)
		require.Equal(t, "completed", string(r.Status), "worker log:\n%s", logs)
		require.JSONEq(t, fmt.Sprintf(`{"worker": %q, "greeting": "Hello, %s!", "node": "work", "attempt": 1}`, lang, name),
			instance.JSON(t, r.Output))
		var raw json.RawMessage
		require.NoError(t, s.Client.Do(t.Context(), "GET", "/api/v1/runs/"+id, nil, &raw))
		require.Contains(t, string(raw), `"worker":"`+lang+`-example"`)
		var types []string
		for _, e := range s.Events(id) {
			types = append(types, e.Type)
		}
		require.Contains(t, types, "node.heartbeat")
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "the exit after SIGTERM; log:\n%s", logs)
	case <-time.After(15 * time.Second):
		t.Fatalf("the %s example did not stop on SIGTERM; log:\n%s", lang, logs)
	}
}

// TestCustomNodeProgram: examples/custom-node — a program in a module of
// its own that adds a node type through the public package server — is
// built, serves on a database of its own, lists its type among the
// built-in ones, refuses data its schema refuses and runs a flow that
// uses it.
func TestCustomNodeProgram(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "custom-node")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Dir = "custom-node"
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build (examples/custom-node, its own module): %s", out)

	_, dbURL := storetest.IsolatedDB(t)
	url, logs := startWorker(t, "", bin, "serve", "--database-url", dbURL, "--auth-token", token,
		"--log-level", "warn")
	ctx := context.Background()
	c := &client.Client{BaseURL: url, Token: token}

	var types struct {
		Types []struct {
			Type, Color, Icon string
			Builtin           bool
		} `json:"types"`
	}
	require.NoError(t, c.Do(ctx, "GET", "/api/v1/node-types", nil, &types))
	last := types.Types[len(types.Types)-1]
	require.Equal(t, "Greet", last.Type, "the added type comes after the built-in ones")
	require.False(t, last.Builtin)
	require.Equal(t, "#ca8a04", last.Color)
	require.True(t, types.Types[0].Builtin)

	_, err = c.CreateFlow(ctx, client.FlowSpec{Name: "bad greet",
		Graph: instance.Graph(t, `{"nodes":[{"id":"g","type":"Greet","data":{"greeting":""}}],"edges":[]}`)})
	var refused *client.Error
	require.ErrorAs(t, err, &refused)
	require.Len(t, refused.Details, 1)
	require.Equal(t, "nodes[0].data.greeting", refused.Details[0].Path, "the type's schema is checked at save")

	f, err := c.CreateFlow(ctx, client.FlowSpec{Name: "greet",
		Graph: instance.Graph(t, `{"nodes":[{"id":"g","type":"greet","data":{"greeting":"Hello"}}],"edges":[]}`)})
	require.NoError(t, err)
	r, err := c.StartRun(ctx, f.Id.String(), json.RawMessage(`{"name":"Ada"}`))
	require.NoError(t, err)
	testkit.Eventually(t, 30*time.Second, func() bool {
		r, err = c.GetRun(ctx, r.Id.String())
		require.NoError(t, err)
		return client.Finished(r)
	}, "the run to finish; log:\n%s", logs)
	require.Equal(t, "completed", string(r.Status), "log:\n%s", logs)
	require.JSONEq(t, `{"message":"Hello, Ada"}`, instance.JSON(t, r.Output))
}
