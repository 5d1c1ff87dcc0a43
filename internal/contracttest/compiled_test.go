package contracttest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	aRun = "0b6e2f43-2f1c-4c55-9d0b-6f0e8b0a8c11"
	anAt = "2026-11-29T10:00:00Z"
)

// aRunAnswer is a GET /api/v1/runs/{id} answer, with extra inside the
// run's object (a field of it, or a node state).
func aRunAnswer(extra string) string {
	return `{"id":"` + aRun + `","flow_id":"` + aRun + `","flow_version_id":"` + aRun + `","status":"completed",` +
		`"input":{},"output":null,"error":null,"entity_id":null,"created_at":"` + anAt + `","updated_at":"` + anAt + `",` +
		`"finished_at":"` + anAt + `"` + extra + `}`
}

func aNode(fields string) string {
	return `,"nodes":{"a":{"key":"a","node_id":"a","type":"Worker","index":[],"status":"completed","input":{},"output":{},` +
		`"error":null,"attempt":1,"taken":null,"iteration":0,"started_at":null,"finished_at":null,"updated_at":"` + anAt + `"` +
		fields + `}}`
}

const aCredential = `{"name":"c","type":"bearer","allowed_hosts":["x"],"created_by":"a","updated_by":"a","created_at":"` + anAt +
	`","updated_at":"` + anAt + `"`

