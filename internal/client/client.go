package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/internal/client/api"
)

// DefaultURL is the server a client talks to unless told otherwise.
const DefaultURL = "http://127.0.0.1:8080"

// Client talks to one stitchd server.
type Client struct {
	// BaseURL is the server's URL (default DefaultURL).
	BaseURL string
	// Token is the API token (Authorization: Bearer).
	Token string
	// Workspace is the workspace to act in (the Stitchd-Workspace header;
	// "": the default one, or a bound token's).
	Workspace string
	// HTTP sends requests (default: a client with a 30 s timeout; streams
	// use a copy without the timeout).
	HTTP *http.Client
}

// The contract's types: generated from openapi.yaml (internal/client/api),
// so what the client reads and sends cannot drift from the spec.
type (
	// Problem is one problem of a refused graph (invalid_graph details).
	Problem = api.Problem
	// Flow is a flow as the API returns it.
	Flow = api.Flow
	// FlowSpec is a flow to create or update.
	FlowSpec = api.CreateFlowJSONBody
	// Graph is a flow's graph (ParseGraph reads one).
	Graph = api.Graph
	// Node is one node state of a run.
	Node = api.NodeState
	// Run is a run as the API returns it.
	Run = api.Run
	// Event is one event of a run's stream.
	Event = api.Event
	// RotatedSecret is a webhook secret rotation's answer.
	RotatedSecret = api.RotatedSecret
	// SecretInfo is what the API shows of a secret: its name, hosts and
	// times, never its value.
	SecretInfo = api.Secret
	// Trigger is a flow's trigger of any kind (webhook, schedule, event,
	// nats, amqp): TriggerKind tells which, its As… methods give the
	// fields of that kind.
	Trigger = api.Trigger
	// Approval is a step waiting for a person.
	Approval = api.Approval
)

// Error is an API error answer (the contract's Error, read by
// decodeError), or a non-JSON one (Code http_<status>).
type Error struct {
	Status  int
	Code    string
	Message string
	// Details lists the problems of a refused graph (nil when the answer
	// gave none, or gave an object).
	Details []Problem
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

func (c *Client) base() string {
	if c.BaseURL == "" {
		return DefaultURL
	}
	return strings.TrimRight(c.BaseURL, "/")
}

func (c *Client) httpClient(stream bool) *http.Client {
	h := c.HTTP
	if h == nil {
		h = &http.Client{Timeout: 30 * time.Second}
	}
	if stream && h.Timeout != 0 {
		cp := *h
		cp.Timeout = 0
		return &cp
	}
	return h
}

func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, ok := body.(json.RawMessage)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return nil, fmt.Errorf("error encoding request body: %w", err)
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, rd)
	if err != nil {
		return nil, fmt.Errorf("error building request %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Workspace != "" {
		req.Header.Set("Stitchd-Workspace", c.Workspace)
	}
	return req, nil
}

