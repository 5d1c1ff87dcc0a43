package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store"
)

// page fetches an approval link's page (GET, or POST with a comment).
func (h *harness) page(method, link, comment string) (int, string) {
	h.t.Helper()
	var req *http.Request
	var err error
	if method == http.MethodPost {
		req, err = http.NewRequestWithContext(h.t.Context(), http.MethodPost, link,
			strings.NewReader(url.Values{"comment": {comment}}.Encode()))
		require.NoError(h.t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req, err = http.NewRequestWithContext(h.t.Context(), http.MethodGet, link, nil)
		require.NoError(h.t, err)
	}
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestApprovalLinks: an approval.requested notification carries a signed
// link per assignee (users named and members of groups named) and
// outcome; the link's page asks to confirm and decides nothing; the POST
// decides as that person, once; a tampered, expired, or stale link
// decides nothing.
func TestApprovalLinks(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 0)
	h := newHarness(t, func(c *app.Config) { c.NotifyURL = rcv.srv.URL })
	ctx := context.Background()
	for _, u := range []struct{ email, role string }{{"ann@example.com", "approver"}, {"off@example.com", "approver"},
		{"vic@example.com", "viewer"}, {"val@example.com", "viewer"}} {
		_, err := h.app.Store.CreateUser(ctx, store.CreateUserParams{ID: uuid.NewString(), Email: u.email, Name: u.email,
			Role: u.role, Groups: []string{"finance"}, Now: time.Now()})
		require.NoError(t, err)
	}
	disabled := true
	off, err := h.app.Store.UserByEmail(ctx, "off@example.com")
	require.NoError(t, err)
	_, err = h.app.Store.UpdateUser(ctx, off.ID, store.UpdateUserParams{Disabled: &disabled, Now: time.Now()})
	require.NoError(t, err)

	flow, v := h.askFlow(map[string]any{"assignees": map[string]any{"users": []string{"bob@example.com", "vic@example.com"},
		"groups": []string{"finance"}},
		"outcomes": []string{"approve", "reject"}})
	run := h.startBy(flow, v, "", map[string]any{"amount": 5})
	note := h.notified(rcv, run, "approval.requested", 1)[0]
	var body struct {
		Links []callbacks.ActionLink `json:"links"`
	}
	require.NoError(t, json.Unmarshal(note.Body, &body))
	links := map[string]string{}
	for _, l := range body.Links {
		require.True(t, strings.HasPrefix(l.URL, h.app.URL+"/approve/"), l.URL)
		require.True(t, l.ExpiresAt.After(time.Now().Add(6*24*time.Hour)), "a week to decide")
		links[l.Email+" "+l.Outcome] = l.URL
	}
	// bob and vic by name, ann as a member of finance; the disabled member
	// has none, nor val, a viewer in finance (a viewer may not decide).
	require.Len(t, links, 6, "%v", links)
	require.Empty(t, links["val@example.com approve"])
	ann := links["ann@example.com approve"]
	require.NotEmpty(t, ann)
	require.NotEmpty(t, links["bob@example.com reject"])

	// GET only asks.
	code, html := h.page(http.MethodGet, ann, "")
	require.Equal(t, http.StatusOK, code, html)
	require.Contains(t, html, "Confirm: approve")
	require.Contains(t, html, "ann@example.com")
	require.Equal(t, "waiting_for_user", h.run(run).Nodes["ask"].Status, "opening the link decides nothing")

	// A tampered link is refused.
	i := strings.LastIndex(ann, ".") + 3
	swap := byte('A') // another character in its place
	if ann[i] == 'A' {
		swap = 'B'
	}
	tampered := ann[:i] + string(swap) + ann[i+1:]
	code, _ = h.page(http.MethodPost, tampered, "")
	require.Equal(t, http.StatusNotFound, code)

	// An expired one too.
	claims, err := h.app.Keys.VerifyAction(strings.TrimPrefix(ann, h.app.URL+"/approve/"), time.Now())
	require.NoError(t, err)
	claims.Expiry, claims.Nonce = time.Now().Add(-time.Second), "other"
	old, err := h.app.Keys.MintAction(claims)
	require.NoError(t, err)
	code, html = h.page(http.MethodPost, h.app.URL+"/approve/"+old, "")
	require.Equal(t, http.StatusGone, code, html)
	require.Equal(t, "waiting_for_user", h.run(run).Nodes["ask"].Status)

	// POST decides, as ann.
	code, html = h.page(http.MethodPost, ann, "fine by me")
	require.Equal(t, http.StatusOK, code, html)
	require.Contains(t, html, "Your decision (approve) is recorded")
	out := h.askOutput(run)
	require.Equal(t, "approve", out.Decision.Outcome)
	require.Equal(t, "ann@example.com", out.Decision.By)
	require.Equal(t, "fine by me", out.Decision.Comment)

	// Once.
	code, html = h.page(http.MethodPost, ann, "")
	require.Equal(t, http.StatusGone, code, html)
	require.Contains(t, html, "already used")
	// Another link of the decided step: nothing to decide.
	code, html = h.page(http.MethodPost, links["ann@example.com reject"], "")
	require.Equal(t, http.StatusConflict, code, html)
	require.Equal(t, "completed", h.run(run).Nodes["ask"].Status)
	// A link decides only as a user who may decide approvals: bob is named
	// but has no account.
	code, html = h.page(http.MethodPost, links["bob@example.com reject"], "")
	require.Equal(t, http.StatusForbidden, code, html)
	require.Contains(t, html, "does not exist")
	// Nor as a user whose role may not decide.
	code, html = h.page(http.MethodPost, links["vic@example.com approve"], "")
	require.Equal(t, http.StatusForbidden, code, html)
	require.Contains(t, html, "Not an approver")
	// A comment that is not text is a 400, not a 500.
	code, _ = h.page(http.MethodPost, links["ann@example.com reject"], "a\x00b")
	require.Contains(t, []int{http.StatusBadRequest, http.StatusGone, http.StatusConflict}, code)

	entries, _, err := h.app.Store.AuditPage(ctx, store.AuditFilter{Target: "run:" + run})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "ann@example.com", entries[0].Actor)
	require.Equal(t, "POST /approve/:token", entries[0].Action)
	require.Equal(t, "link", entries[0].Details["via"])
}

