package callbacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/credential"
)

// MaxResponseBody bounds what is read of the body of a request/response
// delivery's response (an HTTP node's): 1 MiB. A longer body is cut there
// and flagged (engine.Response.BodyTruncated).
const MaxResponseBody = 1 << 20

// DefaultRequestTimeout bounds a request/response delivery whose row
// names no timeout.
const DefaultRequestTimeout = 30 * time.Second

// request delivers a request/response row (an HTTP node's request, sent as
// it is: no signature, no callback) and hands the response, or why there
// was none, to the engine, which completes or fails the node. The same
// client as worker dispatches: the address guard, no redirects followed,
// no proxy when guarded; the row's own timeout instead of the dispatch
// timeout, the row's lease kept while the request lasts.
func (d *Dispatcher) request(ctx context.Context, c engine.ClaimedDispatch) {
	r := engine.Response{DispatchID: c.ID, RunID: c.RunID, Key: c.Key, Attempt: c.Attempt, Try: c.Tries}
	switch {
	case c.Request.Code:
		d.runScript(ctx, c, &r)
	case c.SentTries > 0:
		// Claimed again after its lease ran out, and a try was sent: its
		// process stopped, or could not record the response. Sending it
		// again would repeat a request with side effects past the node's
		// policy; the attempt fails instead, and the retry policy decides.
		// (A row claimed and dropped unsent — queued behind its host when
		// its process stopped — is simply sent.)
		r.Error = fmt.Sprintf("the request's outcome is unknown: it was sent (try %d) but its response was never recorded, "+
			"so it is not sent again", c.SentTries)
	case c.Request.Email:
		if !d.sendMail(ctx, c, &r) {
			return // nothing went out: the row's next claim sends it
		}
	case !d.send(ctx, c, &r):
		return // nothing went out: the row's next claim sends it
	}
	if ctx.Err() != nil {
		return // shutting down: the lease expires and a process sends it again
	}
	if r.Error != "" {
		d.cfg.Logger.Warn("request failed", "run_id", c.RunID, "node_key", c.Key, "attempt", c.Attempt, "try", c.Tries,
			"error", r.Error)
	}
	if d.cfg.Responses == nil {
		d.cfg.Logger.Error("a request's response has no taker (DispatcherConfig.Responses)", "run_id", c.RunID, "node_key", c.Key)
		return
	}
	err := d.cfg.Responses.CompleteFromResponse(ctx, r)
	if err == nil || ctx.Err() != nil {
		return
	}
	d.cfg.Logger.Warn("error recording a response", "run_id", c.RunID, "node_key", c.Key, "error", err)
	refused, ok := unstorable(err)
	if !ok {
		// The database is away, or the transaction met another's (a
		// deadlock, a timeout): the row stays claimed, and when its lease
		// ends the attempt fails as unknown (above), never sent twice.
		return
	}
	// The response itself cannot be recorded (something in it the
	// database refuses): the attempt fails, once, saying so.
	failed := engine.Response{DispatchID: c.ID, RunID: c.RunID, Key: c.Key, Attempt: c.Attempt, Try: c.Tries, NoRetry: true,
		Error: fmt.Sprintf("the response (%d) cannot be stored: %s", r.Status, refused.Message)}
	if err := d.cfg.Responses.CompleteFromResponse(ctx, failed); err != nil && ctx.Err() == nil {
		d.cfg.Logger.Warn("error recording a response's failure", "run_id", c.RunID, "node_key", c.Key, "error", err)
	}
}

// unstorable reports whether the database refused a value of the response
// itself (a data exception, SQLSTATE class 22, or a value too big, 54000),
// which no later try would store either.
// Its message names the value's problem, without the statement.
func unstorable(err error) (*pgconn.PgError, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil, false
	}
	return pgErr, strings.HasPrefix(pgErr.Code, "22") || pgErr.Code == "54000"
}

