package callbacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/credential"
	"github.com/stitchd/stitchd/internal/retrypolicy"
	"github.com/stitchd/stitchd/internal/startstop"
)

// DispatchStore is what the Dispatcher needs from the outbox.
type DispatchStore interface {
	ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]engine.ClaimedDispatch, error)
	// RenewLeases extends the leases of rows still held by the given claims
	// (same id and tries) and returns the ids renewed; a row another claim
	// took over meanwhile is not.
	RenewLeases(ctx context.Context, ds []engine.ClaimedDispatch, lease time.Duration) ([]string, error)
	// MarkRequestSent records that try tries of request/response row id is
	// about to be sent, while that claim still holds the row (false: it
	// does not).
	MarkRequestSent(ctx context.Context, id string, tries int) (bool, error)
}

// DeliveryRecorder records delivery outcomes (engine.Engine).
type DeliveryRecorder interface {
	RecordDelivery(ctx context.Context, o engine.DeliveryOutcome) error
}

// ResponseRecorder takes the responses of request/response deliveries
// (engine.Engine).
type ResponseRecorder interface {
	CompleteFromResponse(ctx context.Context, r engine.Response) error
}

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	Store    DispatchStore
	Recorder DeliveryRecorder
	// Responses takes the responses of request/response deliveries (HTTP
	// nodes); default: Recorder, when it implements ResponseRecorder.
	Responses ResponseRecorder
	// Secret signs outbound requests (Standard Webhooks) when Signer is
	// nil.
	Secret []byte
	// Signer, when set, gives the secrets each request is signed with:
	// one signature each, space-separated in webhook-signature (a
	// rotation's overlap; a flow's own secret).
	Signer Signer
	// Secrets reveals the secrets an HTTP node's request uses ({{ secret
	// "NAME" }}), filled in as it is sent (nil: such a request fails).
	Secrets SecretSource
	Client  *http.Client
	Clock   engine.Clock
	Logger  *slog.Logger
	// Workers is the number of concurrent deliveries (default 64).
	Workers int
	// HostWorkers is the most concurrent deliveries to one destination
	// host (host:port; default half of Workers, rounded up): a worker
	// that accepts connections and never answers holds that many, and
	// deliveries to other hosts keep the rest. Queued rows are taken from
	// the hosts in turn, so a host with a long backlog does not hold up
	// another's rows either.
	HostWorkers int
	// Claims, when set, is where the engine's commits put the rows they
	// claimed for this process (engine.Config.ClaimLease): the dispatcher
	// takes them from it and tells it its room. Nil: only the poller
	// claims.
	Claims *engine.Claims
	// QueueSize is the least the queue of rows claimed for this process
	// and waiting for a free worker holds (default 1,024), and all it
	// holds until deliveries have shown their pace: commits claim no more
	// than there is room for (Room), and the poller claims more as the
	// queue drains, so a huge fan-out is taken in chunks, by every
	// process, and leases of waiting rows are renewed in bulk.
	QueueSize int
	// QueueMax is how far the queue grows past QueueSize while deliveries
	// are quick (default 16,384; QueueSize or less keeps it at QueueSize):
	// after 16 deliveries, the queue takes what the workers, at the pace
	// of recent deliveries, deliver within a quarter lease, and no more
	// than QueueBytes of payloads. A commit inserts the rows it has room
	// for already claimed, one write less a row than a later claim.
	// (Concurrent commits each ask for room before either hands its rows
	// over, so the bounds can be passed by the rows of a few commits.)
	QueueMax int
	// QueueBytes bounds the payloads of a queue grown past QueueSize
	// (default 64 MiB).
	QueueBytes int
	// PollInterval is how often due rows (retries, rows of dead processes)
	// are claimed (default 1s).
	PollInterval time.Duration
	// Lease is how long a claimed row is ours before another process may
	// take it over (default 30s; must exceed the request timeout).
	Lease time.Duration
	// Backoff computes the delay before try n+1 (default
	// retrypolicy.Delivery: exponential with equal jitter from 500ms,
	// capped at 60s).
	Backoff func(try int) time.Duration
	// Rates limits deliveries to some hosts (host:port, or a host name for
	// every port, lower case) to so many a second, across every process
	// (--dispatch-rate): each delivery takes a token from the host's
	// bucket in RateStore first, waiting for one, or giving the row back
	// for later when the wait is long.
	Rates     map[string]float64
	RateStore RateStore
	// MaxTokenWait is the longest a delivery waits for a token holding
	// its row, its lease renewed (default 1 minute); past it the row goes
	// back to the outbox for when a token is due, the try not counted.
	MaxTokenWait time.Duration
	// CodeMemory bounds the JavaScript heap of one Code step's run
	// (--code-memory; jsbox.DefaultMemory when 0); CodeConcurrency how many
	// run at once (default 2), so that scripts take at most
	// CodeConcurrency × CodeMemory however many are due.
	CodeMemory      int64
	CodeConcurrency int
	// Credentials reveals the credentials HTTP steps carry (nil: none can
	// be used).
	Credentials CredentialSource
	// Dialer connects Email steps to their SMTP servers (nil: a plain
	// one); the server's address guard checks what it dials.
	Dialer *net.Dialer
}

