"""Tests of stitchd_worker against a real stitchd.

sdk/sdk_test.go starts one and runs them (go test ./sdk/), with
STITCHD_URL, STITCHD_ADMIN_TOKEN, STITCHD_WORKER_TOKEN and
STITCHD_WEBHOOK_SECRET pointing at it.
"""

import base64
import hashlib
import hmac
import json
import os
import socket
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import stitchd_worker as sw


def env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: these tests run through `go test ./sdk/`, "
                           "which starts stitchd (sdk/sdk_test.go)")
    return value


def api(method, path, body=None, token=None):
    """Call stitchd's API (the admin token by default): the decoded answer."""
    req = urllib.request.Request(env("STITCHD_URL") + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + (token or env("STITCHD_ADMIN_TOKEN"))})
    with urllib.request.urlopen(req, timeout=30) as resp:
        data = resp.read()
        return json.loads(data) if data else None


def make_flow(data):
    """A flow of one Worker node, id "work", with data: its id."""
    name = "py " + uuid.uuid4().hex[:12]
    f = api("POST", "/api/v1/flows", {"name": name, "graph": {
        "nodes": [{"id": "work", "type": "Worker", "data": data}], "edges": []}})
    return f["id"]


def start_run(flow, input):
    return api("POST", f"/api/v1/flows/{flow}/runs", {"input": input})["id"]


def wait_run(run_id, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        r = api("GET", f"/api/v1/runs/{run_id}")
        if r["status"] in ("completed", "failed", "cancelled"):
            return r
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} did not finish in {timeout} s: {r['status']}")
        time.sleep(0.02)


