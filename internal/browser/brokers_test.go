package browser_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/broker/brokertest"
)

// TestUIBrokerTriggers: on the Triggers page a NATS trigger without a
// subject is refused with the server's message under the field and not
// stored; with one it is created, shown connected, and a message
// published starts a run. A RabbitMQ trigger on a queue that does not
// exist is shown not connected, with the broker's error.
func TestUIBrokerTriggers(t *testing.T) {
	s := newStack(t)
	stream := brokertest.NewStream(t)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Orders", "graph": map[string]any{
		"nodes": []map[string]any{{"id": "t", "type": "Transform", "position": map[string]any{"x": 0, "y": 0},
			"data": map[string]any{"expression": `{"n": input.n}`}}},
		"edges": []map[string]any{},
	}}, &flow)

	s.run("open", chromedp.Navigate(s.url+"/flows/"+flow.ID+"/triggers"), tokenSignIn(token))
	s.waitJS("triggers page", `!!document.querySelector(".triggers-page .empty")`)
	s.run("new broker trigger", chromedp.Click(`[data-action="new-broker"]`, chromedp.ByQuery), chromedp.WaitVisible("#broker-url", chromedp.ByQuery),
		setValue("#broker-url", brokertest.NATSURL()), chromedp.Click(`[data-action="save-broker"]`, chromedp.ByQuery))
	s.waitJS("subject refused", `!!document.querySelector('[data-field-error="subject"]')`)
	require.Contains(t, s.text(`[data-field-error="subject"]`), "subject is required")
	require.Equal(t, "true", s.attr("#broker-subject", "aria-invalid"))
	var list struct{ Triggers []map[string]any }
	s.api("GET", "/flows/"+flow.ID+"/triggers", nil, &list)
	require.Empty(t, list.Triggers, "a refused trigger is not stored")

	s.run("subject", setValue("#broker-subject", stream.Subject+".orders"), chromedp.Click(`[data-action="save-broker"]`, chromedp.ByQuery))
	card := `li.trigger.broker[data-kind="nats"]`
	s.waitJS("connected", fmt.Sprintf(`document.querySelector(%q)?.dataset.connected === "true"`, card))
	require.Equal(t, "connected", s.text(card+" [data-state]"))
	require.Equal(t, stream.Subject+".orders", s.text(card+" [data-source]"))
	require.Contains(t, s.text(card+" [data-consumers]"), "1 of 1 connected")
	s.shot("b01-nats-trigger-connected")

	stream.Publish(t, "orders", "order-1", []byte(`{"n": 1}`))
	var runs struct{ Runs []map[string]any }
	require.Eventually(t, func() bool {
		s.api("GET", "/runs?flow_id="+flow.ID, nil, &runs)
		return len(runs.Runs) == 1
	}, 20*time.Second, 50*time.Millisecond, "the message's run")

	// A RabbitMQ queue that does not exist: not connected, and why.
	s.run("new amqp trigger", chromedp.Click(`[data-action="new-broker"]`, chromedp.ByQuery), chromedp.WaitVisible("#broker-kind", chromedp.ByQuery),
		setValue("#broker-kind", "amqp"))
	s.waitJS("amqp fields", `!!document.querySelector("#broker-queue")`)
	s.run("queue", setValue("#broker-url", brokertest.AMQPURL()), setValue("#broker-queue", "stitchd-no-such-queue"),
		chromedp.Click(`[data-action="save-broker"]`, chromedp.ByQuery))
	amqpCard := `li.trigger.broker[data-kind="amqp"]`
	s.waitJS("error shown", fmt.Sprintf(`document.querySelector(%q)?.querySelector("[data-last-error]")?.innerText.includes("stitchd-no-such-queue")`, amqpCard))
	require.Equal(t, "not connected", s.text(amqpCard+" [data-state]"))
	require.Contains(t, s.text(amqpCard+" [data-url]"), "guest:xxxxx@", "the password is not shown")
	s.shot("b02-amqp-trigger-error")

	s.run("disable", chromedp.Click(amqpCard+` [data-action="disable"]`, chromedp.ByQuery))
	s.waitJS("disabled", fmt.Sprintf(`document.querySelector(%q)?.querySelector("[data-state]")?.innerText === "disabled"`, amqpCard))
	s.run("delete", chromedp.Click(amqpCard+` [data-action="delete"]`, chromedp.ByQuery))
	s.waitJS("deleted", fmt.Sprintf(`!document.querySelector(%q) && document.body.innerText.includes("Broker trigger deleted")`, amqpCard))
	s.api("GET", "/flows/"+flow.ID+"/triggers", nil, &list)
	require.Len(t, list.Triggers, 1)
}
