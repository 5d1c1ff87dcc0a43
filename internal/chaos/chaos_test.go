package chaos

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const token = "chaos-token"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func binary(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stitchd-chaos")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "stitchd")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, "../../cmd/stitchd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// instance is one stitchd process.
type instance struct {
	t    *testing.T
	addr string
	db   string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	mu   sync.Mutex
	live bool
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func (in *instance) url() string { return "http://" + in.addr }

func (in *instance) start() {
	in.t.Helper()
	in.log = &bytes.Buffer{}
	cmd := exec.Command(binary(in.t), "serve", "--addr", in.addr, "--database-url", in.db, "--auth-token", token,
		"--dispatch-timeout", "2s", "--poll-interval", "100ms", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = in.log, in.log
	require.NoError(in.t, cmd.Start())
	in.cmd = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(in.url() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("instance %s not ready: %s", in.addr, in.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	in.mu.Lock()
	in.live = true
	in.mu.Unlock()
}

func (in *instance) kill() {
	in.mu.Lock()
	in.live = false
	in.mu.Unlock()
	_ = in.cmd.Process.Signal(syscall.SIGKILL)
	_ = in.cmd.Wait()
}

func (in *instance) isLive() bool { in.mu.Lock(); defer in.mu.Unlock(); return in.live }

// cluster routes callbacks to any live instance, as a load balancer would.
type cluster struct {
	instances []*instance
}

func (c *cluster) pick() *instance {
	var live []*instance
	for _, in := range c.instances {
		if in.isLive() {
			live = append(live, in)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[rand.IntN(len(live))]
}

func api(t *testing.T, base, method, path string, body any, out any) int {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		require.NoError(t, json.Unmarshal(b, out), string(b))
	}
	return resp.StatusCode
}

// TestKillAndRecoverWithTwoInstances runs runs of a flow with a splitter,
// a chain per item, a collector and a join on two stitchd processes that
// share one database, SIGKILLs one of them mid-flight and restarts it, and
// then checks the invariants from the database.
func TestKillAndRecoverWithTwoInstances(t *testing.T) {
	_, dbURL := storetest.IsolatedDB(t)
	cl := &cluster{}
	for i := 0; i < 2; i++ {
		in := &instance{t: t, addr: freeAddr(t), db: dbURL}
		in.start()
		cl.instances = append(cl.instances, in)
	}
	t.Cleanup(func() {
		for _, in := range cl.instances {
			if in.isLive() {
				in.kill()
			}
		}
	})

	// The worker answers 202 at once and calls back later, through any live
	// instance, retrying while instances are down. Deliveries are counted by
	// webhook-id.
	var deliveries sync.Map // webhook-id → *atomic.Int32
	var callbacks atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Input       json.RawMessage `json:"input"`
			CallbackURL string          `json:"callbackUrl"`
		}
		if json.Unmarshal(body, &p) != nil {
			w.WriteHeader(400)
			return
		}
		n, _ := deliveries.LoadOrStore(r.Header.Get("webhook-id"), &atomic.Int32{})
		if n.(*atomic.Int32).Add(1) > 1 {
			w.WriteHeader(202) // a redelivery: already working on it
			return
		}
		w.WriteHeader(202)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
			_, path, _ := strings.Cut(strings.TrimPrefix(p.CallbackURL, "http://"), "/")
			out := fmt.Sprintf(`{"status":"completed","output":%s}`, p.Input)
			for ctx.Err() == nil {
				in := cl.pick()
				if in == nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				resp, err := http.Post(in.url()+"/"+path, "application/json", strings.NewReader(out))
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == 200 || resp.StatusCode == 409 {
					callbacks.Add(1)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}))
	defer worker.Close()

	wn := func(id string) map[string]any {
		return map[string]any{"id": id, "type": "Worker", "data": map[string]any{"webhookUrl": worker.URL, "timeoutSeconds": 30}}
	}
	graph := map[string]any{
		"nodes": []any{
			map[string]any{"id": "split", "type": "Splitter", "data": map[string]any{"arrayPath": "items"}},
			wn("first"), wn("second"),
			map[string]any{"id": "merge", "type": "Collector", "data": map[string]any{}},
			wn("side"), wn("join"),
		},
		"edges": []any{
			map[string]any{"id": "e1", "source": "split", "target": "first"},
			map[string]any{"id": "e2", "source": "first", "target": "second"},
			map[string]any{"id": "e3", "source": "second", "target": "merge"},
			map[string]any{"id": "e4", "source": "merge", "target": "join", "data": map[string]any{"mapping": map[string]string{"items": "@this"}}},
			map[string]any{"id": "e5", "source": "side", "target": "join"},
		},
	}
	var flow struct {
		ID string `json:"id"`
	}
	require.Equal(t, 201, api(t, cl.instances[0].url(), "POST", "/api/v1/flows", map[string]any{"name": "chaos", "graph": graph}, &flow))

	const runs, items = 40, 10
	xs := make([]int, items)
	for i := range xs {
		xs[i] = i
	}
	var ids []string
	for i := 0; i < runs; i++ {
		var r struct {
			ID string `json:"id"`
		}
		in := cl.instances[i%2]
		require.Equal(t, 201, api(t, in.url(), "POST", "/api/v1/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"items": xs}}, &r))
		ids = append(ids, r.ID)
		if i == runs/2 {
			cl.instances[0].kill() // mid-flight, runs in every state
			cl.instances[0].start()
		}
	}
	cl.instances[1].kill()
	cl.instances[1].start()

	db, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	defer db.Close()
	deadline := time.Now().Add(120 * time.Second)
	for {
		var unfinished int
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM runs WHERE status <> 'completed'`).Scan(&unfinished))
		if unfinished == 0 {
			break
		}
		if time.Now().After(deadline) {
			var st string
			_ = db.QueryRow(`SELECT string_agg(status || ':' || n, ', ') FROM (SELECT status, count(*) n FROM node_states GROUP BY status) s`).Scan(&st)
			t.Fatalf("%d runs unfinished; node states: %s\nlogs A: %s\nlogs B: %s", unfinished, st,
				cl.instances[0].log.String(), cl.instances[1].log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Invariants, from the database.
	// first echoes its item (a number); second gets {"first": item}.
	wantItems := make([]map[string]int, items)
	for i := range wantItems {
		wantItems[i] = map[string]int{"first": i}
	}
	want, _ := json.Marshal(wantItems)
	for _, id := range ids {
		var out []byte
		require.NoError(t, db.QueryRow(`SELECT output FROM node_states WHERE run_id = $1 AND key = 'merge'`, id).Scan(&out))
		require.JSONEq(t, string(want), string(out), "collector output in order for run %s", id)
	}
	var twice int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM (SELECT run_id, key FROM run_events WHERE type = 'node.status'
		AND payload->>'status' = 'completed' GROUP BY run_id, key HAVING count(*) > 1) d`).Scan(&twice))
	require.Zero(t, twice, "no node completed twice")
	var mergeFired, mergeAttempts int
	require.NoError(t, db.QueryRow(`SELECT count(*), coalesce(sum(attempt), 0) FROM node_states WHERE key = 'merge' AND status = 'completed'`).Scan(&mergeFired, &mergeAttempts))
	require.Equal(t, runs, mergeFired)
	require.Equal(t, runs, mergeAttempts, "every collector fired exactly once")
	var nodes, completed int
	require.NoError(t, db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE status = 'completed') FROM node_states`).Scan(&nodes, &completed))
	require.Equal(t, runs*(4+2*items), nodes)
	require.Equal(t, nodes, completed, "nothing left running or pending")
	var undelivered, rows int
	require.NoError(t, db.QueryRow(`SELECT count(*) FILTER (WHERE status <> 'delivered'), count(*) FROM dispatches`).Scan(&undelivered, &rows))
	require.Zero(t, undelivered, "no dispatch lost")
	require.Equal(t, runs*(2+2*items), rows, "one dispatch row per worker attempt")
	redelivered := 0
	deliveries.Range(func(_, v any) bool {
		if v.(*atomic.Int32).Load() > 1 {
			redelivered++
		}
		return true
	})
	t.Logf("runs=%d nodes=%d dispatch rows=%d callbacks=%d redeliveries after a kill (same webhook-id)=%d",
		runs, nodes, rows, callbacks.Load(), redelivered)
	cancel()
	wg.Wait()
}
