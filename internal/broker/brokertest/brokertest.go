package brokertest

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"
)

// NATSURL is the NATS server the tests use.
func NATSURL() string {
	if u := os.Getenv("STITCHD_TEST_NATS_URL"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// AMQPURL is the RabbitMQ server the tests use.
func AMQPURL() string {
	if u := os.Getenv("STITCHD_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// unique is a short random lowercase name part.
func unique() string { return strings.ToLower(rand.Text()[:10]) }

// Stream is a JetStream stream of its own capturing Subject + ".>".
type Stream struct {
	Name    string
	Subject string
	NC      *nats.Conn
	JS      jetstream.JetStream
}

// NewStream creates a stream of a unique name, deleted when the test ends.
func NewStream(tb testing.TB) *Stream {
	tb.Helper()
	nc, err := nats.Connect(NATSURL(), nats.Timeout(5*time.Second))
	require.NoError(tb, err, "NATS must run at %s (make deps-test starts it)", NATSURL())
	js, err := jetstream.New(nc)
	require.NoError(tb, err)
	u := unique()
	s := &Stream{Name: "STITCHD_TEST_" + strings.ToUpper(u), Subject: "stitchd.test." + u, NC: nc, JS: js}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: s.Name, Subjects: []string{s.Subject + ".>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	require.NoError(tb, err, "creating stream %s (JetStream must be on: nats-server -js)", s.Name)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, s.Name)
		nc.Close()
	})
	return s
}

// Publish publishes body on subject (under the stream's), with the
// Nats-Msg-Id id unless id is empty, and waits for the stream to store it.
func (s *Stream) Publish(tb testing.TB, subject, id string, body []byte) {
	tb.Helper()
	m := nats.NewMsg(s.Subject + "." + subject)
	m.Data = body
	if id != "" {
		m.Header.Set(jetstream.MsgIDHeader, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.JS.PublishMsg(ctx, m)
	require.NoError(tb, err)
}

// Queue is a durable RabbitMQ queue of its own.
type Queue struct {
	Name string
	conn *amqp.Connection
	ch   *amqp.Channel
	mu   sync.Mutex
}

// NewQueue declares a durable queue of a unique name, deleted when the
// test ends.
func NewQueue(tb testing.TB) *Queue {
	tb.Helper()
	conn, err := amqp.Dial(AMQPURL())
	require.NoError(tb, err, "RabbitMQ must run at %s (make deps-test starts it)", AMQPURL())
	ch, err := conn.Channel()
	require.NoError(tb, err)
	require.NoError(tb, ch.Confirm(false))
	q := &Queue{Name: "stitchd-test-" + unique(), conn: conn, ch: ch}
	_, err = ch.QueueDeclare(q.Name, true, false, false, false, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		_, _ = ch.QueueDelete(q.Name, false, false, false)
		conn.Close()
	})
	return q
}

// Publish sends body to the queue (persistent, through the default
// exchange), with the message_id id unless id is empty and headers, and
// waits for the broker's confirm.
func (q *Queue) Publish(tb testing.TB, id string, body []byte, headers map[string]string) {
	tb.Helper()
	p := amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: id, Body: body}
	if len(headers) > 0 {
		p.Headers = amqp.Table{}
		for k, v := range headers {
			p.Headers[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q.mu.Lock()
	defer q.mu.Unlock()
	conf, err := q.ch.PublishWithDeferredConfirmWithContext(ctx, "", q.Name, true, false, p)
	require.NoError(tb, err)
	ok, err := conf.WaitContext(ctx)
	require.NoError(tb, err)
	require.True(tb, ok, "the broker confirmed the message")
}

// Proxy forwards loopback connections to a server; Cut closes them all
// and refuses new ones until Resume (a lost connection, a server down).
type Proxy struct {
	Addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

// NewProxy starts a proxy to target (host:port), stopped when the test
// ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := (&net.ListenConfig{}).Listen(tb.Context(), "tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	p := &Proxy{Addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	tb.Cleanup(p.Cut)
	return p
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Background: the proxy outlives the test's context until Cut.
			up, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(context.Background(), "tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
			go func() { _, _ = io.Copy(c, up); up.Close(); c.Close() }()
		}
	}()
}

// Cut closes every proxied connection and stops listening.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// Resume listens again on the same address.
func (p *Proxy) Resume(tb testing.TB) {
	tb.Helper()
	var ln net.Listener
	var err error
	// The port was just released; another process may hold it a moment.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = (&net.ListenConfig{}).Listen(tb.Context(), "tcp", p.Addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(tb, err)
	p.serve(ln)
}

// QueueState returns how many messages are ready in a queue (not
// delivered, or returned) and how many consumers it has.
func QueueState(name string) (ready, consumers int, err error) {
	conn, err := amqp.Dial(AMQPURL())
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, 0, err
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	return q.Messages, q.Consumers, err
}
