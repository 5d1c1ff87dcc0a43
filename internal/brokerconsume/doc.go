// Package brokerconsume consumes stitchd's broker triggers (nats, amqp):
// its Service runs an internal/broker.Service over the enabled triggers
// of live flows, starts a run for each message (or posts it as an event,
// for a trigger with as: event) and records each consumer's state under
// this process's instance id, for the triggers' pages. internal/broker
// knows the brokers; this package knows the store and the engine.
package brokerconsume
