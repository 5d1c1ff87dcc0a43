package callbacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/stitchd/stitchd/engine"
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
	d.send(ctx, c, &r)
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
	if err := d.cfg.Responses.CompleteFromResponse(ctx, r); err != nil && ctx.Err() == nil {
		// The row stays claimed: when its lease ends, it is sent again.
		d.cfg.Logger.Warn("error recording a response", "run_id", c.RunID, "node_key", c.Key, "error", err)
	}
}

func (d *Dispatcher) send(ctx context.Context, c engine.ClaimedDispatch, r *engine.Response) {
	timeout := time.Duration(c.Request.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if timeout > d.cfg.Lease/4 {
		stop := d.keepLease(rctx, c, cancel)
		defer stop()
	}
	req, err := http.NewRequestWithContext(rctx, c.Request.Method, c.URL, bytes.NewReader(c.Payload))
	if err != nil {
		r.Error, r.NoRetry = fmt.Sprintf("the request cannot be made: %v", err), true
		return
	}
	if len(c.Payload) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	req.Header.Set("User-Agent", "stitchd")
	for k, v := range c.Request.Headers {
		if strings.EqualFold(k, "host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := d.reqClient.Do(req)
	switch {
	case err != nil && errors.Is(err, ErrAddressRefused):
		r.Error, r.NoRetry = fmt.Sprintf("request refused: %v", err), true
		return
	case err != nil && rctx.Err() != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		r.Error = fmt.Sprintf("no response within %s", timeout)
		return
	case err != nil:
		r.Error = fmt.Sprintf("request failed: %v", err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			r.Error = fmt.Sprintf("the response (%d) was not read within %s", resp.StatusCode, timeout)
		} else {
			r.Error = fmt.Sprintf("error reading the response (%d): %v", resp.StatusCode, err)
		}
		return
	}
	if len(body) > MaxResponseBody {
		body, r.BodyTruncated = body[:MaxResponseBody], true
	}
	r.Status, r.Body = resp.StatusCode, body
	r.Headers = make(map[string]string, len(resp.Header))
	for k, vs := range resp.Header {
		r.Headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	r.RetryAfterMs = d.retryAfter(resp.Header).Milliseconds()
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
