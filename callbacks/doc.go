// Package callbacks is the worker protocol, both directions: callback
// tokens (HMAC-SHA256 over run, node key, attempt and expiry, with a key id
// for rotation), Standard Webhooks signatures on outbound dispatches, the
// outbox Dispatcher that delivers dispatch rows with retries, and the logic
// of the callback endpoint (verify the token before touching the database,
// decode the body, hand it to the engine).
package callbacks