// TestFitsAgreesWithKinOpenAPI: the compiled schemas find an exchange
// fitting exactly when kin-openapi does, for bodies that fit and bodies
// each keyword of the contract refuses, through both kinds of validator
// (compiled document, kin-openapi's own), requests (parameters too) and
// answers.
func TestFitsAgreesWithKinOpenAPI(t *testing.T) {
	t.Parallel()
	router, err := contract()
	require.NoError(t, err)
	compiledSeen, legacySeen := false, false
	type exchange struct {
		name, method, path, reqBody string
		status                      int
		ct, answer                  string
		fits                        bool
	}
	cases := []exchange{
		{"a run", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json", aRunAnswer(aNode("")), true},
		{"a run, minimal", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json; charset=UTF-8", aRunAnswer(""), true},
		{"a run's status outside its enum", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json",
			strings.Replace(aRunAnswer(""), `"completed"`, `"done"`, 1), false},
		{"a run without its error", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json",
			strings.Replace(aRunAnswer(""), `"error":null,`, ``, 1), false},
		{"a run's time not a date-time", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json",
			strings.Replace(aRunAnswer(""), `"created_at":"`+anAt, `"created_at":"yesterday`, 1), false},
		{"a run's time on a day its month lacks", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json",
			strings.Replace(aRunAnswer(""), `"created_at":"`+anAt, `"created_at":"2026-02-30T10:00:00Z`, 1), false},
		{"compensated false (const true)", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json",
			aRunAnswer(`,"compensated":false`), false},
		{"compensated true", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json", aRunAnswer(`,"compensated":true`), true},
		{"a node state's attempt not an integer", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json",
			aRunAnswer(strings.Replace(aNode(""), `"attempt":1`, `"attempt":1.5`, 1)), false},
		{"a node state without its key", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json",
			aRunAnswer(strings.Replace(aNode(""), `"key":"a",`, ``, 1)), false},
		{"a node state's taken a string", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json",
			aRunAnswer(strings.Replace(aNode(""), `"taken":null`, `"taken":"b"`, 1)), false},
		{"a run page", "GET", "/api/v1/runs?limit=2&status=completed", "", 200, "application/json",
			`{"runs":[` + aRunAnswer("") + `],"next_cursor":null}`, true},
		{"a run page without next_cursor", "GET", "/api/v1/runs", "", 200, "application/json",
			`{"runs":[` + aRunAnswer("") + `]}`, false},
		{"a query parameter over its maximum", "GET", "/api/v1/runs?limit=501", "", 200, "application/json",
			`{"runs":[],"next_cursor":null}`, false},
		{"a query parameter outside its enum", "GET", "/api/v1/runs?status=done", "", 200, "application/json",
			`{"runs":[],"next_cursor":null}`, false},
		{"an error", "GET", "/api/v1/runs/" + aRun, "", 404, "application/json",
			`{"error":{"code":"not_found","message":"no"}}`, true},
		{"an error with details", "GET", "/api/v1/runs/" + aRun, "", 404, "application/json",
			`{"error":{"code":"not_found","message":"no","details":[{"code":"x","path":"$","message":"m"}]}}`, true},
		{"an error with a code outside its enum", "GET", "/api/v1/runs/" + aRun, "", 404, "application/json",
			`{"error":{"code":"nope","message":"no"}}`, false},
		{"an error with details of neither kind", "GET", "/api/v1/runs/" + aRun, "", 404, "application/json",
			`{"error":{"code":"not_found","message":"no","details":3}}`, false},
		{"an unlisted status", "GET", "/api/v1/runs/" + aRun, "", 418, "application/json",
			`{"error":{"code":"not_found","message":"no"}}`, false},
		{"an answer not JSON", "GET", "/api/v1/runs/" + aRun, "", 200, "text/plain", "hello", false},
		{"an answer not JSON where the contract has none", "GET", "/healthz", "", 200, "text/plain", "ok", true},
		{"a body that is not JSON", "GET", "/api/v1/runs/" + aRun, "", 200, "application/json", `{"id":`, false},
		{"credentials", "GET", "/api/v1/credentials", "", 200, "application/json", `{"credentials":[` + aCredential + `}]}`, true},
		{"a credential of an unknown type", "GET", "/api/v1/credentials", "", 200, "application/json",
			`{"credentials":[` + strings.Replace(aCredential, "bearer", "magic", 1) + `}]}`, false},
		{"a credential without created_by", "GET", "/api/v1/credentials", "", 200, "application/json",
			`{"credentials":[` + strings.Replace(aCredential, `"created_by":"a",`, ``, 1) + `}]}`, false},
		{"a credential stored", "POST", "/api/v1/credentials", `{"name":"c","type":"bearer","data":{},"allowed_hosts":["x"]}`,
			201, "application/json", aCredential + `}`, true},
		{"a credential's name refused, yet stored", "POST", "/api/v1/credentials",
			`{"name":"1c","type":"bearer","data":{},"allowed_hosts":["x"]}`, 201, "application/json", aCredential + `}`, false},
		{"a credential's name refused, and refused", "POST", "/api/v1/credentials",
			`{"name":"1c","type":"bearer","data":{},"allowed_hosts":["x"]}`, 400, "application/json",
			`{"error":{"code":"invalid_request","message":"no"}}`, true},
		{"a credential without its data, yet stored", "POST", "/api/v1/credentials",
			`{"name":"c","type":"bearer","allowed_hosts":["x"]}`, 201, "application/json", aCredential + `}`, false},
		{"a flow made", "POST", "/api/v1/flows",
			`{"name":"f","graph":{"nodes":[{"id":"a","type":"Worker"}],"edges":[]}}`, 201, "application/json",
			`{"id":"` + aRun + `","name":"f","board_id":null,"version":{"id":"` + aRun + `","number":1},"warnings":[],` +
				`"created_at":"` + anAt + `","updated_at":"` + anAt + `"}`, true},
		{"a flow whose node id the contract refuses, yet made", "POST", "/api/v1/flows",
			`{"name":"f","graph":{"nodes":[{"id":"-a","type":"Worker"}],"edges":[]}}`, 201, "application/json",
			`{"id":"` + aRun + `","name":"f","board_id":null,"version":{"id":"` + aRun + `","number":1},"warnings":[],` +
				`"created_at":"` + anAt + `","updated_at":"` + anAt + `"}`, false},
		{"a flow with only spaces for a name, yet made", "POST", "/api/v1/flows",
			`{"name":"  ","graph":{"nodes":[],"edges":[]}}`, 201, "application/json",
			`{"id":"` + aRun + `","name":"f","board_id":null,"version":{"id":"` + aRun + `","number":1},"warnings":[],` +
				`"created_at":"` + anAt + `","updated_at":"` + anAt + `"}`, false},
		{"a body missing a required field", "POST", "/api/v1/webhook-secret/rotate", `{}`, 200, "application/json",
			`{"secret":"whsec_x","scope":"server"}`, false},
	}
	// Twice: the second time, parameters' verdicts are remembered ones.
	for _, c := range append(cases, cases...) {
		r := httptest.NewRequestWithContext(t.Context(), c.method, c.path, strings.NewReader(c.reqBody))
		if c.reqBody != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		ex := Exchange{Request: r, RequestBody: []byte(c.reqBody), Status: c.status,
			Header: http.Header{"Content-Type": {c.ct}}, Body: []byte(c.answer)}
		rq := clone(r, ex.RequestBody)
		route, params, err := router.FindRoute(rq)
		require.NoError(t, err, c.name)
		kinErr := kinProblems(context.Background(), ex, route, params)
		require.Equal(t, c.fits, kinErr == nil, "%s: kin-openapi says %v", c.name, kinErr)
		require.Equal(t, c.fits, fits(context.Background(), ex, rq, route, params), c.name)
		require.Equal(t, c.fits, Problems(ex) == nil, c.name)
		if resp := route.Operation.Responses.Status(c.status); resp != nil && resp.Value != nil {
			if media := resp.Value.Content.Get(c.ct); media != nil && media.Schema != nil {
				v := validatorOf(route.Spec, media.Schema.Value)
				compiledSeen = compiledSeen || v.compiled != nil
				legacySeen = legacySeen || v.legacy
			}
		}
	}
	require.True(t, compiledSeen && legacySeen, "both kinds of validator are exercised")
}
