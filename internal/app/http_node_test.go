package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store/storetest"
)

// received is one request an HTTP node's test server got.
type received struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// apiServer is a loopback REST API that knows nothing of callbacks: it
// records each request and answers with answer(n, request) (n counts
// requests from 1).
type apiServer struct {
	url    string
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

func newAPIServer(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *apiServer {
	s := &apiServer{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, received{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: string(b)})
		n := len(s.got)
		s.mu.Unlock()
		s.answer(n, w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *apiServer) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

func jsonAnswer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// fastRetry retries quickly: tests wait on the outcome, not the backoff.
var fastRetry = map[string]any{"maxAttempts": 3, "initialDelayMs": 10, "maxDelayMs": 50}

// TestHTTPNodeGetThenPost: a GET with a templated URL (path and query
// escaped by where the values fall) and header, then a POST whose JSON
// body is templated from the GET's response — what the server received,
// and the outputs {status, headers, body} (JSON when JSON, else text).
func TestHTTPNodeGetThenPost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("X-Rate-Left", "41")
			jsonAnswer(w, 200, `{"id": 7, "name": "Widget Pro", "price": 12.5}`)
		case http.MethodPost:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, "order created")
		}
	})
	flow := h.createFlow([]map[string]any{
		node("get", "HTTP", map[string]any{
			"url":     api.url + "/items/{{ input.sku }}?q={{ input.q }}&n={{ input.n + 1 }}",
			"headers": map[string]any{"Authorization": "Bearer {{ input.token }}", "Accept": "application/json"},
		}),
		node("post", "HTTP", map[string]any{
			"method":  "post",
			"url":     api.url + "/orders",
			"headers": map[string]any{"X-Item": "{{ input.body.id }}"},
			"body": map[string]any{"item": "{{ input.body.name }}", "price": "{{ input.body.price }}",
				"note": "status {{ input.status }}, {{ input.headers['x-rate-left'] }} left", "tags": []any{"a", "{{ upper('b') }}"}, "fixed": 3},
		}),
	}, []map[string]any{edge("get", "post", nil)})
	r := h.startRun(flow, map[string]any{"sku": "A/1 b", "q": "hello world&x=1", "n": 41, "token": "s3cr3t"})
	fin := h.waitRun(r.ID, "completed")

	got := api.requests()
	require.Len(t, got, 2, "one request per node: a success is not retried")
	get, post := got[0], got[1]
	require.Equal(t, "GET", get.Method)
	require.Equal(t, "/items/A%2F1%20b", get.Path, "a value in the path is one escaped segment")
	require.Equal(t, "q=hello+world%26x%3D1&n=42", get.Query, "a value in the query is query-escaped")
	require.Equal(t, "Bearer s3cr3t", get.Header.Get("Authorization"))
	require.Equal(t, "application/json", get.Header.Get("Accept"))
	require.Equal(t, "stitchd", get.Header.Get("User-Agent"))
	require.Empty(t, get.Header.Get("webhook-signature"), "requests are not signed")
	require.Empty(t, get.Body)

	require.Equal(t, "POST", post.Method)
	require.Equal(t, "/orders", post.Path)
	require.Equal(t, "7", post.Header.Get("X-Item"))
	require.Equal(t, "application/json", post.Header.Get("Content-Type"))
	require.JSONEq(t, `{"item": "Widget Pro", "price": 12.5, "note": "status 200, 41 left", "tags": ["a", "B"], "fixed": 3}`, post.Body,
		"a string that is one {{ }} takes the value's type")

	var out struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
	}
	require.NoError(t, json.Unmarshal(fin.Nodes["get"].Output, &out))
	require.Equal(t, 200, out.Status)
	require.Equal(t, "41", out.Headers["x-rate-left"])
	require.Equal(t, "application/json", out.Headers["content-type"])
	require.JSONEq(t, `{"id": 7, "name": "Widget Pro", "price": 12.5}`, string(out.Body), "a JSON response is kept as JSON")
	require.NoError(t, json.Unmarshal(fin.Nodes["post"].Output, &out))
	require.Equal(t, 201, out.Status)
	require.Equal(t, `"order created"`, string(out.Body), "any other response is text")
	require.Equal(t, 1, fin.Nodes["post"].Attempt)
}

