import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
/** Seconds a webhook-timestamp may be from now. */
export declare const DEFAULT_TOLERANCE_SECONDS = 300;
export declare const DEFAULT_WAIT_SECONDS = 20;
export declare const SHUTTING_DOWN = "worker shutting down";
export declare const STALE = "stitchd no longer runs this attempt";
/** A dispatch not signed with the secret (answer it 401). */
export declare class SignatureError extends Error {
    name: string;
}
/** A failure another attempt would repeat: the node fails at once. */
export declare class NonRetryableError extends Error {
    name: string;
}
/** stitchd answered 409: it no longer runs this attempt. */
export declare class StaleError extends Error {
    name: string;
}
/** A task still running when a shutdown's grace period ended. */
export declare class ShuttingDownError extends Error {
    name: string;
    constructor();
}
export interface Logger {
    info(msg: string): void;
    warn(msg: string): void;
    error(msg: string): void;
}
export type Handler = (task: Task) => unknown;
/** The HMAC key of a webhook secret ("whsec_" and base64). */
export declare function secretKey(secret: string): Buffer;
/**
 * Throws a SignatureError unless the Standard Webhooks signature is valid:
 * webhook-signature holds one or more space-separated "v1,<base64
 * HMAC-SHA256 of id.timestamp.body>", one of which must match (in constant
 * time), and webhook-timestamp must be within toleranceSeconds of now
 * (Unix seconds). body is the raw request body, as received.
 */
export declare function verifySignature(key: Buffer, headers: IncomingHttpHeaders | Record<string, string | undefined>, body: Buffer, opts?: {
    now?: number;
    toleranceSeconds?: number;
}): void;
/** One attempt of a Worker node, pushed or pulled. */
export declare class Task {
    readonly runId: string;
    /** The node-state key: the node's id, or <id>_<i> for a Splitter's item. */
    readonly nodeId: string;
    readonly attempt: number;
    readonly input: any;
    readonly config: Record<string, unknown>;
    /** Where the result goes; the library calls it. A credential: keep it out of logs. */
    readonly callbackUrl: string;
    /** A pulled task's lease end (RFC 3339), unless a heartbeat extends it. */
    readonly leaseExpiresAt?: string | undefined;
    /** A pushed task's webhook-id. */
    readonly messageId?: string | undefined;
    /** Aborts when stitchd no longer runs the attempt or a shutdown's grace ends: stop, nothing more is reported. */
    readonly signal: AbortSignal;
    private readonly controller;
    constructor(runId: string, 
    /** The node-state key: the node's id, or <id>_<i> for a Splitter's item. */
    nodeId: string, attempt: number, input: any, config: Record<string, unknown>, 
    /** Where the result goes; the library calls it. A credential: keep it out of logs. */
    callbackUrl: string, 
    /** A pulled task's lease end (RFC 3339), unless a heartbeat extends it. */
    leaseExpiresAt?: string | undefined, 
    /** A pushed task's webhook-id. */
    messageId?: string | undefined);
    /**
     * Reports progress and extends the attempt's deadline or lease now (the
     * library also does so on its own). Rejects with a StaleError, and aborts
     * signal, when stitchd no longer runs the attempt.
     */
    heartbeat(progress?: unknown): Promise<void>;
    /** @internal */
    abort(reason: Error): void;
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
export declare class PushHandler {
    private readonly key;
    private readonly runner;
    private readonly seen;
    private readonly tolerance;
    private readonly maxBody;
    constructor(opts: PushOptions);
    get inFlight(): number;
    /** Answers one request: its status code and text. */
    handle(method: string, headers: IncomingHttpHeaders | Record<string, string | undefined>, body: Buffer): {
        status: number;
        text: string;
    };
    /** An http.createServer listener. */
    readonly listener: (req: IncomingMessage, res: ServerResponse) => void;
    /**
     * Stops taking tasks, waits up to graceMs for the running handlers, then
     * fails those still running as "worker shutting down" (retryable).
     * Resolves to how many were failed so. Close the http.Server first.
     */
    shutdown(graceMs?: number): Promise<number>;
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
/**
 * Works one queue's tasks: long-polls stitchd for as many tasks as it has
 * free slots, runs each with heartbeats beside it and reports each result.
 */
export declare class Puller {
    private readonly opts;
    private readonly runner;
    private readonly pollUrl;
    private free;
    private slotFreed;
    private readonly stopping;
    private loop;
    constructor(opts: PullOptions);
    get inFlight(): number;
    start(): this;
    /**
     * Stops polling at once (an outstanding long poll is abandoned), waits up
     * to graceMs for the running handlers, then fails those still running as
     * "worker shutting down" — retryable, so the node's retry policy queues
     * the next attempt — and resolves to how many. stitchd has no way to give
     * a lease back untried.
     */
    stop(graceMs?: number): Promise<number>;
    private release;
    private run;
    private poll;
}
