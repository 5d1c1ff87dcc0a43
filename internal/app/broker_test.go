package app_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/broker/brokertest"
	"github.com/stitchd/stitchd/internal/syncbuf"
	"github.com/stitchd/stitchd/internal/testkit"
)

// brokerRuns counts a flow's runs started by a broker trigger: all of
// them, and the distinct message ids among them.
func (h *harness) brokerRuns(flowID string) (runs, distinct int) {
	h.t.Helper()
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT count(*), count(DISTINCT trigger->>'message_id') FROM runs WHERE flow_id = ?`,
		flowID).Row().Scan(&runs, &distinct))
	return runs, distinct
}

// waitBrokerRuns waits until the flow has n runs; every one must be of a
// distinct message.
func (h *harness) waitBrokerRuns(flowID string, n int, within time.Duration) {
	h.t.Helper()
	testkit.Eventually(h.t, within, func() bool {
		runs, distinct := h.brokerRuns(flowID)
		require.Equal(h.t, runs, distinct, "a message started two runs")
		require.LessOrEqual(h.t, runs, n, "more runs than messages")
		return runs == n
	}, "%d runs, one a message", n)
}

// transformFlow is a flow of one Transform node: its runs complete at
// once, with no worker.
func (h *harness) transformFlow() string {
	return h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": `{"n": input.n}`})}, nil)
}

// createBrokerTrigger creates a trigger and returns its id.
func (h *harness) createBrokerTrigger(flowID string, body map[string]any) string {
	h.t.Helper()
	var out map[string]any
	require.Equal(h.t, 201, h.do("POST", "/api/v1/flows/"+flowID+"/triggers", body, &out), "%v", out)
	return as[string](h.t, out["id"])
}

// waitConnected waits until the trigger's answer says connected (or not).
func (h *harness) waitConnected(triggerID string, connected bool) map[string]any {
	h.t.Helper()
	var out map[string]any
	h.eventually(func() bool {
		out = nil
		require.Equal(h.t, 200, h.do("GET", "/api/v1/triggers/"+triggerID, nil, &out))
		return out["connected"] == connected
	}, "trigger %s connected=%v (%v)", triggerID, connected, out)
	return out
}

func TestBrokerTriggerNATSThousandMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := brokertest.NewStream(t)
	flow := h.transformFlow()
	id := h.createBrokerTrigger(flow, map[string]any{"kind": "nats", "url": brokertest.NATSURL(), "subject": s.Subject + ".orders"})
	h.waitConnected(id, true)
	const n = 1000
	began := time.Now()
	for i := range n {
		s.Publish(t, "orders", fmt.Sprintf("order-%d", i), fmt.Appendf(nil, `{"n": %d}`, i))
	}
	h.waitBrokerRuns(flow, n, 60*time.Second)
	t.Logf("nats: %d messages → %d runs in %s", n, n, time.Since(began))
	var first runJSON
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT id FROM runs WHERE flow_id = ? AND trigger->>'message_id' = 'order-7'`, flow).
		Row().Scan(&first.ID))
	r := h.waitRun(first.ID, "completed")
	require.JSONEq(t, `{"n": 7}`, string(r.Input))

	// The stream replayed through another durable consumer: every message
	// delivered again, with its id, and no second run.
	var patched map[string]any
	require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+id, map[string]any{"durable": "replay-" + s.Name}, &patched), "%v", patched)
	require.Equal(t, "replay-"+s.Name, patched["durable"])
	h.eventually(func() bool {
		info, err := s.JS.Consumer(context.Background(), s.Name, "replay-"+s.Name)
		if err != nil {
			return false
		}
		ci, err := info.Info(context.Background())
		return err == nil && ci.AckFloor.Stream == n
	}, "the replay consumer to acknowledge the %d messages", n)
	runs, distinct := h.brokerRuns(flow)
	require.Equal(t, n, runs, "redelivered messages started no run")
	require.Equal(t, n, distinct)
}

func TestBrokerTriggerAMQPThousandMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := brokertest.NewQueue(t)
	flow := h.transformFlow()
	id := h.createBrokerTrigger(flow, map[string]any{"kind": "amqp", "url": brokertest.AMQPURL(), "queue": q.Name})
	got := h.waitConnected(id, true)
	require.Equal(t, "amqp://guest:xxxxx@127.0.0.1:5672/", got["url"], "the password is not shown")
	const n = 1000
	began := time.Now()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				q.Publish(t, fmt.Sprintf("order-%d", i), fmt.Appendf(nil, `{"n": %d}`, i), nil)
			}
		}()
	}
	wg.Wait()
	h.waitBrokerRuns(flow, n, 60*time.Second)
	t.Logf("amqp: %d messages → %d runs in %s", n, n, time.Since(began))
}

// TestBrokerTriggerDedupe: a message delivered again with its id starts
// no second run; without an id, NATS messages are told apart by stream
// sequence and AMQP ones by their content (identical ones are one).
func TestBrokerTriggerDedupe(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	t.Run("amqp", func(t *testing.T) {
		q := brokertest.NewQueue(t)
		flow := h.transformFlow()
		id := h.createBrokerTrigger(flow, map[string]any{"kind": "amqp", "url": brokertest.AMQPURL(), "queue": q.Name})
		h.waitConnected(id, true)
		q.Publish(t, "same", []byte(`{"n": 1}`), nil)
		q.Publish(t, "same", []byte(`{"n": 1}`), nil) // a publisher's retry
		q.Publish(t, "", []byte(`{"n": 2}`), nil)
		q.Publish(t, "", []byte(`{"n": 2}`), nil) // identical, no id: one
		q.Publish(t, "", []byte(`{"n": 3}`), nil)
		q.Publish(t, "last", []byte(`{"n": 4}`), nil)
		h.waitBrokerRuns(flow, 4, 20*time.Second)
		h.requireSettled(id, q.Name)
		runs, _ := h.brokerRuns(flow)
		require.Equal(t, 4, runs)
		var froms []string
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT trigger->>'id_from' FROM runs WHERE flow_id = ? ORDER BY input->>'n'`, flow).
			Scan(&froms).Error)
		require.Equal(t, []string{"header", "hash", "hash", "header"}, froms)
	})
	t.Run("nats", func(t *testing.T) {
		s := brokertest.NewStream(t)
		flow := h.transformFlow()
		id := h.createBrokerTrigger(flow, map[string]any{"kind": "nats", "url": brokertest.NATSURL(), "subject": s.Subject + ".>"})
		h.waitConnected(id, true)
		s.Publish(t, "a", "", []byte(`{"n": 1}`))
		s.Publish(t, "a", "", []byte(`{"n": 1}`)) // no id: two messages
		s.Publish(t, "b", "x", []byte(`{"n": 2}`))
		h.waitBrokerRuns(flow, 3, 20*time.Second)
		var ids []string
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT trigger->>'message_id' FROM runs WHERE flow_id = ? ORDER BY 1`, flow).
			Scan(&ids).Error)
		require.Equal(t, []string{"seq:" + s.Name + ":1", "seq:" + s.Name + ":2", "x"}, ids)
		// Replayed from the start by a new durable: nothing new.
		require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+id, map[string]any{"durable": "again"}, nil))
		h.eventually(func() bool {
			c, err := s.JS.Consumer(context.Background(), s.Name, "again")
			if err != nil {
				return false
			}
			ci, err := c.Info(context.Background())
			return err == nil && ci.AckFloor.Stream == 3
		}, "the replay to be acknowledged")
		runs, _ := h.brokerRuns(flow)
		require.Equal(t, 3, runs)
	})
}