// TestHTTPNodePathDotSegments: a value of dots in the path is escaped
// (%2E), so ".." cannot move the request up the path — nor can two values
// making ".." between them — while a "%" is escaped once, and the query
// keeps its own escaping.
func TestHTTPNodePathDotSegments(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { jsonAnswer(w, 200, `{}`) })
	flow := h.createFlow([]map[string]any{node("get", "HTTP", map[string]any{
		"url": api.url + "/users/{{ input.id }}/profile/{{ input.dot }}/{{ input.dot }}{{ input.dot }}/{{ input.enc }}/v{{ input.id }}.json?v={{ input.id }}",
	})}, nil)
	r := h.startRun(flow, map[string]any{"id": "..", "dot": ".", "enc": "%2e%2e"})
	h.waitRun(r.ID, "completed")
	got := api.requests()
	require.Len(t, got, 1)
	require.Equal(t, "/users/%2E%2E/profile/%2E/%2E%2E/%252e%252e/v%2E%2E.json", got[0].Path,
		"dots are escaped where a value is only dots, the % of a value once")
	require.Equal(t, "v=..", got[0].Query)
}

// TestHTTPNodeRetry503Then200: a 503 is retried (a new attempt after the
// node's backoff), and the 200 that follows completes the node.
func TestHTTPNodeRetry503Then200(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	api := newAPIServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			jsonAnswer(w, 503, `{"error": "busy"}`)
			return
		}
		jsonAnswer(w, 200, `{"ok": true}`)
	})
	flow := h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.url + "/x", "retry": fastRetry})}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "completed")
	require.Len(t, api.requests(), 2)
	n := fin.Nodes["call"]
	require.Equal(t, 2, n.Attempt, "the 503 was attempt 1")
	require.JSONEq(t, `{"status": 200, "headers": {"content-type": "application/json", "content-length": "12", "date": "`+
		gjson.GetBytes(n.Output, "headers.date").String()+`"}, "body": {"ok": true}}`, string(n.Output))

	// The timeline says what happened: attempt 1 failed with the 503.
	var failures []string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT payload->>'error' FROM run_events WHERE run_id = ?
		AND type = 'node.status' AND payload->>'status' = 'failed' ORDER BY seq`, r.ID).Scan(&failures).Error)
	require.Equal(t, []string{`HTTP 503: {"error": "busy"}`}, failures)

	// A response for an attempt the node is no longer running (a late
	// one, or one a crashed process had sent) changes nothing.
	before := h.run(r.ID)
	require.NoError(t, h.app.Engine.CompleteFromResponse(context.Background(), engine.Response{RunID: r.ID, Key: "call",
		Attempt: 1, Try: 1, Status: 500, Body: []byte("late")}))
	require.NoError(t, h.app.Engine.CompleteFromResponse(context.Background(), engine.Response{RunID: r.ID, Key: "call",
		Attempt: 2, Try: 1, Status: 200, Body: []byte("again")}))
	require.Equal(t, before, h.run(r.ID))
}

// TestHTTPNode404Fails: a 404 is final (not retried, whatever
// maxAttempts says): the node fails with the status and the body's start.
func TestHTTPNode404Fails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "no such   customer\n")
	})
	flow := h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.url + "/customers/9", "retry": fastRetry})}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, "HTTP 404: no such customer", *fin.Nodes["call"].Error)
	require.Contains(t, *fin.Error, "HTTP 404: no such customer")
	require.Len(t, api.requests(), 1, "a 404 is not retried")

	// A redirect is not followed: a 3xx fails the node; a body over 1 MiB
	// fails it too (the node's output would not hold it).
	big := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		_, _ = w.Write(bytes.Repeat([]byte("x"), 1<<20+1))
	})
	flow = h.createFlow([]map[string]any{node("moved", "HTTP", map[string]any{"url": big.url + "/moved", "retry": fastRetry})}, nil)
	fin = h.waitRun(h.startRun(flow, map[string]any{}).ID, "failed")
	require.Contains(t, *fin.Nodes["moved"].Error, "HTTP 302 (redirects are not followed)")
	flow = h.createFlow([]map[string]any{node("big", "HTTP", map[string]any{"url": big.url + "/big", "retry": fastRetry})}, nil)
	fin = h.waitRun(h.startRun(flow, map[string]any{}).ID, "failed")
	require.Contains(t, *fin.Nodes["big"].Error, "larger than 1048576 bytes (1 MiB)")
	require.Len(t, big.requests(), 2, "neither is retried")

	// successCodes makes a 404 a success.
	flow = h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.url + "/customers/9", "successCodes": []any{"2xx", 404}})}, nil)
	r = h.startRun(flow, map[string]any{})
	fin = h.waitRun(r.ID, "completed")
	require.EqualValues(t, 404, gjson.GetBytes(fin.Nodes["call"].Output, "status").Int())
}

// TestHTTPNodeTimeout: a server that does not answer within
// timeoutSeconds is retried per the policy, then fails the node. The
// timeout is a second: under 300 ms, a loaded machine's request could time
// out before the server had read it (seen once in CI), and the server
// would not count that attempt.
func TestHTTPNodeTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	api := newAPIServer(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	flow := h.createFlow([]map[string]any{node("slow", "HTTP", map[string]any{"url": api.url + "/slow", "timeoutSeconds": 1,
		"retry": map[string]any{"maxAttempts": 2, "initialDelayMs": 10, "maxDelayMs": 10}})}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, "no response within 1s", *fin.Nodes["slow"].Error)
	require.Equal(t, 2, fin.Nodes["slow"].Attempt)
	require.Len(t, api.requests(), 2, "retried once, as maxAttempts 2 allows")
}

// TestHTTPNodeAddressGuard: with private addresses denied, a request to a
// loopback server is refused before anything is sent, and not retried;
// allowed by a range, it goes.
func TestHTTPNodeAddressGuard(t *testing.T) {
	t.Parallel()
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { jsonAnswer(w, 200, `{}`) })
	h := newHarness(t, func(c *app.Config) { c.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: true} })
	flow := h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.url + "/x", "retry": fastRetry})}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["call"].Error, "request refused")
	require.Contains(t, *fin.Nodes["call"].Error, "worker address refused")
	require.Equal(t, 1, fin.Nodes["call"].Attempt, "a refused address is not retried")
	require.Empty(t, api.requests(), "nothing reached the server")

	// Its own address is refused in every mode.
	self := newHarness(t)
	flow = self.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": self.app.URL + "/api/v1/flows"})}, nil)
	r = self.startRun(flow, map[string]any{})
	fin = self.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["call"].Error, "request refused")

	allowed := newHarness(t, func(c *app.Config) {
		c.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: true, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	})
	flow = allowed.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.url + "/x"})}, nil)
	r = allowed.startRun(flow, map[string]any{})
	allowed.waitRun(r.ID, "completed")
	require.Len(t, api.requests(), 1)
}

// TestHTTPNodeBranchOnStatus: an HTTP node followed by a condition edge on
// output.status (and a default edge).
func TestHTTPNodeBranchOnStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("new") == "true" {
			jsonAnswer(w, 201, `{"created": true}`)
			return
		}
		jsonAnswer(w, 200, `{"created": false}`)
	})
	flow := h.createFlow([]map[string]any{
		node("upsert", "HTTP", map[string]any{"method": "PUT", "url": api.url + "/leads?new={{ input.new }}", "body": "{{ input }}"}),
		node("created", "Condition", nil), node("updated", "Condition", nil),
	}, []map[string]any{
		redge("upsert", "created", map[string]any{"condition": "output.status == 201 && output.body.created"}),
		redge("upsert", "updated", map[string]any{"default": true}),
	})
	r := h.startRun(flow, map[string]any{"new": true})
	fin := h.waitRun(r.ID, "completed")
	require.Equal(t, "completed", fin.Nodes["created"].Status)
	require.Equal(t, "skipped", fin.Nodes["updated"].Status)
	require.JSONEq(t, `{"new": true}`, api.requests()[0].Body, "a body that is one {{ }} of an object is sent as JSON")
	require.Equal(t, "application/json", api.requests()[0].Header.Get("Content-Type"))

	r = h.startRun(flow, map[string]any{"new": false})
	fin = h.waitRun(r.ID, "completed")
	require.Equal(t, "skipped", fin.Nodes["created"].Status)
	require.Equal(t, "completed", fin.Nodes["updated"].Status)
}

// TestHTTPNodeCompileErrors: templates and settings are checked when the
// flow is saved: 422 invalid_graph, each problem with its node and path.
func TestHTTPNodeCompileErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Details []struct {
				NodeID  string `json:"node_id"`
				Path    string `json:"path"`
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"details"`
		} `json:"error"`
	}
	graph := map[string]any{"nodes": []map[string]any{
		node("a", "HTTP", map[string]any{"url": "https://api.example.com/{{ input.id + }}"}),
		node("b", "HTTP", map[string]any{"url": "ftp://example.com/x", "method": "FETCH"}),
		node("c", "HTTP", map[string]any{"url": "https://example.com", "headers": map[string]any{"X-A": "{{ output.x }}", "Bad Name": "x"},
			"body": map[string]any{"items": []any{"ok", "{{ nope( }}"}}, "successCodes": []any{200, "6xx"}, "timeoutSeconds": -1}),
		node("d", "HTTP", map[string]any{"url": "https://example.com/{{ input.x"}),
	}, "edges": []map[string]any{edge("a", "b", nil), edge("b", "c", nil), edge("c", "d", nil)}}
	require.Equal(t, 422, h.do("POST", "/api/v1/flows", map[string]any{"name": "bad http", "graph": graph}, &e))
	require.Equal(t, "invalid_graph", e.Error.Code)
	got := map[string]string{}
	for _, d := range e.Error.Details {
		got[d.NodeID+" "+d.Path] = d.Code
	}
	require.Equal(t, map[string]string{
		"a nodes[0].data.url":                 "invalid_expression",
		"b nodes[1].data.url":                 "invalid_config",
		"b nodes[1].data.method":              "invalid_config",
		`c nodes[2].data.headers["X-A"]`:      "invalid_expression",
		`c nodes[2].data.headers["Bad Name"]`: "invalid_config",
		"c nodes[2].data.body.items[1]":       "invalid_expression",
		"c nodes[2].data.successCodes[1]":     "invalid_config",
		"c nodes[2].data.timeoutSeconds":      "invalid_config",
		"d nodes[3].data.url":                 "invalid_expression",
	}, got)
}

