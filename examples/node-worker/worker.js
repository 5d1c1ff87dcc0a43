#!/usr/bin/env node
// A stitchd worker in Node.js (20.3+) on sdk/node (no dependencies). Its job
// greets the input's name.
//
// Push (default): it serves the dispatches stitchd POSTs — the library
// verifies each Standard Webhooks signature, answers 202 at once, runs the
// job and calls back.
//
//   STITCHD_WEBHOOK_SECRET=$(stitchd webhook-secret) node examples/node-worker/worker.js
//
// Then point a Worker node's webhookUrl at http://127.0.0.1:9003/greet.
//
// Pull (QUEUE set): it polls that queue with a worker token, needing no
// address of its own.
//
//   QUEUE=greetings STITCHD_URL=http://127.0.0.1:8080 STITCHD_WORKER_TOKEN=stp_… node examples/node-worker/worker.js
//
// SIGINT or SIGTERM stops it gracefully: running jobs get 30 s to finish.
'use strict';

const http = require('node:http');
const { PushHandler, Puller } = require('../../sdk/node');

const GRACE_MS = 30_000;

// greet is the job. A real worker calls an API, runs a model…
async function greet(task) {
  const name = (task.input && task.input.name) || 'world';
  // Progress for the run view; the library also heartbeats on its own while
  // a job runs, so a long one keeps its deadline or lease.
  await task.heartbeat({ step: 'greeting' });
  await new Promise((resolve) => setTimeout(resolve, 100)); // the "work"
  return { worker: 'node', greeting: `Hello, ${name}!`, node: task.nodeId, attempt: task.attempt };
}

function onStop(fn) {
  for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, fn);
}

if (process.env.QUEUE) {
  const url = process.env.STITCHD_URL || 'http://127.0.0.1:8080';
  const puller = new Puller({
    url,
    token: process.env.STITCHD_WORKER_TOKEN || '',
    queue: process.env.QUEUE,
    worker: process.env.WORKER_ID,
    concurrency: 4,
    handler: greet,
  }).start();
  console.log(`node worker polling queue ${process.env.QUEUE} at ${url}`);
  onStop(() => puller.stop(GRACE_MS).then(() => process.exit(0)));
} else {
  let handler;
  try {
    handler = new PushHandler({ secret: process.env.STITCHD_WEBHOOK_SECRET || '', handler: greet });
  } catch {
    console.error("set STITCHD_WEBHOOK_SECRET to the server's webhook secret (whsec_…; `stitchd webhook-secret` prints it)");
    process.exit(1);
  }
  const server = http.createServer(handler.listener);
  const addr = process.env.ADDR || '127.0.0.1:9003';
  const i = addr.lastIndexOf(':');
  server.listen(Number(addr.slice(i + 1)), addr.slice(0, i), () => {
    console.log(`node worker listening on http://${addr}`);
  });
  onStop(() => {
    server.close();
    server.closeIdleConnections();
    handler.shutdown(GRACE_MS).then(() => process.exit(0));
  });
}
