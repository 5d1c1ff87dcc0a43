package web

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/store"
)

// pageParams reads ?limit= (1 to store.MaxPageSize, default
// store.DefaultPageSize) and ?cursor= (a next_cursor given out; the store
// refuses any other with a 400).
func pageParams(c echo.Context) (store.PageParams, error) {
	p := store.PageParams{Cursor: c.QueryParam("cursor"), Workspace: workspaceOf(c)}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxPageSize {
			return p, badRequest("limit must be between 1 and " + strconv.Itoa(store.MaxPageSize))
		}
		p.Limit = n
	}
	return p, nil
}

// nextCursor is a page's next_cursor: null on the last page.
func nextCursor(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}
