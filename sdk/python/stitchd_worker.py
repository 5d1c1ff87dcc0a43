"""stitchd workers in Python, with the standard library only.

Push: stitchd POSTs each task to your endpoint. ``PushServer`` (or
``PushHandler`` inside a server of your own) verifies the Standard Webhooks
signature, answers 202 at once, runs your handler on a thread and calls
back with its output or error::

    server = PushServer(("127.0.0.1", 9002), PushHandler(secret, handler))
    server.start()
    ...
    server.shutdown(grace=30)

Pull: the worker polls stitchd (POST /api/v1/tasks/poll) with a worker
token and needs no address of its own. ``Puller`` long-polls one queue
for as many tasks as it has free slots (never more than ``concurrency``
in hand), heartbeats while a handler works, backs off when polls fail
and stops gracefully::

    puller = Puller(url, token, "billing", handler, concurrency=4)
    puller.start()
    ...
    puller.stop(grace=30)

Both call ``handler(task)``: what it returns (any JSON value) becomes the
node's output; an exception fails the attempt, retried by the node's retry
policy unless it is a ``NonRetryableError``. A thread cannot be
interrupted: a long handler should look at ``task.cancelled`` (set when
stitchd no longer runs the attempt, or when a shutdown's grace period
ends; ``task.cancel_reason`` says which) and stop.

The protocol: docs/workers.md in the stitchd repository.
"""

import base64
import hashlib
import hmac
import http.client
import json
import logging
import math
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = [
    "DEFAULT_TOLERANCE", "SHUTTING_DOWN", "STALE",
    "NonRetryableError", "PushHandler", "PushServer", "Puller",
    "SignatureError", "StaleError", "Task", "secret_key", "verify_signature",
]

DEFAULT_TOLERANCE = 300  # seconds a webhook-timestamp may be from now
DEFAULT_LEASE_SECONDS = 300  # a Worker node's leaseSeconds and timeoutSeconds when unset
DEFAULT_WAIT_SECONDS = 20
MAX_ERROR_BACKOFF = 30.0
SHUTTING_DOWN = "worker shutting down"
STALE = "stitchd no longer runs this attempt"

_RESULT_TRIES = 6  # a result is worth retrying (stitchd restarting); a heartbeat is not
_HEARTBEAT_TRIES = 2
_CALLBACK_TIMEOUT = 30
_MAX_ERROR_LEN = 4000
_SEEN_IDS = 10000
_MAX_HEARTBEAT_EVERY = 24 * 24 * 3600  # seconds

log = logging.getLogger("stitchd_worker")


class SignatureError(ValueError):
    """A dispatch not signed with the secret (answer it 401)."""


class NonRetryableError(Exception):
    """A failure another attempt would repeat: the node fails at once."""


class StaleError(Exception):
    """stitchd answered 409: it no longer runs this attempt."""


def secret_key(secret):
    """The HMAC key of a webhook secret ("whsec_" and base64)."""
    if not secret or not secret.startswith("whsec_"):
        raise ValueError('a webhook secret starts with "whsec_" (stitchd webhook-secret prints it)')
    return base64.b64decode(secret[len("whsec_"):], validate=True)


def _header(headers, name):
    value = headers.get(name)
    if value is None and isinstance(headers, dict):
        for k, v in headers.items():
            if k.lower() == name:
                return v
    return value


def verify_signature(key, headers, body, now=None, tolerance=DEFAULT_TOLERANCE):
    """Raise SignatureError unless the Standard Webhooks signature is valid.

    webhook-signature holds one or more space-separated
    "v1,<base64 HMAC-SHA256 of id.timestamp.body>", one of which must match
    (in constant time); webhook-timestamp must be within tolerance seconds
    of now. body is the raw request body, as received.
    """
    msg_id = _header(headers, "webhook-id")
    ts = _header(headers, "webhook-timestamp")
    sigs = _header(headers, "webhook-signature")
    if not (msg_id and ts and sigs):
        raise SignatureError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        ts_int = int(ts)
    except ValueError:
        raise SignatureError("webhook-timestamp is not a number") from None
    if abs((time.time() if now is None else now) - ts_int) > tolerance:
        raise SignatureError(f"webhook-timestamp is more than {tolerance} s away")
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256)
    want = "v1," + base64.b64encode(mac.digest()).decode()
    if not any(hmac.compare_digest(s, want) for s in sigs.split()):
        raise SignatureError("no signature matches")


