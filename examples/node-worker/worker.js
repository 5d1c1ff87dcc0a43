#!/usr/bin/env node
// A stitchd worker in Node.js (18+) with no dependencies: it verifies each
// dispatch's Standard Webhooks signature, answers 202 at once, does its
// work asynchronously and calls back.
//
//   STITCHD_WEBHOOK_SECRET=$(stitchd webhook-secret) node examples/node-worker/worker.js
//
// Then point a Worker node's webhookUrl at http://127.0.0.1:9003/greet.
'use strict';

const http = require('node:http');
const crypto = require('node:crypto');

const TOLERANCE_SECONDS = 5 * 60; // age limit of webhook-timestamp (replays)

const secret = process.env.STITCHD_WEBHOOK_SECRET || '';
if (!secret.startsWith('whsec_')) {
  console.error("set STITCHD_WEBHOOK_SECRET to the server's webhook secret (whsec_…; `stitchd webhook-secret` prints it)");
  process.exit(1);
}
const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
const seen = new Set(); // webhook-ids seen: delivery is at least once

// verify throws unless the Standard Webhooks signature is valid:
// webhook-signature holds one or more space-separated
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>".
function verify(headers, body) {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigs = headers['webhook-signature'];
  if (!id || !ts || !sigs) throw new Error('missing webhook-id, webhook-timestamp or webhook-signature');
  const sec = Number.parseInt(ts, 10);
  if (!Number.isFinite(sec)) throw new Error('invalid webhook-timestamp');
  if (Math.abs(Date.now() / 1000 - sec) > TOLERANCE_SECONDS) throw new Error('webhook-timestamp too old or in the future');
  const mac = crypto.createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
  const want = Buffer.from(`v1,${mac}`);
  const ok = sigs.split(' ').some((s) => {
    const got = Buffer.from(s);
    return got.length === want.length && crypto.timingSafeEqual(got, want);
  });
  if (!ok) throw new Error('no matching signature');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// callBack POSTs the result; it retries network errors and 5xx, never a 409.
async function callBack(url, payload) {
  for (let attempt = 0; attempt < 5; attempt++) {
    if (attempt) await sleep(500 * attempt);
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(10000),
      });
      await res.arrayBuffer();
      if (res.ok) return;
      if (res.status < 500) throw Object.assign(new Error(`stitchd answered ${res.status}`), { final: true });
    } catch (e) {
      if (e.final) throw e;
    }
  }
  throw new Error('callback failed after 5 tries');
}

// work is the job: greet the input's name. A real worker calls an API, runs a model…
async function work(d) {
  const name = (d.input && d.input.name) || 'world';
  await callBack(d.callbackUrl, { status: 'running', progress: { step: 'greeting' } });
  await sleep(100);
  const output = { worker: 'node', greeting: `Hello, ${name}!`, node: d.nodeId, attempt: d.attempt };
  await callBack(d.callbackUrl, { status: 'completed', output });
  console.log(`run ${d.runId} node ${d.nodeId}: done`);
}

const server = http.createServer((req, res) => {
  const answer = (code, text) => {
    res.writeHead(code, { 'Content-Type': 'text/plain' });
    res.end(text + '\n');
  };
  if (req.method !== 'POST') return answer(405, 'POST only');
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size <= 1 << 20) chunks.push(c);
  });
  req.on('end', () => {
    if (size > 1 << 20) return answer(413, 'too large');
    const body = Buffer.concat(chunks);
    try {
      verify(req.headers, body);
    } catch (e) {
      return answer(401, e.message);
    }
    let d;
    try {
      d = JSON.parse(body.toString('utf8'));
      if (!d.callbackUrl) throw new Error();
    } catch {
      return answer(400, 'not a stitchd dispatch');
    }
    const id = req.headers['webhook-id'];
    const duplicate = seen.has(id);
    seen.add(id);
    answer(202, 'accepted'); // answer first: the work happens after
    if (!duplicate) work(d).catch((e) => console.error(`run ${d.runId} node ${d.nodeId}: ${e.message}`));
  });
});

const addr = process.env.ADDR || '127.0.0.1:9003';
const i = addr.lastIndexOf(':');
server.listen(Number(addr.slice(i + 1)), addr.slice(0, i), () => {
  console.log(`node worker listening on http://${addr}`);
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
