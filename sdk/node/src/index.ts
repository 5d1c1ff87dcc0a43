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

import * as crypto from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import * as os from 'node:os';

/** Seconds a webhook-timestamp may be from now. */
export const DEFAULT_TOLERANCE_SECONDS = 300;
/** A Worker node's leaseSeconds and timeoutSeconds when its data sets none. */
const DEFAULT_LEASE_SECONDS = 300;
export const DEFAULT_WAIT_SECONDS = 20;
const MAX_ERROR_BACKOFF_MS = 30_000;
export const SHUTTING_DOWN = 'worker shutting down';
export const STALE = 'stitchd no longer runs this attempt';
// A result is worth retrying for a while (stitchd restarting); a heartbeat
// is not, the next one follows.
const RESULT_TRIES = 6;
const HEARTBEAT_TRIES = 2;
const CALLBACK_TIMEOUT_MS = 30_000;
const MAX_ERROR_LEN = 4000;
const SEEN_IDS = 10_000;
const MAX_HEARTBEAT_EVERY_MS = 24 * 24 * 3600 * 1000;

/** A dispatch not signed with the secret (answer it 401). */
export class SignatureError extends Error {
  override name = 'SignatureError';
}

/** A failure another attempt would repeat: the node fails at once. */
export class NonRetryableError extends Error {
  override name = 'NonRetryableError';
}

/** stitchd answered 409: it no longer runs this attempt. */
export class StaleError extends Error {
  override name = 'StaleError';
}

/** A task still running when a shutdown's grace period ended. */
export class ShuttingDownError extends Error {
  override name = 'ShuttingDownError';
  constructor() {
    super(SHUTTING_DOWN);
  }
}

export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** Warnings and errors to the console; info nowhere. */
const consoleLogger: Logger = { info() {}, warn: (m) => console.warn(m), error: (m) => console.error(m) };

export type Handler = (task: Task) => unknown;

/** The HMAC key of a webhook secret ("whsec_" and base64). */
export function secretKey(secret: string): Buffer {
  if (!secret || !secret.startsWith('whsec_')) {
    throw new Error('a webhook secret starts with "whsec_" (stitchd webhook-secret prints it)');
  }
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  if (key.length === 0) throw new Error("the webhook secret's part after whsec_ is not base64");
  return key;
}

function header(headers: IncomingHttpHeaders | Record<string, string | undefined>, name: string): string | undefined {
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(' ') : v;
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
export function verifySignature(
  key: Buffer,
  headers: IncomingHttpHeaders | Record<string, string | undefined>,
  body: Buffer,
  opts: { now?: number; toleranceSeconds?: number } = {},
): void {
  const id = header(headers, 'webhook-id');
  const ts = header(headers, 'webhook-timestamp');
  const sigs = header(headers, 'webhook-signature');
  if (!id || !ts || !sigs) throw new SignatureError('missing webhook-id, webhook-timestamp or webhook-signature');
  if (!/^\d+$/.test(ts)) throw new SignatureError('webhook-timestamp is not a number');
  const now = opts.now ?? Date.now() / 1000;
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - Number(ts)) > tolerance) throw new SignatureError(`webhook-timestamp is more than ${tolerance} s away`);
  const mac = crypto.createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
  const want = Buffer.from(`v1,${mac}`);
  const ok = sigs.split(' ').some((s) => {
    const got = Buffer.from(s);
    return got.length === want.length && crypto.timingSafeEqual(got, want);
  });
  if (!ok) throw new SignatureError('no signature matches');
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** The start of an answer's body, on one line, for errors. */
async function excerpt(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  return text.slice(0, 300).split(/\s+/).filter(Boolean).join(' ');
}

/**
 * POSTs a callback, retrying network errors, 429 and 5xx up to tries times
 * with backoff (a repeat is harmless). 409 throws a StaleError; another 4xx
 * is final.
 */