// send makes the request and fills r with its outcome; false when nothing
// was sent and there is nothing to record (the claim was lost).
func (d *Dispatcher) send(ctx context.Context, c engine.ClaimedDispatch, r *engine.Response) bool {
	return d.sendOnce(ctx, c, "request", func(rctx context.Context) (func(time.Duration), bool) {
		ex, ok := d.prepare(rctx, scope{runID: c.RunID}, c.URL, c.Request, c.Payload, r)
		if !ok {
			return nil, false
		}
		return func(timeout time.Duration) {
			defer ex.redact(r)
			d.exchange(ctx, rctx, ex, timeout, r)
		}, true
	})
}

// sendOnce delivers a row whose delivery has side effects (a request, a
// message) within its timeout, its lease kept while it lasts: prepare
// readies it over the delivery's context (not ok: r says why nothing may
// go), and it goes only once the row is recorded as sent — a row claimed
// again after that is never sent twice (request). False when nothing was
// sent and there is nothing to record (the claim was lost).
func (d *Dispatcher) sendOnce(ctx context.Context, c engine.ClaimedDispatch, what string,
	prepare func(dctx context.Context) (deliver func(timeout time.Duration), ok bool)) bool {
	timeout := requestTimeout(c.Request)
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if timeout > d.cfg.Lease/4 {
		stop := d.keepLease(dctx, c, cancel)
		defer stop()
	}
	deliver, ok := prepare(dctx)
	if !ok {
		return true
	}
	if sent, err := d.cfg.Store.MarkRequestSent(ctx, c.ID, c.Tries); err != nil || !sent {
		// Not recorded as sent, so not sent: another claim holds the row
		// (or will, once this lease ends) and sends it.
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn(what+" not sent: its claim could not be confirmed", "run_id", c.RunID, "node_key", c.Key, "error", err)
		}
		return false
	}
	deliver(timeout)
	return true
}

// TryRequest sends the request of an HTTP step tried alone
// (POST /api/v1/flows/{id}/nodes/{key}/test) — or runs a Code step's
// script, or sends an Email step's message: no outbox row, no run, but the same secrets, credentials and
// their host rules, address guard, timeout and response bound as a run's.
func (d *Dispatcher) TryRequest(ctx context.Context, ws, rawURL string, rq *engine.HTTPRequest, payload []byte) engine.Response {
	var r engine.Response
	if rq.Code {
		d.script(ctx, payload, time.Duration(rq.TimeoutMs)*time.Millisecond, &r)
		return r
	}
	timeout := requestTimeout(rq)
	if rq.Email {
		mctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if m, ok := d.prepareMail(mctx, scope{ws: ws}, "try-"+uuid.NewString(), rq, payload, &r); ok {
			d.deliverMail(mctx, m, timeout, &r)
		}
		return r
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ex, ok := d.prepare(rctx, scope{ws: ws}, rawURL, rq, payload, &r)
	if !ok {
		return r
	}
	d.exchange(ctx, rctx, ex, timeout, &r)
	// Redacted before r is returned, not deferred: r is returned by value,
	// so a deferred redaction would reach only its headers (a map both
	// copies share), and the answer's body and error kept the values.
	ex.redact(&r)
	return r
}

// outgoing is a request ready to go: its secrets filled in, its
// credential (if any) revealed, what to redact from what comes back.
type outgoing struct {
	method, target string
	headers        map[string]string
	body           []byte
	cred           *credential.Credential
	hide           []string
}

func (o *outgoing) redact(r *engine.Response) {
	if len(o.hide) > 0 {
		redactResponse(r, engine.NewRedactor(o.hide))
	}
}

// prepare fills a request's secrets in and reveals its credential, the
// host rules of both checked first. Not ok: r holds why nothing may be
// sent.
func (d *Dispatcher) prepare(ctx context.Context, sc scope, rawURL string, rq *engine.HTTPRequest, payload []byte, r *engine.Response) (*outgoing, bool) {
	o := &outgoing{method: rq.Method, target: rawURL, headers: rq.Headers, body: payload}
	if use := rq.Secrets; use != nil {
		values, hosts, err := d.revealSecrets(ctx, sc, use)
		if err == nil {
			if err = secretHostRefused(use, hosts, rawURL); err != nil {
				r.Error, r.NoRetry = err.Error(), true
				return nil, false
			}
			o.target, o.headers, o.body, err = use.Fill(o.target, o.headers, o.body, values)
		}
		if err != nil {
			r.Error, r.NoRetry = "request not sent: "+err.Error(), errors.Is(err, engine.ErrSecret)
			return nil, false
		}
		o.hide = mapValues(values)
	}
	if rq.Credential != "" {
		cred, err := d.credential(ctx, sc, rq.Credential, o.target)
		if err != nil {
			r.Error, r.NoRetry = "request not sent: "+err.Error(), errors.Is(err, engine.ErrSecret)
			return nil, false
		}
		o.cred = cred
		o.hide = append(o.hide, cred.Secrets()...)
	}
	return o, true
}

// credential reveals credential name for a request to target, refused
// (credential_host_refused) unless target's host is one of its allowed
// hosts.
func (d *Dispatcher) credential(ctx context.Context, sc scope, name, target string) (*credential.Credential, error) {
	if d.cfg.Credentials == nil {
		return nil, fmt.Errorf("%w: this server reads no credentials", engine.ErrSecret)
	}
	cred, err := d.cfg.Credentials.Credential(ctx, sc.ws, sc.runID, name)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("%w: credential_host_refused: the url cannot be read: %w", engine.ErrSecret, err)
	}
	if !engine.HostAllowed(cred.AllowedHosts, u) {
		return nil, fmt.Errorf("%w: credential_host_refused: credential %q may be sent only to %s (its allowed_hosts), not to %s",
			engine.ErrSecret, name, strings.Join(cred.AllowedHosts, ", "), u.Host)
	}
	return cred, nil
}

