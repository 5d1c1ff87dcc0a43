# stitchd — `make run` starts it, `make test` runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin/stitchd
GOLANGCI_VERSION := v2.15.0
# An execution count, not a duration: a duration can end a fuzz run with a
# spurious "context deadline exceeded" on a loaded machine.
FUZZTIME ?= 30000x
# The state-machine fuzz runs each input against Postgres: fewer executions.
FUZZTIME_DB ?= 2000x
export STITCHD_AUTH_TOKEN ?= dev-token

.PHONY: all build ui ui-fresh ui-check sdk-node sdk-check run test test-go fuzz-short soak volume ha-soak bench bench-e2e lint deps-test deps-ha tools

all: build

# VERSION: the commit (and -dirty with local changes), for stitchd version;
# "dev" outside a git checkout.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
build: ui-fresh
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/stitchd

## ui: rebuild the web UI (web/ui → web/dist, embedded by `go build`).
ui: web/ui/node_modules/.package-lock.json
	cd web/ui && npm run build

# The go.mod makes node_modules a module of its own, which ./... leaves
# out: some npm packages ship Go sources (flatted does).
web/ui/node_modules/.package-lock.json: web/ui/package.json web/ui/package-lock.json
	cd web/ui && npm ci --no-audit --no-fund && printf 'module stitchd.invalid/node_modules\n' > node_modules/go.mod

## ui-check: type-check the web UI (tsc --noEmit, the check `npm run build`
## starts with), lint it (ESLint, no warning allowed), run its unit tests
## (Vitest) and check its contract types (src/api.gen.ts) are what
## openapi.yaml gives, when Node is installed; dependencies from npm ci
## when package-lock.json is newer than node_modules.
ui-check:
	@if command -v node >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory web/ui/node_modules/.package-lock.json && \
	  echo "tsc --noEmit, eslint, vitest, api.gen.ts against openapi.yaml (web/ui)" && cd web/ui && ./node_modules/.bin/tsc --noEmit && \
	  ./node_modules/.bin/eslint --max-warnings 0 src && ./node_modules/.bin/vitest run && \
	  tmp=$$(mktemp -d) && ./node_modules/.bin/openapi-typescript ../../openapi.yaml --empty-objects-unknown -o "$$tmp/api.gen.ts" >/dev/null && \
	  if ! cmp -s "$$tmp/api.gen.ts" src/api.gen.ts; then \
	    echo "web/ui/src/api.gen.ts is not what openapi.yaml gives: run npm run gen-api in web/ui"; rm -rf "$$tmp"; exit 1; \
	  fi; rm -rf "$$tmp"; \
	else \
	  echo "node not found: the web UI is not type-checked"; \
	fi

## sdk-node: compile the Node worker library (sdk/node/src → sdk/node/dist,
## committed: running it needs no build).
sdk-node: sdk/node/node_modules/.package-lock.json
	cd sdk/node && ./node_modules/.bin/tsc

sdk/node/node_modules/.package-lock.json: sdk/node/package.json sdk/node/package-lock.json
	cd sdk/node && npm ci --no-audit --no-fund

## sdk-check: sdk/node/dist is what sdk/node/src compiles to (tsc, pinned in
## package-lock.json, into a temporary directory, compared): the tests run
## the committed JavaScript, so a stale dist would test old code.
sdk-check: sdk/node/node_modules/.package-lock.json
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	echo "tsc (sdk/node), compared with sdk/node/dist"; \
	(cd sdk/node && ./node_modules/.bin/tsc --outDir "$$tmp") || exit 1; \
	if ! diff -r "$$tmp" sdk/node/dist >/dev/null; then \
	  echo "sdk/node/dist is not what sdk/node/src compiles to: run make sdk-node"; \
	  diff -r "$$tmp" sdk/node/dist | head -40; exit 1; \
	fi