async function postCallback(url: string, body: unknown, tries: number): Promise<void> {
  const data = JSON.stringify(body);
  let last = '';
  for (let attempt = 0; attempt < tries; attempt++) {
    if (attempt > 0) await sleep(250 * 2 ** (attempt - 1)); // 0.25, 0.5, 1, 2, 4 s
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: data,
        signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
      });
    } catch (e) {
      last = (e as Error).message;
      continue;
    }
    const text = await excerpt(res);
    if (res.ok) return;
    if (res.status === 409) throw new StaleError(`callback answered 409: ${text}`);
    if (res.status === 400 || res.status === 413) throw new RefusedError(`callback answered ${res.status}: ${text}`);
    if (res.status < 500 && res.status !== 429) throw new Error(`callback answered ${res.status}: ${text}`);
    last = `stitchd answered ${res.status}`;
  }
  throw new Error(`callback failed after ${tries} tries: ${last}`);
}

/** stitchd answered a callback 400 or 413: it will not take that body, however often it is sent. */
class RefusedError extends Error {}

/** One attempt of a Worker node, pushed or pulled. */
export class Task {
  /** Aborts when stitchd no longer runs the attempt or a shutdown's grace ends: stop, nothing more is reported. */
  readonly signal: AbortSignal;
  private readonly controller: AbortController;

  constructor(
    readonly runId: string,
    /** The node-state key: the node's id, or <id>_<i> for a Splitter's item. */
    readonly nodeId: string,
    readonly attempt: number,
    readonly input: any,
    readonly config: Record<string, unknown>,
    /** Where the result goes; the library calls it. A credential: keep it out of logs. */
    readonly callbackUrl: string,
    /** A pulled task's lease end (RFC 3339), unless a heartbeat extends it. */
    readonly leaseExpiresAt?: string,
    /** A pushed task's webhook-id. */
    readonly messageId?: string,
  ) {
    this.controller = new AbortController();
    this.signal = this.controller.signal;
  }

  /**
   * Reports progress and extends the attempt's deadline or lease now (the
   * library also does so on its own). Rejects with a StaleError, and aborts
   * signal, when stitchd no longer runs the attempt.
   */
  async heartbeat(progress?: unknown): Promise<void> {
    const body: Record<string, unknown> = { status: 'running' };
    if (progress !== undefined) body.progress = progress;
    try {
      await postCallback(this.callbackUrl, body, HEARTBEAT_TRIES);
    } catch (e) {
      if (e instanceof StaleError) this.abort(e);
      throw e;
    }
  }

  /** @internal */
  abort(reason: Error): void {
    if (!this.signal.aborted) this.controller.abort(reason);
  }
}

type State = 'running' | 'reporting' | 'abandoned';

interface Inflight {
  task: Task;
  state: State;
  reported: Promise<void>;
  markReported: () => void;
}

/**
 * Runs tasks, push's and pull's alike: the handler with heartbeats beside
 * it, its result reported, and a drain for shutdown.
 */
class Runner {
  private readonly running = new Set<Inflight>();
  private closed = false;
  private idle: (() => void)[] = [];

  constructor(
    private readonly handler: Handler,
    private readonly heartbeatIntervalMs: number | undefined,
    /** The node data's field the lease is read from: leaseSeconds (pull) or timeoutSeconds (push). */
    private readonly leaseKey: string,
    readonly log: Logger,
  ) {}

  get inFlight(): number {
    return this.running.size;
  }

  /** Runs task; false (nothing run) once draining. done is called when it is over. */
  start(task: Task, done: () => void = () => {}): boolean {
    if (this.closed) return false;
    let markReported = () => {};
    const reported = new Promise<void>((r) => (markReported = r));
    const f: Inflight = { task, state: 'running', reported, markReported };
    this.running.add(f);
    void this.work(f)
      .catch((e: Error) => this.log.error(`run ${task.runId} node ${task.nodeId}: ${e.message}`))
      .finally(() => {
        this.running.delete(f);
        done();
        if (this.running.size === 0) for (const w of this.idle.splice(0)) w();
      });
    return true;
  }

