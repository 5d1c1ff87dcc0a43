"use strict";
// Tests of the library against a real stitchd: sdk/sdk_test.go starts one
// and runs them (go test ./sdk/), with STITCHD_URL, STITCHD_ADMIN_TOKEN,
// STITCHD_WORKER_TOKEN and STITCHD_WEBHOOK_SECRET pointing at it.
Object.defineProperty(exports, "__esModule", { value: true });
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const http = require("node:http");
const node_test_1 = require("node:test");
const index_1 = require("./index");
function env(name) {
    const v = process.env[name];
    if (!v)
        throw new Error(`${name} is not set: these tests run through \`go test ./sdk/\`, which starts stitchd (sdk/sdk_test.go)`);
    return v;
}
async function api(method, path, body) {
    const res = await fetch(env('STITCHD_URL') + path, {
        method,
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${env('STITCHD_ADMIN_TOKEN')}` },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok)
        throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
}
const unique = (prefix) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** A flow of one Worker node, id "work", with data: its id. */
async function makeFlow(data) {
    const f = await api('POST', '/api/v1/flows', {
        name: unique('node'),
        graph: { nodes: [{ id: 'work', type: 'Worker', data }], edges: [] },
    });
    return f.id;
}
async function startRun(flow, input) {
    return (await api('POST', `/api/v1/flows/${flow}/runs`, { input })).id;
}
async function waitRun(id, timeoutMs = 60_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const r = await api('GET', `/api/v1/runs/${id}`);
        if (['completed', 'failed', 'cancelled'].includes(r.status))
            return r;
        if (Date.now() > deadline)
            throw new Error(`run ${id} did not finish: ${r.status}`);
        await sleep(20);
    }
}
async function queueStats(name) {
    const qs = await api('GET', '/api/v1/queues');
    return qs.find((q) => q.name === name) ?? { name, pending: 0, leased: 0, workers: [] };
}
async function eventually(cond, what, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    while (!(await cond())) {
        if (Date.now() > deadline)
            throw new Error(`timed out waiting for ${what}`);
        await sleep(20);
    }
}
/** The tests' job: greet input.name; fail on input.fail (for good when input.permanent, else while attempt <= failUntil); throw on input.crash; take input.sleepMs (stopping early when aborted). */
const greet = async (task) => {
    const inp = task.input ?? {};
    if (inp.sleepMs) {
        await new Promise((resolve, reject) => {
            const t = setTimeout(resolve, inp.sleepMs);
            task.signal.addEventListener('abort', () => {
                clearTimeout(t);
                reject(task.signal.reason);
            });
        });
    }
    if (inp.crash)
        throw new TypeError('the job broke');
    if (inp.fail && inp.permanent)
        throw new index_1.NonRetryableError(inp.fail);
    if (inp.fail && task.attempt <= (inp.failUntil ?? 0))
        throw new Error(inp.fail);
    return { greeting: `Hello, ${inp.name}!`, node: task.nodeId, attempt: task.attempt };
};
function listen(t, listener) {
    const server = http.createServer(listener);
    t.after(() => {
        server.closeAllConnections();
        server.close();
    });
    return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)));
}
async function servePush(t, opts) {
    const h = new index_1.PushHandler({ secret: env('STITCHD_WEBHOOK_SECRET'), ...opts });
    t.after(() => h.shutdown(5000));
    return { url: await listen(t, h.listener), h };
}
function startPuller(t, opts) {
    const p = new index_1.Puller({ url: env('STITCHD_URL'), token: env('STITCHD_WORKER_TOKEN'), ...opts }).start();
    t.after(() => p.stop(5000));
    return p;
}
const sign = (key, id, ts, body) => 'v1,' + crypto.createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
(0, node_test_1.describe)('signature', () => {
    const key = (0, index_1.secretKey)('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    const body = Buffer.from('{"test": 2432232314}');
    const good = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
    const headers = (sig) => ({
        'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        'webhook-timestamp': '1614265330',
        'webhook-signature': sig,
    });
    (0, node_test_1.test)('the documented test vector, and beside another signature (rotation)', () => {
        (0, index_1.verifySignature)(key, headers(good), body, { now: 1614265330 });
        (0, index_1.verifySignature)(key, headers(`v1,bm90IHRoaXMgb25l ${good}`), body, { now: 1614265330 });
        assert.equal(sign(key, 'msg_p5jXN8AQM9LWM0D4loKWxJek', '1614265330', body), good);
    });
    (0, node_test_1.test)('refusals', () => {
        assert.throws(() => (0, index_1.verifySignature)(key, headers(good), Buffer.from('{"test": 1}'), { now: 1614265330 }), index_1.SignatureError);
        assert.throws(() => (0, index_1.verifySignature)(key, headers(good), body, { now: 1614265330 + 360 }), index_1.SignatureError);
        assert.throws(() => (0, index_1.verifySignature)(key, headers(good), body, { now: 1614265330 - 360 }), index_1.SignatureError);
        assert.throws(() => (0, index_1.verifySignature)(key, headers(''), body, { now: 1614265330 }), index_1.SignatureError);
        assert.throws(() => (0, index_1.secretKey)('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'));
    });
});
(0, node_test_1.describe)('push', { concurrency: true }, () => {
    (0, node_test_1.test)('runs complete; a throw is retried, a NonRetryableError is not; bad requests are refused', async (t) => {
        const { url } = await servePush(t, { handler: greet });
        const flow = await makeFlow({ webhookUrl: url + '/greet', timeoutSeconds: 30, retry: { maxAttempts: 3, initialDelayMs: 10 } });
        const [ada, grace, card, crash] = await Promise.all([
            startRun(flow, { name: 'Ada' }),
            startRun(flow, { name: 'Grace', fail: 'flaky', failUntil: 1 }),
            startRun(flow, { fail: 'invalid card', permanent: true }),
            startRun(flow, { crash: true }),
        ]);
        let r = await waitRun(ada);
        assert.equal(r.status, 'completed');
        assert.deepEqual(r.output, { greeting: 'Hello, Ada!', node: 'work', attempt: 1 });
        r = await waitRun(grace);
        assert.equal(r.status, 'completed');
        assert.equal(r.output.attempt, 2);
        r = await waitRun(card);
        assert.equal(r.status, 'failed');
        assert.equal(r.nodes.work.attempt, 1);
        assert.match(r.nodes.work.error, /invalid card/);
        r = await waitRun(crash);
        assert.equal(r.status, 'failed');
        assert.equal(r.nodes.work.attempt, 3);
        assert.match(r.nodes.work.error, /the job broke/);
        const now = String(Math.floor(Date.now() / 1000));
        for (const headers of [
            { 'webhook-id': 'msg_x', 'webhook-timestamp': now },
            { 'webhook-id': 'msg_x', 'webhook-timestamp': now, 'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' },
        ]) {
            const res = await fetch(url + '/greet', { method: 'POST', headers, body: '{}' });
            await res.text();
            assert.equal(res.status, 401);
        }
        const res = await fetch(url + '/greet');
        await res.text();
        assert.equal(res.status, 405);
    });
    (0, node_test_1.test)('heartbeats every third of timeoutSeconds as stitchd reads it: 0.5 is 1 s; 81 days is no timer overflow', async (t) => {
        // The callbacks go to a loopback server of the test's, which counts them.
        const beats = new Map();
        const done = new Map();
        const cb = await listen(t, (req, res) => {
            let body = '';
            req.on('data', (c) => (body += c.toString()));
            req.on('end', () => {
                const key = req.url ?? '';
                if (JSON.parse(body).status === 'running')
                    beats.set(key, (beats.get(key) ?? 0) + 1);
                else
                    done.get(key)?.();
                res.end('{}');
            });
        });
        const secret = env('STITCHD_WEBHOOK_SECRET');
        const h = new index_1.PushHandler({ secret, handler: () => sleep(1200).then(() => ({})) });
        t.after(() => h.shutdown(5000));
        const key = (0, index_1.secretKey)(secret);
        for (const [timeoutSeconds, min, max] of [[0.5, 2, 5], [7_000_000, 0, 0]]) {
            const path = `/cb-${timeoutSeconds}`;
            const finished = new Promise((r) => done.set(path, r));
            const body = Buffer.from(JSON.stringify({ runId: 'r', nodeId: 'work', attempt: 1, config: { timeoutSeconds }, input: {}, callbackUrl: cb + path }));
            const ts = String(Math.floor(Date.now() / 1000));
            const id = unique('msg');
            const a = h.handle('POST', { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sign(key, id, ts, body) }, body);
            assert.equal(a.status, 202);
            await finished;
            const n = beats.get(path) ?? 0;
            assert.ok(n >= min && n <= max, `timeoutSeconds ${timeoutSeconds}: ${n} heartbeats in 1.2 s, want ${min} to ${max}`);
        }
    });
    (0, node_test_1.test)('the same webhook-id twice: 202 both times, worked once', async (t) => {
        const got = [];
        const cb = await listen(t, (req, res) => {
            const chunks = [];
            req.on('data', (c) => chunks.push(c));
            req.on('end', () => {
                got.push(JSON.parse(Buffer.concat(chunks).toString()));
                res.end();
            });
        });
        const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
        const calls = [];
        const h = new index_1.PushHandler({
            secret,
            handler: (task) => {
                calls.push(task.messageId ?? '');
                return { n: 1 };
            },
        });
        const body = Buffer.from(JSON.stringify({ runId: 'r1', nodeId: 'n', attempt: 1, config: {}, input: {}, callbackUrl: cb + '/cb' }));
        for (let i = 0; i < 2; i++) {
            const ts = String(Math.floor(Date.now() / 1000));
            const sig = sign((0, index_1.secretKey)(secret), 'msg_dup', ts, body);
            assert.equal(h.handle('POST', { 'webhook-id': 'msg_dup', 'webhook-timestamp': ts, 'webhook-signature': sig }, body).status, 202);
        }
        await eventually(() => got.length === 1, 'the callback');
        assert.equal(await h.shutdown(5000), 0);
        assert.deepEqual(calls, ['msg_dup']);
        assert.deepEqual(got[0], { status: 'completed', output: { n: 1 } });
    });
    for (const [name, every, want] of [
        ['heartbeats', undefined, 'completed'],
        ['none', 0, 'failed'],
    ]) {
        (0, node_test_1.test)(`a 9 s handler beside timeoutSeconds 6: ${name} → ${want}`, async (t) => {
            const { url } = await servePush(t, { handler: greet, heartbeatIntervalMs: every });
            const flow = await makeFlow({ webhookUrl: url, timeoutSeconds: 6, retry: { maxAttempts: 1 } });
            const r = await waitRun(await startRun(flow, { name: 'Ada', sleepMs: 9000 }));
            assert.equal(r.status, want);
            assert.equal(r.nodes.work.attempt, 1);
            if (want === 'failed')
                assert.match(r.nodes.work.error, /deadline exceeded/);
        });
    }
    (0, node_test_1.test)('shutdown lets a quick handler report and fails a stuck one (retried)', async (t) => {
        const started = [];
        const reasons = [];
        let release = () => { };
        const released = new Promise((r) => (release = r));
        const h = new index_1.PushHandler({
            secret: env('STITCHD_WEBHOOK_SECRET'),
            handler: async (task) => {
                started.push(task.input.mode);
                if (task.input.mode === 'quick') {
                    await released;
                    return { mode: 'quick' };
                }
                await new Promise((r) => task.signal.addEventListener('abort', r));
                reasons.push(task.signal.reason);
                throw task.signal.reason;
            },
        });
        const url = await listen(t, h.listener);
        const flow = await makeFlow({ webhookUrl: url, timeoutSeconds: 60, delivery: { maxTries: 1 }, retry: { maxAttempts: 2, initialDelayMs: 10 } });
        const quick = await startRun(flow, { mode: 'quick' });
        const stuck = await startRun(flow, { mode: 'stuck' });
        await eventually(() => started.length === 2, 'both handlers to start');
        setTimeout(release, 200);
        const began = Date.now();
        assert.equal(await h.shutdown(1000), 1);
        assert.ok(Date.now() - began < 5000);
        assert.equal(reasons.length, 1);
        assert.ok(reasons[0] instanceof index_1.ShuttingDownError);
        assert.equal((await waitRun(quick)).status, 'completed');
        const r = await waitRun(stuck);
        assert.equal(r.status, 'failed');
        assert.equal(r.nodes.work.attempt, 2, "the shutdown's failure was retried");
    });
});
(0, node_test_1.describe)('pull', { concurrency: true }, () => {
    (0, node_test_1.test)('pulled runs complete, each attempt named with the worker; retries as with push', async (t) => {
        const queue = unique('greet');
        const flow = await makeFlow({ queue, retry: { maxAttempts: 3, initialDelayMs: 10 } });
        const leases = new Map();
        startPuller(t, {
            queue,
            worker: 'node-host/1',
            concurrency: 2,
            handler: (task) => {
                leases.set(task.runId, task.leaseExpiresAt);
                return greet(task);
            },
        });
        const ada = await startRun(flow, { name: 'Ada' });
        const grace = await startRun(flow, { name: 'Grace', fail: 'flaky', failUntil: 2 });
        const card = await startRun(flow, { fail: 'invalid card', permanent: true });
        let r = await waitRun(ada);
        assert.equal(r.status, 'completed');
        assert.deepEqual(r.output, { greeting: 'Hello, Ada!', node: 'work', attempt: 1 });
        assert.match(JSON.stringify(r), /"worker":"node-host\/1"/);
        assert.ok(leases.get(ada));
        assert.equal((await waitRun(grace)).output.attempt, 3);
        r = await waitRun(card);
        assert.equal(r.status, 'failed');
        assert.equal(r.nodes.work.attempt, 1);
    });
    (0, node_test_1.test)('an output stitchd refuses (413 over its body limit, 400 a number too long) fails the node at once', async (t) => {
        const queue = unique('refused');
        const flow = await makeFlow({ queue, leaseSeconds: 120, retry: { maxAttempts: 3, initialDelayMs: 10 } });
        let calls = 0;
        startPuller(t, {
            queue,
            concurrency: 2,
            handler: (task) => {
                calls++;
                return task.input.big ? { blob: 'x'.repeat(2 << 20) } : { n: 1e100 };
            },
        });
        for (const [big, code] of [[true, 413], [false, 400]]) {
            const began = Date.now();
            const r = await waitRun(await startRun(flow, { big }));
            assert.equal(r.status, 'failed');
            assert.ok(Date.now() - began < 30_000, "failed at once, not at the lease's end");
            assert.equal(r.nodes.work.attempt, 1, 'not retried: every attempt would be refused');
            assert.match(r.nodes.work.error, /the output was refused/);
            assert.match(r.nodes.work.error, new RegExp(`answered ${code}`));
        }
        assert.equal(calls, 2);
    });
    (0, node_test_1.test)('concurrency 3: never more than 3 handlers nor leases at once, yet 3 reached', async (t) => {
        const queue = unique('limit');
        const flow = await makeFlow({ queue });
        const runs = await Promise.all(Array.from({ length: 12 }, (_, i) => startRun(flow, { i })));
        let now = 0;
        let most = 0;
        let leased = 0;
        let done = false;
        const sampler = (async () => {
            while (!done) {
                for (const w of (await queueStats(queue)).workers)
                    leased = Math.max(leased, w.leased);
                await sleep(20);
            }
        })();
        startPuller(t, {
            queue,
            concurrency: 3,
            handler: async () => {
                most = Math.max(most, ++now);
                await sleep(250);
                now--;
                return { done: true };
            },
        });
        try {
            for (const r of runs)
                assert.equal((await waitRun(r)).status, 'completed');
        }
        finally {
            done = true;
            await sampler;
        }
        assert.equal(most, 3);
        assert.ok(leased <= 3, `leased ${leased}`);
        assert.ok(leased > 0);
    });
    for (const [name, every, want] of [
        ['heartbeats', undefined, 'completed'],
        ['none', 0, 'failed'],
    ]) {
        (0, node_test_1.test)(`leaseSeconds 6, a 9 s handler: ${name} → ${want}`, async (t) => {
            const queue = unique('lease');
            const flow = await makeFlow({ queue, leaseSeconds: 6, retry: { maxAttempts: 1 } });
            startPuller(t, { queue, handler: greet, heartbeatIntervalMs: every });
            const r = await waitRun(await startRun(flow, { name: 'Ada', sleepMs: 9000 }));
            assert.equal(r.status, want);
            assert.equal(r.nodes.work.attempt, 1);
            if (want === 'failed')
                assert.match(r.nodes.work.error, /deadline exceeded/);
        });
    }
    (0, node_test_1.test)('a heartbeat answered 409 (the run cancelled) aborts the task', async (t) => {
        const queue = unique('stale');
        const flow = await makeFlow({ queue, leaseSeconds: 3 });
        let started = false;
        let reason;
        startPuller(t, {
            queue,
            handler: async (task) => {
                started = true;
                await new Promise((r) => {
                    task.signal.addEventListener('abort', r);
                    setTimeout(r, 20_000).unref();
                });
                reason = task.signal.reason;
            },
        });
        const run = await startRun(flow, {});
        await eventually(() => started, 'the handler to start');
        await api('POST', `/api/v1/runs/${run}/cancel`, {});
        await eventually(() => reason !== undefined, 'the task to be aborted', 10_000);
        assert.ok(reason instanceof index_1.StaleError);
    });
    (0, node_test_1.test)('stop(grace) stops polling, lets a quick handler report, fails a stuck one; the next attempt waits', async (t) => {
        const queue = unique('stop');
        const flow = await makeFlow({ queue, retry: { maxAttempts: 2, initialDelayMs: 10 } });
        const started = [];
        const reasons = [];
        let release = () => { };
        const released = new Promise((r) => (release = r));
        const p = new index_1.Puller({
            url: env('STITCHD_URL'),
            token: env('STITCHD_WORKER_TOKEN'),
            queue,
            concurrency: 2,
            handler: async (task) => {
                started.push(task.input.mode);
                if (task.input.mode === 'quick') {
                    await released;
                    return { by: 'first' };
                }
                await new Promise((r) => task.signal.addEventListener('abort', r));
                reasons.push(task.signal.reason);
                throw task.signal.reason;
            },
        }).start();
        const quick = await startRun(flow, { mode: 'quick' });
        const stuck = await startRun(flow, { mode: 'stuck' });
        await eventually(() => started.length === 2, 'both handlers to start');
        setTimeout(release, 300);
        const began = Date.now();
        assert.equal(await p.stop(1500), 1);
        assert.ok(Date.now() - began < 5000);
        assert.equal(reasons.length, 1);
        assert.equal(reasons[0].message, index_1.SHUTTING_DOWN);
        assert.deepEqual((await waitRun(quick)).output, { by: 'first' });
        const later = await startRun(flow, { mode: 'later' });
        await eventually(async () => (await queueStats(queue)).pending === 2, 'attempt 2 and the later run to wait');
        await sleep(300);
        assert.equal((await queueStats(queue)).pending, 2, 'nobody polls');
        startPuller(t, { queue, handler: (task) => ({ by: 'second', attempt: task.attempt }) });
        assert.deepEqual((await waitRun(stuck)).output, { by: 'second', attempt: 2 });
        assert.equal((await waitRun(later)).status, 'completed');
    });
    (0, node_test_1.test)('stop() of an idle puller ends its long poll at once', async () => {
        const queue = unique('idle');
        const p = new index_1.Puller({ url: env('STITCHD_URL'), token: env('STITCHD_WORKER_TOKEN'), queue, handler: greet, waitSeconds: 30 }).start();
        await eventually(async () => (await queueStats(queue)).workers.length === 1, 'the poll');
        const began = Date.now();
        assert.equal(await p.stop(), 0);
        assert.ok(Date.now() - began < 2000, `${Date.now() - began} ms`);
    });
    (0, node_test_1.test)('failing polls (a wrong token: 401) back off, doubling', async () => {
        const failures = [];
        const p = new index_1.Puller({
            url: env('STITCHD_URL'),
            token: 'stp_not-a-token',
            queue: unique('nobody'),
            handler: greet,
            errorBackoffMs: 500,
            logger: { info() { }, warn: (m) => failures.push([performance.now(), m]), error() { } },
        }).start();
        await sleep(2500);
        await p.stop();
        // Waits of 0.25–0.5 s, 0.5–1 s, 1–2 s, 2–4 s: at most 4 polls in 2.5 s
        // (fewer when answers are slow), each wait at least half the doubled
        // backoff.
        const all = failures.map(([, m]) => m).join('\n');
        assert.ok(failures.length >= 2 && failures.length <= 4, all);
        failures.forEach(([at, m], i) => {
            assert.match(m, /401/);
            if (i > 0)
                assert.ok(at - failures[i - 1][0] >= 250 * 2 ** (i - 1) - 10, `the wait before poll ${i + 1}: ${all}`);
        });
    });
    (0, node_test_1.test)('options', () => {
        assert.throws(() => new index_1.Puller({ url: '', token: '', queue: '', handler: greet }), /url, token, queue/);
        assert.throws(() => new index_1.Puller({ url: 'http://x', token: 't', queue: 'q', handler: greet, waitSeconds: 61 }), /1 to 60/);
    });
});
