package app_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store"
)

// journeyStep is a move of a known journey: hours after t0, from a
// section (or "" for the entity's creation) to another.
type journeyStep struct {
	hours    float64
	from, to string
}

// setJourney replaces an entity's journey with steps (times after t0) and
// puts it where the last step leaves it.
func (h *harness) setJourney(entity string, t0 time.Time, steps ...journeyStep) {
	h.t.Helper()
	db := h.app.Store.Gorm()
	require.NoError(h.t, db.Exec(`DELETE FROM journey_events WHERE entity_id = ?`, entity).Error)
	for _, s := range steps {
		kind := "moved"
		var from any = s.from
		if s.from == "" {
			kind, from = "created", nil
		}
		at := t0.Add(time.Duration(s.hours * float64(time.Hour)))
		require.NoError(h.t, db.Exec(`INSERT INTO journey_events (id, entity_id, kind, from_section_id, to_section_id, created_at)
			VALUES (gen_random_uuid(), ?, ?, ?, ?, ?)`, entity, kind, from, s.to, at).Error)
	}
	last := steps[len(steps)-1]
	require.NoError(h.t, db.Exec(`UPDATE entities SET section_id = ?, section_since = ? WHERE id = ?`, last.to,
		t0.Add(time.Duration(last.hours*float64(time.Hour))), entity).Error)
}

func pct(t *testing.T, p store.Percentiles) []float64 {
	t.Helper()
	require.NotNil(t, p.P50)
	require.NotNil(t, p.P90)
	require.NotNil(t, p.Max)
	return []float64{*p.P50, *p.P90, *p.Max}
}

