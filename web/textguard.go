package web

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// storedHeaders are the request headers whose text reaches the database
// (idempotency keys, the request id the audit trail names). Other headers
// may carry non-UTF-8 bytes (HTTP allows them) and are never stored.
var storedHeaders = []string{"Idempotency-Key", "webhook-id", "X-GitHub-Delivery", echo.HeaderXRequestID}

// validText refuses, before any handler runs, a request whose path
// parameters, query parameters or storedHeaders hold text Postgres cannot
// take (invalid UTF-8 or NUL: SQLSTATE 22021, a 500 otherwise): a 400
// naming what is wrong. It runs after routing, so path parameters are known.
func validText(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for i, name := range c.ParamNames() {
			if i < len(c.ParamValues()) && !storable(c.ParamValues()[i]) {
				return textError("path parameter", name)
			}
		}
		for name, values := range c.QueryParams() {
			if !storable(name) {
				return textError("query parameter name", name)
			}
			for _, v := range values {
				if !storable(v) {
					return textError("query parameter", name)
				}
			}
		}
		h := c.Request().Header
		for _, name := range storedHeaders {
			for _, v := range h.Values(name) {
				if !storable(v) {
					return textError("header", name)
				}
			}
		}
		return next(c)
	}
}

func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// textError is the 400 for unstorable text; name is quoted with Go's
// escapes, so an invalid name is shown as valid text.
func textError(what, name string) *apiError {
	return errorf(http.StatusBadRequest, "invalid_request",
		what+" "+strconv.Quote(name)+" is not valid text: it must be UTF-8 with no NUL character")
}
