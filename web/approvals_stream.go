package web

import (
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/store"
)

// approvalsStreamEvery bounds how often one inbox stream looks at the
// approvals again, however busy the runs are.
const approvalsStreamEvery = time.Second

// approvalsFilterFor is what the caller may see of the approvals, narrowed
// by ?assigned=me|groups|all: an approver sees only what they may decide.
func approvalsFilterFor(c echo.Context) (store.ApprovalFilter, error) {
	p := principalOf(c)
	f := store.ApprovalFilter{Workspace: p.Workspace, Email: p.Email(), Groups: p.Groups(), Decidable: p.Role() == store.RoleApprover}
	a, err := queryEnum(c, "assigned", "me", "groups", "all")
	if err != nil {
		return f, err
	}
	switch a {
	case "", "all":
		f.Assigned = store.AssignedAll
	case "me":
		f.Assigned = store.AssignedMe
	case "groups":
		f.Assigned = store.AssignedGroups
	}
	return f, nil
}

// approvalsStream is a live inbox: an event "approvals" with {"count": n}
// when the stream starts and whenever the approvals the caller sees may
// have changed (one added, decided or voted on), at most once a second.
// The client reads the list again; the stream carries no run data.
func (s *Server) approvalsStream(c echo.Context) error {
	f, err := approvalsFilterFor(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sub := s.cfg.Hub.subscribe("")
	defer s.cfg.Hub.unsubscribe(sub)
	count, mark, err := s.cfg.Store.ApprovalsMark(ctx, f)
	if err != nil {
		return err
	}
	if s.sseStart(c) != nil {
		return nil
	}
	send := func(n int) error {
		s.arm(c)
		if _, err := fmt.Fprintf(c.Response(), "event: approvals\ndata: {\"count\": %d}\n\n", n); err != nil {
			return err
		}
		return flush(c)
	}
	if send(count) != nil {
		return nil
	}
	keepalive := time.NewTicker(keepaliveEvery)
	defer keepalive.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.Hub.done:
			return nil
		case <-keepalive.C:
			if s.keepalive(c) != nil {
				return nil
			}
		case <-sub.wake:
			sub.take()
			if wait := approvalsStreamEvery - time.Since(last); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return nil
				}
				sub.take() // what came meanwhile is read below
			}
			last = time.Now()
			n, m, err := s.cfg.Store.ApprovalsMark(ctx, f)
			if err != nil {
				s.log.Warn("approvals stream", "error", err)
				continue
			}
			if m != mark {
				mark = m
				if send(n) != nil {
					return nil
				}
			}
		}
	}
}
