// Package jsbox runs a Code step's JavaScript in a sandbox: QuickJS,
// compiled to Go (modernc.org/quickjs), with no modules, no timers, no
// network and no file system — the language and console.log only — and
// hard bounds: QuickJS's own allocator refuses memory past the limit
// (--code-memory), and an interrupt stops a script past its time. Each run
// has a VM of its own, closed afterwards.
package jsbox
