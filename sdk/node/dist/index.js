"use strict";
// stitchd workers for Node.js (20.3+), with no runtime dependencies: push
// (stitchd POSTs signed tasks to your endpoint) and pull (your worker polls
// a task queue). The protocol is docs/workers.md.
//
// Push: a PushHandler is an http.createServer listener. It verifies the
// Standard Webhooks signature (401 otherwise), answers 202 at once, runs the
// handler, heartbeats while it runs and calls back completed or failed.
//
// Pull: a Puller long-polls one queue with a worker token for as many tasks
// as it has free slots (never more than `concurrency` in hand), heartbeats
// at a third of the lease, backs off on failed polls, and stop(graceMs)
// stops polling at once, lets running handlers finish within the grace
// period and fails the rest as "worker shutting down" (retryable).
//
// Both call handler(task): what it returns (or resolves to) becomes the
// node's output; a throw (or rejection) fails the attempt, retried by the
// node's retry policy unless it is a NonRetryableError. task.signal aborts
// when stitchd no longer runs the attempt (reason: a StaleError) or a
// shutdown's grace period ends (a ShuttingDownError).
Object.defineProperty(exports, "__esModule", { value: true });
exports.Puller = exports.PushHandler = exports.Task = exports.ShuttingDownError = exports.StaleError = exports.NonRetryableError = exports.SignatureError = exports.STALE = exports.SHUTTING_DOWN = exports.DEFAULT_WAIT_SECONDS = exports.DEFAULT_TOLERANCE_SECONDS = void 0;
exports.secretKey = secretKey;
exports.verifySignature = verifySignature;
const crypto = require("node:crypto");
const os = require("node:os");
/** Seconds a webhook-timestamp may be from now. */
exports.DEFAULT_TOLERANCE_SECONDS = 300;
/** A Worker node's leaseSeconds and timeoutSeconds when its data sets none. */
const DEFAULT_LEASE_SECONDS = 300;
exports.DEFAULT_WAIT_SECONDS = 20;
const MAX_ERROR_BACKOFF_MS = 30_000;
exports.SHUTTING_DOWN = 'worker shutting down';
exports.STALE = 'stitchd no longer runs this attempt';
// A result is worth retrying for a while (stitchd restarting); a heartbeat
// is not, the next one follows.
const RESULT_TRIES = 6;
const HEARTBEAT_TRIES = 2;
const CALLBACK_TIMEOUT_MS = 30_000;
const MAX_ERROR_LEN = 4000;
const SEEN_IDS = 10_000;
const MAX_HEARTBEAT_EVERY_MS = 24 * 24 * 3600 * 1000;
/** A dispatch not signed with the secret (answer it 401). */
class SignatureError extends Error {
    name = 'SignatureError';
}
exports.SignatureError = SignatureError;
/** A failure another attempt would repeat: the node fails at once. */
class NonRetryableError extends Error {
    name = 'NonRetryableError';
}
exports.NonRetryableError = NonRetryableError;
/** stitchd answered 409: it no longer runs this attempt. */
class StaleError extends Error {
    name = 'StaleError';
}
exports.StaleError = StaleError;
/** A task still running when a shutdown's grace period ended. */
class ShuttingDownError extends Error {
    name = 'ShuttingDownError';
    constructor() {
        super(exports.SHUTTING_DOWN);
    }
}
exports.ShuttingDownError = ShuttingDownError;
/** Warnings and errors to the console; info nowhere. */
const consoleLogger = { info() { }, warn: (m) => console.warn(m), error: (m) => console.error(m) };
/** The HMAC key of a webhook secret ("whsec_" and base64). */
function secretKey(secret) {
    if (!secret || !secret.startsWith('whsec_')) {
        throw new Error('a webhook secret starts with "whsec_" (stitchd webhook-secret prints it)');
    }
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    if (key.length === 0)
        throw new Error("the webhook secret's part after whsec_ is not base64");
    return key;
}
function header(headers, name) {
    for (const [k, v] of Object.entries(headers)) {
        if (k.toLowerCase() === name)
            return Array.isArray(v) ? v.join(' ') : v;
    }
    return undefined;
}
/**
 * Throws a SignatureError unless the Standard Webhooks signature is valid:
 * webhook-signature holds one or more space-separated "v1,<base64
 * HMAC-SHA256 of id.timestamp.body>", one of which must match (in constant
 * time), and webhook-timestamp must be within toleranceSeconds of now
 * (Unix seconds). body is the raw request body, as received.
 */
