package broker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// amqpSession connects to the trigger's RabbitMQ server and handles the
// deliveries of its queue (at most Prefetch unacknowledged) until ctx
// ends or the connection or channel is lost. It calls onConnected once
// consuming.
func (c *consumer) amqpSession(ctx context.Context, onConnected func()) error {
	cfg := c.t.Config
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(c.p.Name + " trigger " + c.t.ID)
	conn, err := amqp.DialConfig(cfg.URL, amqp.Config{Heartbeat: 10 * time.Second, Locale: "en_US",
		Properties: props, Dial: c.amqpDial})
	if err != nil {
		if amqpAnswered(err) {
			return fmt.Errorf("error connecting to %s: %w", Redact(cfg.URL), err)
		}
		return &unreachable{url: Redact(cfg.URL), err: err}
	}
	defer conn.Close()
	connClosed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("error opening a channel on %s: %w", Redact(cfg.URL), err)
	}
	chClosed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := ch.Qos(cfg.Prefetch, 0, false); err != nil {
		return fmt.Errorf("error setting the prefetch count: %w", err)
	}
	if _, err := ch.QueueDeclarePassive(cfg.Queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("queue %s cannot be consumed (stitchd declares no queue; create it): %w", cfg.Queue, err)
	}
	tag := "stitchd-" + c.t.ID + "-" + randomTag()
	deliveries, err := ch.Consume(cfg.Queue, tag, false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("error consuming queue %s: %w", cfg.Queue, err)
	}
	onConnected()

	var wg sync.WaitGroup
	for range c.p.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range deliveries {
				c.handle(ctx, amqpDelivery(ctx, c.t, d))
			}
		}()
	}
	var end error
	select {
	case <-ctx.Done():
		// No more deliveries; the ones received are handled, then the
		// connection closes.
		_ = ch.Cancel(tag, false)
	case e := <-connClosed:
		end = fmt.Errorf("connection to %s lost: %w", Redact(cfg.URL), amqpErr(e))
	case e := <-chClosed:
		end = fmt.Errorf("channel on %s closed: %w", Redact(cfg.URL), amqpErr(e))
	}
	if end != nil {
		_ = conn.Close() // ends the deliveries
	}
	wg.Wait()
	return end
}

// amqpDial is amqp.DefaultDial through the service's dialler (the address
// guard): the handshake must end within the timeout too (amqp clears the
// deadline once the connection is open).
func (c *consumer) amqpDial(network, addr string) (net.Conn, error) {
	conn, err := c.p.Dialer.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("error setting the handshake deadline: %w", err)
	}
	return conn, nil
}

// amqpAnswered reports whether a failed dial's error is a RabbitMQ
// server's answer (credentials, vhost, a close it sent), not a failure to
// reach one.
func amqpAnswered(err error) bool {
	if errors.Is(err, amqp.ErrCredentials) || errors.Is(err, amqp.ErrSASL) || errors.Is(err, amqp.ErrVhost) {
		return true
	}
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Server
}

func amqpErr(e *amqp.Error) error {
	if e == nil {
		return errors.New("closed")
	}
	return e
}

func randomTag() string { return rand.Text()[:8] }

func amqpDelivery(ctx context.Context, t Trigger, d amqp.Delivery) delivery {
	msg := Message{Trigger: &t, Body: d.Body, Subject: d.RoutingKey, Headers: map[string]string{},
		Redelivered: d.Redelivered}
	for k, v := range d.Headers {
		if s, ok := v.(string); ok {
			msg.Headers[k] = s
		} else {
			msg.Headers[k] = fmt.Sprint(v)
		}
	}
	if d.MessageId != "" {
		msg.ID, msg.IDFrom = headerID(d.MessageId), IDFromHeader
	} else {
		msg.ID, msg.IDFrom = "sha256:"+messageHash(d.RoutingKey, msg.Headers, d.Body), IDFromHash
	}
	return delivery{msg: msg,
		ack: func() error { return d.Ack(false) },
		retry: func(delay time.Duration) error {
			// RabbitMQ requeues at once: wait first, so that a message
			// failing for a while (the database is down) is not spun.
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			return d.Nack(false, true)
		},
		drop: func() error { return d.Reject(false) },
	}
}

// messageHash is the hex SHA-256 of a message's routing key, headers and
// body: its id when it has no message_id.
func messageHash(routingKey string, headers map[string]string, body []byte) string {
	h := sha256.New()
	hb, _ := json.Marshal(headers) // map keys sorted
	for _, part := range [][]byte{[]byte(routingKey), hb, body} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}
