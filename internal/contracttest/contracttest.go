package contracttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/stitchd/stitchd"
)

// InvalidRequestHeader is the header that, on a request, says the test
// sends it knowing the contract refuses it: it is not checked against the
// request's schema (its answer still is). Transport and Handler remove it before stitchd
// sees the request.
const InvalidRequestHeader = "X-Contracttest-Invalid-Request"

type invalidKey struct{}

// WithInvalidRequest marks the requests made with ctx as InvalidRequestHeader
// does, for a test whose helper builds the request.
func WithInvalidRequest(ctx context.Context) context.Context {
	return context.WithValue(ctx, invalidKey{}, true)
}

func deliberate(r *http.Request) bool {
	v, _ := r.Context().Value(invalidKey{}).(bool)
	return v || r.Header.Get(InvalidRequestHeader) != ""
}

// maxBody bounds the answer kept for the check: a longer one has its
// status and content type checked, not its body.
const maxBody = 32 << 20

// contract is openapi.yaml, loaded and validated once, routed by path
// alone (its servers replaced by "/", so any host matches).
var contract = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(stitchd.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml does not load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	doc.Servers = openapi3.Servers{{URL: "/"}}
	return gorillamux.NewRouter(doc)
})

// Exchange is one request and its answer as a test saw them.
type Exchange struct {
	Request     *http.Request
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
	// Partial: Body is not the whole answer (an event stream, a body cut
	// short or too long to keep): the body is not checked.
	Partial bool
}

// Check checks ex against the contract and fails tb (Errorf) for each way
// it does not fit.
func Check(tb testing.TB, ex Exchange) {
	tb.Helper()
	if err := Problems(ex); err != nil {
		tb.Errorf("%v", err)
	}
}

// Problems says how ex does not fit the contract (nil when it does).
func Problems(ex Exchange) error {
	r := ex.Request
	if r.Method == http.MethodOptions || r.Method == http.MethodHead {
		return nil
	}
	router, err := contract()
	if err != nil {
		return err
	}
	ctx := context.Background()
	rq := clone(r, ex.RequestBody)
	route, params, err := router.FindRoute(rq)
	if err != nil {
		if ex.Status == http.StatusNotFound || ex.Status == http.StatusMethodNotAllowed ||
			!strings.HasPrefix(r.URL.Path, "/api/") {
			return nil
		}
		return fmt.Errorf("contract: %s %s answered %d, but openapi.yaml has no such operation (%v)",
			r.Method, r.URL.RequestURI(), ex.Status, err)
	}
	if fits(ctx, ex, rq, route, params) {
		return nil
	}
	return kinProblems(ctx, ex, route, params)
}

// kinProblems is Problems's verdict with kin-openapi alone, for an
// exchange with an operation (route, its path's params).
func kinProblems(ctx context.Context, ex Exchange, route *routers.Route, params map[string]string) error {
	r := ex.Request
	rq := clone(r, ex.RequestBody)
	what := fmt.Sprintf("%s %s answered %d", r.Method, r.URL.RequestURI(), ex.Status)
	opts := &openapi3filter.Options{
		MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults: true, IncludeResponseStatus: true,
	}
	// The reason and where, without the schema and value printed whole.
	opts.WithCustomSchemaErrorFunc(func(e *openapi3.SchemaError) string {
		return "at /" + strings.Join(e.JSONPointer(), "/") + ": " + e.Reason
	})
	var errs []error
	reqIn := &openapi3filter.RequestValidationInput{Request: rq, PathParams: params, Route: route, Options: opts}
	if !deliberate(r) && (ex.Status < 400 || ex.Status >= 500) {
		if err := openapi3filter.ValidateRequest(ctx, reqIn); err != nil {
			errs = append(errs, fmt.Errorf("the request does not fit openapi.yaml, yet it was not refused: %w "+
				"(a test sending it on purpose sets contracttest.InvalidRequestHeader)", err))
		}
	}
	ct := ex.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	bodyChecked := !ex.Partial && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
	respOpts := *opts
	respOpts.ExcludeResponseBody = !bodyChecked
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqIn, Status: ex.Status, Header: ex.Header,
		Body: io.NopCloser(bytes.NewReader(ex.Body)), Options: &respOpts,
	}
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		errs = append(errs, err)
	} else if !bodyChecked {
		// ExcludeResponseBody skips the content type too.
		if resp := route.Operation.Responses.Status(ex.Status); resp != nil && resp.Value != nil &&
			len(resp.Value.Content) > 0 && resp.Value.Content.Get(ct) == nil {
			errs = append(errs, fmt.Errorf("content type %q is not one openapi.yaml gives for %d", ct, ex.Status))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	body := ex.Body
	if len(body) > 2000 {
		body = append(body[:2000:2000], "…"...)
	}
	reqBody := ex.RequestBody
	if len(reqBody) > 1000 {
		reqBody = append(reqBody[:1000:1000], "…"...)
	}
	return fmt.Errorf("contract: %s (operation %s): %w\nrequest body: %s\nanswer: %s",
		what, route.Operation.OperationID, errors.Join(errs...), reqBody, body)
}

// clone is r with body, without InvalidRequestHeader, for a check.
func clone(r *http.Request, body []byte) *http.Request {
	rq := r.Clone(context.Background())
	rq.Body = io.NopCloser(bytes.NewReader(body))
	rq.ContentLength = int64(len(body))
	rq.Header.Del(InvalidRequestHeader)
	return rq
}

// RequestProblems says how a request (its body apart) does not fit the
// contract: nil when the contract allows it. For a test that checks the
// contract states a refusal the server makes.
func RequestProblems(r *http.Request, body []byte) error {
	router, err := contract()
	if err != nil {
		return err
	}
	rq := r.Clone(context.Background())
	rq.Body = io.NopCloser(bytes.NewReader(body))
	rq.ContentLength = int64(len(body))
	route, params, err := router.FindRoute(rq)
	if err != nil {
		return fmt.Errorf("%s %s is not in openapi.yaml: %w", r.Method, r.URL.Path, err)
	}
	opts := &openapi3filter.Options{MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults: true}
	return openapi3filter.ValidateRequest(context.Background(),
		&openapi3filter.RequestValidationInput{Request: rq, PathParams: params, Route: route, Options: opts})
}

// reporter fails tb until its test ends; a check finishing later (a
// goroutine reading a body after the test) is printed instead, since a
// finished test cannot fail.
type reporter struct {
	tb   testing.TB
	done atomic.Bool
}

func newReporter(tb testing.TB) *reporter {
	rp := &reporter{tb: tb}
	tb.Cleanup(func() { rp.done.Store(true) })
	return rp
}

func (rp *reporter) check(ex Exchange) {
	err := Problems(ex)
	if err == nil {
		return
	}
	if rp.done.Load() {
		fmt.Fprintf(os.Stderr, "%s (after %s ended)\n", err, rp.tb.Name())
		return
	}
	rp.tb.Errorf("%v", err)
}

// Client is c with its transport wrapped by Transport (c itself is not
// changed).
func Client(tb testing.TB, c *http.Client) *http.Client {
	cc := *c
	cc.Transport = Transport(tb, c.Transport)
	return &cc
}

// Transport checks every exchange made through base (nil:
// http.DefaultTransport) against the contract, failing tb.
func Transport(tb testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{rp: newReporter(tb), base: base}
}

type transport struct {
	rp   *reporter
	base http.RoundTripper
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	var reqBody []byte
	if r.Header.Get(InvalidRequestHeader) != "" || (r.Body != nil && r.Body != http.NoBody) {
		out := r.Clone(r.Context())
		out.Header.Del(InvalidRequestHeader)
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				return nil, err
			}
			reqBody = b
			out.Body = io.NopCloser(bytes.NewReader(b))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		}
		r = rememberDeliberate(r, out)
	}
	resp, err := tr.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	ex := Exchange{Request: r, RequestBody: reqBody, Status: resp.StatusCode, Header: resp.Header}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" || r.Method == http.MethodHead {
		ex.Partial = true
		tr.rp.check(ex)
		return resp, nil
	}
	resp.Body = &checkedBody{rc: resp.Body, ex: ex, rp: tr.rp}
	return resp, nil
}