// TestBrokerTriggerLongMessageID: a Nats-Msg-Id longer than an index
// entry may hold starts its run once, under the sha256 of the header,
// and a replay of it starts none again (it failed every start, and the
// message came back every second for ever).
func TestBrokerTriggerLongMessageID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := brokertest.NewStream(t)
	flow := h.transformFlow()
	id := h.createBrokerTrigger(flow, map[string]any{"kind": "nats", "url": brokertest.NATSURL(), "subject": s.Subject + ".>"})
	h.waitConnected(id, true)
	// Random, so that Postgres cannot compress it under the index's bound.
	var b strings.Builder
	for b.Len() < 6000 {
		b.WriteString(rand.Text())
	}
	long := b.String()
	s.Publish(t, "a", long, []byte(`{"n": 1}`))
	h.waitBrokerRuns(flow, 1, 20*time.Second)
	hashed := func(id string) string {
		sum := sha256.Sum256([]byte(id))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	var got struct{ MessageID, IDFrom string }
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT trigger->>'message_id' AS message_id, trigger->>'id_from' AS id_from
		FROM runs WHERE flow_id = ?`, flow).Scan(&got).Error)
	require.Equal(t, hashed(long), got.MessageID)
	require.Equal(t, "header", got.IDFrom)
	// Short ids Postgres cannot hold as text in an index are hashed as
	// well (a control character; internal/broker TestHeaderIDPostgresCanHold
	// has bytes that are no UTF-8): they failed every start.
	s.Publish(t, "a", "id-\x01-x", []byte(`{"n": 2}`))
	h.waitBrokerRuns(flow, 2, 20*time.Second)
	var ids []string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT trigger->>'message_id' FROM runs WHERE flow_id = ?`, flow).Scan(&ids).Error)
	require.ElementsMatch(t, []string{hashed(long), hashed("id-\x01-x")}, ids)
	require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+id, map[string]any{"durable": "again"}, nil))
	h.eventually(func() bool {
		c, err := s.JS.Consumer(context.Background(), s.Name, "again")
		if err != nil {
			return false
		}
		ci, err := c.Info(context.Background())
		return err == nil && ci.AckFloor.Stream == 2
	}, "the replay to be acknowledged")
	runs, _ := h.brokerRuns(flow)
	require.Equal(t, 2, runs)
}

// TestBrokerTriggerTokenHidden: a NATS token in the URL (a user without a
// password) is hidden in every answer and in last_error, as a password
// is, and the hidden URL sent back keeps it (it was shown as it was).
func TestBrokerTriggerTokenHidden(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.transformFlow()
	const token = "s3cr3t-nats-token"
	id := h.createBrokerTrigger(flow, map[string]any{"kind": "nats", "url": "nats://" + token + "@127.0.0.1:1", "subject": "a.b"})
	h.eventually(func() bool {
		var got map[string]any
		require.Equal(t, 200, h.do("GET", "/api/v1/triggers/"+id, nil, &got))
		return got["last_error"] != nil
	}, "the failed connection's error")
	for _, path := range []string{"/api/v1/triggers/" + id, "/api/v1/flows/" + flow + "/triggers"} {
		code, body := h.raw("GET", path)
		require.Equal(t, 200, code)
		require.NotContains(t, body, token, path)
		require.Contains(t, body, "nats://xxxxx@127.0.0.1:1", path)
	}
	require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+id, map[string]any{"url": "nats://xxxxx@127.0.0.1:1", "enabled": false}, nil))
	var stored string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT config->>'url' FROM broker_triggers WHERE id = ?`, id).Row().Scan(&stored))
	require.Equal(t, "nats://"+token+"@127.0.0.1:1", stored, "the hidden URL sent back keeps the token")
}

// requireSettled deletes the trigger, waits until its consumer left the
// queue, and requires the queue empty: every message was acknowledged or
// dropped, none left unsettled (it would be back, ready).
func (h *harness) requireSettled(triggerID, queue string) {
	h.t.Helper()
	require.Equal(h.t, 204, h.do("DELETE", "/api/v1/triggers/"+triggerID, nil, nil))
	var ready, consumers int
	h.eventually(func() bool {
		var err error
		ready, consumers, err = brokertest.QueueState(queue)
		require.NoError(h.t, err)
		return consumers == 0
	}, "the consumer of %s to leave", queue)
	require.Zero(h.t, ready, "messages left in %s", queue)
}

// TestBrokerTriggerEvents: a trigger with "as": "event" posts each
// message as an event: the run waiting on its name and key is woken with
// the body, a flow's event trigger starts a run with it, once however
// often the message comes; a message without the key is dropped and the
// error shown on the trigger.
func TestBrokerTriggerEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	q := brokertest.NewQueue(t)
	name := "payment.received." + strings.ToLower(t.Name())
	source := h.transformFlow()
	target := h.transformFlow()
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+target+"/triggers", map[string]any{"kind": "event", "name": name}, nil))
	waiting := h.createFlow([]map[string]any{node("pay", "Event", map[string]any{"event": name, "key": "input.order_id"})}, nil)
	w := h.startRun(waiting, map[string]any{"order_id": 42})
	h.waitNode(w.ID, "pay", "waiting_for_event")
	id := h.createBrokerTrigger(source, map[string]any{"kind": "amqp", "url": brokertest.AMQPURL(), "queue": q.Name,
		"as": "event", "name": name, "key": "input.order_id"})
	h.waitConnected(id, true)
	q.Publish(t, "pay-42", []byte(`{"order_id": 42, "n": 1}`), nil)
	q.Publish(t, "pay-42", []byte(`{"order_id": 42, "n": 1}`), nil)
	q.Publish(t, "pay-x", []byte(`{"n": 2}`), nil) // no order_id: dropped
	var runID, key string
	h.eventually(func() bool {
		return h.app.Store.Gorm().Raw(`SELECT id, trigger->>'key' FROM runs WHERE flow_id = ?`, target).Row().Scan(&runID, &key) == nil
	}, "the event's run")
	require.Equal(t, "42", key)
	r := h.waitRun(runID, "completed")
	require.JSONEq(t, `{"order_id": 42, "n": 1}`, string(r.Input))
	woken := h.waitRun(w.ID, "completed")
	require.JSONEq(t, `{"order_id": 42, "n": 1}`, string(woken.Nodes["pay"].Output), "the waiting node has the body")
	var got map[string]any
	h.eventually(func() bool {
		got = nil
		require.Equal(t, 200, h.do("GET", "/api/v1/triggers/"+id, nil, &got))
		msg, _ := got["last_error"].(string)
		return strings.Contains(msg, "pay-x") && strings.Contains(msg, "dropped")
	}, "the dropped message's error on the trigger (%v)", got)
	require.Equal(t, true, got["connected"])
	h.requireSettled(id, q.Name)
	var runs int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE flow_id IN (?, ?)`, source, target).Row().Scan(&runs))
	require.Equal(t, 1, runs, "one run, of the event trigger's flow")
}

