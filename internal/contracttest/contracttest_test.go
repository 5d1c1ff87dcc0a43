package contracttest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/contracttest"
)

// failures is a testing.TB that keeps what Errorf would have failed.
type failures struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (f *failures) Helper() {}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *failures) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.errs
	f.errs = nil
	return out
}

// answer is what the stub handler says to one request.
type answer struct {
	status int
	body   string
}

const errBody = `{"error":{"code":"not_found","message":"no such thing"}}`

const rotated = `{"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","scope":"server","previous_secret_expires_at":null}`

// TestUnlistedStatusFails: a handler answering a status its operation does
// not list fails the test, through each way in (Handler, Transport, Check);
// so does a body its schema refuses, an operation the contract lacks, and
// a request the contract refuses that the server accepted (unless the test
// says it sends it on purpose). What fits passes.
func TestUnlistedStatusFails(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, method, path, body string
		header                   map[string]string
		answer                   answer
		fails                    string // "" when it fits
	}{
		{"an unlisted status", "GET", "/api/v1/me", "", nil, answer{http.StatusTeapot, errBody}, "status is not supported"},
		{"an unlisted 500", "POST", "/api/v1/runs/0b6e2f43-2f1c-4c55-9d0b-6f0e8b0a8c11/cancel", "", nil,
			answer{http.StatusInternalServerError, `{"error":{"code":"internal","message":"internal error"}}`}, "status is not supported"},
		{"a listed status", "GET", "/api/v1/runs/0b6e2f43-2f1c-4c55-9d0b-6f0e8b0a8c11", "", nil, answer{http.StatusNotFound, errBody}, ""},
		{"a body missing a required field", "POST", "/api/v1/webhook-secret/rotate", `{}`, nil,
			answer{http.StatusOK, `{"secret":"whsec_x","scope":"server"}`}, `previous_secret_expires_at`},
		{"an error body of another shape", "GET", "/api/v1/runs/0b6e2f43-2f1c-4c55-9d0b-6f0e8b0a8c11", "", nil,
			answer{http.StatusNotFound, `{"message":"no"}`}, "doesn't match schema"},
		{"an operation the contract lacks", "GET", "/api/v1/nowhere", "", nil, answer{http.StatusOK, `{}`}, "has no such operation"},
		{"an unknown path answered 404", "GET", "/api/v1/nowhere", "", nil, answer{http.StatusNotFound, errBody}, ""},
		{"a page of the UI", "GET", "/flows/x", "", nil, answer{http.StatusOK, `<html></html>`}, ""},
		{"a refused request accepted", "POST", "/api/v1/webhook-secret/rotate", `{"grace_seconds":-1}`, nil,
			answer{http.StatusOK, rotated}, "the request does not fit openapi.yaml"},
		{"a refused request refused", "POST", "/api/v1/webhook-secret/rotate", `{"grace_seconds":-1}`, nil,
			answer{http.StatusBadRequest, `{"error":{"code":"invalid_request","message":"no"}}`}, ""},
		{"a refused request sent on purpose", "POST", "/api/v1/webhook-secret/rotate", `{"grace_seconds":-1}`,
			map[string]string{contracttest.InvalidRequestHeader: "1"}, answer{http.StatusOK, rotated}, ""},
	} {
		stub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(contracttest.InvalidRequestHeader) != "" {
				t.Errorf("%s: the server saw %s", c.name, contracttest.InvalidRequestHeader)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(c.answer.status)
			_, _ = io.WriteString(w, c.answer.body+"\n")
		})
		newRequest := func(base string) *http.Request {
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			r := httptest.NewRequestWithContext(t.Context(), c.method, base+c.path, body)
			if base != "" {
				r.RequestURI = ""
			}
			r.Header.Set("Content-Type", "application/json")
			for k, v := range c.header {
				r.Header.Set(k, v)
			}
			return r
		}
		expect := func(way string, errs []string) {
			t.Helper()
			if c.fails == "" {
				require.Empty(t, errs, "%s (%s)", c.name, way)
				return
			}
			require.Len(t, errs, 1, "%s (%s)", c.name, way)
			require.Contains(t, errs[0], c.fails, "%s (%s)", c.name, way)
		}

		f := &failures{TB: t}
		contracttest.Handler(f, stub).ServeHTTP(httptest.NewRecorder(), newRequest(""))
		expect("Handler", f.take())

		srv := httptest.NewServer(stub)
		client := contracttest.Client(f, srv.Client())
		resp, err := client.Do(newRequest(srv.URL))
		require.NoError(t, err)
		// Read in part, not to its end: Close reads the rest and checks.
		_, err = io.ReadFull(resp.Body, make([]byte, 1))
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		srv.Close()
		expect("Transport", f.take())

		rq := newRequest("")
		contracttest.Check(f, contracttest.Exchange{Request: rq, RequestBody: []byte(c.body), Status: c.answer.status,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(c.answer.body)})
		expect("Check", f.take())
	}
}
