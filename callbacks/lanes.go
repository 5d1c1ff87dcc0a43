package callbacks

// lanes are a destination host's queued rows: a first-in first-out lane
// per workspace, served in turns, so a backlog of one workspace does not
// hold back another's deliveries to the same host
// (docs/workspaces.md#fairness). With one workspace it is one queue.
type lanes struct {
	by map[string][]queued
	// order lists the workspaces with rows in the order they are served;
	// turn is the next.
	order []string
	turn  int
	n     int
}

func (l *lanes) len() int { return l.n }

// push queues q at the end of its workspace's lane.
func (l *lanes) push(q queued) {
	ws := q.c.Workspace
	if l.by == nil {
		l.by = map[string][]queued{}
	}
	if len(l.by[ws]) == 0 {
		l.order = append(l.order, ws)
	}
	l.by[ws] = append(l.by[ws], q)
	l.n++
}

// pop takes the first row of the next workspace's lane (l.len() > 0).
func (l *lanes) pop() queued {
	at := l.turn % len(l.order)
	ws := l.order[at]
	lane := l.by[ws]
	q := lane[0]
	lane[0] = queued{}
	if len(lane) == 1 {
		delete(l.by, ws)
		l.order = append(l.order[:at], l.order[at+1:]...)
		l.turn = at
	} else {
		l.by[ws] = lane[1:]
		l.turn = at + 1
	}
	if len(l.order) > 0 {
		l.turn %= len(l.order)
	} else {
		l.turn = 0
	}
	l.n--
	return q
}

// each calls fn with each queued row, which it may change.
func (l *lanes) each(fn func(q *queued)) {
	for _, lane := range l.by {
		for i := range lane {
			fn(&lane[i])
		}
	}
}

// keep drops the rows fn does not keep, keeping the order of the rest.
func (l *lanes) keep(fn func(q *queued) bool) {
	for ws, lane := range l.by {
		kept := lane[:0]
		for _, q := range lane {
			if fn(&q) {
				kept = append(kept, q)
			}
		}
		clear(lane[len(kept):])
		l.n -= len(lane) - len(kept)
		if len(kept) > 0 {
			l.by[ws] = kept
			continue
		}
		delete(l.by, ws)
		at := -1
		for i, o := range l.order {
			if o == ws {
				at = i
			}
		}
		l.order = append(l.order[:at], l.order[at+1:]...)
		if l.turn > at {
			l.turn--
		}
		if l.turn >= len(l.order) {
			l.turn = 0
		}
	}
}
