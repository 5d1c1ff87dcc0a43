#!/usr/bin/env python3
"""A stitchd worker in Python 3 on sdk/python/stitchd_worker.py (the
standard library only). Its job greets the input's name.

Push (default): it serves the dispatches stitchd POSTs — the library
verifies each Standard Webhooks signature, answers 202 at once, runs the
job on a thread and calls back.

    STITCHD_WEBHOOK_SECRET=$(stitchd webhook-secret) python3 examples/python-worker/worker.py

Then point a Worker node's webhookUrl at http://127.0.0.1:9002/greet.

Pull (QUEUE set): it polls that queue with a worker token, needing no
address of its own.

    QUEUE=greetings STITCHD_URL=http://127.0.0.1:8080 STITCHD_WORKER_TOKEN=stp_… python3 examples/python-worker/worker.py

SIGINT or SIGTERM stops it gracefully: running jobs get 30 s to finish.
"""

import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk", "python"))
import stitchd_worker as sw  # noqa: E402 - found through the path above

GRACE_SECONDS = 30


def greet(task):
    """The job. A real worker calls an API, runs a model…"""
    name = (task.input or {}).get("name") or "world"
    # Progress for the run view; the library also heartbeats on its own
    # while a job runs, so a long one keeps its deadline or lease.
    task.heartbeat({"step": "greeting"})
    if task.cancelled.wait(0.1):  # the "work", cut short when cancelled
        raise RuntimeError(task.cancel_reason)
    return {"worker": "python", "greeting": f"Hello, {name}!", "node": task.node_id, "attempt": task.attempt}


def main():
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    queue = os.environ.get("QUEUE")
    if queue:
        url = os.environ.get("STITCHD_URL", "http://127.0.0.1:8080")
        puller = sw.Puller(url, os.environ.get("STITCHD_WORKER_TOKEN", ""), queue, greet,
                           worker=os.environ.get("WORKER_ID"), concurrency=4).start()
        print(f"python worker polling queue {queue} at {url}", flush=True)
        stopping.wait()
        puller.stop(grace=GRACE_SECONDS)
        return
    try:
        handler = sw.PushHandler(os.environ.get("STITCHD_WEBHOOK_SECRET", ""), greet)
    except ValueError:
        sys.exit("set STITCHD_WEBHOOK_SECRET to the server's webhook secret "
                 "(whsec_…; `stitchd webhook-secret` prints it)")
    host, _, port = os.environ.get("ADDR", "127.0.0.1:9002").rpartition(":")
    server = sw.PushServer((host, int(port)), handler).start()
    print(f"python worker listening on {server.url}", flush=True)
    stopping.wait()
    server.shutdown(grace=GRACE_SECONDS)


if __name__ == "__main__":
    main()
