package web

import (
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/jsonlimit"
)

// apiError is the contract's error body.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
	// retryAfter, when > 0, is sent as Retry-After (whole seconds).
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.Message }

func errorf(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

func badRequest(msg string) *apiError { return errorf(http.StatusBadRequest, "invalid_request", msg) }

// Detail codes of a body refused by jsonlimit.Check: a number whose stored
// form would be too long (jsonlimit.NumberError), a string with a lone
// surrogate escape (jsonlimit.SurrogateError).
const (
	codeNumberOutOfRange = "number_out_of_range"
	codeLoneSurrogate    = "lone_surrogate"
)

// bodyError maps a body refused by jsonlimit.Check (or the callback
// parser) onto a 400; a number out of range or a lone surrogate carries
// its JSON path in details, so a client can find it in a large body.
func bodyError(err error) *apiError {
	ae := badRequest(err.Error())
	var ne *jsonlimit.NumberError
	var se *jsonlimit.SurrogateError
	switch {
	case errors.As(err, &ne):
		ae.Details = []engine.Problem{{Code: codeNumberOutOfRange, Path: ne.Path, Message: ne.Error()}}
	case errors.As(err, &se):
		ae.Details = []engine.Problem{{Code: codeLoneSurrogate, Path: se.Path, Message: se.Error()}}
	}
	return ae
}

var codeByStatus = map[int]string{
	400: "invalid_request", 401: "unauthorized", 404: "not_found", 405: "invalid_request", 409: "conflict",
	410: "gone", 413: "payload_too_large", 415: "invalid_request", 422: "invalid_graph", 500: "internal", 503: "unavailable",
}

// toAPIError maps any error onto the contract's error shape.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ce *compiler.Error
	if errors.As(err, &ce) {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_graph",
			Message: "the graph has " + plural(len(ce.Problems), "problem"), Details: ce.Problems}
	}
	var fe *engine.FormError
	if errors.As(err, &fe) {
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_request",
			Message: "the answer does not fit node " + fe.Key + "'s form: " + plural(len(fe.Problems), "problem"), Details: fe.Problems}
	}
	// A queued compare-and-set that found its node moved on: say which,
	// not the statement (which travels in the error's text).
	var qe *engine.QueuedTransitionError
	if errors.As(err, &qe) {
		return errorf(http.StatusConflict, "conflict", qe.Error())
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code := codeByStatus[he.Code]
		if code == "" {
			code = "invalid_request"
		}
		msg := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok {
			msg = m
		}
		if he.Code == http.StatusRequestEntityTooLarge {
			msg = "request body is larger than the configured limit"
		}
		return &apiError{Status: he.Code, Code: code, Message: msg}
	}
	var le *engine.LimitError
	if errors.As(err, &le) {
		ae := errorf(http.StatusTooManyRequests, "rate_limited", le.Error())
		ae.retryAfter = le.RetryAfter
		return ae
	}
	if eb, ok := engine.IsEntityBusy(err); ok {
		return errorf(http.StatusConflict, "entity_busy", eb.Error())
	}
	switch {
	case errors.Is(err, engine.ErrInvalidRequest):
		return errorf(http.StatusBadRequest, "invalid_request", err.Error())
	case errors.Is(err, engine.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, engine.ErrClaimed):
		return errorf(http.StatusConflict, "claimed", err.Error())
	case errors.Is(err, engine.ErrConflict), errors.Is(err, engine.ErrInvalidTransition):
		return errorf(http.StatusConflict, "conflict", err.Error())
	case errors.Is(err, engine.ErrForbidden):
		return errorf(http.StatusForbidden, "forbidden", err.Error())
	case errors.Is(err, engine.ErrUnavailable):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the database is unavailable; try again")
	}
	return errorf(http.StatusInternalServerError, "internal", "internal error")
}

func plural(n int, w string) string {
	if n == 1 {
		return "1 " + w
	}
	return itoa(n) + " " + w + "s"
}

// sqlText matches what SQL looks like in an error's text (statements are
// written in capitals here): the driver's and the store's errors may
// carry a statement, which no answer may show.
var sqlText = regexp.MustCompile(`SQLSTATE|queued statement|\bSELECT\b.*\bFROM\b|\bUPDATE \S+ SET\b|` +
	`\bINSERT INTO\b|\bDELETE FROM\b|\bWITH \S+ AS \(|\bON CONFLICT\b`)

// withoutSQL replaces the message of an answer that quotes SQL with its
// status's plain text, and says whether it did (the safety net; each
// such error should get a clear message of its own).
func withoutSQL(ae *apiError) (*apiError, bool) {
	if !sqlText.MatchString(ae.Message) {
		return ae, false
	}
	clean := *ae
	clean.Message = http.StatusText(ae.Status) + " (the server's log has the details)"
	return &clean, true
}

func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae, hidden := withoutSQL(toAPIError(err))
	if ae.Status >= 500 || hidden {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "status", ae.Status, "error", err)
	}
	if ae.retryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(ae.retryAfter)))
	}
	_ = c.JSON(ae.Status, map[string]any{"error": ae})
}