def queue_stats(name):
    for q in api("GET", "/api/v1/queues"):
        if q["name"] == name:
            return q
    return {"name": name, "pending": 0, "leased": 0, "workers": []}


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def eventually(cond, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def greet(task):
    """The tests' job: greet input.name; fail on input.fail (for good when
    input.permanent, else while attempt <= failUntil); raise on input.crash;
    take input.sleepMs (stopping early when cancelled)."""
    inp = task.input or {}
    if inp.get("sleepMs"):
        if task.cancelled.wait(inp["sleepMs"] / 1000):
            raise RuntimeError(task.cancel_reason)
    if inp.get("crash"):
        raise KeyError("the job broke")
    if inp.get("fail") and inp.get("permanent"):
        raise sw.NonRetryableError(inp["fail"])
    if inp.get("fail") and task.attempt <= inp.get("failUntil", 0):
        raise RuntimeError(inp["fail"])
    return {"greeting": f"Hello, {inp.get('name')}!", "node": task.node_id, "attempt": task.attempt}


class SignatureTest(unittest.TestCase):
    """The documented test vector (docs/workers.md), rotation, refusals."""

    key = sw.secret_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    body = b'{"test": 2432232314}'
    good = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

    def headers(self, sig):
        return {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
                "webhook-signature": sig}

    def test_vector(self):
        sw.verify_signature(self.key, self.headers(self.good), self.body, now=1614265330)
        sw.verify_signature(self.key, {"Webhook-Id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "Webhook-Timestamp": "1614265330",
                                       "Webhook-Signature": self.good}, self.body, now=1614265330)
        sw.verify_signature(self.key, self.headers("v1,bm90IHRoaXMgb25l " + self.good), self.body, now=1614265330)

    def test_refusals(self):
        for name, call in {
            "another body": lambda: sw.verify_signature(self.key, self.headers(self.good), b'{"test": 1}', now=1614265330),
            "too late": lambda: sw.verify_signature(self.key, self.headers(self.good), self.body, now=1614265330 + 360),
            "too early": lambda: sw.verify_signature(self.key, self.headers(self.good), self.body, now=1614265330 - 360),
            "unsigned": lambda: sw.verify_signature(self.key, self.headers(""), self.body, now=1614265330),
        }.items():
            with self.subTest(name), self.assertRaises(sw.SignatureError):
                call()
        with self.assertRaises(ValueError):
            sw.secret_key("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")


class PushTest(unittest.TestCase):
    def serve(self, handler, **kw):
        server = sw.PushServer(("127.0.0.1", 0), sw.PushHandler(env("STITCHD_WEBHOOK_SECRET"), handler, **kw)).start()
        self.addCleanup(lambda: server.shutdown(grace=5))
        return server

    def test_completes_retries_refuses(self):
        """Runs complete with the handler's output; an exception is retried,
        a NonRetryableError is not; bad requests are refused."""
        server = self.serve(greet)
        flow = make_flow({"webhookUrl": server.url + "/greet", "timeoutSeconds": 30,
                          "retry": {"maxAttempts": 3, "initialDelayMs": 10}})
        ada = start_run(flow, {"name": "Ada"})
        grace = start_run(flow, {"name": "Grace", "fail": "flaky", "failUntil": 1})
        card = start_run(flow, {"fail": "invalid card", "permanent": True})
        crash = start_run(flow, {"crash": True})
        r = wait_run(ada)
        self.assertEqual("completed", r["status"])
        self.assertEqual({"greeting": "Hello, Ada!", "node": "work", "attempt": 1}, r["output"])
        r = wait_run(grace)
        self.assertEqual("completed", r["status"])
        self.assertEqual(2, r["output"]["attempt"])
        r = wait_run(card)
        self.assertEqual("failed", r["status"])
        self.assertEqual(1, r["nodes"]["work"]["attempt"])
        self.assertIn("invalid card", r["nodes"]["work"]["error"])
        r = wait_run(crash)
        self.assertEqual("failed", r["status"])
        self.assertEqual(3, r["nodes"]["work"]["attempt"])
        self.assertIn("the job broke", r["nodes"]["work"]["error"])

        now = str(int(time.time()))
        for name, headers, code in [
            ("unsigned", {"webhook-id": "msg_x", "webhook-timestamp": now}, 401),
            ("another key", {"webhook-id": "msg_x", "webhook-timestamp": now,
                             "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}, 401),
        ]:
            req = urllib.request.Request(server.url + "/greet", data=b"{}", method="POST", headers=headers)
            with self.subTest(name), self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(req, timeout=10)
            self.assertEqual(code, cm.exception.code)
            cm.exception.close()
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(server.url + "/greet", timeout=10)
        self.assertEqual(405, cm.exception.code)
        cm.exception.close()

    def test_bad_content_length(self):
        """A Content-Length that is not a number (-1: read() would take all
        the client sends, before any signature check) is answered 400 at
        once."""
        server = self.serve(greet)
        host, port = server.httpd.server_address[:2]
        for value in ("-1", "abc", "+5"):
            with self.subTest(value), socket.create_connection((host, port), timeout=5) as s:
                s.sendall(f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {value}\r\n\r\n".encode() + b"x" * 1000)
                answer = b""
                while chunk := s.recv(4096):  # to the end: the server closes the connection
                    answer += chunk
                self.assertTrue(answer.startswith(b"HTTP/1.1 400"), answer)

    def test_duplicate_delivery(self):
        """The same webhook-id twice: 202 both times, worked once."""
        got = []

        class Capture(BaseHTTPRequestHandler):
            def do_POST(self):
                got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        cb = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
        threading.Thread(target=cb.serve_forever, daemon=True).start()
        self.addCleanup(cb.server_close)
        self.addCleanup(cb.shutdown)
        calls = []
        secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        h = sw.PushHandler(secret, lambda t: calls.append(t.message_id) or {"n": 1})
        body = json.dumps({"runId": "r1", "nodeId": "n", "attempt": 1, "config": {}, "input": {},
                           "callbackUrl": f"http://127.0.0.1:{cb.server_address[1]}/cb"}).encode()
        for _ in range(2):
            ts = str(int(time.time()))
            mac = hmac.new(sw.secret_key(secret), f"msg_dup.{ts}.".encode() + body, hashlib.sha256)
            sig = "v1," + base64.b64encode(mac.digest()).decode()
            code, _ = h.handle("POST", {"webhook-id": "msg_dup", "webhook-timestamp": ts, "webhook-signature": sig}, body)
            self.assertEqual(202, code)
        eventually(lambda: len(got) == 1, "the callback")
        self.assertEqual(0, h.shutdown(grace=5))
        self.assertEqual(["msg_dup"], calls)
        self.assertEqual({"status": "completed", "output": {"n": 1}}, got[0])

    def test_heartbeats(self):
        """A handler taking 9 s beside timeoutSeconds 6 completes with
        heartbeats (every 2 s) and times out without."""
        results = {}

        def case(name, every):
            server = self.serve(greet, heartbeat_interval=every)
            flow = make_flow({"webhookUrl": server.url, "timeoutSeconds": 6, "retry": {"maxAttempts": 1}})
            results[name] = wait_run(start_run(flow, {"name": "Ada", "sleepMs": 9000}))

        threads = [threading.Thread(target=case, args=c) for c in (("heartbeats", None), ("none", 0))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual("completed", results["heartbeats"]["status"])
        self.assertEqual("failed", results["none"]["status"])
        self.assertIn("deadline exceeded", results["none"]["nodes"]["work"]["error"])

    def test_shutdown(self):
        """shutdown(grace) lets a handler finishing within it report and fails
        the one still running as "worker shutting down" (retryable: a second
        attempt follows, refused with 503 here)."""
        started, release, reasons = [], threading.Event(), []

        def handler(task):
            started.append(task.input["mode"])
            if task.input["mode"] == "quick":
                release.wait(10)
                return {"mode": "quick"}
            task.cancelled.wait(10)
            reasons.append(task.cancel_reason)
            raise RuntimeError(task.cancel_reason)

        server = sw.PushServer(("127.0.0.1", 0), sw.PushHandler(env("STITCHD_WEBHOOK_SECRET"), handler)).start()
        flow = make_flow({"webhookUrl": server.url, "timeoutSeconds": 60, "delivery": {"maxTries": 1},
                          "retry": {"maxAttempts": 2, "initialDelayMs": 10}})
        quick = start_run(flow, {"mode": "quick"})
        stuck = start_run(flow, {"mode": "stuck"})
        eventually(lambda: len(started) == 2, "both handlers to start")
        threading.Timer(0.2, release.set).start()
        began = time.monotonic()
        failed = server.shutdown(grace=1)
        self.assertEqual(1, failed)
        self.assertLess(time.monotonic() - began, 5)
        eventually(lambda: reasons == [sw.SHUTTING_DOWN], "the stuck handler to be cancelled")
        r = wait_run(quick)
        self.assertEqual("completed", r["status"])
        r = wait_run(stuck)
        self.assertEqual("failed", r["status"])
        self.assertEqual(2, r["nodes"]["work"]["attempt"], "the shutdown's failure was retried")


class PullTest(unittest.TestCase):
    def puller(self, queue, handler, **kw):
        p = sw.Puller(env("STITCHD_URL"), env("STITCHD_WORKER_TOKEN"), queue, handler, **kw).start()
        self.addCleanup(lambda: p.stop(grace=5))
        return p

    def test_completes(self):
        """Pulled runs complete with the handler's output, each attempt named
        with the worker; retries and NonRetryableError as with push."""
        queue = unique("greet")
        flow = make_flow({"queue": queue, "retry": {"maxAttempts": 3, "initialDelayMs": 10}})
        leases = {}

        def handler(task):
            leases[task.run_id] = task.lease_expires_at
            return greet(task)

        self.puller(queue, handler, worker="py-host/1", concurrency=2)
        ada = start_run(flow, {"name": "Ada"})
        grace = start_run(flow, {"name": "Grace", "fail": "flaky", "failUntil": 2})
        card = start_run(flow, {"fail": "invalid card", "permanent": True})
        r = wait_run(ada)
        self.assertEqual("completed", r["status"])
        self.assertEqual({"greeting": "Hello, Ada!", "node": "work", "attempt": 1}, r["output"])
        self.assertIn('"worker": "py-host/1"', json.dumps(r))
        self.assertTrue(leases[ada])
        self.assertEqual(3, wait_run(grace)["output"]["attempt"])
        r = wait_run(card)
        self.assertEqual("failed", r["status"])
        self.assertEqual(1, r["nodes"]["work"]["attempt"])

    def test_refused_output(self):
        """An output stitchd refuses — over its body limit (413), a number
        too long to store (400) — fails the node at once, saying why, not
        at the lease's end and again on every attempt."""
        queue = unique("refused")
        flow = make_flow({"queue": queue, "leaseSeconds": 120, "retry": {"maxAttempts": 3, "initialDelayMs": 10}})
        calls = []

        def handler(task):
            calls.append(task.run_id)
            return {"blob": "x" * (2 << 20)} if task.input["big"] else {"n": 10 ** 100}

        self.puller(queue, handler, concurrency=2)
        for big, code in ((True, 413), (False, 400)):
            began = time.monotonic()
            r = wait_run(start_run(flow, {"big": big}))
            self.assertEqual("failed", r["status"])
            self.assertLess(time.monotonic() - began, 30, "failed at once, not at the lease's end")
            self.assertEqual(1, r["nodes"]["work"]["attempt"], "not retried: every attempt would be refused")
            self.assertIn("the output was refused", r["nodes"]["work"]["error"])
            self.assertIn(f"answered {code}", r["nodes"]["work"]["error"])
        self.assertEqual(2, len(calls))

    def test_heartbeat_interval(self):
        """A third of the deadline as stitchd reads it: a fraction rounded up
        (0.5 s is 1 s, not the 300 s default), at most every 24 days."""
        runner = sw._Runner(greet, None, "timeoutSeconds", None)
        for config, want in (({}, 100), ({"timeoutSeconds": 0.5}, 1 / 3), ({"timeoutSeconds": 1.5}, 2 / 3),
                             ({"timeoutSeconds": 6}, 2), ({"timeoutSeconds": 9223372037}, 24 * 24 * 3600)):
            with self.subTest(config):
                self.assertAlmostEqual(want, runner._interval(sw.Task("r", "n", 1, {}, config, "u")))

    def test_concurrency_limit(self):
        """Concurrency 3: never more than 3 handlers at once, nor leases as
        stitchd sees them, yet 3 reached; 12 tasks complete."""
        queue = unique("limit")
        flow = make_flow({"queue": queue})
        runs = [start_run(flow, {"i": i}) for i in range(12)]
        lock = threading.Lock()
        now, most = [0], [0]
        leased = [0]
        done = threading.Event()

        def sample():
            while not done.wait(0.02):
                for w in queue_stats(queue)["workers"]:
                    leased[0] = max(leased[0], w["leased"])

        sampler = threading.Thread(target=sample)
        sampler.start()

        def handler(task):
            with lock:
                now[0] += 1
                most[0] = max(most[0], now[0])
            time.sleep(0.25)
            with lock:
                now[0] -= 1
            return {"done": True}

        self.puller(queue, handler, concurrency=3)
        try:
            for r in runs:
                self.assertEqual("completed", wait_run(r)["status"])
        finally:
            done.set()
            sampler.join()
        self.assertEqual(3, most[0])
        self.assertLessEqual(leased[0], 3)
        self.assertGreater(leased[0], 0)

    def test_heartbeat_keeps_lease(self):
        """leaseSeconds 6, a handler taking 9 s: heartbeats keep the
        attempt; without them its lease runs out."""
        results = {}

        def case(name, every):
            queue = unique("lease")
            flow = make_flow({"queue": queue, "leaseSeconds": 6, "retry": {"maxAttempts": 1}})
            self.puller(queue, greet, heartbeat_interval=every)
            results[name] = wait_run(start_run(flow, {"name": "Ada", "sleepMs": 9000}))

        threads = [threading.Thread(target=case, args=c) for c in (("heartbeats", None), ("none", 0))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual("completed", results["heartbeats"]["status"])
        self.assertEqual(1, results["heartbeats"]["nodes"]["work"]["attempt"])
        self.assertEqual("failed", results["none"]["status"])
        self.assertIn("deadline exceeded", results["none"]["nodes"]["work"]["error"])

    def test_stale_cancels(self):
        """A heartbeat answered 409 (the run cancelled) cancels the task."""
        queue = unique("stale")
        flow = make_flow({"queue": queue, "leaseSeconds": 3})
        started, reasons = threading.Event(), []

        def handler(task):
            started.set()
            task.cancelled.wait(20)
            reasons.append(task.cancel_reason)

        self.puller(queue, handler)
        run = start_run(flow, {})
        self.assertTrue(started.wait(30))
        api("POST", f"/api/v1/runs/{run}/cancel", {})
        eventually(lambda: reasons == [sw.STALE], "the task to be cancelled as stale", timeout=10)

    def test_graceful_shutdown(self):
        """stop(grace) stops polling at once, lets a handler finishing within
        the grace period report and fails the one still running as
        "worker shutting down"; its next attempt waits in the queue and
        another puller completes it."""
        queue = unique("stop")
        flow = make_flow({"queue": queue, "retry": {"maxAttempts": 2, "initialDelayMs": 10}})
        started, release, reasons = [], threading.Event(), []

        def handler(task):
            started.append(task.input["mode"])
            if task.input["mode"] == "quick":
                release.wait(10)
                return {"by": "first"}
            task.cancelled.wait(10)
            reasons.append(task.cancel_reason)
            raise RuntimeError(task.cancel_reason)

        p = sw.Puller(env("STITCHD_URL"), env("STITCHD_WORKER_TOKEN"), queue, handler, concurrency=2).start()
        quick = start_run(flow, {"mode": "quick"})
        stuck = start_run(flow, {"mode": "stuck"})
        eventually(lambda: len(started) == 2, "both handlers to start")
        threading.Timer(0.3, release.set).start()
        began = time.monotonic()
        self.assertEqual(1, p.stop(grace=1.5))
        self.assertLess(time.monotonic() - began, 5)
        self.assertEqual([sw.SHUTTING_DOWN], reasons)
        self.assertEqual({"by": "first"}, wait_run(quick)["output"])
        later = start_run(flow, {"mode": "later"})
        eventually(lambda: queue_stats(queue)["pending"] == 2, "attempt 2 and the later run to wait")
        time.sleep(0.3)
        self.assertEqual(2, queue_stats(queue)["pending"], "nobody polls")
        self.puller(queue, lambda t: {"by": "second", "attempt": t.attempt})
        self.assertEqual({"by": "second", "attempt": 2}, wait_run(stuck)["output"])
        self.assertEqual("completed", wait_run(later)["status"])

    def test_stop_idle(self):
        """stop() of an idle puller ends its long poll at once."""
        queue = unique("idle")
        p = sw.Puller(env("STITCHD_URL"), env("STITCHD_WORKER_TOKEN"), queue, greet, wait_seconds=30).start()
        eventually(lambda: queue_stats(queue)["workers"], "the poll")
        began = time.monotonic()
        self.assertEqual(0, p.stop())
        self.assertLess(time.monotonic() - began, 2)

    def test_backoff(self):
        """Failing polls (a wrong token: 401) back off, doubling."""
        polls = []

        class Counting(sw.Puller):
            def _poll(self, limit):
                sent = time.monotonic()
                try:
                    return super()._poll(limit)
                except Exception as e:
                    polls.append((sent, str(e), self._stopping.is_set()))
                    raise

        p = Counting(env("STITCHD_URL"), "stp_not-a-token", unique("nobody"), greet, error_backoff=0.5).start()
        time.sleep(2.5)
        p.stop()
        # Waits of 0.25-0.5 s, 0.5-1 s, 1-2 s, 2-4 s: at most 4 polls in
        # 2.5 s (fewer when answers are slow), each wait at least half the
        # doubled backoff. A poll still waiting for its answer when stop()
        # came was cut off by it, not answered 401.
        self.assertLessEqual(len(polls), 4, polls)
        answered = [(sent, e) for sent, e, cut in polls if not cut]
        self.assertGreaterEqual(len(answered), 2, polls)
        self.assertLessEqual(len(polls) - len(answered), 1, polls)
        for i, (sent, e, cut) in enumerate(polls):
            if not cut:
                self.assertIn("401", e)
            if i:
                self.assertGreaterEqual(sent - polls[i - 1][0], 0.25 * 2 ** (i - 1) - 0.01, f"the wait before poll {i + 1}")

    def test_params(self):
        with self.assertRaises(ValueError):
            sw.Puller("", "", "", None)
        with self.assertRaises(ValueError):
            sw.Puller("http://x", "t", "q", greet, wait_seconds=61)


if __name__ == "__main__":
    unittest.main()
