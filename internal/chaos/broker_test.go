package chaos

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/broker/brokertest"
	"github.com/stitchd/stitchd/internal/contracttest"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestBrokerTriggersSurviveSIGKILL: two stitchd processes consume one
// broker trigger (a shared durable JetStream consumer, one RabbitMQ
// queue) while 1,000 messages arrive; one is SIGKILLed mid-stream and
// started again. Every message starts exactly one run: the messages the
// killed process had taken are redelivered, and the ones whose run it had
// started are recognised by their id.
func TestBrokerTriggersSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	bin := buildStitchd(t, dir, *flagRace)
	for _, kind := range []string{"nats", "amqp"} {
		t.Run(kind, func(t *testing.T) {
			_, dbURL := storetest.IsolatedDB(t)
			db, err := sql.Open("pgx", dbURL)
			require.NoError(t, err)
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var ins []*instance
			for _, name := range []string{kind + "-a", kind + "-b"} {
				in := &instance{name: name, bin: bin, addr: freeAddr(t), dbURL: dbURL, logDir: dir}
				require.NoError(t, in.start(ctx))
				t.Cleanup(in.kill)
				ins = append(ins, in)
			}
			client := contracttest.Client(t, http.DefaultClient)
			api := func(method, path string, body, out any) int {
				b, _ := json.Marshal(body)
				req, _ := http.NewRequestWithContext(t.Context(), method, ins[1].url()+path, bytes.NewReader(b))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				if out != nil {
					require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
				}
				return resp.StatusCode
			}
			var flow struct{ ID string }
			require.Equal(t, 201, api("POST", "/api/v1/flows", map[string]any{"name": "broker " + kind, "graph": map[string]any{
				"nodes": []any{map[string]any{"id": "t", "type": "Transform", "position": map[string]int{"x": 0, "y": 0},
					"data": map[string]any{"expression": `{"n": input.n}`}}}, "edges": []any{}}}, &flow))

			const n = 1000
			var publish func(i int)
			var settled func(triggerID string) bool
			trig := map[string]any{"kind": kind}
			if kind == "nats" {
				s := brokertest.NewStream(t)
				trig["url"], trig["subject"], trig["ack_wait_seconds"] = brokertest.NATSURL(), s.Subject+".in", 3
				publish = func(i int) { s.Publish(t, "in", fmt.Sprintf("m-%d", i), fmt.Appendf(nil, `{"n": %d}`, i)) }
				settled = func(triggerID string) bool {
					c, err := s.JS.Consumer(ctx, s.Name, "stitchd-"+triggerID)
					require.NoError(t, err)
					ci, err := c.Info(ctx)
					require.NoError(t, err)
					return ci.NumAckPending == 0 && ci.NumPending == 0 && ci.AckFloor.Stream == n
				}
			} else {
				q := brokertest.NewQueue(t)
				trig["url"], trig["queue"] = brokertest.AMQPURL(), q.Name
				publish = func(i int) { q.Publish(t, fmt.Sprintf("m-%d", i), fmt.Appendf(nil, `{"n": %d}`, i), nil) }
				settled = func(string) bool {
					ready, _, err := brokertest.QueueState(q.Name)
					require.NoError(t, err)
					return ready == 0
				}
			}
			var created struct{ ID string }
			require.Equal(t, 201, api("POST", "/api/v1/flows/"+flow.ID+"/triggers", trig, &created))
			// Both processes consume before the messages come.
			require.Eventually(t, func() bool {
				var got struct {
					Consumers []struct{ Connected bool }
				}
				api("GET", "/api/v1/triggers/"+created.ID, nil, &got)
				return len(got.Consumers) == 2 && got.Consumers[0].Connected && got.Consumers[1].Connected
			}, 30*time.Second, 20*time.Millisecond, "both processes connected")

			count := func() (runs, distinct int) {
				require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*), count(DISTINCT trigger->>'message_id') FROM runs WHERE flow_id = $1`,
					flow.ID).Scan(&runs, &distinct))
				return runs, distinct
			}
			began := time.Now()
			published := make(chan struct{})
			go func() {
				defer close(published)
				for i := range n {
					publish(i)
				}
			}()
			// SIGKILL one process mid-stream, and start it again.
			var atKill int
			require.Eventually(t, func() bool { atKill, _ = count(); return atKill >= 150 }, time.Minute, 5*time.Millisecond)
			ins[0].kill()
			require.Less(t, atKill, n, "killed mid-stream")
			killedAt := time.Since(began)
			require.NoError(t, ins[0].start(ctx))
			<-published
			testkit.Eventually(t, 90*time.Second, func() bool {
				runs, distinct := count()
				require.Equal(t, runs, distinct, "a message started two runs")
				return runs == n
			}, "%d runs", n)
			var inputs, redelivered int
			require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(DISTINCT input->>'n'), count(*) FILTER (WHERE trigger->>'redelivered' = 'true')
				FROM runs WHERE flow_id = $1`, flow.ID).Scan(&inputs, &redelivered))
			require.Equal(t, n, inputs)
			require.Eventually(t, func() bool { return settled(created.ID) }, 30*time.Second, 20*time.Millisecond,
				"every message acknowledged")
			t.Logf("%s: %d messages → %d runs in %s, one of two processes SIGKILLed at %s with %d runs started; "+
				"%d runs started by a redelivery", kind, n, n, time.Since(began).Round(time.Millisecond),
				killedAt.Round(time.Millisecond), atKill, redelivered)
		})
	}
}
