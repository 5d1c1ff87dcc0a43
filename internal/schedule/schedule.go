package schedule

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a parsed cron expression in a time zone.
type Spec struct {
	sched cron.Schedule
	loc   *time.Location
}

// Parse reads a cron expression ("0 9 * * MON-FRI", "*/10 * * * * *" with
// seconds, "@daily") and an IANA time zone ("" is UTC). Its problems name
// the field at fault ("cron" or "timezone"), every one of them. An
// expression that reads but names no date there is ("0 0 30 2 *") is one:
// it would never fire, and its next time would be no time at all.
func Parse(expr, timezone string) (*Spec, []*Error) {
	var problems []*Error
	loc := time.UTC
	if timezone != "" {
		l, err := time.LoadLocation(timezone)
		if err != nil || timezone == "Local" {
			problems = append(problems, &Error{Field: "timezone",
				Message: fmt.Sprintf("%q is not an IANA time zone (Europe/Paris, America/New_York)", timezone)})
		}
		loc = l
	}
	s, err := parser.Parse(expr)
	switch {
	case err != nil:
		problems = append(problems, &Error{Field: "cron", Message: fmt.Sprintf("%q is not a cron expression: %v", expr, err)})
	case s.Next(neverProbe).IsZero():
		problems = append(problems, &Error{Field: "cron",
			Message: fmt.Sprintf("%q never matches a time: no month has the day it names", expr)})
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return &Spec{sched: s, loc: loc}, nil
}

// neverProbe is where Parse looks for an expression's first time: the
// cron library looks five years ahead, and from here those years hold
// every date there is (2000 and 2004 have a 29 February).
var neverProbe = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Error is a field of a schedule that cannot be read.
type Error struct {
	Field, Message string
}

func (e *Error) Error() string { return e.Field + ": " + e.Message }

// Next is the first fire time after t, by the zone's rules (daylight saving
// changes included); the zero time when none falls within five years of t
// (29 February around 2100).
func (s *Spec) Next(t time.Time) time.Time { return s.sched.Next(t.In(s.loc)) }

// maxCatchUp bounds the ticks Latest walks through: a schedule down for
// longer than that many ticks fires for the last one it counted.
const maxCatchUp = 100000

// Latest returns the last fire time not after now, starting from due (a
// fire time ≤ now), and how many fire times from due to it were missed.
func (s *Spec) Latest(due, now time.Time) (time.Time, int) {
	latest, missed := due, 0
	for missed < maxCatchUp {
		n := s.Next(latest)
		if n.IsZero() || n.After(now) {
			break
		}
		latest = n
		missed++
	}
	return latest, missed
}
