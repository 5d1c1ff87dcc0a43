// Package brokertest is the test harness of the broker triggers: the real
// NATS JetStream (127.0.0.1:4222, or STITCHD_TEST_NATS_URL) and RabbitMQ
// (127.0.0.1:5672 as guest, or STITCHD_TEST_AMQP_URL) servers that make
// deps-test installs and starts, a stream or queue of a unique name per
// test (deleted when it ends), publishing, and a loopback proxy a test can
// cut to make a connection fail. A server that is not reachable fails the
// test: it is never skipped.
package brokertest
