package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store/storetest"
)

// instantWorker answers 202 and calls back at once with its input.
type instantWorker struct {
	srv       *httptest.Server
	client    *http.Client
	callbacks atomic.Int64
	lastSent  atomic.Int64 // unix nanos at which the newest callback was sent
	wg        sync.WaitGroup
}

func newInstantWorker(tb testing.TB) *instantWorker {
	w := &instantWorker{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p struct {
			Input       json.RawMessage `json:"input"`
			CallbackURL string          `json:"callbackUrl"`
		}
		_ = json.Unmarshal(b, &p)
		rw.WriteHeader(http.StatusAccepted)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.lastSent.Store(time.Now().UnixNano())
			req, err := http.NewRequestWithContext(tb.Context(), http.MethodPost, p.CallbackURL,
				bytes.NewReader([]byte(`{"status":"completed","output":`+string(p.Input)+`}`)))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := w.client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				w.callbacks.Add(1)
			}
		}()
	}))
	tb.Cleanup(w.srv.Close)
	return w
}

func benchApp(b *testing.B) (*app.App, *instantWorker) {
	_, dbURL := storetest.IsolatedDB(b)
	a, err := app.New(context.Background(), app.Config{Addr: "127.0.0.1:0", DatabaseURL: dbURL, AuthToken: token,
		Logger: slog.New(slog.DiscardHandler), DispatchWorkers: 64})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Stop(context.Background()) })
	return a, newInstantWorker(b)
}

func benchPost(b *testing.B, a *app.App, path string, body any) map[string]any {
	raw, err := json.Marshal(body)
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, a.URL+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		b.Fatalf("%s: %d %v", path, resp.StatusCode, out)
	}
	return out
}

// waitRunDone polls every 2 ms: the benchmark's latencies are read at
// that grain (testkit.Poll's backoff would blur them).
func waitRunDone(b *testing.B, a *app.App, id string) {
	for {
		var st string
		if err := a.Store.Gorm().Raw(`SELECT status FROM runs WHERE id = ?`, id).Row().Scan(&st); err != nil {
			b.Fatal(err)
		}
		if st == "completed" {
			return
		}
		if st != "running" {
			b.Fatalf("run %s is %s", id, st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// BenchmarkFanOut runs splitter → worker → collector end to end with an
// instant loopback worker, real HTTP both ways. Reported: wall time per run,
// time from the last callback answered to the collector's completion, and
// database rows written per item.
func BenchmarkFanOut(b *testing.B) {
	for _, items := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("items=%d", items), func(b *testing.B) {
			a, w := benchApp(b)
			graph := map[string]any{"nodes": []any{
				map[string]any{"id": "s", "type": "Splitter", "data": map[string]any{"arrayPath": "xs"}},
				map[string]any{"id": "w", "type": "Worker", "data": map[string]any{"webhookUrl": w.srv.URL}},
				map[string]any{"id": "c", "type": "Collector", "data": map[string]any{}},
			}, "edges": []any{
				map[string]any{"id": "e1", "source": "s", "target": "w"},
				map[string]any{"id": "e2", "source": "w", "target": "c"},
			}}
			flow := as[string](b, benchPost(b, a, "/api/v1/flows", map[string]any{"name": "bench", "graph": graph})["id"])
			xs := make([]int, items)
			for i := range xs {
				xs[i] = i
			}
			var fireLag time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run := as[string](b, benchPost(b, a, "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{"xs": xs}})["id"])
				waitRunDone(b, a, run)
				var fin time.Time
				if err := a.Store.Gorm().Raw(`SELECT finished_at FROM node_states WHERE run_id = ? AND key = 'c'`, run).Row().Scan(&fin); err != nil {
					b.Fatal(err)
				}
				fireLag += fin.Sub(time.Unix(0, w.lastSent.Load()))
			}
			b.StopTimer()
			var rows int64
			_ = a.Store.Gorm().Raw(`SELECT (SELECT count(*) FROM node_states) + (SELECT count(*) FROM dispatches) + (SELECT count(*) FROM run_events)`).Row().Scan(&rows)
			b.ReportMetric(float64(fireLag.Microseconds())/1000/float64(b.N), "ms-last-callback-sent-to-collector-done")
			b.ReportMetric(float64(rows)/float64(b.N*items), "rows/item")
			b.ReportMetric(float64(items*b.N)/b.Elapsed().Seconds(), "items/s")
			w.wg.Wait()
		})
	}
}

// BenchmarkChainStep measures one step of a linear chain of workers: a
// callback answered → the next dispatch received, end to end.
func BenchmarkChainStep(b *testing.B) {
	a, w := benchApp(b)
	const length = 100
	var nodes, edges []any
	for i := 0; i < length; i++ {
		nodes = append(nodes, map[string]any{"id": fmt.Sprintf("n%03d", i), "type": "Worker", "data": map[string]any{"webhookUrl": w.srv.URL}})
		if i > 0 {
			edges = append(edges, map[string]any{"id": fmt.Sprintf("e%d", i), "source": fmt.Sprintf("n%03d", i-1), "target": fmt.Sprintf("n%03d", i)})
		}
	}
	flow := as[string](b, benchPost(b, a, "/api/v1/flows", map[string]any{"name": "chain", "graph": map[string]any{"nodes": nodes, "edges": edges}})["id"])
	b.ResetTimer()
	steps := 0
	for steps < b.N {
		run := as[string](b, benchPost(b, a, "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{}})["id"])
		waitRunDone(b, a, run)
		steps += length
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(steps)/1000, "ms/step")
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
	w.wg.Wait()
}