function verifySignature(key, headers, body, opts = {}) {
    const id = header(headers, 'webhook-id');
    const ts = header(headers, 'webhook-timestamp');
    const sigs = header(headers, 'webhook-signature');
    if (!id || !ts || !sigs)
        throw new SignatureError('missing webhook-id, webhook-timestamp or webhook-signature');
    if (!/^\d+$/.test(ts))
        throw new SignatureError('webhook-timestamp is not a number');
    const now = opts.now ?? Date.now() / 1000;
    const tolerance = opts.toleranceSeconds ?? exports.DEFAULT_TOLERANCE_SECONDS;
    if (Math.abs(now - Number(ts)) > tolerance)
        throw new SignatureError(`webhook-timestamp is more than ${tolerance} s away`);
    const mac = crypto.createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
    const want = Buffer.from(`v1,${mac}`);
    const ok = sigs.split(' ').some((s) => {
        const got = Buffer.from(s);
        return got.length === want.length && crypto.timingSafeEqual(got, want);
    });
    if (!ok)
        throw new SignatureError('no signature matches');
}
const sleep = (ms, signal) => new Promise((resolve) => {
    if (signal?.aborted)
        return resolve();
    const t = setTimeout(done, ms);
    function done() {
        clearTimeout(t);
        signal?.removeEventListener('abort', done);
        resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
});
/** The start of an answer's body, on one line, for errors. */
async function excerpt(res) {
    const text = await res.text().catch(() => '');
    return text.slice(0, 300).split(/\s+/).filter(Boolean).join(' ');
}
/**
 * POSTs a callback, retrying network errors, 429 and 5xx up to tries times
 * with backoff (a repeat is harmless). 409 throws a StaleError; another 4xx
 * is final.
 */
async function postCallback(url, body, tries) {
    const data = JSON.stringify(body);
    let last = '';
    for (let attempt = 0; attempt < tries; attempt++) {
        if (attempt > 0)
            await sleep(250 * 2 ** (attempt - 1)); // 0.25, 0.5, 1, 2, 4 s
        let res;
        try {
            res = await fetch(url, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json' },
                body: data,
                signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
            });
        }
        catch (e) {
            last = e.message;
            continue;
        }
        const text = await excerpt(res);
        if (res.ok)
            return;
        if (res.status === 409)
            throw new StaleError(`callback answered 409: ${text}`);
        if (res.status === 400 || res.status === 413)
            throw new RefusedError(`callback answered ${res.status}: ${text}`);
        if (res.status < 500 && res.status !== 429)
            throw new Error(`callback answered ${res.status}: ${text}`);
        last = `stitchd answered ${res.status}`;
    }
    throw new Error(`callback failed after ${tries} tries: ${last}`);
}
/** stitchd answered a callback 400 or 413: it will not take that body, however often it is sent. */
class RefusedError extends Error {
}
/** One attempt of a Worker node, pushed or pulled. */
class Task {
    runId;
    nodeId;
    attempt;
    input;
    config;
    callbackUrl;
    leaseExpiresAt;
    messageId;
    /** Aborts when stitchd no longer runs the attempt or a shutdown's grace ends: stop, nothing more is reported. */
    signal;
    controller;
    constructor(runId, 
    /** The node-state key: the node's id, or <id>_<i> for a Splitter's item. */
    nodeId, attempt, input, config, 
    /** Where the result goes; the library calls it. A credential: keep it out of logs. */
    callbackUrl, 
    /** A pulled task's lease end (RFC 3339), unless a heartbeat extends it. */
    leaseExpiresAt, 
    /** A pushed task's webhook-id. */
    messageId) {
        this.runId = runId;
        this.nodeId = nodeId;
        this.attempt = attempt;
        this.input = input;
        this.config = config;
        this.callbackUrl = callbackUrl;
        this.leaseExpiresAt = leaseExpiresAt;
        this.messageId = messageId;
        this.controller = new AbortController();
        this.signal = this.controller.signal;
    }
    /**
     * Reports progress and extends the attempt's deadline or lease now (the
     * library also does so on its own). Rejects with a StaleError, and aborts
     * signal, when stitchd no longer runs the attempt.
     */
    async heartbeat(progress) {
        const body = { status: 'running' };
        if (progress !== undefined)
            body.progress = progress;
        try {
            await postCallback(this.callbackUrl, body, HEARTBEAT_TRIES);
        }
        catch (e) {
            if (e instanceof StaleError)
                this.abort(e);
            throw e;
        }
    }
    /** @internal */
    abort(reason) {
        if (!this.signal.aborted)
            this.controller.abort(reason);
    }
}
exports.Task = Task;
/**
 * Runs tasks, push's and pull's alike: the handler with heartbeats beside
 * it, its result reported, and a drain for shutdown.
 */
