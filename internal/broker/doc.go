// Package broker consumes message brokers for stitchd's broker triggers: a
// trigger of kind nats reads a NATS JetStream subject through a durable
// consumer, one of kind amqp a RabbitMQ queue. Each message is handed to
// a Handler (internal/brokerconsume starts a run, or posts an event) and
// acknowledged only after the handler returned, that is after the run's
// start committed; a message the handler refuses for good (a body that is
// not JSON) is dropped, one it could not handle now is redelivered.
//
// Every message has an id that survives redelivery (Message.ID): the
// Nats-Msg-Id header or the AMQP message_id property, else the JetStream
// stream sequence or a SHA-256 of the AMQP message. The handler makes it
// the run's idempotency key (Message.DedupeKey), so a message delivered
// twice — a lost ack, a process killed between the start and the ack, two
// processes sharing a consumer — starts one run.
//
// Service watches the list of triggers (polling its List function),
// starts a consumer per trigger, restarts one whose config changed and
// stops one that went away. A consumer whose connection fails or is lost
// retries with exponential backoff and jitter, and reports its state
// (connected, last error) through the Report function.
package broker
