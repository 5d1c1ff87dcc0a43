package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

func TestValidateDefaults(t *testing.T) {
	t.Parallel()
	n := Config{URL: "nats://127.0.0.1:4222", Subject: "orders.>"}
	require.Empty(t, n.Validate(KindNATS))
	require.Equal(t, Config{URL: "nats://127.0.0.1:4222", Subject: "orders.>", Deliver: "all",
		AckWaitSeconds: DefaultAckWaitSeconds, As: AsRun}, n)
	require.Equal(t, "stitchd-abc", n.DurableName("abc"))

	a := Config{URL: "amqp://guest:guest@127.0.0.1:5672/", Queue: "orders", As: AsEvent, Name: "order.paid", KeyHeader: "Order"}
	require.Empty(t, a.Validate(KindAMQP))
	require.Equal(t, DefaultPrefetch, a.Prefetch)
}

func TestValidateSubjects(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{"a": true, "a.b.c": true, "a.*.c": true, "a.>": true, ">": true,
		"a..b": false, "a.>.c": false, "a.b*": false, "a b": false, ".a": false, "a.": false} {
		c := Config{URL: "nats://h", Subject: s}
		require.Equal(t, ok, len(c.Validate(KindNATS)) == 0, "subject %q", s)
	}
}

func TestRedactAndPatch(t *testing.T) {
	t.Parallel()
	c := Config{URL: "amqp://guest:secret@h:5672/"}
	require.Equal(t, "amqp://guest:xxxxx@h:5672/", Redact(c.URL))
	// The redacted URL sent back keeps the password; another replaces it.
	red := Redact(c.URL)
	Patch{URL: &red}.Apply(&c)
	require.Equal(t, "amqp://guest:secret@h:5672/", c.URL)
	other := "amqp://u:p@h2/"
	Patch{URL: &other}.Apply(&c)
	require.Equal(t, other, c.URL)
}

// TestRedactToken: a NATS token (a user without a password) is hidden as
// a password is, and the hidden URL sent back keeps it.
func TestRedactToken(t *testing.T) {
	t.Parallel()
	c := Config{URL: "nats://s3cr3t-token@h:4222"}
	require.Equal(t, "nats://xxxxx@h:4222", Redact(c.URL))
	red := Redact(c.URL)
	Patch{URL: &red}.Apply(&c)
	require.Equal(t, "nats://s3cr3t-token@h:4222", c.URL)
	require.Equal(t, "nats://h:4222", Redact("nats://h:4222"))
	require.Equal(t, "nats://u:xxxxx@h:4222", Redact("nats://u:p@h:4222"))
}

// eval evaluates an expression as the engine does (without its cache).
func eval(src string, env engine.ValueEnv) (any, error) {
	v, err := engine.CompileValue(src)
	if err != nil {
		return nil, err
	}
	return v.Eval(env)
}

func TestEventKey(t *testing.T) {
	t.Parallel()
	c := Config{Key: "input.order.id"}
	m := Message{Body: []byte(`{"order": {"id": 42}}`), Headers: map[string]string{"Order-Id": "7"}}
	k, err := c.EventKey(m, eval)
	require.NoError(t, err)
	require.Equal(t, "42", k)
	_, err = c.EventKey(Message{Body: []byte(`{"order": {}}`)}, eval)
	require.ErrorContains(t, err, "not a string or a number")
	// A key expression runs within the expression limits.
	bomb := Config{Key: `string(len(repeat(repeat("a", 999999), 999999)))`}
	_, err = bomb.EventKey(m, eval)
	require.ErrorContains(t, err, "expression_limit")
	h := Config{KeyHeader: "order-id"}
	k, err = h.EventKey(m, eval)
	require.NoError(t, err)
	require.Equal(t, "7", k, "header names match case-insensitively")
}

// TestLastErrorTextOfInternal: an error marked Internal shows its shown
// words however it is wrapped; any other error its own.
func TestLastErrorTextOfInternal(t *testing.T) {
	t.Parallel()
	in := Internal(errors.New("ERROR: syntax (SQLSTATE 42601): SELECT …"), "internal error")
	require.Equal(t, "internal error", LastErrorText(fmt.Errorf("outer: %w", in)))
	require.Contains(t, in.Error(), "SELECT", "the log's words")
	require.Equal(t, "plain", LastErrorText(errors.New("plain")))
}

// TestHeaderIDPostgresCanHold: a header's id is kept as it is only when
// Postgres can hold it as text in an index: at most MaxMessageID bytes of
// UTF-8 without a control character (an AMQP message_id is any bytes).
func TestHeaderIDPostgresCanHold(t *testing.T) {
	t.Parallel()
	require.Equal(t, "order-7", headerID("order-7"))
	require.Equal(t, "café-7", headerID("café-7"))
	for _, bad := range []string{"id-\xff\xfe", "id\x00x", "id\x01x", strings.Repeat("x", MaxMessageID+1)} {
		got := headerID(bad)
		require.True(t, strings.HasPrefix(got, "sha256:") && len(got) == 71, "%q: %q", bad, got)
		require.Equal(t, got, headerID(bad), "the same id each time")
	}
}
