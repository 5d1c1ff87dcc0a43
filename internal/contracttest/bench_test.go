package contracttest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stitchd/stitchd/internal/contracttest"
)

const (
	benchRun  = "0b6e2f43-2f1c-4c55-9d0b-6f0e8b0a8c11"
	benchFlow = "5c1d9a4e-7b3f-4e2a-9c6d-1f0e8b0a8c22"
	benchAt   = "2026-11-29T10:00:00.123456Z"
)

// runAnswer is a GET /api/v1/runs/{id} answer of a run fanned out over
// items (a Splitter, its items, a Collector), as stitchd gives it.
func runAnswer(items int) map[string]any {
	node := func(key, id, typ string, index []int) map[string]any {
		return map[string]any{"key": key, "node_id": id, "type": typ, "index": index, "status": "completed",
			"input": map[string]any{"n": len(index)}, "output": map[string]any{"ok": true, "key": key},
			"error": nil, "attempt": 1, "taken": nil, "iteration": 0,
			"started_at": benchAt, "finished_at": benchAt, "updated_at": benchAt}
	}
	nodes := map[string]any{"split": node("split", "split", "Splitter", []int{}),
		"collect": node("collect", "collect", "Collector", []int{})}
	for i := range items {
		key := fmt.Sprintf("work[%d]", i)
		nodes[key] = node(key, "work", "Worker", []int{i})
	}
	return map[string]any{"id": benchRun, "flow_id": benchFlow, "flow_version_id": benchFlow, "status": "completed",
		"input": map[string]any{"items": items}, "output": map[string]any{"done": true}, "error": nil, "entity_id": nil,
		"created_at": benchAt, "updated_at": benchAt, "finished_at": benchAt, "variables": map[string]any{},
		"nodes": nodes}
}

// runsPage is a GET /api/v1/runs answer of n runs (without their nodes).
func runsPage(n int) map[string]any {
	runs := make([]any, n)
	for i := range runs {
		r := runAnswer(0)
		delete(r, "nodes")
		delete(r, "variables")
		runs[i] = r
	}
	return map[string]any{"runs": runs, "next_cursor": "abc"}
}

// BenchmarkProblems is the contract check of one exchange of the kinds
// internal/app's tests make most (a small answer, a list page) and of
// the largest (a fanned-out run answered whole). Each iteration's answer
// differs from the last (vary, numbered), as a test's answers mostly do;
// "again" gives the same answer each time, as a test polling a resource
// that does not change is given.
func BenchmarkProblems(b *testing.B) {
	for _, c := range []struct {
		name, method, path, reqBody string
		status                      int
		answer                      any
		vary                        string
	}{
		{"cancel", "POST", "/api/v1/runs/" + benchRun + "/cancel", "", http.StatusNotFound,
			map[string]any{"error": map[string]any{"code": "not_found", "message": "no such run"}}, `"no such run`},
		{"run 10 nodes", "GET", "/api/v1/runs/" + benchRun, "", http.StatusOK, runAnswer(8), `"input":{"n`},
		{"run 10 nodes again", "GET", "/api/v1/runs/" + benchRun, "", http.StatusOK, runAnswer(8), ""},
		{"run 1000 items", "GET", "/api/v1/runs/" + benchRun, "", http.StatusOK, runAnswer(1000), `"input":{"n`},
		{"runs page 50", "GET", "/api/v1/runs?limit=50&status=completed", "", http.StatusOK, runsPage(50), `"input":{"i`},
		{"create flow", "POST", "/api/v1/flows", `{"name":"f","graph":{"nodes":[{"id":"a","type":"Worker","data":{"url":"http://x"}},` +
			`{"id":"b","type":"Transform","data":{"expression":"input"}}],"edges":[{"id":"e","source":"a","target":"b"}]}}`,
			http.StatusCreated, map[string]any{"id": benchFlow, "name": "f", "board_id": nil,
				"version": map[string]any{"id": benchFlow, "number": 1}, "warnings": []any{}, "created_at": benchAt, "updated_at": benchAt},
			`"name":"f`},
	} {
		answer, err := json.Marshal(c.answer)
		if err != nil {
			b.Fatal(err)
		}
		if !bytes.Contains(answer, []byte(c.vary)) {
			b.Fatalf("%s: no %s in the answer", c.name, c.vary)
		}
		b.Run(c.name, func(b *testing.B) {
			ex := contracttest.Exchange{Status: c.status, RequestBody: []byte(c.reqBody),
				Header: http.Header{"Content-Type": {"application/json"}}, Body: answer}
			ex.Request = httptest.NewRequestWithContext(b.Context(), c.method, c.path, strings.NewReader(c.reqBody))
			ex.Request.Header.Set("Content-Type", "application/json")
			if err := contracttest.Problems(ex); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(answer)))
			i := 0
			for b.Loop() {
				if c.vary != "" {
					i++
					ex.Body = bytes.Replace(answer, []byte(c.vary), []byte(c.vary+strconv.Itoa(i)), 1)
				}
				if err := contracttest.Problems(ex); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
