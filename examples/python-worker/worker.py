#!/usr/bin/env python3
"""A stitchd worker in Python 3 with the standard library only.

It verifies each dispatch's Standard Webhooks signature, answers 202 at
once, does its work on a thread and calls back.

    STITCHD_WEBHOOK_SECRET=$(stitchd webhook-secret) python3 examples/python-worker/worker.py

Then point a Worker node's webhookUrl at http://127.0.0.1:9002/greet.
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 5 * 60  # age limit of webhook-timestamp (replays)


def load_key():
    secret = os.environ.get("STITCHD_WEBHOOK_SECRET", "")
    if not secret.startswith("whsec_"):
        sys.exit("set STITCHD_WEBHOOK_SECRET to the server's webhook secret "
                 "(whsec_…; `stitchd webhook-secret` prints it)")
    return base64.b64decode(secret[len("whsec_"):])


KEY = load_key()
SEEN = set()  # webhook-ids seen: delivery is at least once
SEEN_LOCK = threading.Lock()


def verify(headers, body):
    """Raise ValueError unless the Standard Webhooks signature is valid.

    webhook-signature holds one or more space-separated
    "v1,<base64 HMAC-SHA256 of id.timestamp.body>".
    """
    msg_id = headers.get("webhook-id")
    ts = headers.get("webhook-timestamp")
    sigs = headers.get("webhook-signature")
    if not (msg_id and ts and sigs):
        raise ValueError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        ts_int = int(ts)
    except ValueError:
        raise ValueError("invalid webhook-timestamp")
    if abs(time.time() - ts_int) > TOLERANCE_SECONDS:
        raise ValueError("webhook-timestamp too old or in the future")
    mac = hmac.new(KEY, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256)
    want = "v1," + base64.b64encode(mac.digest()).decode()
    if not any(hmac.compare_digest(s, want) for s in sigs.split()):
        raise ValueError("no matching signature")


def call_back(url, payload):
    """POST the result; retry network errors and 5xx, never a 409."""
    data = json.dumps(payload).encode()
    for attempt in range(5):
        if attempt:
            time.sleep(0.5 * attempt)
        req = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                resp.read()
                return
        except urllib.error.HTTPError as e:
            if e.code < 500:
                raise RuntimeError(f"stitchd answered {e.code}") from e
        except OSError:
            pass
    raise RuntimeError("callback failed after 5 tries")


def work(dispatch):
    """The job: greet the input's name. A real worker calls an API, runs a model…"""
    name = (dispatch.get("input") or {}).get("name") or "world"
    try:
        call_back(dispatch["callbackUrl"], {"status": "running", "progress": {"step": "greeting"}})
        time.sleep(0.1)
        out = {"worker": "python", "greeting": f"Hello, {name}!",
               "node": dispatch["nodeId"], "attempt": dispatch.get("attempt")}
        call_back(dispatch["callbackUrl"], {"status": "completed", "output": out})
        print(f"run {dispatch['runId']} node {dispatch['nodeId']}: done", flush=True)
    except Exception as e:  # report, don't crash the thread
        print(f"run {dispatch['runId']} node {dispatch['nodeId']}: {e}", file=sys.stderr, flush=True)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > 1 << 20:
            return self.answer(413, "too large")
        body = self.rfile.read(length)
        try:
            verify(self.headers, body)
        except ValueError as e:
            return self.answer(401, str(e))
        try:
            dispatch = json.loads(body)
            dispatch["callbackUrl"]
        except (ValueError, KeyError, TypeError):
            return self.answer(400, "not a stitchd dispatch")
        msg_id = self.headers["webhook-id"]
        with SEEN_LOCK:
            duplicate = msg_id in SEEN
            SEEN.add(msg_id)
        self.answer(202, "accepted")  # answer first: the work happens after
        if not duplicate:
            threading.Thread(target=work, args=(dispatch,), daemon=True).start()

    def answer(self, code, text):
        data = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass  # quiet access log


def main():
    host, _, port = os.environ.get("ADDR", "127.0.0.1:9002").rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), Handler)
    print(f"python worker listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