// TestBrokerTriggerConnectionLoss: a broker that cannot be reached, or
// whose connection is lost, shows on the trigger (connected false, the
// error); stitchd reconnects with backoff and consumes what was sent
// meanwhile.
func TestBrokerTriggerConnectionLoss(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, kind := range []string{"nats", "amqp"} {
		t.Run(kind, func(t *testing.T) {
			flow := h.transformFlow()
			body := map[string]any{"kind": kind}
			var publish func(i int)
			var proxy *brokertest.Proxy
			if kind == "nats" {
				s := brokertest.NewStream(t)
				proxy = brokertest.NewProxy(t, "127.0.0.1:4222")
				body["url"], body["subject"] = "nats://"+proxy.Addr, s.Subject+".x"
				publish = func(i int) { s.Publish(t, "x", fmt.Sprint(i), fmt.Appendf(nil, `{"n": %d}`, i)) }
			} else {
				q := brokertest.NewQueue(t)
				proxy = brokertest.NewProxy(t, "127.0.0.1:5672")
				body["url"], body["queue"] = "amqp://guest:guest@"+proxy.Addr+"/", q.Name
				publish = func(i int) { q.Publish(t, fmt.Sprint(i), fmt.Appendf(nil, `{"n": %d}`, i), nil) }
			}
			proxy.Cut() // the broker is down when the trigger is created
			id := h.createBrokerTrigger(flow, body)
			var got map[string]any
			h.eventually(func() bool {
				got = nil
				require.Equal(t, 200, h.do("GET", "/api/v1/triggers/"+id, nil, &got))
				msg, _ := got["last_error"].(string)
				return strings.Contains(msg, "error connecting")
			}, "the connection error on the trigger (%v)", got)
			require.Equal(t, false, got["connected"])
			proxy.Resume(t)
			h.waitConnected(id, true)
			publish(1)
			h.waitBrokerRuns(flow, 1, 20*time.Second)

			proxy.Cut() // lost while consuming
			got = h.waitConnected(id, false)
			require.NotEmpty(t, got["last_error"])
			publish(2) // sent while stitchd is cut off
			proxy.Resume(t)
			h.waitConnected(id, true)
			h.waitBrokerRuns(flow, 2, 20*time.Second)

			// Disabled: no longer consumed, and shown so at once, not only
			// when the process's state grows stale (30 s: consumerMaxAge).
			require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+id, map[string]any{"enabled": false}, nil))
			start := time.Now()
			got = h.waitConnected(id, false)
			require.Less(t, time.Since(start), 20*time.Second)
			require.Equal(t, false, got["enabled"])
		})
	}
}