func requestTimeout(rq *engine.HTTPRequest) time.Duration {
	if t := time.Duration(rq.TimeoutMs) * time.Millisecond; t > 0 {
		return t
	}
	return DefaultRequestTimeout
}

// newRequest makes o's request, its credential applied (fresh: an OAuth2
// token fetched again, not the cached one).
func (d *Dispatcher) newRequest(ctx context.Context, o *outgoing, fresh bool) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, o.method, o.target, bytes.NewReader(o.body))
	if err != nil {
		return nil, err
	}
	if len(o.body) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	req.Header.Set("User-Agent", "stitchd")
	for k, v := range o.headers {
		if strings.EqualFold(k, "host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if o.cred != nil {
		hide, err := credential.Apply(ctx, req, o.cred, d.tokens, fresh)
		o.hide = append(o.hide, hide...)
		if err != nil {
			return nil, err
		}
	}
	return req, nil
}

// exchange sends o's request (bounded by rctx, timeout) and reads its
// response into r; an OAuth2 credential's 401 fetches a new token and
// sends it once more.
func (d *Dispatcher) exchange(ctx, rctx context.Context, o *outgoing, timeout time.Duration, r *engine.Response) {
	resp, ok := d.do(ctx, rctx, o, false, timeout, r)
	if !ok {
		return
	}
	if resp.StatusCode == http.StatusUnauthorized && o.cred != nil && o.cred.Type == credential.TypeOAuth2 {
		resp.Body.Close()
		if resp, ok = d.do(ctx, rctx, o, true, timeout, r); !ok {
			return
		}
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			r.Error = fmt.Sprintf("the response (%d) was not read within %s", resp.StatusCode, timeout)
		} else {
			r.Error = fmt.Sprintf("error reading the response (%d): %v", resp.StatusCode, err)
		}
		return
	}
	if len(got) > MaxResponseBody {
		got, r.BodyTruncated = got[:MaxResponseBody], true
	}
	r.Status, r.Body = resp.StatusCode, got
	r.Headers = make(map[string]string, len(resp.Header))
	for k, vs := range resp.Header {
		r.Headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	r.RetryAfterMs = d.retryAfter(resp.Header).Milliseconds()
}