// RateStore keeps the per-host token buckets (store.Store).
type RateStore interface {
	TakeDispatchToken(ctx context.Context, host string, rate, burst float64) (bool, time.Duration, error)
	PostponeDispatch(ctx context.Context, id string, delay time.Duration) error
}

// Signer gives the secrets that sign a dispatch of a run, the current
// first (store.DispatchSigner).
type Signer interface {
	Secrets(ctx context.Context, runID string) ([][]byte, error)
}

// SignWebhookAll returns a webhook-signature header with one signature
// per secret, space-separated (Standard Webhooks: a receiver accepts the
// request when any of them verifies).
func SignWebhookAll(secrets [][]byte, id string, timestamp int64, body []byte) string {
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		sigs[i] = SignWebhook(s, id, timestamp, body)
	}
	return strings.Join(sigs, " ")
}

// Dispatcher delivers outbox rows claimed by this process: the rows a
// commit wrote already claimed (handed over by Wake), and rows it claims by
// polling (due retries, rows whose claiming process died).
type Dispatcher struct {
	cfg DispatcherConfig
	// reqClient is cfg.Client without its timeout: a request/response
	// delivery is bounded by its own (request.go).
	reqClient *http.Client
	mu        sync.Mutex
	// hosts holds, by destination host, the rows claimed and not yet
	// being delivered and the deliveries in flight; ring lists the hosts
	// with queued rows in the order they are served, turn the next to
	// look at; queued counts the queued rows of every host.
	hosts map[string]*hostQueue
	// scripts holds a slot per Code step's script running (CodeConcurrency).
	scripts chan struct{}
	// tokens caches OAuth2 credentials' access tokens.
	tokens *credential.Tokens
	ring   []string
	turn   int
	queued int
	// perRow is the moving average of the time a worker spends on a row,
	// over samples deliveries; avgBytes the moving average of a queued
	// row's payload size and queuedBytes the payloads queued now. They
	// size the queue (capacity).
	perRow      time.Duration
	samples     int
	avgBytes    int
	queuedBytes int
	signal      chan struct{}
	// refill asks the poller to claim more: the queue fell below half.
	refill chan struct{}
	// lifecycle: Start and Stop (startstop).
	lifecycle startstop.Base
}

// NewDispatcher returns a Dispatcher; call Start.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	if cfg.Workers <= 0 {
		cfg.Workers = 64
	}
	if cfg.HostWorkers <= 0 {
		cfg.HostWorkers = (cfg.Workers + 1) / 2
	}
	cfg.HostWorkers = min(cfg.HostWorkers, cfg.Workers)
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 1024
	}
	if cfg.QueueMax == 0 {
		cfg.QueueMax = 16384
	}
	cfg.QueueMax = max(cfg.QueueMax, cfg.QueueSize)
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = 64 << 20
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = NewHTTPClient(10*time.Second, nil)
	}
	if rr, ok := cfg.Recorder.(ResponseRecorder); ok && cfg.Responses == nil {
		cfg.Responses = rr
	}
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Backoff == nil {
		cfg.Backoff = retrypolicy.Delivery
	}
	if cfg.MaxTokenWait <= 0 {
		cfg.MaxTokenWait = time.Minute
	}
	if cfg.CodeConcurrency <= 0 {
		cfg.CodeConcurrency = 2
	}
	rc := *cfg.Client
	rc.Timeout = 0
	return &Dispatcher{cfg: cfg, reqClient: &rc, hosts: map[string]*hostQueue{}, signal: make(chan struct{}, 1), refill: make(chan struct{}, 1),
		scripts: make(chan struct{}, cfg.CodeConcurrency),
		tokens:  &credential.Tokens{Client: cfg.Client, Now: cfg.Clock.Now}}
}