  private interval(task: Task): number {
    if (this.heartbeatIntervalMs !== undefined) return this.heartbeatIntervalMs;
    const v = task.config[this.leaseKey];
    // Whole seconds, as stitchd reads them: a fraction rounds up (0.5 is 1 s, not the default).
    const secs = typeof v === 'number' && v > 0 ? Math.ceil(v) : DEFAULT_LEASE_SECONDS;
    // setTimeout fires at once past 2^31-1 ms (24.8 days), which would
    // heartbeat without pause: a beat every 24 days is often enough.
    return Math.min((secs * 1000) / 3, MAX_HEARTBEAT_EVERY_MS);
  }

  private async work(f: Inflight): Promise<void> {
    const t = f.task;
    const every = this.interval(t);
    let timer: NodeJS.Timeout | undefined;
    let beating: Promise<void> = Promise.resolve();
    let finished = false;
    const beat = (wait: number) => {
      timer = setTimeout(() => {
        beating = t.heartbeat().then(
          () => {
            if (!finished) beat(every);
          },
          (e: Error) => {
            if (e instanceof StaleError) {
              this.log.info(`run ${t.runId} node ${t.nodeId}: stitchd no longer runs attempt ${t.attempt}; task aborted`);
            } else if (!finished && !t.signal.aborted) {
              this.log.warn(`run ${t.runId} node ${t.nodeId}: heartbeat: ${e.message}`);
              beat(Math.max(every / 4, 100)); // again well before the lease ends
            }
          },
        );
      }, wait);
    };
    if (every > 0) beat(every);
    let output: unknown;
    let error: unknown;
    let failed = false;
    try {
      output = await this.handler(t);
    } catch (e) {
      failed = true;
      error = e;
    }
    finished = true;
    clearTimeout(timer);
    await beating;
    if (f.state !== 'running') return; // the shutdown reported it
    f.state = 'reporting';
    try {
      if (t.signal.reason instanceof StaleError) {
        this.log.info(`run ${t.runId} node ${t.nodeId}: stitchd no longer runs this attempt; result dropped`);
        return;
      }
      await this.report(t, output, failed ? error ?? new Error('failed') : undefined);
    } finally {
      f.markReported();
    }
  }

  /** Sends a result: completed with output, or failed with error (retryable unless a NonRetryableError). */
  async report(t: Task, output: unknown, error?: unknown): Promise<void> {
    let body: Record<string, unknown> | undefined;
    if (error === undefined) {
      try {
        const encoded = JSON.stringify(output === undefined ? null : output);
        body = { status: 'completed', output: JSON.parse(encoded) };
      } catch (e) {
        error = new NonRetryableError(`the handler's output cannot be encoded as JSON: ${(e as Error).message}`);
      }
    }
    if (error !== undefined) {
      const text = (error instanceof Error ? error.message || error.name : String(error)) || 'failed';
      body = { status: 'failed', error: text.slice(0, MAX_ERROR_LEN) };
      if (error instanceof NonRetryableError) body.retryable = false;
    }
    try {
      try {
        await postCallback(t.callbackUrl, body, RESULT_TRIES);
      } catch (e) {
        if (!(e instanceof RefusedError) || error !== undefined) throw e;
        // An output stitchd refuses (over its --body-limit, a number too
        // long) would be refused from every attempt: fail the node now,
        // saying why, rather than at its deadline.
        error = new NonRetryableError(`the output was refused: ${e.message}`);
        const failed = { status: 'failed', error: (error as Error).message.slice(0, MAX_ERROR_LEN), retryable: false };
        await postCallback(t.callbackUrl, failed, RESULT_TRIES);
      }
      if (error !== undefined) this.log.info(`run ${t.runId} node ${t.nodeId} attempt ${t.attempt} failed: ${String(error)}`);
    } catch (e) {
      this.log.error(`run ${t.runId} node ${t.nodeId}: reporting the result: ${(e as Error).message}`);
    }
  }