## ui-fresh: rebuild web/dist only when its sources changed (a fresh clone
## has an up-to-date build committed, so it needs no Node).
ui-fresh:
	@if command -v node >/dev/null 2>&1; then \
	  node web/ui/scripts/source-hash.mjs --check 2>/dev/null || $(MAKE) --no-print-directory ui; \
	fi

## run: build, find or start Postgres, migrate, load the Lead qualification
## demo and serve on 127.0.0.1:8080, with the demo worker on 127.0.0.1:8090
## in the same process (Ctrl-C stops both).
run: build
	./$(BIN) serve --demo

## test: the linters (lint: gofmt, golangci-lint with go vet's checks), the web UI's
## type check, the Node worker library's compiled-output check, every test
## (race detector on; the Python and Node worker libraries' suites run from
## go test ./sdk/), plus short fuzz runs.
test: deps-test lint ui-check sdk-check test-go fuzz-short

test-go:
	@# -parallel 2: with internal/app and internal/browser side by side on
	@# two cores, four tests at a time each starved the volume and timing
	@# tests (three different load failures in 2 of 3 fresh-clone runs of
	@# 2026-11-29); two is slower, and each test gets its share.
	$(GO) test -race -count=1 -parallel 2 -timeout 45m ./...

fuzz-short:
	$(GO) test -run='^$$' -fuzz='^FuzzCompile$$' -fuzztime=$(FUZZTIME) ./compiler
	$(GO) test -run='^$$' -fuzz='^FuzzVerifyToken$$' -fuzztime=$(FUZZTIME) ./callbacks
	$(GO) test -run='^$$' -fuzz='^FuzzParseCallback$$' -fuzztime=$(FUZZTIME) ./callbacks
	$(GO) test -run='^$$' -fuzz='^FuzzMergeInputs$$' -fuzztime=$(FUZZTIME) ./engine
	$(GO) test -run='^$$' -fuzz='^FuzzCheck$$' -fuzztime=$(FUZZTIME) ./internal/jsonlimit
	$(GO) test -run='^$$' -fuzz='^FuzzStateMachine$$' -fuzztime=$(FUZZTIME_DB) ./internal/app

## soak: the chaos soak (docs/reliability.md): 500 runs of a 50-way fan-out on
## two stitchd processes, one SIGKILLed every 5–15 s, Postgres restarted once,
## a misbehaving worker; invariants checked from the database. The quick form
## (50 runs, three kills) is part of make test.
soak: deps-test
	$(GO) test -count=1 -v -timeout 60m -run '^TestChaosSoak$$' ./internal/chaos -chaos.runs=500 -chaos.kills=-1

## volume: internal/app's volume tests at full size — 20 trials of 1,000
## items called back from 64 goroutines, the collector firing once each
## time (make test runs 5).
volume: deps-test
	$(GO) test -race -count=1 -v -timeout 30m -run '^Test1000ItemsConcurrentCallbacks$$' ./internal/app -app.trials=20

## ha-soak: the failover soak (docs/reliability.md, Failover): the chaos
## soak's workload, 200 runs on three stitchd processes connected with a
## multi-host URL to a Postgres pair under Patroni (etcd, synchronous_mode),
## the primary's postmaster SIGKILLed three times mid-flight; invariants
## checked from the database, the stall without completions at most 30 s.
## The quick form (50 runs, one failover) is part of make test.
ha-soak: deps-ha
	$(GO) test -count=1 -v -timeout 60m -run '^TestHASoak$$' ./internal/chaos -chaos.runs=200 -ha.failovers=3