// NewHTTPClient returns the client used for dispatches: a timeout, and
// redirects are not followed (a redirect is a failed delivery). With a
// guard, every connection is checked (in every mode: stitchd's own and
// link-local addresses are always refused) and no proxy is used.
func NewHTTPClient(timeout time.Duration, guard *AddressGuard) *http.Client {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		base = &http.Transport{} // a program replaced the default transport
	}
	tr := base.Clone()
	tr.MaxIdleConnsPerHost = 64
	var rt http.RoundTripper = tr
	if guard != nil {
		tr.DialContext = guard.dialContext()
		tr.Proxy = nil // the guard must see the worker's address, not a proxy's
		rt = guardTransport{guard: guard, next: tr}
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Room is how many more claimed rows the queue takes.
func (d *Dispatcher) Room() int {
	room, _ := d.space()
	return room
}

// space returns the queue's room and its capacity.
func (d *Dispatcher) space() (room, capacity int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	capacity = d.capacity()
	return max(capacity-d.queued, 0), capacity
}

// Pace is the moving average of the time a worker spends delivering one
// row (zero before the first delivery): the pace the queue's capacity
// follows.
func (d *Dispatcher) Pace() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.perRow
}

// paceSamples is how many deliveries set the pace before the queue grows
// past QueueSize.
const paceSamples = 16

// capacity is how many rows the queue holds now (d.mu held): QueueSize,
// or, once deliveries have shown their pace, what the workers deliver in
// a quarter lease — so that a row rarely waits long enough to need its
// lease renewed — up to QueueMax, and no more than the rows queued now
// plus what the rest of QueueBytes holds at the average payload size. A
// worker that turns slow shrinks it for the next claims; rows already
// queued are renewed while they wait.
func (d *Dispatcher) capacity() int {
	if d.samples < paceSamples || d.cfg.QueueMax <= d.cfg.QueueSize {
		return d.cfg.QueueSize
	}
	n := min(int64(d.cfg.Workers)*int64(d.cfg.Lease/4)/int64(d.perRow), int64(d.cfg.QueueMax))
	if d.avgBytes > 0 {
		n = min(n, int64(d.queued)+int64(d.cfg.QueueBytes-d.queuedBytes)/int64(d.avgBytes))
	}
	return min(max(int(n), d.cfg.QueueSize), d.cfg.QueueMax)
}

// observe folds the time a worker spent delivering one row into perRow (a
// moving average over about 16 rows).
func (d *Dispatcher) observe(took time.Duration) {
	took = max(took, time.Microsecond)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.samples++
	defer d.roomChanged()
	if d.perRow <= 0 {
		d.perRow = took
		return
	}
	d.perRow += (took - d.perRow) / 16
}

// roomChanged tells the commits' handoff (Claims) the queue's room now
// (d.mu held): after rows come or go, and as the pace moves the capacity.
func (d *Dispatcher) roomChanged() {
	if d.cfg.Claims != nil {
		d.cfg.Claims.SetRoom(max(d.capacity()-d.queued, 0))
	}
}

// take hands the rows commits claimed for this process to the queue, as
// they come, until ctx ends.
func (d *Dispatcher) take(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.cfg.Claims.Ready():
			d.Wake(d.cfg.Claims.Take())
		}
	}
}

// Wake hands over rows claimed for this process. The queue is in memory:
// the rows are claimed, and if this process dies their lease expires and
// another process delivers them. Claimers keep it within its capacity
// (Room); while rows wait their leases are renewed in bulk.
func (d *Dispatcher) Wake(ds []engine.ClaimedDispatch) {
	if len(ds) == 0 {
		return
	}
	now := d.cfg.Clock.Now()
	d.mu.Lock()
	for _, c := range ds {
		at := c.LeasedAt
		if at.IsZero() || at.After(now) {
			at = now
		}
		d.push(queued{c: c, at: at})
		size := max(len(c.Payload), 1)
		d.queuedBytes += size
		if d.avgBytes == 0 {
			d.avgBytes = size
		} else {
			d.avgBytes += (size - d.avgBytes) / 16
		}
	}
	d.roomChanged()
	d.mu.Unlock()
	d.poke()
}

