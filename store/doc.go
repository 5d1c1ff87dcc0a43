// Package store is stitchd's persistence over PostgreSQL: the only package
// that imports gorm and lib/pq. It implements engine.Store (every node
// transition a compare-and-set UPDATE, counters decremented with UPDATE …
// RETURNING, events and outbox rows in the same transaction), the flow,
// version, run and event queries the web layer needs, goose migrations from
// the embedded migrations package, and a LISTEN/NOTIFY listener.
//
// The control-plane tables (flows, flow_versions, boards, sections,
// entities, triggers and the other trigger kinds, schedules, users,
// api_tokens) have gorm models (flowRow, boardRow, User, …) used for their
// plain create, read, update and delete. SQL stays where a query is
// relational (aggregates, lateral joins, jsonb, upserts with conditions,
// bulk statements) or must judge time by the database's clock. The
// engine's transactions (InTx) run on one pgx connection, pipelined.
//
// Database errors are mapped onto engine sentinels in one place,
// interpretError.
package store