class Runner {
    handler;
    heartbeatIntervalMs;
    leaseKey;
    log;
    running = new Set();
    closed = false;
    idle = [];
    constructor(handler, heartbeatIntervalMs, 
    /** The node data's field the lease is read from: leaseSeconds (pull) or timeoutSeconds (push). */
    leaseKey, log) {
        this.handler = handler;
        this.heartbeatIntervalMs = heartbeatIntervalMs;
        this.leaseKey = leaseKey;
        this.log = log;
    }
    get inFlight() {
        return this.running.size;
    }
    /** Runs task; false (nothing run) once draining. done is called when it is over. */
    start(task, done = () => { }) {
        if (this.closed)
            return false;
        let markReported = () => { };
        const reported = new Promise((r) => (markReported = r));
        const f = { task, state: 'running', reported, markReported };
        this.running.add(f);
        void this.work(f)
            .catch((e) => this.log.error(`run ${task.runId} node ${task.nodeId}: ${e.message}`))
            .finally(() => {
            this.running.delete(f);
            done();
            if (this.running.size === 0)
                for (const w of this.idle.splice(0))
                    w();
        });
        return true;
    }
    interval(task) {
        if (this.heartbeatIntervalMs !== undefined)
            return this.heartbeatIntervalMs;
        const v = task.config[this.leaseKey];
        // Whole seconds, as stitchd reads them: a fraction rounds up (0.5 is 1 s, not the default).
        const secs = typeof v === 'number' && v > 0 ? Math.ceil(v) : DEFAULT_LEASE_SECONDS;
        // setTimeout fires at once past 2^31-1 ms (24.8 days), which would
        // heartbeat without pause: a beat every 24 days is often enough.
        return Math.min((secs * 1000) / 3, MAX_HEARTBEAT_EVERY_MS);
    }
    async work(f) {
        const t = f.task;
        const every = this.interval(t);
        let timer;
        let beating = Promise.resolve();
        let finished = false;
        const beat = (wait) => {
            timer = setTimeout(() => {
                beating = t.heartbeat().then(() => {
                    if (!finished)
                        beat(every);
                }, (e) => {
                    if (e instanceof StaleError) {
                        this.log.info(`run ${t.runId} node ${t.nodeId}: stitchd no longer runs attempt ${t.attempt}; task aborted`);
                    }
                    else if (!finished && !t.signal.aborted) {
                        this.log.warn(`run ${t.runId} node ${t.nodeId}: heartbeat: ${e.message}`);
                        beat(Math.max(every / 4, 100)); // again well before the lease ends
                    }
                });
            }, wait);
        };
        if (every > 0)
            beat(every);
        let output;
        let error;
        let failed = false;
        try {
            output = await this.handler(t);
        }
        catch (e) {
            failed = true;
            error = e;
        }
        finished = true;
        clearTimeout(timer);
        await beating;
        if (f.state !== 'running')
            return; // the shutdown reported it
        f.state = 'reporting';
        try {
            if (t.signal.reason instanceof StaleError) {
                this.log.info(`run ${t.runId} node ${t.nodeId}: stitchd no longer runs this attempt; result dropped`);
                return;
            }
            await this.report(t, output, failed ? error ?? new Error('failed') : undefined);
        }
        finally {
            f.markReported();
        }
    }
    /** Sends a result: completed with output, or failed with error (retryable unless a NonRetryableError). */
    async report(t, output, error) {
        let body;
        if (error === undefined) {
            try {
                const encoded = JSON.stringify(output === undefined ? null : output);
                body = { status: 'completed', output: JSON.parse(encoded) };
            }
            catch (e) {
                error = new NonRetryableError(`the handler's output cannot be encoded as JSON: ${e.message}`);
            }
        }
        if (error !== undefined) {
            const text = (error instanceof Error ? error.message || error.name : String(error)) || 'failed';
            body = { status: 'failed', error: text.slice(0, MAX_ERROR_LEN) };
            if (error instanceof NonRetryableError)
                body.retryable = false;
        }
        try {
            try {
                await postCallback(t.callbackUrl, body, RESULT_TRIES);
            }
            catch (e) {
                if (!(e instanceof RefusedError) || error !== undefined)
                    throw e;
                // An output stitchd refuses (over its --body-limit, a number too
                // long) would be refused from every attempt: fail the node now,
                // saying why, rather than at its deadline.
                error = new NonRetryableError(`the output was refused: ${e.message}`);
                const failed = { status: 'failed', error: error.message.slice(0, MAX_ERROR_LEN), retryable: false };
                await postCallback(t.callbackUrl, failed, RESULT_TRIES);
            }
            if (error !== undefined)
                this.log.info(`run ${t.runId} node ${t.nodeId} attempt ${t.attempt} failed: ${String(error)}`);
        }
        catch (e) {
            this.log.error(`run ${t.runId} node ${t.nodeId}: reporting the result: ${e.message}`);
        }
    }
    /**
     * Refuses new tasks, waits up to graceMs for the running ones, then aborts
     * those still running (a ShuttingDownError) and reports them failed with
     * "worker shutting down" — retryable, so the retry policy queues the next
     * attempt. Resolves to how many were failed so.
     */
    async drain(graceMs) {
        this.closed = true;
        if (this.running.size > 0) {
            await new Promise((resolve) => {
                const t = setTimeout(resolve, Math.max(graceMs, 0));
                this.idle.push(() => {
                    clearTimeout(t);
                    resolve();
                });
            });
        }
        const waits = [];
        let failed = 0;
        for (const f of [...this.running]) {
            if (f.state !== 'running') {
                waits.push(f.reported); // its handler returned: its own report is on its way
                continue;
            }
            f.state = 'abandoned';
            failed++;
            f.task.abort(new ShuttingDownError());
            waits.push(this.report(f.task, undefined, new ShuttingDownError()));
        }
        await Promise.all(waits);
        return failed;
    }
}
/**
 * A pushed worker's endpoint: listener is an http.createServer listener.
 * It verifies each dispatch's signature (401), answers 202 at once, runs the
 * handler and calls back; a repeated webhook-id is answered 202 and not
 * worked twice; after shutdown() starts it answers 503, which stitchd
 * retries.
 */
