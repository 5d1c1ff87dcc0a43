package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsSession connects to the trigger's NATS server, creates (or updates)
// its durable consumer and handles its messages until ctx ends or the
// connection is lost. It calls onConnected once consuming.
func (c *consumer) natsSession(ctx context.Context, onConnected func()) error {
	cfg := c.t.Config
	lost := make(chan error, 1)
	nc, err := nats.Connect(cfg.URL, nats.Name(c.p.Name+" trigger "+c.t.ID), nats.NoReconnect(),
		nats.Timeout(5*time.Second), nats.SetCustomDialer(c.p.Dialer),
		nats.ClosedHandler(func(nc *nats.Conn) {
			err := nc.LastError()
			if err == nil {
				err = errors.New("connection closed")
			}
			select {
			case lost <- fmt.Errorf("connection to %s lost: %w", Redact(cfg.URL), err):
			default:
			}
		}))
	if err != nil {
		if natsAnswered(err) {
			return fmt.Errorf("error connecting to %s: %w", Redact(cfg.URL), err)
		}
		return &unreachable{url: Redact(cfg.URL), err: err}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("error opening JetStream: %w", err)
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream := cfg.Stream
	if stream == "" {
		if stream, err = js.StreamNameBySubject(octx, cfg.Subject); err != nil {
			return fmt.Errorf("error finding the JetStream stream of subject %s (create one that captures it, or set stream): %w",
				cfg.Subject, err)
		}
	}
	deliver := jetstream.DeliverAllPolicy
	if cfg.Deliver == "new" {
		deliver = jetstream.DeliverNewPolicy
	}
	durable := cfg.DurableName(c.t.ID)
	cons, err := js.CreateOrUpdateConsumer(octx, stream, jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "stitchd broker trigger " + c.t.ID,
		FilterSubject: cfg.Subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       time.Duration(cfg.AckWaitSeconds) * time.Second,
		DeliverPolicy: deliver,
		MaxAckPending: 1024,
	})
	if err != nil {
		return fmt.Errorf("error creating the durable consumer %s on stream %s: %w", durable, stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(2 * c.p.Workers))
	if err != nil {
		return fmt.Errorf("error consuming %s: %w", durable, err)
	}
	onConnected()

	msgs := make(chan jetstream.Msg)
	ended := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			m, err := it.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrNoHeartbeat) {
					continue // the iterator pulls again
				}
				ended <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				_ = m.Nak() // not handled: at once to another consumer
				ended <- nil
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range c.p.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range msgs {
				c.handle(ctx, natsDelivery(c.t, stream, m))
			}
		}()
	}
	var end error
	select {
	case <-ctx.Done():
	case end = <-lost:
	case end = <-ended:
		if end == nil || errors.Is(end, jetstream.ErrMsgIteratorClosed) {
			end = fmt.Errorf("consuming %s ended: %v", durable, end)
		}
	}
	it.Stop()
	wg.Wait()
	return end
}

// natsAnswered reports whether a failed connect's error is a NATS
// server's answer (it refused the credentials), not a failure to reach one.
func natsAnswered(err error) bool {
	for _, e := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired,
		nats.ErrPermissionViolation, nats.ErrNkeysNotSupported} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func natsDelivery(t Trigger, stream string, m jetstream.Msg) delivery {
	msg := Message{Trigger: &t, Body: m.Data(), Subject: m.Subject(), Headers: map[string]string{}}
	for k, v := range m.Headers() {
		if len(v) > 0 {
			msg.Headers[k] = v[0]
		}
	}
	if id := m.Headers().Get(jetstream.MsgIDHeader); id != "" {
		msg.ID, msg.IDFrom = headerID(id), IDFromHeader
	}
	if meta, err := m.Metadata(); err == nil {
		msg.Redelivered = meta.NumDelivered > 1
		if msg.ID == "" {
			msg.ID, msg.IDFrom = "seq:"+stream+":"+strconv.FormatUint(meta.Sequence.Stream, 10), IDFromSequence
		}
	}
	if msg.ID == "" { // not a JetStream message: cannot happen on a pull consumer
		msg.ID, msg.IDFrom = "sha256:"+messageHash(msg.Subject, msg.Headers, msg.Body), IDFromHash
	}
	return delivery{msg: msg,
		ack:   m.Ack,
		retry: m.NakWithDelay,
		drop:  func() error { return m.TermWithReason("stitchd: refused for good") },
	}
}
