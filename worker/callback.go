package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// callbackBody is a callback (docs/workers.md, "Calling back").
type callbackBody struct {
	Status    string          `json:"status"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Progress  json.RawMessage `json:"progress,omitempty"`
	Retryable *bool           `json:"retryable,omitempty"`
}

const (
	// resultTries: a result is worth retrying for a while (stitchd
	// restarting); a heartbeat is not, the next one follows.
	resultTries    = 6
	heartbeatTries = 2
	// callbackTimeout bounds one callback request.
	callbackTimeout = 30 * time.Second
	// maxErrorLen bounds a reported error message (bytes).
	maxErrorLen = 4000
)

// errRefused is a callback answered 400 or 413: stitchd will not take
// that body, however often it is sent.
var errRefused = errors.New("stitchd refused the callback's body")

// callBack POSTs body to url, retrying network errors and 5xx answers up
// to tries times with backoff (a repeat is harmless: stitchd answers an
// identical repeat 200). 409 is ErrStale; another 4xx is final.
func (r *runner) callBack(ctx context.Context, url string, body callbackBody, tries int) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("worker: encoding callback: %w", err)
	}
	var last error
	for try := range tries {
		if try > 0 {
			// 0.25 s, 0.5 s, 1 s, 2 s, 4 s: about 8 s in all.
			if !sleep(ctx, (250*time.Millisecond)<<(try-1)) {
				return fmt.Errorf("worker: callback (%s): %w (last: %w)", body.Status, ctx.Err(), last)
			}
		}
		code, text, err := r.post(ctx, url, b)
		switch {
		case err != nil:
			last = err
			continue
		case code == http.StatusOK:
			return nil
		case code == http.StatusConflict:
			return fmt.Errorf("worker: callback (%s) answered 409 %s: %w", body.Status, text, ErrStale)
		case code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge:
			return fmt.Errorf("worker: callback (%s): stitchd answered %d %s: %w", body.Status, code, text, errRefused)
		case code >= 500 || code == http.StatusTooManyRequests:
			last = fmt.Errorf("stitchd answered %d %s", code, text)
			continue
		default:
			return fmt.Errorf("worker: callback (%s): stitchd answered %d %s", body.Status, code, text)
		}
	}
	return fmt.Errorf("worker: callback (%s) failed after %d tries: %w", body.Status, tries, last)
}

// post sends one callback request: the status code and the start of the
// answer.
func (r *runner) post(ctx context.Context, url string, body []byte) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, callbackTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("worker: callback request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("worker: callback: %w", err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, excerpt(resp.Body), nil
}

// excerpt is the start of an answer's body on one line, for errors.
func excerpt(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 300))
	_, _ = io.Copy(io.Discard, io.LimitReader(r, 1<<16)) // let the connection be reused
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// report sends a task's result: completed with output, or failed with
// err. A failure is retryable unless err is NonRetryable.
func (r *runner) report(ctx context.Context, t *Task, output any, err error) error {
	body := callbackBody{Status: "completed"}
	if err == nil {
		b, merr := json.Marshal(output)
		if merr != nil {
			err = NonRetryable(fmt.Errorf("worker: the handler's output cannot be encoded: %w", merr))
		} else {
			body.Output = b
		}
	}
	if err != nil {
		body = callbackBody{Status: "failed", Error: truncate(err.Error(), maxErrorLen)}
		if IsNonRetryable(err) {
			no := false
			body.Retryable = &no
		}
	}
	rerr := r.callBack(ctx, t.CallbackURL, body, resultTries)
	if body.Status == "completed" && errors.Is(rerr, errRefused) {
		// An output stitchd refuses (over its --body-limit, a number too
		// long) would be refused from every attempt: fail the node now,
		// saying why, rather than leave it to its deadline and retries.
		refused := callbackBody{Status: "failed", Retryable: new(bool),
			Error: truncate("the output was refused: "+rerr.Error(), maxErrorLen)}
		if ferr := r.callBack(ctx, t.CallbackURL, refused, resultTries); ferr != nil {
			return fmt.Errorf("%w; reporting the failure: %w", rerr, ferr)
		}
		return fmt.Errorf("worker: the node was failed: %w", rerr)
	}
	return rerr
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// sleep waits d or until ctx ends, reporting whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
