package broker

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
)

// Trigger kinds.
const (
	KindNATS = "nats"
	KindAMQP = "amqp"
)

// What a message becomes (Config.As).
const (
	AsRun   = "run"
	AsEvent = "event"
)

// Limits and defaults of a config.
const (
	DefaultAckWaitSeconds = 30
	MaxAckWaitSeconds     = 3600
	DefaultPrefetch       = 32
	MaxPrefetch           = 1000
	maxName               = 200
	maxTTLSeconds         = 30 * 24 * 3600
)

// Config is a broker trigger's settings, stored as JSON and answered by
// the API (with the URL's password hidden).
type Config struct {
	// URL is the broker's: nats://host:4222, amqp://user:pass@host:5672/vhost.
	URL string `json:"url"`

	// Subject (nats) is the subject consumed, wildcards allowed; Stream the
	// JetStream stream holding it (empty: the stream whose subjects
	// capture it); Durable the durable consumer's name (empty:
	// stitchd-<trigger id>), shared by every stitchd process; Deliver
	// "all" (the default: what the stream holds, then new messages) or
	// "new", when the consumer is first created; AckWaitSeconds how long a
	// message may be unacknowledged before JetStream redelivers it.
	Subject        string `json:"subject,omitempty"`
	Stream         string `json:"stream,omitempty"`
	Durable        string `json:"durable,omitempty"`
	Deliver        string `json:"deliver,omitempty"`
	AckWaitSeconds int    `json:"ack_wait_seconds,omitempty"`

	// Queue (amqp) is the queue consumed; it must exist (stitchd declares
	// nothing). Prefetch bounds its unacknowledged deliveries per process.
	Queue    string `json:"queue,omitempty"`
	Prefetch int    `json:"prefetch,omitempty"`

	// As is "run" (the default: each message starts a run, its input the
	// body) or "event": each message is posted as the event Name with the
	// key Key (an expression over input, the body) or the value of the
	// header KeyHeader, and the body as payload, kept TTLSeconds (default
	// 24 h) when no run waits for it.
	As         string `json:"as,omitempty"`
	Name       string `json:"name,omitempty"`
	Key        string `json:"key,omitempty"`
	KeyHeader  string `json:"key_header,omitempty"`
	TTLSeconds int    `json:"ttl_seconds,omitempty"`
}

// Patch is a change to a Config: the fields set replace the config's.
type Patch struct {
	URL            *string `json:"url"`
	Subject        *string `json:"subject"`
	Stream         *string `json:"stream"`
	Durable        *string `json:"durable"`
	Deliver        *string `json:"deliver"`
	AckWaitSeconds *int    `json:"ack_wait_seconds"`
	Queue          *string `json:"queue"`
	Prefetch       *int    `json:"prefetch"`
	As             *string `json:"as"`
	EventName      *string `json:"-"`
	Key            *string `json:"key"`
	KeyHeader      *string `json:"key_header"`
	TTLSeconds     *int    `json:"ttl_seconds"`
}