def _one_line(raw):
    """The start of an answer's body, on one line, for errors."""
    return " ".join(raw.decode(errors="replace").split())


def _post_json(url, payload, tries):
    """POST payload to a callback URL, retrying network errors, 429 and
    5xx up to tries times with backoff (a repeat is harmless). 409 raises
    StaleError; another 4xx is final."""
    data = json.dumps(payload).encode()
    last = None
    for attempt in range(tries):
        if attempt:
            time.sleep(0.25 * 2 ** (attempt - 1))  # 0.25, 0.5, 1, 2, 4 s
        req = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=_CALLBACK_TIMEOUT) as resp:
                resp.read()
                return
        except urllib.error.HTTPError as e:
            text = _one_line(e.read(300))
            if e.code == 409:
                raise StaleError(f"callback answered 409: {text}") from None
            if e.code in (400, 413):
                raise _RefusedError(f"callback answered {e.code}: {text}") from None
            if e.code < 500 and e.code != 429:
                raise RuntimeError(f"callback answered {e.code}: {text}") from None
            last = f"stitchd answered {e.code}"
        except OSError as e:
            last = str(e)
    raise RuntimeError(f"callback failed after {tries} tries: {last}")


class _RefusedError(RuntimeError):
    """stitchd answered a callback 400 or 413: it will not take that body,
    however often it is sent."""


class Task:
    """One attempt of a Worker node, pushed or pulled."""

    def __init__(self, run_id, node_id, attempt, input, config, callback_url,
                 lease_expires_at=None, message_id=None):
        self.run_id = run_id
        self.node_id = node_id  # the node-state key: the node's id, or <id>_<i> for a Splitter's item
        self.attempt = attempt
        self.input = input
        self.config = config if isinstance(config, dict) else {}
        self.callback_url = callback_url  # a credential: keep it out of logs
        self.lease_expires_at = lease_expires_at  # a pulled task's lease end (RFC 3339), else None
        self.message_id = message_id  # a pushed task's webhook-id, else None
        self.cancelled = threading.Event()  # stop: nothing more will be reported
        self.cancel_reason = None  # STALE or SHUTTING_DOWN

    def heartbeat(self, progress=None):
        """Report progress and extend the attempt's deadline or lease now
        (the library also does so on its own). Raises StaleError, and sets
        cancelled, when stitchd no longer runs the attempt."""
        body = {"status": "running"}
        if progress is not None:
            body["progress"] = progress
        try:
            _post_json(self.callback_url, body, _HEARTBEAT_TRIES)
        except StaleError:
            self._cancel(STALE)
            raise

    def _cancel(self, reason):
        if not self.cancelled.is_set():
            self.cancel_reason = reason
            self.cancelled.set()


class _Inflight:
    def __init__(self, task):
        self.task = task
        self.state = "running"  # then "reporting" (its own thread) or "abandoned" (the shutdown)
        self.reported = threading.Event()


