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

// Problem is one problem of a refused graph (invalid_graph details).
type Problem struct {
	Code    string `json:"code"`
	NodeID  string `json:"node_id,omitempty"`
	EdgeID  string `json:"edge_id,omitempty"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Error is an API error answer.
type Error struct {
	Status  int       `json:"-"`
	Code    string    `json:"code"`
	Message string    `json:"message"`
	Details []Problem `json:"details,omitempty"`
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
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("error decoding the answer to %s %s: %w", method, path, err)
		}
	}
	return nil
}

func decodeError(status int, b []byte) error {
	var env struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && env.Error != nil {
		env.Error.Status = status
		return env.Error
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

// VersionRef names a flow version.
type VersionRef struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
}

// Flow is a flow as the API returns it.
type Flow struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	BoardID        *string         `json:"board_id"`
	Version        VersionRef      `json:"version"`
	Warnings       []Problem       `json:"warnings"`
	Graph          json.RawMessage `json:"graph,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	VersionCreated *bool           `json:"version_created,omitempty"`
}

// FlowSpec is a flow to create or update.
type FlowSpec struct {
	Name    string          `json:"name"`
	Graph   json.RawMessage `json:"graph"`
	BoardID *string         `json:"board_id,omitempty"`
	Message string          `json:"message,omitempty"`
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
// created tells which.
func (c *Client) ApplyFlow(ctx context.Context, f FlowSpec) (flow *Flow, created bool, err error) {
	flows, err := c.ListFlows(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, existing := range flows {
		if existing.Name == f.Name {
			flow, err = c.UpdateFlow(ctx, existing.ID, f)
			return flow, false, err
		}
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
		if flows[i].ID == ref {
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

// Node is one node state of a run.
type Node struct {
	Key        string          `json:"key"`
	NodeID     string          `json:"node_id"`
	Type       string          `json:"type"`
	Index      []int           `json:"index"`
	Status     string          `json:"status"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	Error      *string         `json:"error"`
	Attempt    int             `json:"attempt"`
	StartedAt  *time.Time      `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at"`
}

// Run is a run as the API returns it.
type Run struct {
	ID            string          `json:"id"`
	FlowID        string          `json:"flow_id"`
	FlowVersionID string          `json:"flow_version_id"`
	Status        string          `json:"status"`
	Input         json.RawMessage `json:"input"`
	Output        json.RawMessage `json:"output"`
	Error         *string         `json:"error"`
	EntityID      *string         `json:"entity_id"`
	CreatedAt     time.Time       `json:"created_at"`
	FinishedAt    *time.Time      `json:"finished_at"`
	Nodes         map[string]Node `json:"nodes,omitempty"`
}

// Finished reports whether the run reached completed, failed or cancelled.
// (A failed run may still be resumed by a retry.)
func (r *Run) Finished() bool {
	return r.Status == "completed" || r.Status == "failed" || r.Status == "cancelled"
}

// StartRun starts a run of a flow with input (nil = {}), on entity
// entityID when given.
func (c *Client) StartRun(ctx context.Context, flowID string, input json.RawMessage, entityID ...string) (*Run, error) {
	body := map[string]any{}
	if len(input) > 0 {
		body["input"] = input
	}
	if len(entityID) > 0 && entityID[0] != "" {
		body["entity_id"] = entityID[0]
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
	body := map[string]any{}
	switch {
	case p.Reject != "":
		// The old way, which every UX node understands: reject, with the
		// reason kept as the decision's comment when a reject edge routes it.
		body = map[string]any{"status": "failed", "error": p.Reject, "comment": p.Reject}
	case p.Outcome != "":
		body["outcome"] = p.Outcome
	default:
		body["status"] = "completed"
		body["output"] = map[string]any{"approved": true}
	}
	if len(p.Output) > 0 {
		body["output"] = p.Output
	}
	if p.Comment != "" {
		body["comment"] = p.Comment
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

// RotatedSecret is a webhook secret rotation's answer.
type RotatedSecret struct {
	Secret            string     `json:"secret"`
	Scope             string     `json:"scope"`
	PreviousExpiresAt *time.Time `json:"previous_secret_expires_at"`
}

// RotateWebhookSecret rotates the secret that signs dispatches: the
// server's, or flowID's own when flowID is set; the old one signs beside
// it for grace.
func (c *Client) RotateWebhookSecret(ctx context.Context, flowID string, grace time.Duration) (*RotatedSecret, error) {
	path := "/api/v1/webhook-secret/rotate"
	if flowID != "" {
		path = "/api/v1/flows/" + url.PathEscape(flowID) + "/webhook-secret/rotate"
	}
	var out RotatedSecret
	if err := c.Do(ctx, http.MethodPost, path, map[string]any{"grace_seconds": int64(grace / time.Second)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SecretInfo is what the API shows of a secret: its name and times,
// never its value.
type SecretInfo struct {
	Name      string    `json:"name"`
	CreatedBy string    `json:"created_by"`
	UpdatedBy string    `json:"updated_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SetSecret creates or replaces the secret name (POST /api/v1/secrets).
func (c *Client) SetSecret(ctx context.Context, name, value string) (*SecretInfo, error) {
	var out SecretInfo
	if err := c.Do(ctx, http.MethodPost, "/api/v1/secrets", map[string]string{"name": name, "value": value}, &out); err != nil {
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

// Event is one event of a run's stream.
type Event struct {
	ID        int64           `json:"id"`
	RunID     string          `json:"run_id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Key       string          `json:"key,omitempty"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"created_at"`
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
			if err := json.Unmarshal([]byte(data.String()), &e); err != nil {
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
	body := map[string]any{}
	if compensate {
		body["compensate"] = true
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

// Trigger is a flow's trigger as the API lists it: its kind (webhook,
// schedule, event, nats, amqp) and the fields of that kind.
type Trigger map[string]any

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

// Approval is a step waiting for a person.
type Approval struct {
	RunID        string    `json:"run_id"`
	Key          string    `json:"key"`
	Label        string    `json:"label"`
	Prompt       string    `json:"prompt"`
	Outcomes     []string  `json:"outcomes"`
	WaitingSince time.Time `json:"waiting_since"`
	Assignees    *struct {
		Users  []string `json:"users"`
		Groups []string `json:"groups"`
	} `json:"assignees"`
	RequiredApprovals int `json:"required_approvals"`
	Votes             []struct {
		By      string `json:"by"`
		Outcome string `json:"outcome"`
	} `json:"votes"`
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