// queued is a claimed row waiting for a delivery worker; at is when its
// lease was last started or renewed, on this process's clock (no later
// than the database's start of it).
type queued struct {
	c  engine.ClaimedDispatch
	at time.Time
}

func (d *Dispatcher) poke() { notify(d.signal) }

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// hostQueue is one destination host's share of the queue.
type hostQueue struct {
	rows     lanes
	inFlight int
}

// HostBacklog is a destination host's deliveries: queued (claimed, waiting
// for a delivery worker) and in flight.
type HostBacklog struct {
	Host             string
	Queued, InFlight int
}

// hostOf is the destination host (host:port, lower case) of a worker URL:
// deliveries are shared out by it.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// push queues a row behind its host's (d.mu held).
func (d *Dispatcher) push(q queued) {
	h := hostOf(q.c.URL)
	hq := d.hosts[h]
	if hq == nil {
		hq = &hostQueue{}
		d.hosts[h] = hq
	}
	if hq.rows.len() == 0 {
		d.ring = append(d.ring, h)
	}
	hq.rows.push(q)
	d.queued++
}

// next pops a queued row of the next host, in turn, with fewer than
// HostWorkers deliveries in flight, and counts it in flight (done ends
// it); it passes the signal on while rows remain.
func (d *Dispatcher) next() (queued, string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range len(d.ring) {
		at := (d.turn + i) % len(d.ring)
		h := d.ring[at]
		hq := d.hosts[h]
		if hq.inFlight >= d.cfg.HostWorkers {
			continue
		}
		q := hq.rows.pop()
		hq.inFlight++
		d.queued--
		d.queuedBytes -= max(len(q.c.Payload), 1)
		d.roomChanged()
		if hq.rows.len() == 0 {
			d.ring = append(d.ring[:at], d.ring[at+1:]...)
			d.turn = at
		} else {
			d.turn = at + 1
		}
		if len(d.ring) > 0 {
			d.turn %= len(d.ring)
		} else {
			d.turn = 0
		}
		if d.queued > 0 {
			d.poke()
		}
		// Half of QueueSize, or of a grown capacity: a queue filled before
		// the capacity grew crosses the first.
		if n := d.queued; n == d.cfg.QueueSize/2 || n == d.capacity()/2 {
			notify(d.refill)
		}
		return q, h, true
	}
	return queued{}, "", false
}

// done ends a delivery to host that next counted in flight: a row of
// that host held back by HostWorkers may go.
func (d *Dispatcher) done(host string) {
	d.mu.Lock()
	hq := d.hosts[host]
	hq.inFlight--
	if hq.inFlight == 0 && hq.rows.len() == 0 {
		delete(d.hosts, host)
	}
	waiting := d.queued > 0
	d.mu.Unlock()
	if waiting {
		d.poke()
	}
}