## deps-ha: what the failover soak needs: Debian's patroni and etcd-server,
## and the PostgreSQL server binaries Patroni runs (pg_ctl, pg_rewind, …).
deps-ha:
	@if ! ls /usr/lib/postgresql/*/bin/pg_rewind >/dev/null 2>&1; then \
	  echo "installing PostgreSQL server binaries"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) || \
	  (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql); \
	fi
	@if ! command -v patroni >/dev/null 2>&1 || ! command -v etcd >/dev/null 2>&1; then \
	  echo "installing patroni and etcd-server for the failover soak"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patroni etcd-server) || \
	  (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patroni etcd-server); \
	fi

## deps-test: what the suite needs beyond Go: Debian's Chromium for the
## browser tests, NATS (JetStream) and RabbitMQ servers for the broker-trigger
## tests (installed and started when not answering on 127.0.0.1:4222 and
## :5672; `make run` needs neither), and PostgreSQL server binaries, for
## the throwaway-cluster fallback when no server runs on 127.0.0.1:5432 and for
## the tests that stop and restart a cluster of their own (internal/chaos,
## the database outage tests), which never touch a shared server; and
## deps-ha, for the failover soak's quick form.
deps-test: deps-ha
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then \
	  echo "installing PostgreSQL server binaries"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) || \
	  (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql); \
	fi
	@# Debian's Chromium, for the browser tests (internal/browser).
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo "installing Chromium for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) || \
	  (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium); \
	fi
	@# NATS with JetStream (127.0.0.1:4222) and RabbitMQ (127.0.0.1:5672, guest),
	@# for the broker-trigger tests: Debian's packages, installed and started
	@# when nothing answers on the port.
	@if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then \
	  if ! command -v nats-server >/dev/null 2>&1 && ! test -x /usr/sbin/nats-server; then \
	    echo "installing nats-server for the broker-trigger tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server) || \
	    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server); \
	  fi; \
	  echo "starting nats-server -js on 127.0.0.1:4222"; \
	  dir=$${TMPDIR:-/tmp}/stitchd-test-nats; mkdir -p $$dir; \
	  PATH=$$PATH:/usr/sbin nohup nats-server -a 127.0.0.1 -p 4222 -js -sd $$dir -l $$dir/nats-server.log >/dev/null 2>&1 & \
	  for i in $$(seq 1 30); do (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null && break; sleep 1; done; \
	  (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null || { echo "nats-server did not start (see $$dir/nats-server.log)"; exit 1; }; \
	fi
	@if ! (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; then \
	  if ! test -x /usr/sbin/rabbitmq-server; then \
	    echo "installing rabbitmq-server for the broker-trigger tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server) || \
	    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server); \
	  fi; \
	  echo "starting rabbitmq-server on 127.0.0.1:5672"; \
	  service rabbitmq-server start >/dev/null 2>&1 || sudo service rabbitmq-server start >/dev/null 2>&1 || \
	    /usr/sbin/rabbitmq-server -detached >/dev/null 2>&1 || sudo /usr/sbin/rabbitmq-server -detached >/dev/null 2>&1; \
	  for i in $$(seq 1 90); do (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null && break; sleep 1; done; \
	  (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null || { echo "rabbitmq-server did not start (see /var/log/rabbitmq)"; exit 1; }; \
	fi

## bench: Go benchmarks (compiler, merge, store hot paths, engine end to end).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -timeout 30m ./...

## bench-e2e: `stitchd bench` — a stitchd process on a fresh database, an
## instant loopback worker, every scenario; table on stdout, JSON in
## bench-results/bench.json (docs/performance.md).
bench-e2e: build
	./$(BIN) bench --json bench-results/bench.json

## lint: gofmt, golangci-lint (depguard enforces the layer direction; its
## allow lists for the core mirror internal/archtest's; its govet runs go
## vet's analyzers, so go vet is not run again). Part of make test;
## golangci-lint's cache (~/.cache/golangci-lint) makes a run after the
## first take seconds.
lint: tools
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$$($(GO) env GOPATH)/bin/golangci-lint run ./...

## tools: golangci-lint at GOLANGCI_VERSION, installed from the Go module
## proxy when missing or another version.
tools:
	@bin=$$($(GO) env GOPATH)/bin/golangci-lint; \
	if [ "$$($$bin version --short 2>/dev/null)" != "$(GOLANGCI_VERSION:v%=%)" ]; then \
	  echo "installing golangci-lint $(GOLANGCI_VERSION)"; \
	  $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION); \
	fi
