#!/usr/bin/env python3
"""A leasehold worker in plain Python 3 (standard library only).

    python3 worker.py --url http://127.0.0.1:8787 --queue emails \
        [--token T] [--concurrency 4] [--handler mymodule:handle] [--drain-timeout 10]

It speaks the JSON HTTP API under /api/v1 and keeps the same promises as the
TypeScript worker (src/worker/worker.ts):
- it claims in batches, never more jobs than it has free slots (threads);
- one heartbeat thread, on its own timer, renews ALL held leases in ONE call, so
  a handler that blocks (CPU, a slow library) cannot starve its own lease;
- each job gets a threading.Event `lost`: the Python equivalent of the
  TypeScript AbortSignal. It is set when the server says lease_lost, when the
  lease runs out locally without a renewal, and at shutdown. A handler should
  check it (or wait on it instead of sleeping) and stop early;
- a finish refused with 409 means another claim owns the job now: the attempt is
  "abandoned" (logged, never a crash), and the server kept nothing we wrote;
- SIGTERM/SIGINT: stop claiming, let running jobs finish for --drain-timeout
  seconds, then release the leases still held so the jobs run again at once.

A handler is `handler(job, lost) -> result` (any JSON value). Raising fails the
attempt with the exception text; the server retries it until maxAttempts.
Set `exc.retryable = False` on the exception to fail the job for good.

Every event is one JSON line on stdout (claimed, completed, failed, lease_lost,
abandoned, released, stopped, error); human notes go to stderr.
"""
import argparse, importlib, json, os, random, signal, socket, sys, threading, time
import urllib.error, urllib.request


def demo_handler(job, lost):
    """Uppercases payload["text"]; sleeps payload["sleep"] seconds; {"fail": true} raises."""
    payload = job["payload"] if isinstance(job["payload"], dict) else {}
    if payload.get("fail"):
        raise RuntimeError("the payload asked to fail")
    # Waiting on `lost` instead of time.sleep() ends the wait as soon as the lease goes.
    if lost.wait(float(payload.get("sleep", 0))):
        raise RuntimeError("lease lost: stopping early")
    return {"text": str(payload.get("text", "")).upper()}


class Api:
    """JSON over HTTP. Network errors (and 502/503/504) are retried with backoff."""

    def __init__(self, url, token):
        self.base, self.token = url.rstrip("/") + "/api/v1", token

    def post(self, path, body, attempts=1):
        for n in range(attempts):
            try:
                return self._post_once(path, body)
            except (urllib.error.URLError, ConnectionError, TimeoutError, Transient) as e:
                if n == attempts - 1:
                    raise NetworkError(f"{path}: {e}") from e
                # Exponential backoff with jitter, so restarting workers do not stampede.
                time.sleep(min(5.0, 0.25 * 2 ** n) * random.uniform(0.5, 1.0))

    def _post_once(self, path, body):
        headers = {"Content-Type": "application/json"}  # the server refuses anything else (415)
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.base + path, json.dumps(body).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                return res.status, json.load(res)
        except urllib.error.HTTPError as e:  # 4xx/5xx still carry a JSON error body
            if e.code in (502, 503, 504):
                raise Transient(f"HTTP {e.code}") from e
            try:
                return e.code, json.load(e)
            except ValueError:
                return e.code, {"error": {"code": "http_%d" % e.code, "message": str(e)}}


class Transient(Exception): pass
class NetworkError(Exception): pass


def emit(event, **fields):
    """One JSON line per event; the lock keeps lines from threads whole."""
    with emit.lock:
        print(json.dumps({"event": event, **fields}), flush=True)
emit.lock = threading.Lock()


class Held:
    """A job this worker holds: its claim, its `lost` event, and a local lease deadline."""

    def __init__(self, job, sent):
        self.job, self.lost = job, threading.Event()
        self.why = None         # why `lost` was set: the server's code, expired_locally, or worker_shutdown
        self.finishing = False  # its complete/fail/release is on the way: heartbeats leave it alone
        # Conservative local copy of the lease (monotonic clock): a claim or renewal
        # sent at local time t keeps the job until at least t + leaseMs on the server.
        self.expires = sent + job["leaseMs"] / 1000


