package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
)

// callback is the worker callback endpoint. The token is verified before
// anything touches the database; the URL alone authorises the call.
func (s *Server) callback(c echo.Context) error {
	claims, err := s.cfg.Keys.Verify(c.Param("token"), s.cfg.Clock.Now())
	if err != nil {
		msg := "invalid callback token"
		if errors.Is(err, callbacks.ErrTokenExpired) {
			msg = "expired callback token"
		}
		return errorf(http.StatusUnauthorized, "unauthorized", msg)
	}
	body, err := callbacks.DecodeCallback(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return bodyError(err)
	}
	err = s.cfg.Engine.HandleCallback(c.Request().Context(), engine.CallbackParams{RunID: claims.RunID, Key: claims.Key,
		Attempt: claims.Attempt, Status: body.Status, Output: body.Output, Error: body.Error,
		NoRetry: body.Retryable != nil && !*body.Retryable})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "accepted"})
}