// TestBoardAnalytics: a board's funnel from known journeys — moves in and
// out of each section, where entities went next, time in section (closed
// stays and those still open at the range's end) as exact percentiles,
// entities there now and overdue past a section's SLA; one
// entity.sla_breached notification per stay; CSV export.
func TestBoardAnalytics(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 0)
	h := newHarness(t, func(c *app.Config) { c.NotifyURL = rcv.srv.URL })
	board := h.createBoard("lead", "qualified", "won", "lost")
	require.Equal(t, 200, h.do("PATCH", "/api/v1/boards/"+board+"/sections/qualified", map[string]any{"sla_seconds": 3600}, nil))
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC) // older than the default range (30 days)
	e := map[string]string{}
	for _, n := range []string{"e1", "e2", "e3", "e4"} {
		e[n] = h.newEntity(board, n)
	}
	h.setJourney(e["e1"], t0, journeyStep{0, "", "lead"}, journeyStep{2, "lead", "qualified"}, journeyStep{5, "qualified", "won"})
	h.setJourney(e["e2"], t0, journeyStep{1, "", "lead"}, journeyStep{3, "lead", "qualified"}, journeyStep{4, "qualified", "lost"})
	h.setJourney(e["e3"], t0, journeyStep{1, "", "lead"}, journeyStep{4, "lead", "qualified"})
	h.setJourney(e["e4"], t0, journeyStep{2, "", "lead"})

	q := url.Values{"from": {t0.Format(time.RFC3339)}, "to": {t0.Add(10 * time.Hour).Format(time.RFC3339)}}
	var a store.BoardAnalytics
	require.Equal(t, 200, h.do("GET", "/api/v1/boards/"+board+"/analytics?"+q.Encode(), nil, &a))
	require.Equal(t, 4, a.Entities)
	require.Len(t, a.Sections, 4)
	by := map[string]store.SectionAnalytics{}
	for _, s := range a.Sections {
		by[s.ID] = s
	}
	const hr = 3600.0
	lead := by["lead"]
	require.Equal(t, [3]int{4, 3, 1}, [3]int{lead.Entered, lead.Left, lead.Current})
	require.Equal(t, []store.SectionFlow{{SectionID: "qualified", Count: 3}}, lead.Next)
	// Stays 2, 2, 3 h and e4's open 8 h (to the range's end).
	require.InDeltaSlice(t, []float64{2.5 * hr, 10800 + 0.7*(8*hr-10800), 8 * hr}, pct(t, lead.TimeInSection), 0.01)
	quali := by["qualified"]
	require.Equal(t, [4]int{3, 2, 1, 1}, [4]int{quali.Entered, quali.Left, quali.Current, quali.Overdue})
	require.Equal(t, []store.SectionFlow{{SectionID: "lost", Count: 1}, {SectionID: "won", Count: 1}}, quali.Next)
	require.Equal(t, 3600, *quali.SLASeconds)
	// Stays 3 h, 1 h and e3's open 6 h.
	require.InDeltaSlice(t, []float64{3 * hr, hr*3 + 0.8*(6*hr-3*hr), 6 * hr}, pct(t, quali.TimeInSection), 0.01)
	require.Equal(t, [3]int{1, 0, 1}, [3]int{by["won"].Entered, by["won"].Left, by["won"].Current})
	require.InDelta(t, 5*hr, *by["won"].TimeInSection.P50, 0.01, "won since hour 5, measured to hour 10")
	require.Empty(t, by["won"].Next)

	// A range ending before a stay does not see it; the default range is
	// the last 30 days (these journeys are older).
	q = url.Values{"from": {t0.Format(time.RFC3339)}, "to": {t0.Add(90 * time.Minute).Format(time.RFC3339)}}
	require.Equal(t, 200, h.do("GET", "/api/v1/boards/"+board+"/analytics?"+q.Encode(), nil, &a))
	require.Equal(t, 3, a.Entities)
	require.Equal(t, 3, a.Sections[0].Entered)
	require.Zero(t, a.Sections[1].Entered)
	require.Equal(t, 200, h.do("GET", "/api/v1/boards/"+board+"/analytics", nil, &a))
	require.Zero(t, a.Entities)
	require.Equal(t, 1, a.Sections[1].Current, "now is now, whatever the range")

	// The board's card flags the overdue entity.
	var bj struct {
		Sections []struct {
			ID         string `json:"id"`
			SLASeconds *int   `json:"sla_seconds"`
			Entities   []struct {
				Name    string `json:"name"`
				Overdue bool   `json:"overdue"`
			} `json:"entities"`
		} `json:"sections"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/boards/"+board, nil, &bj))
	require.Equal(t, "qualified", bj.Sections[1].ID)
	require.True(t, bj.Sections[1].Entities[0].Overdue)
	require.False(t, bj.Sections[0].Entities[0].Overdue, "lead has no SLA")

	// One notification per stay, however many sweeps.
	h.clock.Advance(11 * time.Second) // the sweeper looks for breaches every 10 s
	h.sweeps(2)
	breaches := func() []notice {
		var out []notice
		for _, n := range rcv.all() {
			if n.Note.Type == "entity.sla_breached" {
				out = append(out, n)
			}
		}
		return out
	}
	h.eventually(func() bool { return len(breaches()) == 1 }, "the breach to be notified")
	h.clock.Advance(11 * time.Second)
	h.sweeps(2)
	got := breaches()
	require.Len(t, got, 1)
	var body struct {
		Entity struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"entity"`
		Section struct {
			ID         string `json:"id"`
			SLASeconds int    `json:"sla_seconds"`
		} `json:"section"`
	}
	require.NoError(t, json.Unmarshal(got[0].Body, &body))
	require.Equal(t, e["e3"], body.Entity.ID)
	require.Equal(t, "qualified", body.Section.ID)
	require.Equal(t, 3600, body.Section.SLASeconds)
	require.NotEmpty(t, got[0].Header.Get("webhook-signature"), "signed, though of no run")
	// A new stay past the SLA is a new breach.
	require.NoError(t, h.app.Store.Gorm().Exec(`UPDATE entities SET section_since = section_since + interval '1 minute' WHERE id = ?`,
		e["e3"]).Error)
	h.clock.Advance(11 * time.Second) // the sweeper looks for breaches every 10 s
	h.eventually(func() bool { return len(breaches()) == 2 }, "the new stay's breach")

	// CSV, the section's name guarded against formulas.
	require.Equal(t, 200, h.do("PATCH", "/api/v1/boards/"+board+"/sections/lost", map[string]any{"name": "=cmd"}, nil))
	code, csv := h.raw("GET", "/api/v1/boards/"+board+"/analytics?format=csv&"+q.Encode())
	require.Equal(t, 200, code)
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	require.Len(t, lines, 5)
	require.True(t, strings.HasPrefix(lines[0], "section_id,section_name,sla_seconds,entered"))
	require.Contains(t, lines[4], "'=cmd")

	// Bad ranges: 400.
	require.Equal(t, 400, h.do("GET", "/api/v1/boards/"+board+"/analytics?from=yesterday", nil, nil))
	require.Equal(t, 400, h.do("GET", "/api/v1/boards/"+board+"/analytics?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", nil, nil))
	require.Equal(t, 404, h.do("GET", "/api/v1/boards/00000000-0000-0000-0000-000000000000/analytics", nil, nil))
}

