package browser_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIWorkspaces: a person in two workspaces switches between them in
// the top bar; each shows its own flows and the person's role there, and
// the choice holds across a reload. As the admin of one, they give a
// colleague a role there on its Members page, change it and take it away.
func TestUIWorkspaces(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	s.api("POST", "/workspaces", map[string]any{"slug": "sales", "name": "Sales team"}, nil)
	s.api("POST", "/users", map[string]any{"email": "sam@example.com", "name": "Sam", "role": "viewer", "password": pw}, nil)
	s.api("PUT", "/workspaces/sales/members/sam@example.com", map[string]any{"role": "admin"}, nil)
	s.api("POST", "/users", map[string]any{"email": "ria@example.com", "name": "Ria", "role": "viewer", "password": pw}, nil)
	graph := map[string]any{"nodes": []map[string]any{{"id": "ok", "type": "UX", "data": map[string]any{"label": "OK?"}}}, "edges": []any{}}
	s.api("POST", "/flows", map[string]any{"name": "Default onboarding", "graph": graph}, nil)
	inSales := func(path string, body any) {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/api/v1"+path, bytes.NewReader(b))
		require.NoError(t, err)
		rq.Header.Set("Authorization", "Bearer "+token)
		rq.Header.Set("Content-Type", "application/json")
		rq.Header.Set("Stitchd-Workspace", "sales")
		resp, err := s.client.Do(rq)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, path)
	}
	inSales("/flows", map[string]any{"name": "Sales pipeline", "graph": graph})
	// Una is a member of sales only.
	inSales("/users", map[string]any{"email": "una@example.com", "name": "Una", "role": "operator", "password": pw})

	s.run("sign in", chromedp.Navigate(s.url+"/flows"), passwordSignIn("sam@example.com", pw))
	s.waitJS("default's flows", `document.body.innerText.includes("Default onboarding") && !document.body.innerText.includes("Sales pipeline")`)
	s.waitJS("the switcher", `document.querySelector('select[aria-label="Workspace"]')?.options.length === 2`)
	require.Equal(t, "viewer", s.text(".whoami .role-chip"))
	s.run("switch", setValue(`select[aria-label="Workspace"]`, "sales"))
	s.waitJS("sales' flows", `document.body.innerText.includes("Sales pipeline") && !document.body.innerText.includes("Default onboarding")`)
	s.waitJS("role in sales", `document.querySelector(".whoami .role-chip")?.innerText === "admin"`)
	s.shot("workspaces-sales")
	s.run("reload", chromedp.Reload())
	s.waitJS("still sales", `document.body.innerText.includes("Sales pipeline") && document.querySelector('select[aria-label="Workspace"]')?.value === "sales"`)

	// Sales' members, managed by its admin.
	s.run("members", chromedp.Click(`a[href="/members"]`, chromedp.ByQuery), chromedp.WaitVisible("#member-email", chromedp.ByQuery),
		setValue("#member-email", "ria@example.com"), setValue("#member-role", "approver"),
		chromedp.Click(`[data-action="add-member"]`, chromedp.ByQuery))
	s.waitJS("ria added", `document.querySelector('tr[data-member="ria@example.com"] select')?.value === "approver"`)
	s.run("change", setValue(`tr[data-member="ria@example.com"] select`, "operator"))
	s.waitJS("ria changed", `document.querySelector('tr[data-member="ria@example.com"] select')?.value === "operator"`)
	var members struct {
		Members []struct{ Email, Role string } `json:"members"`
	}
	s.api("GET", "/workspaces/sales/members", nil, &members)
	require.Len(t, members.Members, 3) // ria, sam and una
	require.Equal(t, "ria@example.com", members.Members[0].Email)
	require.Equal(t, "operator", members.Members[0].Role)
	s.shot("workspaces-members")
	s.run("remove", chromedp.Click(`tr[data-member="ria@example.com"] button.danger`, chromedp.ByQuery))
	s.waitJS("ria gone", `!document.querySelector('tr[data-member="ria@example.com"]') && !!document.querySelector('tr[data-member="sam@example.com"]')`)
	s.run("back", setValue(`select[aria-label="Workspace"]`, "default"))
	s.waitJS("default again", `document.body.innerText.includes("Default onboarding") && !document.body.innerText.includes("Sales pipeline")`)

	// A person of one workspace only lands in it, whatever this browser
	// used last.
	s.run("sign out", chromedp.Click(`//button[normalize-space()="Sign out"]`, chromedp.BySearch), passwordSignIn("una@example.com", pw))
	s.waitJS("una in sales", `document.body.innerText.includes("Sales pipeline") && document.querySelector(".whoami .role-chip")?.innerText === "operator"`)
	s.waitJS("no switcher for one workspace", `!document.querySelector('select[aria-label="Workspace"]')`)
}