// TestApproverReadsOnlyTheirRuns: an approver reads a run one of whose
// steps is assigned to them (or their groups) and decides it through the
// API; a run assigned to others is not there for them; the audit trail
// names them.
func TestApproverReadsOnlyTheirRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ann := h.tokenFor("ann@example.com", "approver", "finance")
	mine, v := h.askFlow(map[string]any{"assignees": map[string]any{"groups": []string{"finance"}}})
	theirs, v2 := h.askFlow(map[string]any{"assignees": map[string]any{"users": []string{"bob@example.com"}}})
	r1 := h.startBy(mine, v, "", map[string]any{})
	r2 := h.startBy(theirs, v2, "", map[string]any{})

	require.Equal(t, http.StatusOK, h.doAs(ann, "GET", "/api/v1/runs/"+r1, nil, nil))
	require.Equal(t, http.StatusNotFound, h.doAs(ann, "GET", "/api/v1/runs/"+r2, nil, nil))
	require.Equal(t, http.StatusForbidden, h.doAs(ann, "GET", "/api/v1/runs", nil, nil))
	var inbox struct {
		Approvals []struct {
			RunID string `json:"run_id"`
		} `json:"approvals"`
	}
	require.Equal(t, http.StatusOK, h.doAs(ann, "GET", "/api/v1/approvals", nil, &inbox))
	require.Len(t, inbox.Approvals, 1)
	require.Equal(t, r1, inbox.Approvals[0].RunID)

	// Deciding, claiming or delegating a step of it: 404, as reading it (a
	// 403 told her the run and its step exist).
	for _, verb := range []string{"complete", "claim", "unclaim", "delegate", "reassign"} {
		require.Equal(t, http.StatusNotFound, h.doAs(ann, "POST", "/api/v1/runs/"+r2+"/nodes/ask/"+verb, map[string]any{"outcome": "approve"}, nil), verb)
	}
	require.Equal(t, http.StatusOK, h.doAs(ann, "POST", "/api/v1/runs/"+r1+"/nodes/ask/complete",
		map[string]any{"outcome": "approve", "comment": "ok"}, nil))
	require.Equal(t, "ann@example.com", h.askOutput(r1).Decision.By)
	// Having decided, she still reads the run.
	require.Equal(t, http.StatusOK, h.doAs(ann, "GET", "/api/v1/runs/"+r1, nil, nil))

	// A step assigned to no one: any approver decides it; one who comes
	// after another decided it is told so (409), not that the run is not
	// there, and still reads it.
	bob := h.tokenFor("bob@example.com", "approver")
	open, v3 := h.askFlow(map[string]any{})
	r3 := h.startBy(open, v3, "", map[string]any{})
	require.Equal(t, http.StatusOK, h.doAs(ann, "POST", "/api/v1/runs/"+r3+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil))
	require.Equal(t, http.StatusConflict, h.doAs(bob, "POST", "/api/v1/runs/"+r3+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil))
	require.Equal(t, http.StatusOK, h.doAs(bob, "GET", "/api/v1/runs/"+r3, nil, nil))

	entries, _, err := h.app.Store.AuditPage(context.Background(), store.AuditFilter{Target: "run:" + r1})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "ann@example.com", entries[0].Actor)
	require.Equal(t, "POST /api/v1/runs/:id/nodes/:key/complete", entries[0].Action)
	require.Equal(t, "ask", entries[0].Details["key"])
}