// Do sends a request and decodes a 2xx JSON answer into out (if not nil).
// A non-2xx answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.httpClient(false).Do(req)
	if err != nil {
		return fmt.Errorf("error calling stitchd at %s: %w", c.base(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("error reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp.StatusCode, b)
	}
	if out != nil && len(b) > 0 {
		if err := decodeJSON(b, out); err != nil {
			return fmt.Errorf("error decoding the answer to %s %s: %w", method, path, err)
		}
	}
	return nil
}

// decodeJSON decodes b into out keeping numbers as written (json.Number)
// where out holds any JSON (a run's input and output, an event's
// payload): a float64 would round an integer past 2^53.
func decodeJSON(b []byte, out any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(out)
}

// ParseGraph reads a flow's graph from JSON (what FlowSpec.Graph takes).
// Fields the contract does not name are kept as written.
func ParseGraph(b []byte) (Graph, error) {
	var g Graph
	if err := json.Unmarshal(b, &g); err != nil {
		return Graph{}, fmt.Errorf("error reading a graph: %w", err)
	}
	return g, nil
}

func decodeError(status int, b []byte) error {
	var env api.Error
	if json.Unmarshal(b, &env) == nil && (env.Error.Code != "" || env.Error.Message != "") {
		e := &Error{Status: status, Code: string(env.Error.Code), Message: env.Error.Message}
		if env.Error.Details != nil {
			e.Details, _ = env.Error.Details.AsErrorErrorDetails0() // an object: no problems
		}
		return e
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &Error{Status: status, Code: "http_" + strconv.Itoa(status), Message: msg}
}

// ListFlows lists every flow by name (following next_cursor through the
// pages).
func (c *Client) ListFlows(ctx context.Context) ([]Flow, error) {
	var all []Flow
	cursor := ""
	for {
		var out struct {
			Flows []Flow  `json:"flows"`
			Next  *string `json:"next_cursor"`
		}
		path := "/api/v1/flows?limit=500"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := c.Do(ctx, http.MethodGet, path, nil, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Flows...)
		if out.Next == nil || *out.Next == "" {
			return all, nil
		}
		cursor = *out.Next
	}
}

// CreateFlow creates a flow.
func (c *Client) CreateFlow(ctx context.Context, f FlowSpec) (*Flow, error) {
	var out Flow
	if err := c.Do(ctx, http.MethodPost, "/api/v1/flows", f, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateFlow saves a flow's graph (a new version only if it changed).
func (c *Client) UpdateFlow(ctx context.Context, id string, f FlowSpec) (*Flow, error) {
	var out Flow
	if err := c.Do(ctx, http.MethodPut, "/api/v1/flows/"+url.PathEscape(id), f, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ApplyFlow creates the flow named f.Name, or updates it when one exists.
// created tells which. Flow names need not be unique: when several flows
// share the name it changes none, as FindFlow picks none.
func (c *Client) ApplyFlow(ctx context.Context, f FlowSpec) (flow *Flow, created bool, err error) {
	flows, err := c.ListFlows(ctx)
	if err != nil {
		return nil, false, err
	}
	var found *Flow
	for i := range flows {
		if flows[i].Name == f.Name {
			if found != nil {
				return nil, false, fmt.Errorf("several flows are named %q; rename one, or save by id (PUT /api/v1/flows/{id})", f.Name)
			}
			found = &flows[i]
		}
	}
	if found != nil {
		flow, err = c.UpdateFlow(ctx, found.Id.String(), f)
		return flow, false, err
	}
	flow, err = c.CreateFlow(ctx, f)
	return flow, true, err
}

// FindFlow returns the flow whose id or name is ref.
func (c *Client) FindFlow(ctx context.Context, ref string) (*Flow, error) {
	flows, err := c.ListFlows(ctx)
	if err != nil {
		return nil, err
	}
	for i := range flows {
		if flows[i].Id.String() == ref {
			return &flows[i], nil
		}
	}
	var found *Flow
	for i := range flows {
		if flows[i].Name == ref {
			if found != nil {
				return nil, fmt.Errorf("several flows are named %q; use the flow id", ref)
			}
			found = &flows[i]
		}
	}
	if found == nil {
		return nil, &Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("no flow with id or name %q", ref)}
	}
	return found, nil
}

// Finished reports whether the run reached completed, failed or cancelled.
// (A failed run may still be resumed by a retry.)
func Finished(r *Run) bool {
	return r.Status == api.RunStatusCompleted || r.Status == api.RunStatusFailed || r.Status == api.RunStatusCancelled
}

// StartRun starts a run of a flow with input (nil = {}), on entity
// entityID when given.
func (c *Client) StartRun(ctx context.Context, flowID string, input json.RawMessage, entityID ...string) (*Run, error) {
	var body api.CreateRunJSONRequestBody
	if len(input) > 0 {
		body.Input = input
	}
	if len(entityID) > 0 && entityID[0] != "" {
		id, err := uuid.Parse(entityID[0])
		if err != nil {
			// As the server words it (the contract's entity_id is a uuid).
			return nil, fmt.Errorf("entity_id must be a UUID, not %q", entityID[0])
		}
		body.EntityId = &id
	}
	var out Run
	if err := c.Do(ctx, http.MethodPost, "/api/v1/flows/"+url.PathEscape(flowID)+"/runs", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetRun loads a run with its nodes.
func (c *Client) GetRun(ctx context.Context, id string) (*Run, error) {
	var out Run
	if err := c.Do(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CompleteNode answers a UX node: approve with output, or reject with a
// reason (reject != "").
func (c *Client) CompleteNode(ctx context.Context, runID, key string, p CompleteParams) (*Run, error) {
	var body api.CompleteNodeJSONRequestBody
	switch {
	case p.Reject != "":
		// The old way, which every UX node understands: reject, with the
		// reason kept as the decision's comment when a reject edge routes it.
		status := api.CompleteNodeJSONBodyStatusFailed
		body.Status, body.Error, body.Comment = &status, &p.Reject, &p.Reject
	case p.Outcome != "":
		body.Outcome = &p.Outcome
	default:
		status := api.CompleteNodeJSONBodyStatusCompleted
		body.Status, body.Output = &status, map[string]any{"approved": true}
	}
	if len(p.Output) > 0 {
		body.Output = p.Output
	}
	if p.Comment != "" {
		body.Comment = &p.Comment
	}
	var out Run
	if err := c.Do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(runID)+"/nodes/"+url.PathEscape(key)+"/complete",
		body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CompleteParams is a person's answer to a UX node: an outcome (empty:
// approve), the answer's output, a comment; or Reject with a reason.
type CompleteParams struct {
	Outcome string
	Output  json.RawMessage
	Comment string
	Reject  string
}

// WebhookSecret returns the secret that signs dispatches (whsec_…).
func (c *Client) WebhookSecret(ctx context.Context) (string, error) {
	var out struct {
		Secret string `json:"secret"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/webhook-secret", nil, &out); err != nil {
		return "", err
	}
	return out.Secret, nil
}

// RotateWebhookSecret rotates the secret that signs dispatches: the
// server's, or flowID's own when flowID is set; the old one signs beside
// it for grace.
func (c *Client) RotateWebhookSecret(ctx context.Context, flowID string, grace time.Duration) (*RotatedSecret, error) {
	path := "/api/v1/webhook-secret/rotate"
	if flowID != "" {
		path = "/api/v1/flows/" + url.PathEscape(flowID) + "/webhook-secret/rotate"
	}
	graceSeconds := int(grace / time.Second)
	var out RotatedSecret
	if err := c.Do(ctx, http.MethodPost, path, api.RotateWebhookSecretJSONRequestBody{GraceSeconds: &graceSeconds}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetSecret creates or replaces the secret name (POST /api/v1/secrets).
func (c *Client) SetSecret(ctx context.Context, name, value string) (*SecretInfo, error) {
	var out SecretInfo
	if err := c.Do(ctx, http.MethodPost, "/api/v1/secrets", api.CreateSecretJSONRequestBody{Name: name, Value: value}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSecrets lists every secret by name, following the pages.
func (c *Client) ListSecrets(ctx context.Context) ([]SecretInfo, error) {
	all := []SecretInfo{}
	cursor := ""
	for {
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Secrets    []SecretInfo `json:"secrets"`
			NextCursor *string      `json:"next_cursor"`
		}
		if err := c.Do(ctx, http.MethodGet, "/api/v1/secrets?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Secrets...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}

// DeleteSecret deletes the secret name.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/secrets/"+url.PathEscape(name), nil, nil)
}

// ErrStop ends the stream without error when a RunEvents callback
// returns it.
var ErrStop = errors.New("stop")

// RunEvents streams a run's events (GET /api/v1/runs/{id}/events, SSE)
// from after sequence number after, calling fn for each, until fn returns
// an error (ErrStop ends quietly) or ctx ends. A dropped connection is
// resumed with Last-Event-ID.
func (c *Client) RunEvents(ctx context.Context, runID string, after int64, fn func(Event) error) error {
	failures := 0
	for {
		err := c.streamOnce(ctx, runID, &after, fn)
		if errors.Is(err, ErrStop) {
			return nil
		}
		var apiErr *Error
		if ctx.Err() != nil || errors.As(err, &apiErr) || (err != nil && !errors.Is(err, errDropped)) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		failures++
		if failures > 10 {
			return fmt.Errorf("the event stream of run %s keeps dropping", runID)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(failures) * 200 * time.Millisecond):
		}
	}
}

var errDropped = errors.New("event stream dropped")

func (c *Client) streamOnce(ctx context.Context, runID string, after *int64, fn func(Event) error) error {
	req, err := c.newRequest(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(runID)+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if *after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
	}
	resp, err := c.httpClient(true).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", errDropped, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return decodeError(resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() == 0 {
				continue
			}
			var e Event
			if err := decodeJSON([]byte(data.String()), &e); err != nil {
				return fmt.Errorf("error decoding an event of run %s: %w", runID, err)
			}
			data.Reset()
			if e.Seq > *after {
				*after = e.Seq
			}
			if err := fn(e); err != nil {
				return err
			}
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %v", errDropped, sc.Err())
}

// ListRunsParams narrows a list of runs ("" fields: any).
type ListRunsParams struct {
	FlowID, Status, Node, Error string
	Limit                       int
}

// ListRuns lists runs, newest first: one page of at most Limit.
func (c *Client) ListRuns(ctx context.Context, p ListRunsParams) ([]Run, error) {
	q := url.Values{}
	for k, v := range map[string]string{"flow_id": p.FlowID, "status": p.Status, "node": p.Node, "error": p.Error} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	var out struct {
		Runs []Run `json:"runs"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/runs?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	return out.Runs, nil
}

// CancelRun cancels a run.
func (c *Client) CancelRun(ctx context.Context, id string) (*Run, error) {
	return c.CancelRunWith(ctx, id, false)
}

// CancelRunWith cancels a run; with compensate, the undo nodes of its
// completed steps run first (the run answers running, and ends cancelled).
func (c *Client) CancelRunWith(ctx context.Context, id string, compensate bool) (*Run, error) {
	var out Run
	var body api.CancelRunJSONRequestBody
	if compensate {
		body.Compensate = &compensate
	}
	if err := c.Do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(id)+"/cancel", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RetryNode fires a failed node again as a new attempt.
func (c *Client) RetryNode(ctx context.Context, runID, key string) (*Run, error) {
	var out Run
	if err := c.Do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(runID)+"/nodes/"+url.PathEscape(key)+"/retry",
		map[string]any{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RerunNode runs a finished node again, and everything downstream of it.
func (c *Client) RerunNode(ctx context.Context, runID, key string) (*Run, error) {
	var out Run
	if err := c.Do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(runID)+"/nodes/"+url.PathEscape(key)+"/rerun",
		map[string]any{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TriggerKind is a trigger's kind: webhook, schedule, event, nats or amqp.
func TriggerKind(t Trigger) string {
	var k struct {
		Kind string `json:"kind"`
	}
	b, err := t.MarshalJSON()
	if err != nil || json.Unmarshal(b, &k) != nil {
		return ""
	}
	return k.Kind
}

// ListTriggers lists every trigger of a flow, oldest first (all pages).
func (c *Client) ListTriggers(ctx context.Context, flowID string) ([]Trigger, error) {
	var all []Trigger
	cursor := ""
	for {
		var page struct {
			Triggers   []Trigger `json:"triggers"`
			NextCursor *string   `json:"next_cursor"`
		}
		path := "/api/v1/flows/" + url.PathEscape(flowID) + "/triggers?limit=500"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := c.Do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Triggers...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}

// ListApprovals lists the steps waiting for a person (assigned: me,
// groups or all; "" all), oldest first, at most 500.
func (c *Client) ListApprovals(ctx context.Context, assigned string) ([]Approval, error) {
	q := url.Values{"limit": {"500"}}
	if assigned != "" {
		q.Set("assigned", assigned)
	}
	var out struct {
		Approvals []Approval `json:"approvals"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/approvals?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	return out.Approvals, nil
}

// Workspaces lists the workspaces the caller belongs to, with their role
// in each (every one for a server admin).
func (c *Client) Workspaces(ctx context.Context) ([]api.Workspace, error) {
	var out struct {
		Workspaces []api.Workspace `json:"workspaces"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/workspaces", nil, &out); err != nil {
		return nil, err
	}
	return out.Workspaces, nil
}