// do makes o's request once (fresh: see newRequest); not ok: r holds why
// there is no response.
func (d *Dispatcher) do(ctx, rctx context.Context, o *outgoing, fresh bool, timeout time.Duration, r *engine.Response) (*http.Response, bool) {
	req, err := d.newRequest(rctx, o, fresh)
	if err != nil {
		r.Error, r.NoRetry = fmt.Sprintf("the request cannot be made: %v", err), o.cred == nil || o.cred.Type != credential.TypeOAuth2
		return nil, false
	}
	resp, err := d.reqClient.Do(req)
	switch {
	case err != nil && errors.Is(err, ErrAddressRefused):
		r.Error, r.NoRetry = fmt.Sprintf("request refused: %v", err), true
		return nil, false
	case err != nil && rctx.Err() != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		r.Error = fmt.Sprintf("no response within %s", timeout)
		return nil, false
	case err != nil:
		r.Error = fmt.Sprintf("request failed: %v", err)
		return nil, false
	}
	return resp, true
}

// CredentialSource reveals a named credential (store.CredentialReader). A
// failure another try would not mend wraps engine.ErrSecret.
type CredentialSource interface {
	// Credential is workspace ws's credential name, or run runID's
	// workspace's when ws is "" (a credential never crosses workspaces).
	Credential(ctx context.Context, ws, runID, name string) (*credential.Credential, error)
}

// SecretSource reveals the values of named secrets, and the allowed hosts
// of those that have some (store.SecretReader). A failure another try
// would not mend (no such secret, secrets off, a value that does not
// decrypt) wraps engine.ErrSecret.
type SecretSource interface {
	// Reveal opens workspace ws's secrets, or run runID's workspace's when
	// ws is "".
	Reveal(ctx context.Context, ws, runID string, names []string) (values map[string]string, allowedHosts map[string][]string, err error)
}

// scope is where a request's secrets and credentials are read: the
// workspace of a step tried alone, else the run's.
type scope struct{ ws, runID string }

func (d *Dispatcher) revealSecrets(ctx context.Context, sc scope, use *engine.SecretUse) (map[string]string, map[string][]string, error) {
	if d.cfg.Secrets == nil {
		return nil, nil, fmt.Errorf("%w: this server reads no secrets", engine.ErrSecret)
	}
	return d.cfg.Secrets.Reveal(ctx, sc.ws, sc.runID, use.Names)
}

// secretHostRefused checks, before anything is sent, that each secret of
// the request may go to its host: one of the secret's allowed hosts when
// it has some, else only a host fixed in the flow (not a templated one,
// which whoever supplies the input chooses). The URL's host holds no
// placeholder (the node refuses one there), so the host is the one dialled.
func secretHostRefused(use *engine.SecretUse, allowed map[string][]string, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("secret_host_refused: the url cannot be read: %w", err)
	}
	for _, name := range use.Names {
		hosts := allowed[name]
		switch {
		case len(hosts) > 0 && !engine.HostAllowed(hosts, u):
			return fmt.Errorf("secret_host_refused: secret %q may be sent only to %s (its allowed_hosts), not to %s",
				name, strings.Join(hosts, ", "), u.Host)
		case len(hosts) == 0 && use.HostTemplated:
			return fmt.Errorf("secret_host_refused: secret %q has no allowed_hosts, and the url's host (%s) comes from a template: "+
				"fix the host in the flow, or set the secret's allowed_hosts", name, u.Host)
		}
	}
	return nil
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// redactResponse replaces the secrets' values in all of r that is stored
// or logged.
func redactResponse(r *engine.Response, red *engine.Redactor) {
	r.Error = red.String(r.Error)
	r.Body = red.Bytes(r.Body)
	for k, v := range r.Headers {
		r.Headers[k] = red.String(v)
	}
}

// keepLease renews the row's lease every quarter lease while a long
// request lasts; when the row is no longer ours (another process took it
// over after a stall) the request is abandoned: its response would change
// nothing. The returned function stops it.
func (d *Dispatcher) keepLease(ctx context.Context, c engine.ClaimedDispatch, abandon context.CancelFunc) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(d.cfg.Lease / 4)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				ids, err := d.cfg.Store.RenewLeases(ctx, []engine.ClaimedDispatch{c}, d.cfg.Lease)
				if err == nil && len(ids) == 0 {
					abandon()
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}