// Backlog lists the destination hosts with deliveries queued or in
// flight in this process, by host.
func (d *Dispatcher) Backlog() []HostBacklog {
	d.mu.Lock()
	out := make([]HostBacklog, 0, len(d.hosts))
	for h, hq := range d.hosts {
		out = append(out, HostBacklog{Host: h, Queued: hq.rows.len(), InFlight: hq.inFlight})
	}
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// stillOurs renews the lease of a row whose lease was last renewed half a
// lease ago (the bulk renewal keeps that rare); a row another claim took
// over meanwhile is not delivered.
func (d *Dispatcher) stillOurs(ctx context.Context, q queued) bool {
	if d.cfg.Clock.Now().Sub(q.at) < d.cfg.Lease/2 {
		return true
	}
	ids, err := d.cfg.Store.RenewLeases(ctx, []engine.ClaimedDispatch{q.c}, d.cfg.Lease)
	return err == nil && len(ids) == 1
}

// renewQueued renews, with one statement, the leases of queued rows last
// renewed a quarter lease ago, and drops the rows whose renewal failed
// (another claim took them over, or they were retired).
func (d *Dispatcher) renewQueued(ctx context.Context) {
	now := d.cfg.Clock.Now()
	d.mu.Lock()
	var due []engine.ClaimedDispatch
	for _, hq := range d.hosts {
		hq.rows.each(func(q *queued) {
			if now.Sub(q.at) >= d.cfg.Lease/4 {
				due = append(due, q.c)
			}
		})
	}
	d.mu.Unlock()
	if len(due) == 0 {
		return
	}
	ids, err := d.cfg.Store.RenewLeases(ctx, due, d.cfg.Lease)
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.Warn("error renewing dispatch leases", "rows", len(due), "error", err)
		}
		return // stillOurs checks each row before it is delivered
	}
	asked := make(map[string]bool, len(due))
	for _, c := range due {
		asked[c.ID] = true
	}
	for _, id := range ids {
		asked[id] = false // renewed
	}
	d.mu.Lock()
	for h, hq := range d.hosts {
		hq.rows.keep(func(q *queued) bool {
			lost, was := asked[q.c.ID]
			switch {
			case was && lost:
				d.queuedBytes -= max(len(q.c.Payload), 1)
				d.queued--
				d.roomChanged()
				return false
			case was:
				q.at = now
			}
			return true
		})
		if hq.rows.len() == 0 {
			if i := slices.Index(d.ring, h); i >= 0 {
				d.ring = slices.Delete(d.ring, i, i+1)
				if d.turn > i {
					d.turn--
				}
				if d.turn >= len(d.ring) {
					d.turn = 0
				}
			}
			if hq.inFlight == 0 {
				delete(d.hosts, h)
			}
		}
	}
	d.mu.Unlock()
}

// Start runs the dispatcher until Stop (startstop.Service: on a running
// dispatcher it does nothing).
func (d *Dispatcher) Start(ctx context.Context) error {
	return d.lifecycle.StartWith(ctx, func(ctx context.Context) error {
		for i := 0; i < d.cfg.Workers; i++ {
			d.lifecycle.Go(ctx, d.work)
		}
		d.lifecycle.Go(ctx, d.poll)
		d.lifecycle.Go(ctx, d.renewLoop)
		if d.cfg.Claims != nil {
			d.mu.Lock()
			d.roomChanged()
			d.mu.Unlock()
			d.lifecycle.Go(ctx, d.take)
		}
		return nil
	})
}

// work delivers queued rows until ctx ends.
func (d *Dispatcher) work(ctx context.Context) {
	for {
		if q, host, ok := d.next(); ok {
			began := d.cfg.Clock.Now()
			if d.stillOurs(ctx, q) && d.token(ctx, q.c, host) {
				d.deliver(ctx, q.c)
				if ctx.Err() == nil { // a delivery cut short by Stop says nothing of the pace
					d.observe(d.cfg.Clock.Now().Sub(began))
				}
			}
			d.done(host)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.signal:
		}
	}
}

// renewLoop renews the leases of queued rows every eighth of a lease: a
// row is renewed before three eighths of its lease are gone, leaving the
// rest for a slow statement or a stalled process.
func (d *Dispatcher) renewLoop(ctx context.Context) {
	tick := time.NewTicker(d.cfg.Lease / 8)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			d.renewQueued(ctx)
		}
	}
}

// poll claims due rows every PollInterval (any room: retries come due,
// rows of dead processes), and whenever the queue falls to half. After a
// refill signal it claims only while at least half the queue is free, and
// goes on while a claim came back full: claims made while the workers
// drain the queue would otherwise shrink to what drained during the
// previous claim (112 rows a claim on average in a 100,000-item fan-out),
// each paying a statement's fixed cost. Its claims take at most 1,000
// rows.
func (d *Dispatcher) poll(ctx context.Context) {
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		refill := false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.refill:
			refill = true
		}
		for first := true; ; first = false {
			room, capacity := d.space()
			if room == 0 || ((refill || !first) && room < capacity/2) {
				break // the queue is more than half full: its next pop past half signals again
			}
			limit := min(room, 1000)
			leasedAt := d.cfg.Clock.Now()
			rows, err := d.cfg.Store.ClaimDue(ctx, limit, d.cfg.Lease)
			if err != nil {
				if ctx.Err() == nil {
					d.cfg.Logger.Warn("error claiming dispatches", "error", err)
				}
				break
			}
			for i := range rows {
				rows[i].LeasedAt = leasedAt
			}
			d.Wake(rows)
			if len(rows) < limit {
				break
			}
		}
	}
}