// rememberDeliberate is out, marked deliberately invalid when r was (its
// header is gone from out).
func rememberDeliberate(r, out *http.Request) *http.Request {
	if r.Header.Get(InvalidRequestHeader) == "" {
		return out
	}
	return out.WithContext(WithInvalidRequest(out.Context()))
}

// checkedBody keeps what is read of an answer and checks the exchange
// once it was read to its end (or cut short, or closed).
type checkedBody struct {
	rc      io.ReadCloser
	rp      *reporter
	mu      sync.Mutex
	ex      Exchange
	buf     bytes.Buffer
	checked bool
}

func (b *checkedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keep(p[:n])
	if err != nil {
		// At its end the answer is whole; cut short, it is not.
		b.check(!errors.Is(err, io.EOF))
	}
	return n, err
}

func (b *checkedBody) keep(p []byte) {
	if b.buf.Len()+len(p) > maxBody {
		b.ex.Partial = true
		return
	}
	b.buf.Write(p)
}

// Close reads what is left, bounded (a JSON answer decoded without its
// final newline, or not read at all), and checks before closing.
func (b *checkedBody) Close() error {
	b.mu.Lock()
	if !b.checked {
		rest, err := io.ReadAll(io.LimitReader(b.rc, maxBody))
		b.keep(rest)
		b.check(err != nil)
	}
	b.mu.Unlock()
	return b.rc.Close()
}

// check checks the exchange once (b.mu held).
func (b *checkedBody) check(partial bool) {
	if b.checked {
		return
	}
	b.checked = true
	b.ex.Partial = b.ex.Partial || partial
	b.ex.Body = b.buf.Bytes()
	b.rp.check(b.ex)
}

// Handler checks each exchange with h against the contract, failing tb:
// for a handler a test serves in-process.
func Handler(tb testing.TB, h http.Handler) http.Handler {
	rp := newReporter(tb)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "contracttest: reading the request: "+err.Error(), http.StatusBadRequest)
				return
			}
			reqBody = b
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		if r.Header.Get(InvalidRequestHeader) != "" {
			r = r.WithContext(WithInvalidRequest(r.Context()))
			r.Header.Del(InvalidRequestHeader)
		}
		rw := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rw, r)
		mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
		rp.check(Exchange{Request: r, RequestBody: reqBody, Status: rw.status, Header: w.Header(),
			Body: rw.buf.Bytes(), Partial: rw.over || mt == "text/event-stream"})
	})
}

type recorder struct {
	http.ResponseWriter
	status  int
	written bool
	buf     bytes.Buffer
	over    bool
}

func (rw *recorder) WriteHeader(code int) {
	if !rw.written {
		rw.status, rw.written = code, true
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(p []byte) (int, error) {
	rw.written = true
	if rw.buf.Len()+len(p) > maxBody {
		rw.over = true
	} else {
		rw.buf.Write(p)
	}
	return rw.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer's Flush and
// deadlines (the server's streams use them).
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// Flush passes a flush on (echo's Response flushes through it).
func (rw *recorder) Flush() { _ = http.NewResponseController(rw.ResponseWriter).Flush() }