// Apply writes the fields p sets into c. A URL equal to c's redacted one
// (an answer sent back) keeps c's, password included.
func (p Patch) Apply(c *Config) {
	if p.URL != nil && *p.URL != Redact(c.URL) {
		c.URL = strings.TrimSpace(*p.URL)
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	set(&c.Subject, p.Subject)
	set(&c.Stream, p.Stream)
	set(&c.Durable, p.Durable)
	set(&c.Deliver, p.Deliver)
	set(&c.Queue, p.Queue)
	set(&c.As, p.As)
	set(&c.Name, p.EventName)
	set(&c.Key, p.Key)
	set(&c.KeyHeader, p.KeyHeader)
	if p.AckWaitSeconds != nil {
		c.AckWaitSeconds = *p.AckWaitSeconds
	}
	if p.Prefetch != nil {
		c.Prefetch = *p.Prefetch
	}
	if p.TTLSeconds != nil {
		c.TTLSeconds = *p.TTLSeconds
	}
}

// Problem is one thing wrong with a config: the JSON path of the field and
// what is wrong.
type Problem struct {
	Path    string
	Message string
}

// Validate checks c for a trigger of kind and fills in its defaults
// (Deliver, AckWaitSeconds, Prefetch, As); it returns every problem, none
// when c is good.
func (c *Config) Validate(kind string) []Problem {
	var ps []Problem
	bad := func(path, format string, args ...any) {
		ps = append(ps, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if c.As == "" {
		c.As = AsRun
	}
	switch kind {
	case KindNATS:
		checkURL(c.URL, []string{"nats", "tls", "ws", "wss"}, "nats://127.0.0.1:4222", bad)
		switch {
		case c.Subject == "":
			bad("subject", `subject is required (the JetStream subject to consume, e.g. "orders.created" or "orders.>")`)
		case !validSubject(c.Subject):
			bad("subject", "subject %q is not a NATS subject (dot-separated tokens, no spaces, * or > as whole tokens, > last)", c.Subject)
		}
		if c.Stream != "" && !validName(c.Stream) {
			bad("stream", "stream %q is not a JetStream stream name (no spaces, dots, * or >)", c.Stream)
		}
		if c.Durable != "" && !validName(c.Durable) {
			bad("durable", "durable %q is not a JetStream consumer name (no spaces, dots, * or >)", c.Durable)
		}
		if c.Deliver == "" {
			c.Deliver = "all"
		}
		if c.Deliver != "all" && c.Deliver != "new" {
			bad("deliver", `deliver must be "all" (what the stream holds, then new messages) or "new"`)
		}
		if c.AckWaitSeconds == 0 {
			c.AckWaitSeconds = DefaultAckWaitSeconds
		}
		if c.AckWaitSeconds < 1 || c.AckWaitSeconds > MaxAckWaitSeconds {
			bad("ack_wait_seconds", "ack_wait_seconds must be from 1 to %d", MaxAckWaitSeconds)
		}
		if c.Queue != "" {
			bad("queue", "queue is for amqp triggers; a nats trigger reads subject")
		}
		if c.Prefetch != 0 {
			bad("prefetch", "prefetch is for amqp triggers")
		}
	case KindAMQP:
		checkURL(c.URL, []string{"amqp", "amqps"}, "amqp://guest:guest@127.0.0.1:5672/", bad)
		if c.Queue == "" {
			bad("queue", "queue is required (the name of an existing RabbitMQ queue)")
		} else if len(c.Queue) > 255 {
			bad("queue", "queue must be at most 255 bytes")
		}
		if c.Prefetch == 0 {
			c.Prefetch = DefaultPrefetch
		}
		if c.Prefetch < 1 || c.Prefetch > MaxPrefetch {
			bad("prefetch", "prefetch must be from 1 to %d", MaxPrefetch)
		}
		for _, f := range []struct{ path, v string }{{"subject", c.Subject}, {"stream", c.Stream}, {"durable", c.Durable},
			{"deliver", c.Deliver}} {
			if f.v != "" {
				bad(f.path, "%s is for nats triggers; an amqp trigger reads queue", f.path)
			}
		}
		if c.AckWaitSeconds != 0 {
			bad("ack_wait_seconds", "ack_wait_seconds is for nats triggers")
		}
	default:
		bad("kind", `kind must be "nats" or "amqp"`)
	}
	switch c.As {
	case AsRun:
		for _, f := range []struct{ path, v string }{{"name", c.Name}, {"key", c.Key}, {"key_header", c.KeyHeader}} {
			if f.v != "" {
				bad(f.path, `%s is for "as": "event"; a message starts a run with its body as input`, f.path)
			}
		}
		if c.TTLSeconds != 0 {
			bad("ttl_seconds", `ttl_seconds is for "as": "event"`)
		}
	case AsEvent:
		if strings.TrimSpace(c.Name) == "" || len(c.Name) > maxName {
			bad("name", `name is required with "as": "event": the event's name, 1 to 200 characters (e.g. payment.received)`)
		}
		switch {
		case c.Key == "" && c.KeyHeader == "":
			bad("key", `key is required with "as": "event": an expression over input, the message body (e.g. input.order_id), or set key_header`)
		case c.Key != "" && c.KeyHeader != "":
			bad("key_header", "set key or key_header, not both")
		case c.Key != "":
			if _, err := engine.CompileValue(c.Key); err != nil {
				bad("key", "key: %s", engine.ExprMessage(err))
			}
		}
		if c.TTLSeconds < 0 || c.TTLSeconds > maxTTLSeconds {
			bad("ttl_seconds", "ttl_seconds must be from 0 (the default, 24 h) to %d (30 days)", maxTTLSeconds)
		}
	default:
		bad("as", `as must be "run" (each message starts a run) or "event" (each message is posted as an event)`)
	}
	return ps
}

func checkURL(raw string, schemes []string, example string, bad func(path, format string, args ...any)) {
	if raw == "" {
		bad("url", "url is required (e.g. %s)", example)
		return
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		bad("url", "url %q is not a URL with a host (e.g. %s)", Redact(raw), example)
		return
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return
		}
	}
	bad("url", "url scheme must be one of %s (e.g. %s)", strings.Join(schemes, ", "), example)
}

// validSubject reports whether s is a NATS subject to subscribe to.
func validSubject(s string) bool {
	if strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return false
		case t == ">" && i != len(toks)-1:
			return false
		case t != "*" && t != ">" && strings.ContainsAny(t, "*>"):
			return false
		}
	}
	return true
}