// TestFlowAnalytics: a flow's runs over a range — counts by status, each
// node's fires, ends, waits, durations and outcomes, the branch edges it
// took, a timeline in buckets sized to the range, one version alone.
func TestFlowAnalytics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{
		node("check", "Condition", nil),
		node("big", "Transform", map[string]any{"expression": `{"big": true}`}),
		node("small", "Transform", map[string]any{"expression": `{"big": false}`}),
		wnode(h, "ask"),
	}, []map[string]any{
		{"id": "e1", "source": "check", "target": "big", "data": map[string]any{"condition": "input.amount > 100"}},
		{"id": "e2", "source": "check", "target": "small", "data": map[string]any{"default": true}},
		{"id": "e3", "source": "big", "target": "ask"},
	})
	var runs []string
	for _, amount := range []int{50, 500, 700, 20, 900} {
		runs = append(runs, h.startRun(flow, map[string]any{"amount": amount}).ID)
	}
	// Big ones wait at the worker; complete two, fail one.
	for i, id := range []string{runs[1], runs[2], runs[4]} {
		d := h.waitDispatch(id, "ask", 1)
		if i < 2 {
			h.complete(d, `{"ok": true}`)
		} else {
			code, body := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"no"}`)
			require.Equal(t, 200, code, body)
		}
	}
	h.waitRun(runs[1], "completed")
	h.waitRun(runs[2], "completed")
	h.waitRun(runs[4], "failed")
	h.waitRun(runs[0], "completed")
	h.waitRun(runs[3], "completed")
	// The runs are in a range around now, none in one two hours on.
	now := time.Now().UTC()
	q := url.Values{"from": {now.Add(-time.Hour).Format(time.RFC3339)}, "to": {now.Add(time.Hour).Format(time.RFC3339)}}
	var a store.FlowAnalytics
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/analytics?"+q.Encode(), nil, &a))
	require.Equal(t, store.FlowRunCounts{Started: 5, Completed: 4, Failed: 1}, a.Runs)
	require.Equal(t, "hour", a.Bucket)
	by := map[string]store.NodeAnalytics{}
	for _, n := range a.Nodes {
		by[n.Key] = n
	}
	require.Equal(t, 5, by["check"].Completed)
	require.Equal(t, map[string]int{"to:big": 3, "to:small": 2}, by["check"].Outcomes)
	require.Equal(t, [3]int{3, 2, 0}, [3]int{by["big"].Completed, by["small"].Completed, by["small"].Failed})
	require.Equal(t, [2]int{3, 2}, [2]int{by["small"].Skipped, by["big"].Skipped}, "the branch not taken is skipped")
	require.Equal(t, [4]int{3, 2, 1, 2}, [4]int{by["ask"].Fired, by["ask"].Completed, by["ask"].Failed, by["ask"].Skipped})
	require.NotNil(t, by["ask"].DurationMs.P50)
	require.NotNil(t, by["ask"].DurationMs.P95)
	require.GreaterOrEqual(t, *by["ask"].DurationMs.P95, *by["ask"].DurationMs.P50)
	var started int
	for _, b := range a.Timeline {
		started += b.Started
	}
	require.Equal(t, 5, started)

	later := url.Values{"from": {now.Add(2 * time.Hour).Format(time.RFC3339)}, "to": {now.Add(3 * time.Hour).Format(time.RFC3339)}}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/analytics?"+later.Encode(), nil, &a))
	require.Equal(t, store.FlowRunCounts{}, a.Runs)
	require.Empty(t, a.Nodes)
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/analytics?version=2&"+q.Encode(), nil, &a))
	require.Zero(t, a.Runs.Started, "no run of version 2")
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/analytics?version=1&"+q.Encode(), nil, &a))
	require.Equal(t, 5, a.Runs.Started)
	code, csv := h.raw("GET", "/api/v1/flows/"+flow+"/analytics?format=csv&"+q.Encode())
	require.Equal(t, 200, code)
	require.Contains(t, csv, "check,5,5,0,0,0,")
	require.Contains(t, csv, "to:big:3 to:small:2")
	require.Equal(t, 400, h.do("GET", "/api/v1/flows/"+flow+"/analytics?version=x", nil, nil))
}

// TestAnalyticsRangeFromTheBeginning: a from of 0001-01-01T00:00:00Z (the
// zero time, as a client writes "from the beginning") is the range's
// start as given — refused as longer than five years up to now — not
// taken as absent, which answered the last 30 days without a word.
func TestAnalyticsRangeFromTheBeginning(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("lead")
	flow := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "input"})}, nil)
	for _, path := range []string{"/api/v1/boards/" + board + "/analytics", "/api/v1/flows/" + flow + "/analytics"} {
		code, _ := h.refused(400, "GET", path+"?from=0001-01-01T00:00:00Z", nil)
		require.Equal(t, "invalid_request", code, path)
		var a struct{ From, To time.Time }
		require.Equal(t, 200, h.do("GET", path+"?from=0001-01-01T00:00:00Z&to=0001-01-02T00:00:00Z", nil, &a), path)
		require.Equal(t, time.Time{}, a.From, path)
		require.Equal(t, time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC), a.To, path)
	}
}

// TestFlowAnalyticsVersionPastInt4: a version number past what a version
// can be is a version with no runs, as any that does not exist (it was a
// 500: the driver could not encode it for the int4 column).
func TestFlowAnalyticsVersionPastInt4(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "input"})}, nil)
	h.waitRun(h.startRun(flow, map[string]any{}).ID, "completed")
	for _, v := range []string{"2", "2147483648", "99999999999"} {
		var a store.FlowAnalytics
		require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/analytics?version="+v, nil, &a), v)
		require.Zero(t, a.Runs.Started, v)
		require.Empty(t, a.Nodes, v)
	}
	var a store.FlowAnalytics
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/analytics?version=1", nil, &a))
	require.Equal(t, 1, a.Runs.Started)
}