class _Runner:
    """Runs tasks, push's and pull's alike: the handler on a thread of its
    own with heartbeats beside it, its result reported, and a drain."""

    def __init__(self, handler, heartbeat_interval, lease_key, logger):
        self.handler = handler
        self.heartbeat_interval = heartbeat_interval
        self.lease_key = lease_key
        self.log = logger or log
        self.lock = threading.Lock()
        self.running = set()
        self.closed = False
        self.idle = threading.Condition(self.lock)

    def start(self, task, done=None):
        """Run task on a thread; False (nothing run) once draining."""
        f = _Inflight(task)
        with self.lock:
            if self.closed:
                return False
            self.running.add(f)
        threading.Thread(target=self._work, args=(f, done), daemon=True,
                         name=f"stitchd-task-{task.node_id}").start()
        return True

    def in_flight(self):
        with self.lock:
            return len(self.running)

    def _interval(self, task):
        if self.heartbeat_interval is not None:
            return self.heartbeat_interval
        secs = DEFAULT_LEASE_SECONDS
        v = task.config.get(self.lease_key)
        # Whole seconds, as stitchd reads them: a fraction rounds up (0.5 is
        # 1 s, not the default).
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            secs = math.ceil(v)
        # A beat every 24 days is often enough for a timeout of centuries.
        return min(secs / 3, _MAX_HEARTBEAT_EVERY)

    def _beat(self, f, stop):
        every = self._interval(f.task)
        if every <= 0:
            return
        wait = every
        while not stop.wait(wait):
            if f.task.cancelled.is_set():
                return
            try:
                f.task.heartbeat()
                wait = every
            except StaleError:
                self.log.info("stitchd no longer runs run %s node %s attempt %s: task cancelled",
                              f.task.run_id, f.task.node_id, f.task.attempt)
                return
            except Exception as e:  # noqa: BLE001 - a heartbeat's failure is retried sooner
                self.log.warning("heartbeat of run %s node %s: %s", f.task.run_id, f.task.node_id, e)
                wait = max(every / 4, 0.1)

    def _work(self, f, done):
        t = f.task
        stop = threading.Event()
        beats = threading.Thread(target=self._beat, args=(f, stop), daemon=True)
        beats.start()
        output, error = None, None
        try:
            output = self.handler(t)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            error = e
        finally:
            stop.set()
            beats.join()
        try:
            with self.lock:
                if f.state != "running":
                    return  # the shutdown reported it
                f.state = "reporting"
            try:
                if t.cancel_reason == STALE:
                    self.log.info("run %s node %s: stitchd no longer runs this attempt; result dropped",
                                  t.run_id, t.node_id)
                    return
                self._report(t, output, error)
            finally:
                f.reported.set()
        finally:
            with self.lock:
                self.running.discard(f)
                self.idle.notify_all()
            if done:
                done()

    def _report(self, t, output, error):
        body = None
        if error is None:
            try:
                body = {"status": "completed", "output": json.loads(json.dumps(output))}
            except (TypeError, ValueError) as e:
                error = NonRetryableError(f"the handler's output cannot be encoded as JSON: {e}")
        if error is not None:
            text = str(error) or type(error).__name__
            body = {"status": "failed", "error": text[:_MAX_ERROR_LEN]}
            if isinstance(error, NonRetryableError):
                body["retryable"] = False
        try:
            try:
                _post_json(t.callback_url, body, _RESULT_TRIES)
            except _RefusedError as e:
                if error is not None:
                    raise
                # An output stitchd refuses (over its --body-limit, a number
                # too long) would be refused from every attempt: fail the
                # node now, saying why, rather than at its deadline.
                error = NonRetryableError(f"the output was refused: {e}")
                _post_json(t.callback_url, {"status": "failed", "error": str(error)[:_MAX_ERROR_LEN],
                                            "retryable": False}, _RESULT_TRIES)
            if error is not None:
                self.log.info("run %s node %s attempt %s failed: %s", t.run_id, t.node_id, t.attempt, error)
        except Exception as e:  # noqa: BLE001 - logged: nothing else to do
            self.log.error("run %s node %s: reporting the result: %s", t.run_id, t.node_id, e)

    def drain(self, grace):
        """Refuse new tasks, wait up to grace seconds for the running ones,
        then cancel those still running and report them failed with
        SHUTTING_DOWN (retryable: the retry policy queues the next attempt).
        Returns how many were failed so."""
        deadline = time.monotonic() + max(grace, 0)
        with self.lock:
            self.closed = True
            while self.running:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.idle.wait(left)
            left_over = list(self.running)
            abandoned = []
            for f in left_over:
                if f.state == "running":
                    f.state = "abandoned"
                    abandoned.append(f)
        threads = []
        for f in left_over:
            if f in abandoned:
                f.task._cancel(SHUTTING_DOWN)
                th = threading.Thread(target=self._report, args=(f.task, None, Exception(SHUTTING_DOWN)), daemon=True)
                th.start()
                threads.append(th)
        for th in threads:
            th.join()
        for f in left_over:
            if f not in abandoned:
                f.reported.wait()  # its own report is on its way
        return len(abandoned)