class PushHandler {
    key;
    runner;
    seen = new Set(); // webhook-ids seen (insertion-ordered): delivery is at least once
    tolerance;
    maxBody;
    constructor(opts) {
        if (typeof opts.handler !== 'function')
            throw new Error('PushOptions.handler is required');
        this.key = secretKey(opts.secret);
        this.tolerance = opts.toleranceSeconds ?? exports.DEFAULT_TOLERANCE_SECONDS;
        this.maxBody = opts.maxBodyBytes ?? 16 << 20;
        const every = opts.heartbeatIntervalMs === undefined ? undefined : Math.max(opts.heartbeatIntervalMs, 0);
        this.runner = new Runner(opts.handler, every, 'timeoutSeconds', opts.logger ?? consoleLogger);
    }
    get inFlight() {
        return this.runner.inFlight;
    }
    /** Answers one request: its status code and text. */
    handle(method, headers, body) {
        if (method !== 'POST')
            return { status: 405, text: 'POST only' };
        if (body.length > this.maxBody)
            return { status: 413, text: 'body too large' };
        try {
            verifySignature(this.key, headers, body, { toleranceSeconds: this.tolerance });
        }
        catch (e) {
            return { status: 401, text: e.message };
        }
        let d;
        try {
            d = JSON.parse(body.toString('utf8'));
            if (!d || typeof d.callbackUrl !== 'string' || typeof d.runId !== 'string')
                throw new Error();
        }
        catch {
            return { status: 400, text: 'not a stitchd dispatch' };
        }
        const id = header(headers, 'webhook-id');
        if (this.seen.has(id))
            return { status: 202, text: 'accepted (a repeat)' };
        this.seen.add(id);
        if (this.seen.size > SEEN_IDS)
            this.seen.delete(this.seen.values().next().value);
        const config = d.config && typeof d.config === 'object' ? d.config : {};
        const task = new Task(d.runId, d.nodeId, d.attempt, d.input, config, d.callbackUrl, undefined, id);
        if (!this.runner.start(task)) {
            this.seen.delete(id); // not taken: its retry must be worked
            return { status: 503, text: exports.SHUTTING_DOWN };
        }
        return { status: 202, text: 'accepted' };
    }
    /** An http.createServer listener. */
    listener = (req, res) => {
        const answer = (status, text) => {
            const headers = { 'Content-Type': 'text/plain; charset=utf-8' };
            if (status === 503)
                headers['Retry-After'] = '5';
            res.writeHead(status, headers);
            res.end(text + '\n');
        };
        const chunks = [];
        let size = 0;
        req.on('data', (c) => {
            size += c.length;
            if (size <= this.maxBody)
                chunks.push(c);
        });
        req.on('end', () => {
            if (size > this.maxBody)
                return answer(413, 'body too large');
            const { status, text } = this.handle(req.method ?? '', req.headers, Buffer.concat(chunks));
            answer(status, text);
        });
        req.on('error', () => res.destroy());
    };
    /**
     * Stops taking tasks, waits up to graceMs for the running handlers, then
     * fails those still running as "worker shutting down" (retryable).
     * Resolves to how many were failed so. Close the http.Server first.
     */
    shutdown(graceMs = 30_000) {
        return this.runner.drain(graceMs);
    }
}
exports.PushHandler = PushHandler;
/**
 * Works one queue's tasks: long-polls stitchd for as many tasks as it has
 * free slots, runs each with heartbeats beside it and reports each result.
 */