  /**
   * Refuses new tasks, waits up to graceMs for the running ones, then aborts
   * those still running (a ShuttingDownError) and reports them failed with
   * "worker shutting down" — retryable, so the retry policy queues the next
   * attempt. Resolves to how many were failed so.
   */
  async drain(graceMs: number): Promise<number> {
    this.closed = true;
    if (this.running.size > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(graceMs, 0));
        this.idle.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    const waits: Promise<void>[] = [];
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

interface Dispatch {
  runId: string;
  nodeId: string;
  attempt: number;
  config: Record<string, unknown>;
  input: unknown;
  callbackUrl: string;
}

export interface PushOptions {
  /** The webhook secret dispatches are signed with ("whsec_…": `stitchd webhook-secret`, or a flow's own). */
  secret: string;
  handler: Handler;
  /** Between heartbeats while a handler runs (default a third of the node's timeoutSeconds; 0 or less: none). */
  heartbeatIntervalMs?: number;
  toleranceSeconds?: number;
  /** Bounds a dispatch's body (default 16 MiB). */
  maxBodyBytes?: number;
  logger?: Logger;
}

/**
 * A pushed worker's endpoint: listener is an http.createServer listener.
 * It verifies each dispatch's signature (401), answers 202 at once, runs the
 * handler and calls back; a repeated webhook-id is answered 202 and not
 * worked twice; after shutdown() starts it answers 503, which stitchd
 * retries.
 */
export class PushHandler {
  private readonly key: Buffer;
  private readonly runner: Runner;
  private readonly seen = new Set<string>(); // webhook-ids seen (insertion-ordered): delivery is at least once
  private readonly tolerance: number;
  private readonly maxBody: number;

  constructor(opts: PushOptions) {
    if (typeof opts.handler !== 'function') throw new Error('PushOptions.handler is required');
    this.key = secretKey(opts.secret);
    this.tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
    this.maxBody = opts.maxBodyBytes ?? 16 << 20;
    const every = opts.heartbeatIntervalMs === undefined ? undefined : Math.max(opts.heartbeatIntervalMs, 0);
    this.runner = new Runner(opts.handler, every, 'timeoutSeconds', opts.logger ?? consoleLogger);
  }

  get inFlight(): number {
    return this.runner.inFlight;
  }

  /** Answers one request: its status code and text. */
  handle(method: string, headers: IncomingHttpHeaders | Record<string, string | undefined>, body: Buffer): { status: number; text: string } {
    if (method !== 'POST') return { status: 405, text: 'POST only' };
    if (body.length > this.maxBody) return { status: 413, text: 'body too large' };
    try {
      verifySignature(this.key, headers, body, { toleranceSeconds: this.tolerance });
    } catch (e) {
      return { status: 401, text: (e as Error).message };
    }
    let d: Dispatch;
    try {
      d = JSON.parse(body.toString('utf8')) as Dispatch;
      if (!d || typeof d.callbackUrl !== 'string' || typeof d.runId !== 'string') throw new Error();
    } catch {
      return { status: 400, text: 'not a stitchd dispatch' };
    }
    const id = header(headers, 'webhook-id') as string;
    if (this.seen.has(id)) return { status: 202, text: 'accepted (a repeat)' };
    this.seen.add(id);
    if (this.seen.size > SEEN_IDS) this.seen.delete(this.seen.values().next().value as string);
    const config = d.config && typeof d.config === 'object' ? d.config : {};
    const task = new Task(d.runId, d.nodeId, d.attempt, d.input, config, d.callbackUrl, undefined, id);
    if (!this.runner.start(task)) {
      this.seen.delete(id); // not taken: its retry must be worked
      return { status: 503, text: SHUTTING_DOWN };
    }
    return { status: 202, text: 'accepted' };
  }

  /** An http.createServer listener. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    const answer = (status: number, text: string) => {
      const headers: Record<string, string> = { 'Content-Type': 'text/plain; charset=utf-8' };
      if (status === 503) headers['Retry-After'] = '5';
      res.writeHead(status, headers);
      res.end(text + '\n');
    };
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= this.maxBody) chunks.push(c);
    });
    req.on('end', () => {
      if (size > this.maxBody) return answer(413, 'body too large');
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
  shutdown(graceMs = 30_000): Promise<number> {
    return this.runner.drain(graceMs);
  }
}

export interface PullOptions {
  /** stitchd's base URL. */
  url: string;
  /** A worker token (POST /api/v1/tokens {"role": "worker"}): it may poll and nothing else. */
  token: string;
  /** The queue polled: a Worker node's data.queue. */
  queue: string;
  handler: Handler;
  /** Names this worker on its attempts and in GET /api/v1/queues (default <hostname>/<pid>). */
  worker?: string;
  /** The most tasks held at once (default 1): each poll asks for the free slots only. */
  concurrency?: number;
  /** How long a poll waits for a task (1 to 60; default 20). */
  waitSeconds?: number;
  /** Between heartbeats while a handler runs (default a third of the node's leaseSeconds; 0 or less: none). */
  heartbeatIntervalMs?: number;
  /** The first wait after a failed poll (default 1 s), doubled on each failure in a row up to 30 s. */
  errorBackoffMs?: number;
  logger?: Logger;
}

interface PolledTask {
  run_id: string;
  node_id: string;
  attempt: number;
  input: unknown;
  config: Record<string, unknown>;
  callback_url: string;
  lease_expires_at: string;
}

/**
 * Works one queue's tasks: long-polls stitchd for as many tasks as it has
 * free slots, runs each with heartbeats beside it and reports each result.
 */
export class Puller {
  private readonly opts: Required<Omit<PullOptions, 'heartbeatIntervalMs' | 'logger'>>;
  private readonly runner: Runner;
  private readonly pollUrl: string;
  private free: number;
  private slotFreed: (() => void) | undefined;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(opts: PullOptions) {
    const missing = (['url', 'token', 'queue', 'handler'] as const).filter((k) => !opts[k]);
    if (missing.length > 0) throw new Error(`PullOptions needs ${missing.join(', ')}`);
    const waitSeconds = opts.waitSeconds ?? DEFAULT_WAIT_SECONDS;
    if (!(waitSeconds >= 1 && waitSeconds <= 60)) throw new Error(`waitSeconds ${waitSeconds}: stitchd waits 1 to 60 seconds`);
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

  get inFlight(): number {
    return this.runner.inFlight;
  }

  start(): this {
    if (this.loop) throw new Error('the puller was started already');
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
  async stop(graceMs = 30_000): Promise<number> {
    this.stopping.abort();
    this.slotFreed?.();
    await this.loop;
    return this.runner.drain(graceMs);
  }

  private release(n = 1): void {
    this.free += n;
    const w = this.slotFreed;
    this.slotFreed = undefined;
    w?.();
  }

  private async run(): Promise<void> {
    const stop = this.stopping.signal;
    let failures = 0;
    while (!stop.aborted) {
      while (this.free === 0 && !stop.aborted) await new Promise<void>((r) => (this.slotFreed = r));
      if (stop.aborted) return;
      const asked = Math.min(this.free, 100);
      this.free -= asked;
      let tasks: Task[];
      try {
        tasks = await this.poll(asked);
        failures = 0;
      } catch (e) {
        this.release(asked);
        if (stop.aborted) return;
        failures++;
        let delay = Math.min(this.opts.errorBackoffMs * 2 ** (failures - 1), MAX_ERROR_BACKOFF_MS);
        delay -= Math.random() * (delay / 2);
        this.runner.log.warn(`poll of ${this.opts.queue} failed (${(e as Error).message}); again in ${(delay / 1000).toFixed(1)} s`);
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
        } else if (!this.runner.start(t, () => this.release())) {
          this.release();
        }
      });
      if (tasks.length < asked) this.release(asked - tasks.length);
    }
  }

  private async poll(max: number): Promise<Task[]> {
    const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout((this.opts.waitSeconds + 30) * 1000)]);
    const res = await fetch(this.pollUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${this.opts.token}` },
      body: JSON.stringify({ queue: this.opts.queue, worker: this.opts.worker, max, wait_seconds: this.opts.waitSeconds }),
      signal,
    });
    if (res.status !== 200) throw new Error(`stitchd answered ${res.status}: ${await excerpt(res)}`);
    const out = (await res.json()) as { tasks?: PolledTask[] };
    return (out.tasks ?? []).map(
      (t) =>
        new Task(t.run_id, t.node_id, t.attempt, t.input, t.config && typeof t.config === 'object' ? t.config : {},
          t.callback_url, t.lease_expires_at),
    );
  }
}
