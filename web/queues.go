package web

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// Bounds of a poll (POST /api/v1/tasks/poll).
const (
	maxPollTasks   = 100
	maxPollWait    = 60
	maxWorkerIDLen = 200
	// defaultPollRecheck is Config.PollRecheck's default.
	defaultPollRecheck = time.Second
)

var pollQueueName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$`)

// pollBody is POST /api/v1/tasks/poll.
type pollBody struct {
	Queue       string `json:"queue"`
	Worker      string `json:"worker"`
	Max         *int   `json:"max"`
	WaitSeconds *int   `json:"wait_seconds"`
}

// polledTask is a task as a worker receives it: the push payload's
// contract, and when the lease ends.
type polledTask struct {
	RunID          string          `json:"run_id"`
	NodeID         string          `json:"node_id"`
	Attempt        int             `json:"attempt"`
	Input          json.RawMessage `json:"input"`
	Config         json.RawMessage `json:"config"`
	CallbackURL    string          `json:"callback_url"`
	LeaseExpiresAt time.Time       `json:"lease_expires_at"`
}

// pollTasks leases up to max of a queue's waiting tasks to the worker,
// waiting up to wait_seconds for one to be queued (on any process: a
// queue's writes are NOTIFYed on store.TasksChannel). Each attempt is
// handed out once; its callback URL is the push contract's.
func (s *Server) pollTasks(c echo.Context) error {
	var b pollBody
	if err := bind(c, &b); err != nil {
		return err
	}
	var problems []engine.Problem
	if !pollQueueName.MatchString(b.Queue) {
		problems = append(problems, engine.Problem{Code: "invalid", Path: "queue",
			Message: "queue is required: a name of 1 to 100 letters, digits, '.', '_', ':' or '-'"})
	}
	if b.Worker = strings.TrimSpace(b.Worker); b.Worker == "" || len(b.Worker) > maxWorkerIDLen || strings.ContainsAny(b.Worker, "\r\n\x00") {
		problems = append(problems, engine.Problem{Code: "invalid", Path: "worker",
			Message: "worker is required: who polls (e.g. host-1/v2.3), one line of at most 200 bytes"})
	}
	limit, wait := 1, 0
	if b.Max != nil {
		if limit = *b.Max; limit < 1 || limit > maxPollTasks {
			problems = append(problems, engine.Problem{Code: "invalid", Path: "max", Message: "max must be from 1 to 100"})
		}
	}
	if b.WaitSeconds != nil {
		if wait = *b.WaitSeconds; wait < 0 || wait > maxPollWait {
			problems = append(problems, engine.Problem{Code: "invalid", Path: "wait_seconds", Message: "wait_seconds must be from 0 to 60"})
		}
	}
	if len(problems) > 0 {
		ae := badRequest("the poll is not valid: " + plural(len(problems), "problem"))
		ae.Details = problems
		return ae
	}
	ctx := c.Request().Context()
	// Subscribed before the first look: a task queued between the look and
	// the wait still wakes it.
	var sub *subscriber
	if wait > 0 && s.cfg.Tasks != nil {
		sub = s.cfg.Tasks.subscribe(b.Queue)
		defer s.cfg.Tasks.unsubscribe(sub)
	}
	until := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		got, more, err := s.cfg.Store.PollTasks(ctx, store.PollTasksParams{Workspace: workspaceOf(c), Queue: b.Queue, Worker: b.Worker, Max: limit})
		if err != nil {
			return err
		}
		if len(got) > 0 {
			if ctx.Err() != nil {
				// The worker went away as they were leased: no one will
				// read them, so they wait again rather than for a lease.
				if err := s.cfg.Store.ReleaseTasks(context.WithoutCancel(ctx), b.Worker, got); err != nil {
					s.log.Warn("error releasing tasks of a poll whose worker went away", "queue", b.Queue, "error", err)
				}
				return ctx.Err()
			}
			out := make([]polledTask, len(got))
			for i, t := range got {
				out[i] = polledTask{RunID: t.RunID, NodeID: t.Key, Attempt: t.Attempt, Input: t.Payload.Input,
					Config: t.Payload.Config, CallbackURL: t.Payload.CallbackURL, LeaseExpiresAt: t.LeaseExpiresAt}
			}
			return c.JSON(http.StatusOK, map[string]any{"tasks": out})
		}
		if more {
			continue // only ended attempts were met: look again at once
		}
		left := time.Until(until)
		if sub == nil || left <= 0 {
			return c.JSON(http.StatusOK, map[string]any{"tasks": []polledTask{}})
		}
		t := time.NewTimer(min(left, s.pollRecheck()))
		select {
		case <-sub.wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-s.cfg.Tasks.done:
			t.Stop()
			return c.JSON(http.StatusOK, map[string]any{"tasks": []polledTask{}})
		}
		t.Stop()
	}
}

// queues is GET /api/v1/queues: every queue with tasks or pollers, what
// waits and is leased, and who polls it (a JSON array, as the contract
// says).
func (s *Server) queues(c echo.Context) error {
	qs, err := s.cfg.Store.Queues(c.Request().Context(), workspaceOf(c))
	if err != nil {
		return err
	}
	if qs == nil {
		qs = []store.QueueStats{}
	}
	return c.JSON(http.StatusOK, qs)
}

// pollRecheck is how often a long poll looks at its queue again without
// a notification: a retried task falls due later, with none.
func (s *Server) pollRecheck() time.Duration {
	if s.cfg.PollRecheck > 0 {
		return s.cfg.PollRecheck
	}
	return defaultPollRecheck
}