class PushHandler:
    """A pushed worker's endpoint, independent of the HTTP server: call
    handle() with each request. It verifies the signature (401), answers
    202 at once, runs the handler on a thread and calls back; a repeated
    webhook-id is answered 202 and not worked twice; after shutdown()
    starts it answers 503, which stitchd retries.

    heartbeat_interval: seconds between heartbeats while a handler runs
    (None: a third of the node's timeoutSeconds; 0 or less: none).
    """

    def __init__(self, secret, handler, heartbeat_interval=None, tolerance=DEFAULT_TOLERANCE,
                 max_body=16 << 20, logger=None):
        self.key = secret_key(secret)
        self.tolerance = tolerance
        self.max_body = max_body
        self._runner = _Runner(handler, heartbeat_interval, "timeoutSeconds", logger)
        self._seen = {}  # webhook-ids seen (insertion-ordered): delivery is at least once
        self._seen_lock = threading.Lock()

    def handle(self, method, headers, body):
        """Answer one request: (status code, text)."""
        if method != "POST":
            return 405, "POST only"
        if len(body) > self.max_body:
            return 413, "body too large"
        try:
            verify_signature(self.key, headers, body, tolerance=self.tolerance)
        except SignatureError as e:
            return 401, str(e)
        try:
            d = json.loads(body)
            task = Task(d["runId"], d["nodeId"], d["attempt"], d.get("input"), d.get("config"),
                        d["callbackUrl"], message_id=_header(headers, "webhook-id"))
        except (ValueError, KeyError, TypeError):
            return 400, "not a stitchd dispatch"
        with self._seen_lock:
            if task.message_id in self._seen:
                return 202, "accepted (a repeat)"
            self._seen[task.message_id] = True
            if len(self._seen) > _SEEN_IDS:
                del self._seen[next(iter(self._seen))]
        if not self._runner.start(task):
            with self._seen_lock:
                self._seen.pop(task.message_id, None)  # not taken: its retry must be worked
            return 503, SHUTTING_DOWN
        return 202, "accepted"

    @property
    def in_flight(self):
        return self._runner.in_flight()

    def shutdown(self, grace=30.0):
        """Stop taking tasks, wait up to grace seconds for the running
        handlers, then fail those still running as SHUTTING_DOWN
        (retryable). Returns how many were failed so."""
        return self._runner.drain(grace)


class PushServer:
    """A ThreadingHTTPServer serving a PushHandler on every path."""

    def __init__(self, address, push_handler):
        self.push_handler = push_handler
        ph = push_handler

        class _Request(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self):
                raw = self.headers.get("Content-Length") or "0"
                if not raw.isascii() or not raw.isdigit():
                    # int() takes "-1", and read(-1) would read (and hold)
                    # all the client sends, before any signature check.
                    self.close_connection = True
                    return self._answer(400, "bad Content-Length")
                length = int(raw)
                if length > ph.max_body:
                    return self._answer(413, "body too large")
                body = self.rfile.read(length) if length else b""
                code, text = ph.handle(self.command, self.headers, body)
                self._answer(code, text)

            do_POST = do_GET = do_PUT = do_DELETE = _serve  # noqa: N815 - http.server's names

            def _answer(self, code, text):
                data = (text + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                if code == 503:
                    self.send_header("Retry-After", "5")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format, *args):  # noqa: A002 - http.server's signature
                pass

        self.httpd = ThreadingHTTPServer(address, _Request)
        self.httpd.daemon_threads = True
        host, port = self.httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._serving = False

    def start(self):
        """Serve on a background thread."""
        self._serving = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True, name="stitchd-push").start()
        return self

    def serve_forever(self):
        """Serve on this thread, until shutdown() is called from another."""
        self._serving = True
        self.httpd.serve_forever()

    def shutdown(self, grace=30.0):
        """Stop serving, then PushHandler.shutdown(grace)."""
        if self._serving:  # http.server's shutdown() waits for a serve_forever that never ran
            self.httpd.shutdown()
        self.httpd.server_close()
        return self.push_handler.shutdown(grace)