// Stop stops claiming and waits for deliveries in progress (on a stopped
// dispatcher it does nothing).
func (d *Dispatcher) Stop() {
	if d.cfg.Claims != nil {
		d.cfg.Claims.SetRoom(0) // a stopped dispatcher takes nothing: commits claim nothing for it
	}
	d.lifecycle.Stop()
}

func (d *Dispatcher) deliver(ctx context.Context, c engine.ClaimedDispatch) {
	if c.Request != nil {
		d.request(ctx, c)
		return
	}
	code, retryAfter, err := d.post(ctx, c)
	if ctx.Err() != nil {
		return // shutting down: the lease expires and a process retries
	}
	o := engine.DeliveryOutcome{DispatchID: c.ID, RunID: c.RunID, Key: c.Key, Attempt: c.Attempt, Try: c.Tries, StatusCode: code}
	if err == nil {
		o.Delivered = true
	} else {
		o.Error = err.Error()
		if retryable(code) && c.Tries < c.MaxTries {
			delay := d.cfg.Backoff(c.Tries)
			if retryAfter > delay {
				delay = retryAfter
			}
			o.RetryInMs = max(delay.Milliseconds(), 1)
		}
		d.cfg.Logger.Warn("delivery failed", "run_id", c.RunID, "node_key", c.Key, "attempt", c.Attempt, "try", c.Tries,
			"max_tries", c.MaxTries, "status", code, "retry_in_ms", o.RetryInMs, "error", err)
	}
	if err := d.record(ctx, c, o); err != nil && ctx.Err() == nil {
		d.cfg.Logger.Warn("error recording delivery", "run_id", c.RunID, "node_key", c.Key, "error", err)
	}
}

// record records o, again while the database is unavailable (a failover)
// and c's lease lasts. Again is safe: an outcome applies only to a row
// still claimed by that try, so one that did commit before its connection
// was lost makes the next a no-op. Unrecorded, a failed try's row would
// wait for its lease to end and be tried again without its backoff and
// without the try being counted.
func (d *Dispatcher) record(ctx context.Context, c engine.ClaimedDispatch, o engine.DeliveryOutcome) error {
	err := d.cfg.Recorder.RecordDelivery(ctx, o)
	leaseEnds := c.LeasedAt.Add(d.cfg.Lease)
	for wait := 100 * time.Millisecond; errors.Is(err, engine.ErrUnavailable) && d.cfg.Clock.Now().Add(wait).Before(leaseEnds); wait = min(2*wait, time.Second) {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		err = d.cfg.Recorder.RecordDelivery(ctx, o)
	}
	return err
}

// rateOf is host's delivery rate (0: none): its own, else its name's.
func (d *Dispatcher) rateOf(host string) float64 {
	if r, ok := d.cfg.Rates[host]; ok {
		return r
	}
	if name, _, err := net.SplitHostPort(host); err == nil {
		return d.cfg.Rates[name]
	}
	return 0
}

// token waits for a token of host's rate, if it has one, and of the
// worker node's rateLimit, if it has one, and reports whether to deliver
// c now. While it waits the row's lease is renewed; a wait past
// MaxTokenWait gives the row back to the outbox for then (the try not
// counted). A bucket that cannot be read lets the
// delivery go (the rate is a courtesy to the worker, not a guarantee
// worth stalling deliveries for) and is logged.
func (d *Dispatcher) token(ctx context.Context, c engine.ClaimedDispatch, host string) bool {
	if d.cfg.RateStore == nil {
		return true
	}
	if rate := d.rateOf(host); rate > 0 && !d.takeToken(ctx, c, host, rate) {
		return false
	}
	// A worker node's own rateLimit: its endpoint's bucket, shared by the
	// nodes that call the same URL.
	if c.Request == nil {
		if r := gjson.GetBytes(c.Payload, "config.rateLimit"); r.Type == gjson.Number && r.Num > 0 {
			return d.takeToken(ctx, c, "url:"+c.URL, r.Num)
		}
	}
	return true
}

