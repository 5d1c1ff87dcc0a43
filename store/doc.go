// Package store is stitchd's persistence over PostgreSQL: the only package
// that imports gorm and lib/pq. It implements engine.Store (every node
// transition a compare-and-set UPDATE, counters decremented with UPDATE …
// RETURNING, events and outbox rows in the same transaction), the flow,
// version, run and event queries the web layer needs, goose migrations from
// the embedded migrations package, and a LISTEN/NOTIFY listener.
//
// Database errors are mapped onto engine sentinels in one place,
// interpretError.
package store