class Puller:
    """Works one queue's tasks: long-polls stitchd for as many tasks as it
    has free slots, runs each on a thread with heartbeats beside it (a
    third of the node's leaseSeconds unless heartbeat_interval is given;
    0 or less: none) and reports each result.

    url: stitchd's base URL; token: a worker token (POST /api/v1/tokens
    {"role": "worker"}); queue: a Worker node's data.queue; worker: names
    this worker on its attempts and in GET /api/v1/queues (default
    <hostname>/<pid>); wait_seconds: how long a poll waits for a task
    (1 to 60); error_backoff: the first wait after a failed poll, doubled
    on each failure in a row up to 30 s.
    """

    def __init__(self, url, token, queue, handler, worker=None, concurrency=1,
                 wait_seconds=DEFAULT_WAIT_SECONDS, heartbeat_interval=None, error_backoff=1.0, logger=None):
        missing = [n for n, v in (("url", url), ("token", token), ("queue", queue), ("handler", handler)) if not v]
        if missing:
            raise ValueError("Puller needs " + ", ".join(missing))
        if not 1 <= wait_seconds <= 60:
            raise ValueError(f"wait_seconds {wait_seconds}: stitchd waits 1 to 60 seconds")
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"url {url!r} is not an http(s) URL")
        self._scheme, self._host, self._port = u.scheme, u.hostname, u.port
        self._path = u.path.rstrip("/") + "/api/v1/tasks/poll"
        self.token, self.queue = token, queue
        self.worker = worker or f"{socket.gethostname()}/{os.getpid()}"
        self.concurrency = max(int(concurrency), 1)
        self.wait_seconds = wait_seconds
        self.error_backoff = error_backoff
        self.log = logger or log
        self._runner = _Runner(handler, heartbeat_interval, "leaseSeconds", self.log)
        self._cond = threading.Condition()
        self._free = self.concurrency
        self._stopping = threading.Event()
        self._conn = None  # the poll's connection, closed by stop() to end a long poll at once
        self._thread = None

    @property
    def in_flight(self):
        return self._runner.in_flight()

    def start(self):
        if self._thread is not None:
            raise RuntimeError("the puller was started already")
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"stitchd-poll-{self.queue}")
        self._thread.start()
        return self

    def stop(self, grace=30.0):
        """Stop polling at once (an outstanding long poll is abandoned),
        wait up to grace seconds for the running handlers, then fail those
        still running as SHUTTING_DOWN — retryable, so the node's retry
        policy queues the next attempt — and return how many. stitchd has
        no way to give a lease back untried."""
        self._stopping.set()
        with self._cond:
            conn = self._conn
            self._cond.notify_all()
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join()
        return self._runner.drain(grace)

    def _take_slots(self):
        with self._cond:
            while self._free == 0 and not self._stopping.is_set():
                self._cond.wait()
            if self._stopping.is_set():
                return 0
            n = min(self._free, 100)
            self._free -= n
            return n

    def _release(self, n=1):
        with self._cond:
            self._free += n
            self._cond.notify_all()

    def _loop(self):
        failures = 0
        while not self._stopping.is_set():
            free = self._take_slots()
            if free == 0:
                return
            try:
                tasks = self._poll(free)
                failures = 0
            except Exception as e:  # noqa: BLE001 - any failed poll backs off
                self._release(free)
                if self._stopping.is_set():
                    return
                failures += 1
                delay = min(self.error_backoff * 2 ** (failures - 1), MAX_ERROR_BACKOFF)
                delay -= random.uniform(0, delay / 2)  # noqa: S311 - jitter, not a secret
                self.log.warning("poll of %s failed (%s); again in %.1f s", self.queue, e, delay)
                self._stopping.wait(delay)
                continue
            # Tasks received are this worker's whatever happens next: worked
            # (and drained by stop), never dropped.
            for t in tasks[:free]:
                if not self._runner.start(t, self._release):
                    self._release()
            for t in tasks[free:]:  # more than asked for (stitchd never answers so)
                self.log.error("stitchd answered more tasks than asked for: %d > %d", len(tasks), free)
                threading.Thread(target=self._runner._report, args=(t, None, Exception("worker over its concurrency limit")),
                                 daemon=True).start()
            if len(tasks) < free:
                self._release(free - len(tasks))

    def _poll(self, limit):
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.wait_seconds + 30)
        conn.connect()  # before stop() can see it: its socket is what stop() shuts
        with self._cond:
            if self._stopping.is_set():
                conn.close()
                raise RuntimeError("stopping")
            self._conn = conn
        try:
            body = json.dumps({"queue": self.queue, "worker": self.worker, "max": limit,
                               "wait_seconds": self.wait_seconds})
            conn.request("POST", self._path, body=body, headers={
                "Content-Type": "application/json", "Authorization": f"Bearer {self.token}"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"stitchd answered {resp.status}: {_one_line(data[:300])}")
            out = json.loads(data)
        finally:
            with self._cond:
                self._conn = None
            conn.close()
        return [Task(t["run_id"], t["node_id"], t["attempt"], t.get("input"), t.get("config"), t["callback_url"],
                     lease_expires_at=t.get("lease_expires_at")) for t in out.get("tasks") or []]