// takeToken waits for a token of bucket key at rate (token's rules).
func (d *Dispatcher) takeToken(ctx context.Context, c engine.ClaimedDispatch, key string, rate float64) bool {
	burst := max(1, rate/10) // a tenth of a second's worth: the rate holds from the first second
	var waited time.Duration
	wctx := ctx
	var stopLease func()
	defer func() {
		if stopLease != nil {
			stopLease()
		}
	}()
	for {
		ok, wait, err := d.cfg.RateStore.TakeDispatchToken(ctx, key, rate, burst)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				d.cfg.Logger.Warn("error taking a dispatch token; delivering", "bucket", key, "error", err)
			}
			return ctx.Err() == nil
		case ok && waited == 0:
			return true
		case ok:
			// The lease was kept while waiting: give the delivery a whole
			// one (a row another process took meanwhile is not ours).
			ids, err := d.cfg.Store.RenewLeases(ctx, []engine.ClaimedDispatch{c}, d.cfg.Lease)
			return err == nil && len(ids) == 1
		case waited+wait > d.cfg.MaxTokenWait:
			if err := d.cfg.RateStore.PostponeDispatch(ctx, c.ID, wait); err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("error postponing a dispatch", "run_id", c.RunID, "node_key", c.Key, "error", err)
			} else {
				d.cfg.Logger.Debug("delivery postponed for its rate", "run_id", c.RunID, "node_key", c.Key, "bucket", key, "for", wait)
			}
			return false
		}
		if stopLease == nil {
			var cancel context.CancelFunc
			wctx, cancel = context.WithCancel(ctx)
			stop := d.keepLease(ctx, c, cancel)
			stopLease = func() { stop(); cancel() }
		}
		select {
		case <-wctx.Done():
			return false // shutting down, or the row is no longer ours
		case <-time.After(wait):
		}
		waited += wait
	}
}

// retryable: connection failures and timeouts (code 0), 408, 425, 429 and 5xx.
func retryable(code int) bool {
	return code == 0 || code == 408 || code == 425 || code == 429 || code >= 500
}

func (d *Dispatcher) post(ctx context.Context, c engine.ClaimedDispatch) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Payload))
	if err != nil {
		return -1, 0, fmt.Errorf("invalid worker URL: %w", err)
	}
	ts := d.cfg.Clock.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "stitchd")
	req.Header.Set("webhook-id", c.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	secrets := [][]byte{d.cfg.Secret}
	if d.cfg.Signer != nil {
		if secrets, err = d.cfg.Signer.Secrets(ctx, c.RunID); err != nil {
			return 0, 0, fmt.Errorf("error loading the webhook secrets: %w", err) // retried
		}
	}
	req.Header.Set("webhook-signature", SignWebhookAll(secrets, c.ID, ts, c.Payload))
	resp, err := d.cfg.Client.Do(req)
	if err != nil && errors.Is(err, ErrAddressRefused) {
		return -1, 0, err // not retryable
	}
	if err != nil {
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) && ue.Timeout() {
			return 0, 0, fmt.Errorf("worker did not answer in time: %w", err)
		}
		return 0, 0, fmt.Errorf("worker unreachable: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, 0, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ra := d.retryAfter(resp.Header)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, ra, fmt.Errorf("worker answered %d (redirects are not followed)%s", resp.StatusCode, bodyExcerpt(body))
	}
	return resp.StatusCode, ra, fmt.Errorf("worker answered %d%s", resp.StatusCode, bodyExcerpt(body))
}

// maxExcerpt bounds the part of a worker's answer a failed try records.
const maxExcerpt = 200

// bodyExcerpt is ": " and the start of a failed answer's body, on one line
// (control characters and runs of spaces as one space, invalid UTF-8
// dropped, cut at maxExcerpt bytes with "…"), or "" for an empty body:
// what the worker said is in the run's events, not only its status.
func bodyExcerpt(b []byte) string {
	var sb strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(string(b), "") {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = sb.Len() > 0
			continue
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		if sb.Len()+utf8.RuneLen(r) > maxExcerpt {
			sb.WriteString("…")
			break
		}
		sb.WriteRune(r)
	}
	if sb.Len() == 0 {
		return ""
	}
	return ": " + sb.String()
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), at
// most an hour.
func (d *Dispatcher) retryAfter(h http.Header) time.Duration {
	var ra time.Duration
	if s := h.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(s); err == nil && secs >= 0 {
			ra = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			ra = t.Sub(d.cfg.Clock.Now())
		}
		if ra > time.Hour {
			ra = time.Hour
		}
	}
	return ra
}