// validName reports whether s is a JetStream stream or consumer name.
func validName(s string) bool {
	return len(s) <= 255 && !strings.ContainsAny(s, " \t\r\n.*>/\\")
}

// Redact returns the URL with its password hidden, as answers show it. A
// user without a password is hidden too: NATS reads nats://TOKEN@host as
// a token, which answers, last_error and the log showed as it was.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.User != nil {
		if _, ok := u.User.Password(); !ok && u.User.Username() != "" {
			u.User = url.User("xxxxx")
		}
	}
	return u.Redacted()
}

// DurableName is the JetStream durable consumer a nats trigger uses.
func (c *Config) DurableName(triggerID string) string {
	if c.Durable != "" {
		return c.Durable
	}
	return "stitchd-" + triggerID
}

// EvalFunc evaluates a value expression (engine.Engine.EvalValue: compiled
// once, within the server's expression limits).
type EvalFunc func(src string, env engine.ValueEnv) (any, error)

// EventKey is the event key of a message for a trigger posting events: the
// key expression's value over the body (a string as is, another value as
// JSON), evaluated with eval, or the key header's value.
func (c *Config) EventKey(m Message, eval EvalFunc) (string, error) {
	if c.KeyHeader != "" {
		k := m.Header(c.KeyHeader)
		if k == "" || len(k) > handlers.MaxEventKeyLen {
			return "", fmt.Errorf("the message's header %s (the event key) must be 1 to %d bytes", c.KeyHeader, handlers.MaxEventKeyLen)
		}
		return k, nil
	}
	var in any
	if err := json.Unmarshal(m.Body, &in); err != nil {
		return "", fmt.Errorf("error decoding the message body: %w", err)
	}
	out, err := eval(c.Key, engine.ValueEnv{Input: in})
	if err != nil {
		return "", fmt.Errorf("error evaluating the key expression %q: %s", c.Key, engine.ExprMessage(err))
	}
	k, ok := handlers.EventKey(out)
	if !ok {
		return "", fmt.Errorf("the key expression %q gave %T, not a string or a number", c.Key, out)
	}
	if k == "" || len(k) > handlers.MaxEventKeyLen {
		return "", fmt.Errorf("the key expression %q gave a key of %d bytes (1 to %d)", c.Key, len(k), handlers.MaxEventKeyLen)
	}
	return k, nil
}
