package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// fairness measures dispatch fairness between workspaces
// (docs/workspaces.md#fairness): workspace "busy" starts a fan-out of
// FairnessBacklog worker items — that many deliveries due at once — and
// while they are delivered, workspace "quiet" starts FairnessRuns one-step
// runs, one every 20 ms. The result's QuietRunMs is how long those took,
// start to end: with fair claims, about what a run takes on an idle
// server, not the backlog's drain time. Both workspaces' workers are one
// host that takes slowAccept to accept each delivery, so the backlog
// waits in the dispatcher's queue (bound by its workers per host), not
// on the machine's CPU.
func (r *runner) fairness(ctx context.Context) (*Result, error) {
	for _, ws := range []string{"busy", "quiet"} {
		if err := r.api(ctx, "POST", "/workspaces", map[string]any{"slug": ws, "name": ws}, nil); err != nil {
			return nil, err
		}
	}
	var busy, quiet struct{ ID string }
	if err := r.apiIn(ctx, "busy", "POST", "/flows", map[string]any{"name": "bench busy", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "split", "type": "Splitter", "data": map[string]any{"arrayPath": "items"}},
			{"id": "score", "type": "Worker", "data": map[string]any{"webhookUrl": r.worker.slowURL()}},
			{"id": "merge", "type": "Collector", "data": map[string]any{}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "split", "target": "score"}, {"id": "e2", "source": "score", "target": "merge"}},
	}}, &busy); err != nil {
		return nil, err
	}
	quietWS := "quiet"
	if r.opts.FairnessOneWorkspace {
		quietWS = "busy"
	}
	if err := r.apiIn(ctx, quietWS, "POST", "/flows", map[string]any{"name": "bench quiet", "graph": map[string]any{
		"nodes": []map[string]any{{"id": "one", "type": "Worker", "data": map[string]any{"webhookUrl": r.worker.slowURL()}}},
		"edges": []map[string]any{},
	}}, &quiet); err != nil {
		return nil, err
	}
	items := make([]int, r.opts.FairnessBacklog)
	for i := range items {
		items[i] = i
	}
	res := &Result{Name: fmt.Sprintf("fairness: %d one-step runs of a quiet workspace during a %d-item backlog of a busy one",
		r.opts.FairnessRuns, r.opts.FairnessBacklog)}
	if r.opts.FairnessOneWorkspace {
		res.Name = fmt.Sprintf("fairness compared: %d one-step runs during a %d-item backlog of the same workspace",
			r.opts.FairnessRuns, r.opts.FairnessBacklog)
	}
	var quietRuns []string
	if err := r.measure(ctx, res, func() error {
		var run struct{ ID string }
		if err := r.apiIn(ctx, "busy", "POST", "/flows/"+busy.ID+"/runs", map[string]any{"input": map[string]any{"items": items}}, &run); err != nil {
			return err
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range r.opts.FairnessRuns {
			var q struct{ ID string }
			if err := r.apiIn(ctx, quietWS, "POST", "/flows/"+quiet.ID+"/runs", map[string]any{"input": map[string]any{}}, &q); err != nil {
				return err
			}
			quietRuns = append(quietRuns, q.ID)
			<-tick.C
		}
		if err := r.waitRuns(ctx, quietRuns, 1); err != nil {
			return err
		}
		return r.waitRuns(ctx, []string{run.ID}, r.opts.FairnessBacklog)
	}); err != nil {
		return nil, err
	}
	var took []time.Duration
	rows, err := r.db.QueryContext(ctx, `SELECT extract(epoch FROM finished_at - created_at) FROM runs WHERE flow_id = $1`, quiet.ID)
	if err != nil {
		return nil, fmt.Errorf("error reading the quiet runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s float64
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		took = append(took, time.Duration(s*float64(time.Second)))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	res.QuietRunMs = distribution(took)
	return res, nil
}

// apiIn calls stitchd's API in workspace ws (the Stitchd-Workspace
// header; "" for none: the default workspace).
func (r *runner) apiIn(ctx context.Context, ws, method, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, r.proc.url+"/api/v1"+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	// The bench reads a started run's id only: its node states (100,000
	// of them in the largest fan-out) are left out.
	req.Header.Set("Prefer", "return=minimal")
	if ws != "" {
		req.Header.Set("Stitchd-Workspace", ws)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("error calling %s %s in %s: %w", method, path, ws, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s in %s answered %d: %s", method, path, ws, resp.StatusCode, rb)
	}
	if out != nil {
		return json.Unmarshal(rb, out)
	}
	return nil
}

// slowAccept is how long the fairness scenario's worker takes to accept a
// delivery.
const slowAccept = 20 * time.Millisecond

// slowURL is the worker's address that accepts deliveries after
// slowAccept.
func (w *worker) slowURL() string { return strings.TrimSuffix(w.url, "/work") + "/slow" }
