package bench

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// copyID is historyUUID in Go: the same ids, so that both loaders write
// the same rows (payloads alike in shape and size).
func copyID(kind uint16, n int) [16]byte {
	var u [16]byte
	copy(u[:], []byte{0x01, 0x80, 0, 0, 0, 0, 0x70, 0, byte(kind >> 8), byte(kind)}) //nolint:gosec // G115: kind's two bytes, truncation meant
	for i := range 6 {
		u[15-i] = byte(n >> (8 * i)) //nolint:gosec // G115: n's low bytes, truncation meant
	}
	return u
}

// parseUUID reads a UUID's text (the ids the API answered).
func parseUUID(s string) ([16]byte, error) {
	var u [16]byte
	b := []byte(s)
	if len(b) != 36 {
		return u, fmt.Errorf("not a UUID: %q", s)
	}
	b = append(append(append(append(b[0:8:8], b[9:13]...), b[14:18]...), b[19:23]...), b[24:]...)
	_, err := hex.Decode(u[:], b)
	return u, err
}

func uuidString(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// loadHistoryBatchCopy is loadHistoryBatch with COPY: the bench makes
// the same rows and streams them to the server, one COPY a table.
func (r *runner) loadHistoryBatchCopy(ctx context.Context, flows [2]historyFlow, lo, hi, entities int) (int64, error) {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var base time.Time
	if err := conn.QueryRowContext(ctx, `SELECT now() - interval '400 days'`).Scan(&base); err != nil {
		return 0, err
	}
	var flowIDs, versions [2][16]byte
	for i, f := range flows {
		if flowIDs[i], err = parseUUID(f.id); err != nil {
			return 0, err
		}
		if versions[i], err = parseUUID(f.version); err != nil {
			return 0, err
		}
	}
	var rows int64
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the history copy needs pgx's driver, not %T", dc)
		}
		c := sc.Conn()
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
		t0 := func(i int) time.Time { return base.Add(ms(10 * i)) }
		io := func(i int) []byte { return []byte(`{"i": ` + strconv.Itoa(i) + `}`) }
		type table struct {
			name string
			cols []string
			// rows appends run i's rows.
			rows func(i int, out [][]any) [][]any
		}
		tables := []table{
			{"runs", []string{"id", "flow_id", "flow_version_id", "entity_id", "status", "trigger", "input", "output", "event_seq",
				"created_at", "updated_at", "finished_at"}, func(i int, out [][]any) [][]any {
				var entity any
				if i%4 == 1 {
					entity = copyID(0xa000, i/4%entities)
				}
				w := 1 + i%2
				return append(out, []any{copyID(0x8000, i), flowIDs[i%2], versions[i%2], entity, "completed", `{"type": "api"}`, io(i), io(i),
					int64(3*w + 2), t0(i), t0(i).Add(ms(2 * w)), t0(i).Add(ms(2 * w))})
			}},
			{"node_states", []string{"run_id", "key", "node_id", "type", "status", "input", "output", "attempt", "started_at",
				"finished_at", "updated_at"}, func(i int, out [][]any) [][]any {
				for k := range 1 + i%2 {
					key := "n" + strconv.Itoa(k)
					out = append(out, []any{copyID(0x8000, i), key, key, "Worker", "completed", io(i), io(i), int32(1),
						t0(i).Add(ms(2 * k)), t0(i).Add(ms(2 * (k + 1))), t0(i).Add(ms(2 * (k + 1)))})
				}
				return out
			}},
			{"dispatches", []string{"id", "run_id", "key", "attempt", "url", "payload", "status", "tries", "max_tries",
				"next_attempt_at", "delivery_logged", "created_at", "updated_at"}, func(i int, out [][]any) [][]any {
				run := copyID(0x8000, i)
				for k := range 1 + i%2 {
					key := "n" + strconv.Itoa(k)
					payload := fmt.Sprintf(`{"runId": %q, "nodeId": %q, "attempt": 1, "input": {"i": %d}, "config": {"webhookUrl": %q}, `+
						`"callbackUrl": "http://127.0.0.1:8080/callbacks/v1.cb-1.%032x.%032x"}`, uuidString(run), key, i, r.worker.url, i, k)
					out = append(out, []any{copyID(0x9000, 2*i+k), run, key, int32(1), r.worker.url, []byte(payload), "delivered",
						int32(1), int32(12), t0(i).Add(ms(2 * k)), true, t0(i).Add(ms(2 * k)), t0(i).Add(ms(2 * (k + 1)))})
				}
				return out
			}},
			{"run_events", []string{"run_id", "seq", "type", "key", "payload", "created_at"}, func(i int, out [][]any) [][]any {
				w := 1 + i%2
				run := copyID(0x8000, i)
				for s := 1; s <= 3*w+2; s++ {
					var typ, payload string
					var key any
					switch s {
					case 1:
						typ = "run.started"
						payload = fmt.Sprintf(`{"input": {"i": %d}, "flow_version_id": %q}`, i, flows[i%2].version)
					case 3*w + 2:
						typ, payload = "run.completed", `{}`
					default:
						k := (s - 2) / 3
						key = "n" + strconv.Itoa(k)
						switch (s - 2) % 3 {
						case 2:
							typ = "dispatch.attempt"
							payload = fmt.Sprintf(`{"try": 1, "attempt": 1, "delivered": true, "dispatch_id": %q}`,
								uuidString(copyID(0x9000, 2*i+k)))
						case 0:
							typ, payload = "node.status", fmt.Sprintf(`{"status": "running", "attempt": 1, "node_id": "n%d"}`, k)
						default:
							typ, payload = "node.status", fmt.Sprintf(`{"status": "completed", "attempt": 1, "node_id": "n%d"}`, k)
						}
					}
					out = append(out, []any{run, int64(s), typ, key, []byte(payload), t0(i).Add(ms(s))})
				}
				return out
			}},
			{"journey_events", []string{"id", "entity_id", "kind", "from_section_id", "to_section_id", "run_id", "node_key",
				"created_at"}, func(i int, out [][]any) [][]any {
				if i%4 != 1 {
					return out
				}
				entity, run := copyID(0xa000, i/4%entities), copyID(0x8000, i)
				return append(out,
					[]any{copyID(0xb000, 2*i), entity, "run_started", nil, "new", run, nil, t0(i)},
					[]any{copyID(0xb000, 2*i+1), entity, "moved", "new", "done", run, "n1", t0(i).Add(ms(2))})
			}},
		}
		for _, t := range tables {
			var buf [][]any
			for i := lo; i <= hi; i++ {
				buf = t.rows(i, buf)
			}
			n, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, pgx.CopyFromRows(buf))
			if err != nil {
				return fmt.Errorf("error copying %s: %w", t.name, err)
			}
			rows += n
		}
		return tx.Commit(ctx)
	})
	return rows, err
}
