package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Where a message's id came from (Message.IDFrom).
const (
	IDFromHeader   = "header"   // Nats-Msg-Id, or the AMQP message_id property
	IDFromSequence = "sequence" // the JetStream stream sequence
	IDFromHash     = "hash"     // SHA-256 of the AMQP message
)

// Message is one message of a broker trigger.
type Message struct {
	// Trigger is the trigger that consumed it.
	Trigger *Trigger
	// ID identifies the message across redeliveries: the Nats-Msg-Id
	// header or AMQP message_id property when set (its sha256 past
	// MaxMessageID bytes); else the JetStream
	// stream sequence ("seq:<n>"), or for AMQP "sha256:<hex>" of the
	// routing key, headers and body (two identical messages without an id
	// are one).
	ID     string
	IDFrom string
	Body   []byte
	// Headers are the message's headers (the first value of each).
	Headers map[string]string
	// Subject is the NATS subject, or the AMQP routing key.
	Subject string
	// Redelivered is set when the broker delivered it before.
	Redelivered bool
}

// MaxMessageID bounds a message id taken from a header: a dedupe key
// (kind, trigger id and id) then stays within an event id's 255 bytes and
// far within what a Postgres index entry may hold. A Nats-Msg-Id header
// can be as long as a message; one past the index's 2,704 bytes failed
// every start of its run, and the message came back every second for ever.
const MaxMessageID = 200

// headerID is a message id read from a header (Nats-Msg-Id, AMQP
// message_id): as it is when at most MaxMessageID bytes of UTF-8 without
// a control character, else "sha256:<hex>" of it — the same header gives
// the same id. (An id Postgres cannot hold as text, a NUL or a byte that
// is no UTF-8, failed every start as a long one did.)
func headerID(id string) string {
	if len(id) <= MaxMessageID && utf8.ValidString(id) && !strings.ContainsFunc(id, unicode.IsControl) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DedupeKey is the message's idempotency key: <kind>:<trigger id>:<id>. A
// run started with it is started once, however often the message comes.
func (m Message) DedupeKey() string {
	return m.Trigger.Kind + ":" + m.Trigger.ID + ":" + m.ID
}

// Header returns the value of the header name, matched exactly, else
// case-insensitively ("" when absent).
func (m Message) Header(name string) string {
	if v, ok := m.Headers[name]; ok {
		return v
	}
	for k, v := range m.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// permanent marks an error that redelivery cannot cure.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one that redelivering the message cannot cure (a
// body that is not JSON, a key expression that fails on it): the message
// is dropped — terminated (NATS) or rejected without requeue (AMQP, to a
// dead-letter exchange if the queue has one) — and the error reported on
// the trigger. Any other error redelivers the message.
func Permanent(err error) error { return permanent{err} }

// Internal marks err as the handler's own failure (its database's): the
// trigger's last_error, which editors read, says shown; the log keeps
// err's words, which may quote a statement.
func Internal(err error, shown string) error { return internal{err, shown} }

type internal struct {
	err   error
	shown string
}

func (i internal) Error() string { return i.err.Error() }
func (i internal) Unwrap() error { return i.err }

// LastErrorText is err as a trigger's last_error says it.
func LastErrorText(err error) string {
	var i internal
	if errors.As(err, &i) {
		return i.shown
	}
	return err.Error()
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