// TestAdminTokenDecidesOutright: the admin token is no person — its
// decision settles a 2-of-3 step at once instead of being one vote, so an
// admin holding it cannot vote twice.
func TestAdminTokenDecidesOutright(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow, v := h.askFlow(map[string]any{"requiredApprovals": 2,
		"assignees": map[string]any{"users": []string{"a@example.com", "b@example.com", "c@example.com"}}})
	run := h.startBy(flow, v, "", map[string]any{})
	require.Equal(t, http.StatusOK, h.do("POST", "/api/v1/runs/"+run+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil))
	out := h.askOutput(run)
	require.Equal(t, "approve", out.Decision.Outcome)
	require.Equal(t, "admin", out.Decision.By)
	require.Len(t, out.Decisions, 1, "one decision settled it")
	require.Equal(t, "admin", out.Decisions[0].By)
}

// TestInboxLeavesOutWhatSeparationOfDutiesRefuses: the person who started
// a run does not find its separation-of-duties step under "assigned to
// me" or "my groups" (they could not decide it); "all" still lists it.
func TestInboxLeavesOutWhatSeparationOfDutiesRefuses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	flow, v := h.askFlow(map[string]any{"separationOfDuties": true,
		"assignees": map[string]any{"users": []string{"ada@example.com"}, "groups": []string{"ops"}}})
	own := h.startBy(flow, v, "ada@example.com", map[string]any{})
	other := h.startBy(flow, v, "bob@example.com", map[string]any{})
	list := func(f store.ApprovalFilter) []string {
		page, _, err := h.app.Store.ApprovalsPageFor(ctx, store.PageParams{}, f)
		require.NoError(t, err)
		var ids []string
		for _, a := range page {
			ids = append(ids, a.RunID)
		}
		return ids
	}
	ada := store.ApprovalFilter{Email: "ADA@example.com", Groups: []string{"ops"}}
	for _, a := range []string{store.AssignedMe, store.AssignedGroups} {
		f := ada
		f.Assigned = a
		require.Equal(t, []string{other}, list(f), a)
	}
	f := ada
	f.Decidable = true
	require.Equal(t, []string{other}, list(f), "an approver's view")
	require.ElementsMatch(t, []string{own, other}, list(store.ApprovalFilter{Assigned: store.AssignedAll}))
	n, _, err := h.app.Store.ApprovalsMark(ctx, store.ApprovalFilter{Email: "ada@example.com", Assigned: store.AssignedMe})
	require.NoError(t, err)
	require.Equal(t, 1, n, "the live inbox counts the same")
}

// TestApprovalLinkBoundToAccount: a link is made for an account, not an
// email. Once that account is deleted the link decides nothing, and still
// nothing when a new account (another person) is made with the same email;
// a link made for the new account decides. Before, the old link decided as
// the new account.
func TestApprovalLinkBoundToAccount(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 0)
	h := newHarness(t, func(c *app.Config) { c.NotifyURL = rcv.srv.URL })
	newApprover := func() string {
		var u struct {
			ID string `json:"id"`
		}
		require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/users",
			map[string]any{"email": "amy@example.com", "name": "Amy", "role": "approver"}, &u))
		return u.ID
	}
	linkOf := func(run string) string {
		var body struct {
			Links []callbacks.ActionLink `json:"links"`
		}
		require.NoError(t, json.Unmarshal(h.notified(rcv, run, "approval.requested", 1)[0].Body, &body))
		for _, l := range body.Links {
			if l.Email == "amy@example.com" && l.Outcome == "approve" {
				return l.URL
			}
		}
		t.Fatalf("no link for amy in %+v", body.Links)
		return ""
	}
	first := newApprover()
	flow, v := h.askFlow(map[string]any{"assignees": map[string]any{"users": []string{"amy@example.com"}},
		"outcomes": []string{"approve", "reject"}})
	run := h.startBy(flow, v, "", map[string]any{})
	old := linkOf(run)

	require.Equal(t, http.StatusNoContent, h.do("DELETE", "/api/v1/users/"+first, nil, nil))
	code, html := h.page(http.MethodPost, old, "")
	require.Equal(t, http.StatusForbidden, code, html)
	second := newApprover()
	require.NotEqual(t, first, second)
	code, html = h.page(http.MethodPost, old, "")
	require.Equal(t, http.StatusForbidden, code, html)
	require.Contains(t, html, "does not exist")
	require.Equal(t, "waiting_for_user", h.run(run).Nodes["ask"].Status, "the old link decided nothing")

	// The new account's own link decides.
	run2 := h.startBy(flow, v, "", map[string]any{})
	code, html = h.page(http.MethodPost, linkOf(run2), "")
	require.Equal(t, http.StatusOK, code, html)
	require.Equal(t, "amy@example.com", h.askOutput(run2).Decision.By)
}