class Puller {
    opts;
    runner;
    pollUrl;
    free;
    slotFreed;
    stopping = new AbortController();
    loop;
    constructor(opts) {
        const missing = ['url', 'token', 'queue', 'handler'].filter((k) => !opts[k]);
        if (missing.length > 0)
            throw new Error(`PullOptions needs ${missing.join(', ')}`);
        const waitSeconds = opts.waitSeconds ?? exports.DEFAULT_WAIT_SECONDS;
        if (!(waitSeconds >= 1 && waitSeconds <= 60))
            throw new Error(`waitSeconds ${waitSeconds}: stitchd waits 1 to 60 seconds`);
        this.opts = {
            url: opts.url,
            token: opts.token,
            queue: opts.queue,
            handler: opts.handler,
            worker: opts.worker || `${os.hostname()}/${process.pid}`,
            concurrency: Math.max(Math.floor(opts.concurrency ?? 1), 1),
            waitSeconds,
            errorBackoffMs: opts.errorBackoffMs ?? 1000,
        };
        this.pollUrl = opts.url.replace(/\/+$/, '') + '/api/v1/tasks/poll';
        this.free = this.opts.concurrency;
        const every = opts.heartbeatIntervalMs === undefined ? undefined : Math.max(opts.heartbeatIntervalMs, 0);
        this.runner = new Runner(opts.handler, every, 'leaseSeconds', opts.logger ?? consoleLogger);
    }
    get inFlight() {
        return this.runner.inFlight;
    }
    start() {
        if (this.loop)
            throw new Error('the puller was started already');
        this.loop = this.run();
        return this;
    }
    /**
     * Stops polling at once (an outstanding long poll is abandoned), waits up
     * to graceMs for the running handlers, then fails those still running as
     * "worker shutting down" — retryable, so the node's retry policy queues
     * the next attempt — and resolves to how many. stitchd has no way to give
     * a lease back untried.
     */
    async stop(graceMs = 30_000) {
        this.stopping.abort();
        this.slotFreed?.();
        await this.loop;
        return this.runner.drain(graceMs);
    }
    release(n = 1) {
        this.free += n;
        const w = this.slotFreed;
        this.slotFreed = undefined;
        w?.();
    }
    async run() {
        const stop = this.stopping.signal;
        let failures = 0;
        while (!stop.aborted) {
            while (this.free === 0 && !stop.aborted)
                await new Promise((r) => (this.slotFreed = r));
            if (stop.aborted)
                return;
            const asked = Math.min(this.free, 100);
            this.free -= asked;
            let tasks;
            try {
                tasks = await this.poll(asked);
                failures = 0;
            }
            catch (e) {
                this.release(asked);
                if (stop.aborted)
                    return;
                failures++;
                let delay = Math.min(this.opts.errorBackoffMs * 2 ** (failures - 1), MAX_ERROR_BACKOFF_MS);
                delay -= Math.random() * (delay / 2);
                this.runner.log.warn(`poll of ${this.opts.queue} failed (${e.message}); again in ${(delay / 1000).toFixed(1)} s`);
                await sleep(delay, stop);
                continue;
            }
            // Tasks received are this worker's whatever happens next: worked (and
            // drained by stop), never dropped.
            tasks.forEach((t, i) => {
                if (i >= asked) {
                    // More than asked for (stitchd never answers so): failed for another attempt.
                    this.runner.log.error(`stitchd answered more tasks than asked for: ${tasks.length} > ${asked}`);
                    void this.runner.report(t, undefined, new Error('worker over its concurrency limit'));
                }
                else if (!this.runner.start(t, () => this.release())) {
                    this.release();
                }
            });
            if (tasks.length < asked)
                this.release(asked - tasks.length);
        }
    }
    async poll(max) {
        const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout((this.opts.waitSeconds + 30) * 1000)]);
        const res = await fetch(this.pollUrl, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${this.opts.token}` },
            body: JSON.stringify({ queue: this.opts.queue, worker: this.opts.worker, max, wait_seconds: this.opts.waitSeconds }),
            signal,
        });
        if (res.status !== 200)
            throw new Error(`stitchd answered ${res.status}: ${await excerpt(res)}`);
        const out = (await res.json());
        return (out.tasks ?? []).map((t) => new Task(t.run_id, t.node_id, t.attempt, t.input, t.config && typeof t.config === 'object' ? t.config : {}, t.callback_url, t.lease_expires_at));
    }
}
exports.Puller = Puller;