class Worker:
    def __init__(self, api, queue, handler, concurrency, drain_timeout):
        self.api, self.queue, self.handler = api, queue, handler
        self.concurrency, self.drain_timeout = concurrency, drain_timeout
        self.worker_id = f"py-{socket.gethostname()}-{os.getpid()}-{os.urandom(3).hex()}"
        self.held, self.lock = {}, threading.Lock()
        # Held by the heartbeat thread while a renewal is in flight. A finish takes it
        # first, so our own late heartbeat never lands after our own complete/fail/release
        # (the server would refuse it and record a stale_write_rejected event).
        self.hb_lock = threading.Lock()
        self.stopping = threading.Event()   # set by SIGTERM/SIGINT: claim no more
        self.wake = threading.Event()       # a slot freed up, or we are stopping
        self.hb_stop = threading.Event()    # heartbeats go on through the drain; stop them last
        self.hb_kick = threading.Event()    # a claim: recompute the interval now, not after the old one
        self.refused = False                # the server refused our token: exit 1

    # -- claiming (main thread) -------------------------------------------------
    def run(self):
        self.hb_thread = threading.Thread(target=self.heartbeat_loop, name="heartbeat", daemon=True)
        self.hb_thread.start()
        failures = 0
        while not self.stopping.is_set():
            free = self.concurrency - len(self.held)
            if free <= 0:
                self.wait_for_wake(1.0)
                continue
            sent = time.monotonic()
            try:
                status, body = self.api.post(f"/queues/{self.queue}/claim", {"workerId": self.worker_id, "limit": free})
                failures = 0
            except NetworkError as e:
                failures += 1
                emit("error", during="claim", message=str(e))
                self.wait_for_wake(min(10.0, 0.5 * 2 ** failures))
                continue
            if status in (401, 403):
                # A refused token stays refused: say so once and stop, instead of retrying forever.
                err = body.get("error") or {}
                emit("error", during="claim", status=status, error=body.get("error"))
                print(f"leasehold refused the worker token ({status} {err.get('code')}: {err.get('message')}); "
                      "check --token / LEASEHOLD_WORKER_TOKEN", file=sys.stderr, flush=True)
                self.refused = True
                self.stopping.set()
                break
            if status != 200:
                emit("error", during="claim", status=status, error=body.get("error"))
                self.wait_for_wake(2.0)
                continue
            for job in body["jobs"]:
                held = Held(job, sent)
                with self.lock:
                    self.held[job["id"]] = held
                emit("claimed", id=job["id"], attempt=job["attempt"], payload=job["payload"])
                threading.Thread(target=self.run_job, args=(held,), daemon=True).start()
            if body["jobs"]:
                self.hb_kick.set()
            if not body["jobs"]:
                self.wait_for_wake(0.5)  # nothing ready: poll again shortly
        self.shutdown()

    def wait_for_wake(self, seconds):
        self.wake.wait(seconds)
        self.wake.clear()

    # -- one job (its own thread) -------------------------------------------------
    def run_job(self, held):
        job = held.job
        try:
            try:
                result = self.handler(job, held.lost)
                json.dumps(result)  # fail the attempt here, not in the HTTP layer, if it is not JSON
            except Exception as e:
                if held.lost.is_set():
                    return emit("abandoned", id=job["id"], reason=held.why)
                error = f"{type(e).__name__}: {e}"[:16000]
                retryable = getattr(e, "retryable", True)
                self.settle(held)
                body = {"workerId": self.worker_id, "lockToken": job["lockToken"], "error": error, "retryable": retryable}
                status, answer = self.api.post(f"/jobs/{job['id']}/fail", body, attempts=8)
                if status == 200:
                    emit("failed", id=job["id"], error=error, status=answer["job"]["status"])
                else:
                    self.refused(job, status, answer)
                return
            if held.lost.is_set():  # a completion would be refused anyway (and must be)
                return emit("abandoned", id=job["id"], reason=held.why)
            self.settle(held)
            body = {"workerId": self.worker_id, "lockToken": job["lockToken"], "result": result}
            status, answer = self.api.post(f"/jobs/{job['id']}/complete", body, attempts=8)
            if status == 200:
                emit("completed", id=job["id"], result=result)
            else:
                self.refused(job, status, answer)
        except NetworkError as e:
            # The server never heard us: the lease runs out and the reaper retries the job.
            emit("abandoned", id=job["id"], reason=f"could not reach the server: {e}")
        finally:
            with self.lock:
                self.held.pop(job["id"], None)
            self.wake.set()

    def settle(self, held):
        with self.hb_lock:  # waits out a renewal in flight
            held.finishing = True

    def refused(self, job, status, answer):
        err = answer.get("error", {})
        if status == 409:  # lease_lost: another claim owns the job now; nothing we wrote was kept
            emit("abandoned", id=job["id"], reason=err.get("code"), message=err.get("message"))
        else:
            emit("error", during="finish", id=job["id"], status=status, error=err)

    # -- heartbeats (their own thread and timer) -----------------------------------
    def heartbeat_loop(self):
        interval = 1.0
        while True:
            self.hb_kick.wait(interval)
            self.hb_kick.clear()
            if self.hb_stop.is_set():
                return
            with self.lock:
                held = dict(self.held)
            if held:
                # Beat as often as the most demanding job asks (the server says so in each claim).
                interval = min(h.job["heartbeatIntervalMs"] for h in held.values()) / 1000
                self.renew(held)
            self.beat(len(held))

    def renew(self, held):
        with self.hb_lock:
            live = {i: h for i, h in held.items() if not (h.lost.is_set() or h.finishing)}
            if not live:
                return
            sent = time.monotonic()
            leases = [{"id": i, "lockToken": h.job["lockToken"]} for i, h in live.items()]
            try:
                status, body = self.api.post("/heartbeats", {"workerId": self.worker_id, "leases": leases})
            except NetworkError as e:
                status, body = None, {"error": {"message": str(e)}}
        if status == 200:
            for r in body["results"]:
                h = live[r["id"]]
                if r["ok"]:
                    h.expires = sent + h.job["leaseMs"] / 1000
                elif not h.lost.is_set():
                    h.why = r["error"]["code"]
                    h.lost.set()
                    emit("lease_lost", id=r["id"], reason=r["error"]["code"], message=r["error"].get("message"))
        else:  # a missed beat is survivable; the next tick is the retry
            emit("error", during="heartbeat", status=status, error=body.get("error"))
        # Self-fencing: if no renewal got through before our local copy of the lease
        # ran out, the reaper may hand the job to someone else: stop working on it.
        for i, h in live.items():
            if time.monotonic() > h.expires and not h.lost.is_set():
                h.why = "expired_locally"
                h.lost.set()
                emit("lease_lost", id=i, reason="expired_locally")

    def beat(self, running):
        """Liveness row: lets the reaper tell a dead worker from a slow job."""
        body = {"workerId": self.worker_id, "host": socket.gethostname()[:255], "pid": os.getpid(),
                "version": "python-example", "queues": [self.queue], "runningCount": running}
        try:
            self.api.post("/workers/beat", body)
        except NetworkError:
            pass  # heartbeats also count as "seen"; the next tick tries again

    # -- shutdown --------------------------------------------------------------------
    def stop(self, signum, _frame):
        print(f"worker: signal {signum}: draining for up to {self.drain_timeout}s", file=sys.stderr)
        self.stopping.set()
        self.wake.set()

    def shutdown(self):
        deadline = time.monotonic() + self.drain_timeout
        while self.held and time.monotonic() < deadline:
            self.wait_for_wake(min(0.1, max(0.0, deadline - time.monotonic())))
        with self.lock:
            left = dict(self.held)
        released = []
        for i, h in left.items():
            with self.hb_lock:
                h.why = "worker_shutdown"
                h.lost.set()  # tell the handler to stop; its own finish will now be refused
            body = {"workerId": self.worker_id, "lockToken": h.job["lockToken"], "reason": "worker_shutdown"}
            try:
                status, answer = self.api.post(f"/jobs/{i}/release", body, attempts=3)
            except NetworkError as e:
                status, answer = None, {"error": {"message": str(e)}}
            if status == 200:
                released.append(i)
                emit("released", id=i)
            else:  # finished meanwhile, or already lost: nothing to give back
                emit("error", during="release", id=i, status=status, error=answer.get("error"))
        self.hb_stop.set()
        self.hb_kick.set()
        self.hb_thread.join(15)  # let a heartbeat in flight finish rather than cut it at exit
        emit("stopped", released=released)


def main():
    p = argparse.ArgumentParser(description="A leasehold worker in plain Python.")
    p.add_argument("--url", required=True)
    p.add_argument("--queue", required=True)
    p.add_argument("--token", default=os.environ.get("LEASEHOLD_WORKER_TOKEN"))
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--handler", help="module:function (default: the built-in demo)")
    p.add_argument("--drain-timeout", type=float, default=10.0, help="seconds to let jobs finish at shutdown")
    a = p.parse_args()
    handler = demo_handler
    if a.handler:
        module, _, name = a.handler.partition(":")
        sys.path.insert(0, os.getcwd())
        handler = getattr(importlib.import_module(module), name)
    worker = Worker(Api(a.url, a.token), a.queue, handler, max(1, a.concurrency), a.drain_timeout)
    signal.signal(signal.SIGTERM, worker.stop)
    signal.signal(signal.SIGINT, worker.stop)
    worker.run()
    if worker.refused:
        sys.exit(1)


if __name__ == "__main__":
    main()
