package web

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/store"
)

// defaultAnalyticsRange is the range analytics read without from: the
// last 30 days.
const defaultAnalyticsRange = 30 * 24 * time.Hour

// maxAnalyticsRange bounds a range: five years.
const maxAnalyticsRange = 5 * 366 * 24 * time.Hour

// analyticsRange reads ?from=&to= (RFC 3339; default the 30 days before
// to, to default now).
func (s *Server) analyticsRange(c echo.Context) (store.AnalyticsParams, error) {
	now := s.cfg.Clock.Now()
	p := store.AnalyticsParams{To: now, Now: now}
	// Whether from was given, not whether it is the zero time: an explicit
	// 0001-01-01T00:00:00Z ("from the beginning") was read as absent and
	// answered the last 30 days.
	fromGiven := false
	for _, f := range []struct {
		name  string
		into  *time.Time
		given *bool
	}{{"to", &p.To, nil}, {"from", &p.From, &fromGiven}} {
		v := c.QueryParam(f.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return p, badRequest(f.name + " must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z")
		}
		*f.into = t
		if f.given != nil {
			*f.given = true
		}
	}
	if !fromGiven {
		p.From = p.To.Add(-defaultAnalyticsRange)
	}
	if !p.From.Before(p.To) {
		return p, badRequest("from must be before to")
	}
	if p.To.Sub(p.From) > maxAnalyticsRange {
		return p, badRequest("the range is longer than five years")
	}
	return p, nil
}

// wantsCSV reports whether the request asks for CSV (?format=csv or
// Accept: text/csv); another format, empty included, is 400.
func wantsCSV(c echo.Context) (bool, error) {
	f, err := queryEnum(c, "format", "csv")
	if err != nil {
		return false, err
	}
	return f == "csv" || strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/csv"), nil
}

// boardAnalytics is GET /api/v1/boards/{id}/analytics: the funnel of moves
// between the board's sections over a range, from the journey ledger.
func (s *Server) boardAnalytics(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "board")
	if err != nil {
		return err
	}
	p, err := s.analyticsRange(c)
	if err != nil {
		return err
	}
	csv, err := wantsCSV(c)
	if err != nil {
		return err
	}
	a, err := s.cfg.Store.BoardAnalytics(c.Request().Context(), id, p)
	if err != nil {
		return err
	}
	if !csv {
		return c.JSON(http.StatusOK, a)
	}
	rows := [][]string{{"section_id", "section_name", "sla_seconds", "entered", "left", "current", "overdue",
		"time_in_section_p50_s", "time_in_section_p90_s", "time_in_section_max_s", "next"}}
	for _, sec := range a.Sections {
		next := make([]string, len(sec.Next))
		for i, n := range sec.Next {
			next[i] = n.SectionID + ":" + strconv.Itoa(n.Count)
		}
		rows = append(rows, []string{sec.ID, sec.Name, intOrEmpty(sec.SLASeconds), strconv.Itoa(sec.Entered), strconv.Itoa(sec.Left),
			strconv.Itoa(sec.Current), strconv.Itoa(sec.Overdue), num(sec.TimeInSection.P50), num(sec.TimeInSection.P90),
			num(sec.TimeInSection.Max), strings.Join(next, " ")})
	}
	return writeCSV(c, "board-"+id+"-analytics.csv", rows)
}

// flowAnalytics is GET /api/v1/flows/{id}/analytics: a flow's runs over a
// range (of one version with ?version=), per node and over time.
func (s *Server) flowAnalytics(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	csv, err := wantsCSV(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetFlow(ctx, id); err != nil {
		return err
	}
	p, err := s.analyticsRange(c)
	if err != nil {
		return err
	}
	fp := store.FlowAnalyticsParams{AnalyticsParams: p, FlowID: id}
	if v := c.QueryParam("version"); v != "" {
		if fp.Version, err = strconv.Atoi(v); err != nil || fp.Version < 1 {
			return badRequest("version must be a version number (1 or more)")
		}
	}
	a, err := s.cfg.Store.FlowAnalytics(ctx, fp)
	if err != nil {
		return err
	}
	if !csv {
		return c.JSON(http.StatusOK, a)
	}
	rows := [][]string{{"node", "fired", "completed", "failed", "skipped", "waiting_now", "duration_p50_ms", "duration_p95_ms", "outcomes"}}
	for _, n := range a.Nodes {
		keys := make([]string, 0, len(n.Outcomes))
		for k := range n.Outcomes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		oc := make([]string, len(keys))
		for i, k := range keys {
			oc[i] = k + ":" + strconv.Itoa(n.Outcomes[k])
		}
		rows = append(rows, []string{n.Key, strconv.Itoa(n.Fired), strconv.Itoa(n.Completed), strconv.Itoa(n.Failed),
			strconv.Itoa(n.Skipped), strconv.Itoa(n.WaitingNow), num(n.DurationMs.P50), num(n.DurationMs.P95), strings.Join(oc, " ")})
	}
	return writeCSV(c, "flow-"+id+"-analytics.csv", rows)
}

func writeCSV(c echo.Context, name string, rows [][]string) error {
	c.Response().Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename=%q`, name))
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	for _, r := range rows {
		for i, v := range r {
			r[i] = csvSafe(v)
		}
	}
	if err := w.WriteAll(rows); err != nil {
		return fmt.Errorf("error writing CSV: %w", err)
	}
	return nil
}

// csvSafe keeps a spreadsheet from reading a cell as a formula (a section
// or node name is the user's).
func csvSafe(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return "'" + v
		}
	}
	return v
}

func num(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', 3, 64)
}

func intOrEmpty(i *int) string {
	if i == nil {
		return ""
	}
	return strconv.Itoa(*i)
}