// TestHTTPNodeResumesAfterStop: the request is in the outbox, not in
// memory. A stitchd stopped while its request is in flight loses
// nothing: once its lease ends, another process takes the row over — and,
// the first try's outcome unknown, does not send it again as the same
// attempt: the attempt fails ("outcome is unknown") and the retry policy
// decides. With retries (the default three attempts) the next attempt
// completes the node; with maxAttempts 1 the request is never sent twice
// and the node fails saying why.
func TestHTTPNodeResumesAfterStop(t *testing.T) {
	t.Parallel()
	for _, attempts := range []int{3, 1} {
		t.Run(fmt.Sprintf("maxAttempts %d", attempts), func(t *testing.T) {
			t.Parallel()
			_, dbURL := storetest.IsolatedDB(t)
			short := func(c *app.Config) { c.DispatchTimeout, c.DispatchLease = 500*time.Millisecond, time.Second }
			api := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					<-r.Context().Done() // never answered: its process stops
					return
				}
				jsonAnswer(w, 200, `{"n": 2}`)
			})
			a := newHarnessOn(t, dbURL, short)
			flow := a.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.url + "/x", "timeoutSeconds": 60,
				"retry": map[string]any{"maxAttempts": attempts, "initialDelayMs": 10}})}, nil)
			r := a.startRun(flow, map[string]any{})
			a.eventually(func() bool { return len(api.requests()) == 1 }, "the first request")
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, a.app.Stop(sctx))

			b := newHarnessOn(t, dbURL, short)
			if attempts == 1 {
				fin := b.waitRun(r.ID, "failed")
				require.Contains(t, *fin.Nodes["call"].Error, "the request's outcome is unknown")
				require.Len(t, api.requests(), 1, "never sent twice")
				return
			}
			fin := b.waitRun(r.ID, "completed")
			require.Len(t, api.requests(), 2)
			require.Equal(t, 2, fin.Nodes["call"].Attempt, "the first attempt failed as unknown, the second was sent")
			require.JSONEq(t, `{"n": 2}`, gjson.GetBytes(fin.Nodes["call"].Output, "body").Raw)
		})
	}
}