// TestBrokerTriggerBadConfig: a config with problems is refused with 422
// and every problem's path; nothing is stored.
func TestBrokerTriggerBadConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.transformFlow()
	cases := []struct {
		name string
		body map[string]any
		want map[string]string // path → part of the message
	}{
		{"nats nothing", map[string]any{"kind": "nats"}, map[string]string{"url": "required", "subject": "required"}},
		{"amqp nothing", map[string]any{"kind": "amqp"}, map[string]string{"url": "required", "queue": "required"}},
		{"nats bad", map[string]any{"kind": "nats", "url": "http://x:1", "subject": "a..b", "deliver": "some",
			"ack_wait_seconds": -1, "queue": "q"}, map[string]string{"url": "scheme", "subject": "not a NATS subject",
			"deliver": "deliver", "ack_wait_seconds": "1 to", "queue": "amqp"}},
		{"amqp bad", map[string]any{"kind": "amqp", "url": "amqp://", "queue": "q", "prefetch": 5000, "subject": "s"},
			map[string]string{"url": "host", "prefetch": "1 to", "subject": "nats"}},
		{"event without name or key", map[string]any{"kind": "amqp", "url": "amqp://h/", "queue": "q", "as": "event"},
			map[string]string{"name": "required", "key": "required"}},
		{"bad key expression", map[string]any{"kind": "nats", "url": "nats://h", "subject": "s", "as": "event", "name": "e",
			"key": "input.("}, map[string]string{"key": "key:"}},
		{"key names what is not there", map[string]any{"kind": "nats", "url": "nats://h", "subject": "s", "as": "event",
			"name": "e", "key": "secrets.x"}, map[string]string{"key": "secrets"}},
		{"bad as", map[string]any{"kind": "amqp", "url": "amqp://h/", "queue": "q", "as": "email", "name": "x"},
			map[string]string{"as": `"run"`}},
		{"event fields on a run", map[string]any{"kind": "amqp", "url": "amqp://h/", "queue": "q", "key": "input.x"},
			map[string]string{"key": "event"}},
	}
	for _, c := range cases {
		code, details := h.refused(422, "POST", "/api/v1/flows/"+flow+"/triggers", c.body)
		require.Equal(t, "invalid_trigger", code, c.name)
		got := byPath(details)
		require.Len(t, got, len(c.want), "%s: %v", c.name, got)
		for path, part := range c.want {
			require.Contains(t, got[path], part, "%s: %s", c.name, path)
		}
	}
	var list struct {
		Triggers []map[string]any `json:"triggers"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/triggers", nil, &list))
	require.Empty(t, list.Triggers, "nothing stored")

	// A good one, then a bad change: 422, and the stored config unchanged.
	id := h.createBrokerTrigger(flow, map[string]any{"kind": "nats", "url": "nats://127.0.0.1:1", "subject": "a.b", "enabled": false})
	_, details := h.refused(422, "PATCH", "/api/v1/triggers/"+id, map[string]any{"subject": "", "as": "event"})
	require.Equal(t, []string{"subject", "name", "key"}, paths(details))
	var got map[string]any
	require.Equal(t, 200, h.do("GET", "/api/v1/triggers/"+id, nil, &got))
	require.Equal(t, "a.b", got["subject"])
	require.Equal(t, "run", got["as"])
	require.Equal(t, false, got["enabled"])
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/triggers", nil, &list))
	require.Len(t, list.Triggers, 1)
	require.Equal(t, 204, h.do("DELETE", "/api/v1/triggers/"+id, nil, nil))
	require.Equal(t, 404, h.do("GET", "/api/v1/triggers/"+id, nil, nil))
}

func paths(ps []problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Path
	}
	return out
}

// TestBrokerTriggerAddressGuard: broker connections go through the
// address guard — loopback brokers (nats, amqp, and a ws: URL, which
// would send an HTTP GET) are refused in deny mode, a metadata address
// in every mode — and last_error does not tell a closed port from an
// open one, while a broker's own answer (bad credentials) is shown.
func TestBrokerTriggerAddressGuard(t *testing.T) {
	t.Parallel()
	lastError := func(h *harness, id string) string {
		var got map[string]any
		h.eventually(func() bool {
			got = nil
			require.Equal(t, 200, h.do("GET", "/api/v1/triggers/"+id, nil, &got))
			_, ok := got["last_error"].(string)
			return ok
		}, "an error on trigger %s", id)
		require.Equal(t, false, got["connected"])
		msg, ok := got["last_error"].(string)
		require.True(t, ok)
		return msg
	}
	var wsHits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		wsHits.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(web.Close)
	webHost := strings.TrimPrefix(web.URL, "http://")

	var denyLog syncbuf.Buffer
	deny := newHarness(t, withLog(&denyLog), func(c *app.Config) { c.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: true} })
	flow := deny.transformFlow()
	s, q := brokertest.NewStream(t), brokertest.NewQueue(t)
	for _, body := range []map[string]any{
		{"kind": "nats", "url": brokertest.NATSURL(), "subject": s.Subject + ".x"},
		{"kind": "amqp", "url": brokertest.AMQPURL(), "queue": q.Name},
		{"kind": "nats", "url": "ws://" + webHost + "/latest/meta-data/iam", "subject": "a.b"},
	} {
		msg := lastError(deny, deny.createBrokerTrigger(flow, body))
		require.Contains(t, msg, "could not connect to the broker", body["url"])
	}
	require.Contains(t, denyLog.String(), "worker address refused: 127.0.0.1 is a loopback")
	require.Zero(t, wsHits.Load(), "the ws: URL's GET was not sent")

	var allowLog syncbuf.Buffer
	h := newHarness(t, withLog(&allowLog))
	flow = h.transformFlow()
	meta := h.createBrokerTrigger(flow, map[string]any{"kind": "nats", "url": "nats://169.254.169.254:80", "subject": "a.b"})
	require.Contains(t, lastError(h, meta), "could not connect to the broker")
	h.eventually(func() bool {
		return strings.Contains(allowLog.String(), "169.254.169.254 is a link-local or cloud metadata address")
	},
		"the guard refused the metadata address")

	// A closed port and an open one that is no broker read the same.
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	shown := map[string]string{}
	for name, body := range map[string]map[string]any{
		"nats closed": {"kind": "nats", "url": "nats://" + closed, "subject": "a.b"},
		"nats open":   {"kind": "nats", "url": "nats://" + webHost, "subject": "a.b"},
		"amqp closed": {"kind": "amqp", "url": "amqp://guest:guest@" + closed + "/", "queue": "q"},
		"amqp open":   {"kind": "amqp", "url": "amqp://guest:guest@" + webHost + "/", "queue": "q"},
	} {
		msg := lastError(h, h.createBrokerTrigger(flow, body))
		shown[name] = strings.NewReplacer(closed, "HOST", webHost, "HOST").Replace(msg)
	}
	require.Contains(t, shown["nats closed"], "could not connect to the broker")
	require.Equal(t, shown["nats closed"], shown["nats open"])
	require.Equal(t, shown["amqp closed"], shown["amqp open"])

	// What a broker answers is still shown.
	bad := h.createBrokerTrigger(flow, map[string]any{"kind": "amqp", "url": "amqp://guest:wrong@127.0.0.1:5672/", "queue": q.Name})
	msg := lastError(h, bad)
	require.NotContains(t, msg, "could not connect to the broker")
	require.Contains(t, msg, "username or password")
}