// TestHTTPNodeUnstorableResponse: a JSON response the database cannot
// store (a lone surrogate, \u0000 in a string) fails the node once,
// saying what and where, and is never asked for again — it used to be
// re-sent every lease, without end, past maxAttempts 1.
func TestHTTPNodeUnstorableResponse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for body, why := range map[string]string{`{"a": "\ud800"}`: "lone UTF-16 surrogate escape, which cannot be stored: the string at $.a", `{"a": "x\u0000y"}`: "NUL character",
		`{"a": ["\udc00 low first"]}`: "the string at $.a[0]"} {
		api := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { jsonAnswer(w, 200, body) })
		flow := h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"method": "POST", "url": api.url + "/charge",
			"retry": map[string]any{"maxAttempts": 1}})}, nil)
		r := h.startRun(flow, map[string]any{})
		fin := h.waitRun(r.ID, "failed")
		require.Contains(t, *fin.Nodes["call"].Error, "the response body cannot be stored", body)
		require.Contains(t, *fin.Nodes["call"].Error, why, body)
		// The row is done with: no lease of it can end and send it again.
		var status string
		var tries, maxTries int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT status, tries, max_tries FROM dispatches WHERE run_id = ?`, r.ID).Row().
			Scan(&status, &tries, &maxTries))
		require.Equal(t, "failed", status, body)
		require.LessOrEqual(t, tries, maxTries, body)
		require.Len(t, api.requests(), 1, body)
	}
	// What the database stores is kept, though a request body would be
	// refused: a 78-digit amount, 1e70, 100 levels of nesting.
	for _, body := range []string{`{"amount": 115792089237316195423570985008687907853269984665640564039457584007913129639935}`,
		`{"n": 1e70}`, strings.Repeat(`{"a": `, 100) + "1" + strings.Repeat("}", 100)} {
		api := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { jsonAnswer(w, 200, body) })
		flow := h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.url + "/x"})}, nil)
		fin := h.waitRun(h.startRun(flow, map[string]any{}).ID, "completed")
		require.True(t, gjson.GetBytes(fin.Nodes["call"].Output, "body").IsObject(), body)
	}
}

// TestHTTPNodeFanOut: HTTP nodes inside a parallel region (started in
// bulk with the fan-out's other rows), one request per item, the
// Collector getting the responses in item order.
func TestHTTPNodeFanOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		jsonAnswer(w, 200, `{"square": `+r.URL.Query().Get("sq")+`}`)
	})
	flow := h.createFlow([]map[string]any{
		node("split", "Splitter", map[string]any{"arrayPath": "items"}),
		node("call", "HTTP", map[string]any{"url": api.url + "/sq?sq={{ input.n * input.n }}"}),
		node("merge", "Collector", nil),
	}, []map[string]any{edge("split", "call", nil), edge("call", "merge", nil)})
	items := make([]map[string]any, 20)
	want := make([]int, 20)
	for i := range items {
		items[i], want[i] = map[string]any{"n": i}, i*i
	}
	r := h.startRun(flow, map[string]any{"items": items})
	fin := h.waitRun(r.ID, "completed")
	require.Len(t, api.requests(), 20)
	var got []int
	for _, v := range gjson.GetBytes(fin.Nodes["merge"].Output, "#.body.square").Array() {
		got = append(got, int(v.Int()))
	}
	require.Equal(t, want, got)
}
