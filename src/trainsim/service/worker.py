"""Worker processes: each claims queued jobs from the store and runs them.

The server's ``WorkerPool`` starts the workers and supervises them from a thread: a worker
that dies fails the job it held with the reason (its exit code or signal) and is replaced; a
worker whose job was cancelled is stopped and replaced. A worker leaves when its server is
gone (SIGKILL included), and a restarted server queues again the jobs its dead predecessor
was running, so those finish too.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainsim.service.settings import Settings
from trainsim.service.store import Store, this_host

log = logging.getLogger(__name__)
_ID_BYTES = 32


def _server_prefix(pid: int | None = None) -> str:
    return f"{this_host()}:{pid or os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lower_priority(nice: int = 5) -> None:
    """Make this process batch work below the API process: CPU-bound simulations must not
    delay the event loop that answers requests (health checks included). SCHED_BATCH tells
    Linux they are not interactive (a waking thread preempts them, they never preempt it);
    nice 5 gives them a third of a nice-0 thread's share of a busy core (nice 10 kept health
    checks no faster in the load test and ran fewer jobs/s). Call it before the process
    starts threads."""
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_BATCH"):
        try:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        except OSError:  # not permitted here: niceness alone still applies
            pass
    if hasattr(os, "nice"):
        os.nice(nice)


def run_claimed(store: Store, settings: Settings, job: Any) -> None:
    """Run one claimed job and record its result or its error (fenced by the claim)."""
    from trainsim.errors import TrainsimError
    from trainsim.service import jobs

    req = job.request
    last = [0.0]

    def progress(fraction: float, phase: str) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.5 or fraction >= 1.0:
            last[0] = now
            if not store.progress(job.id, job.claim, fraction, phase):
                raise _Stop()  # cancelled, or no longer ours

    try:
        out = jobs.run(job.kind, req.get("config", {}), req.get("options", {}), settings,
                       progress)
    except _Stop:
        return
    except TrainsimError as exc:
        store.fail(job.id, job.claim, str(exc))
        return
    except Exception as exc:  # a bug: the job fails with its reason, the worker goes on
        log.exception("job %s failed", job.id)
        store.fail(job.id, job.claim, f"internal error: {type(exc).__name__}: {exc}")
        return
    store.finish(job.id, job.claim, out.result, out.trace, out.plot)


class _Stop(Exception):
    """The job was cancelled or taken away: stop without writing anything."""


def _worker_main(settings: Settings, worker_id: str, current: Any, wake: Any, finished: Any,
                 parent_pid: int) -> None:
    """Entry point of a worker process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when workers stop
    lower_priority()
    store = Store(settings.db_url)
    held: dict[str, str] = {}

    def watch() -> None:  # heartbeat the held job; leave with the server
        while True:
            time.sleep(min(1.0, settings.lease_s / 5))
            if os.getppid() != parent_pid or not _pid_alive(parent_pid):
                os._exit(0)
            job_id, claim = held.get("id"), held.get("claim")
            if job_id and claim:
                try:
                    store.heartbeat(job_id, claim)
                except Exception:  # the database is briefly unavailable: retry next beat
                    log.warning("heartbeat of %s failed", job_id, exc_info=True)

    threading.Thread(target=watch, daemon=True).start()
    while True:
        job = store.claim(worker_id)
        if job is None:
            wake.wait(settings.poll_s)
            continue
        current.value = job.id.encode()
        held.update(id=job.id, claim=job.claim or "")
        try:
            run_claimed(store, settings, job)
        finally:
            held.clear()
            current.value = b""
            finished.put(job.id)  # wakes the API's waiters on this job


@dataclass
class _Slot:
    worker_id: str
    process: Any
    current: Any
    started: float
    quick_deaths: int = 0
    died_at: float | None = None
    """Deaths in a row within a few seconds of starting (a broken install, not a bad job)."""


class WorkerPool:
    """``settings.workers`` worker processes, supervised from a thread of the server."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._ctx = mp.get_context("spawn")  # no fork of a threaded server
        self.wake = self._ctx.Event()
        self.finished = self._ctx.Queue()
        self._listeners: list[Callable[[str], None]] = []
        self._slots: list[_Slot] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._serial = 0

    def start(self) -> None:
        self.recover()
        for i in range(self.settings.workers):
            self._slots.append(self._spawn(i))
        self._thread = threading.Thread(target=self._supervise, name="trainsim-workers",
                                        daemon=True)
        self._thread.start()
        threading.Thread(target=self._relay, name="trainsim-finished", daemon=True).start()

    def on_finished(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(job_id)`` (from a thread of the pool) when a worker ends a job."""
        self._listeners.append(listener)

    def _relay(self) -> None:
        while not self._stop.is_set():
            try:
                job_id = self.finished.get(timeout=0.5)
            except queue.Empty:
                continue
            except (EOFError, OSError):  # the queue was closed at shutdown
                return
            for listener in self._listeners:
                listener(job_id)

    def recover(self) -> int:
        """Queue again the jobs that were running under a server of this host that is gone,
        and any whose worker stopped reporting a lease ago."""
        host = this_host()
        dead = set()
        for worker in self.store.running_workers():
            parts = worker.split(":")
            if len(parts) == 3 and parts[0] == host and parts[1].isdigit():
                pid = int(parts[1])
                if pid != os.getpid() and not _pid_alive(pid):
                    dead.add(f"{host}:{pid}")
        n = self.store.requeue_orphans(self.settings.lease_s, frozenset(dead))
        if n:
            log.warning("queued again %d job(s) left running by a stopped server", n)
        return n

    def _spawn(self, index: int) -> _Slot:
        self._serial += 1
        worker_id = f"{_server_prefix()}:{index}.{self._serial}"
        current = self._ctx.Array("c", _ID_BYTES)
        p = self._ctx.Process(target=_worker_main, name=f"trainsim-worker-{index}",
                              args=(self.settings, worker_id, current, self.wake, self.finished,
                                    os.getpid()))
        p.start()
        return _Slot(worker_id, p, current, time.monotonic())

    def notify(self) -> None:
        """A job was queued: wake the idle workers now instead of at their next poll."""
        self.wake.set()
        self.wake.clear()

    def _supervise(self) -> None:
        last_recover = time.monotonic()
        while not self._stop.wait(0.2):
            try:
                self._check_slots()
                if time.monotonic() - last_recover > self.settings.lease_s / 3:
                    last_recover = time.monotonic()
                    self.store.requeue_orphans(self.settings.lease_s)
            except Exception:  # keep supervising through a passing database error
                log.exception("worker supervision failed")

    def _check_slots(self) -> None:
        for i, slot in enumerate(self._slots):
            if self._stop.is_set():
                return
            if slot.process.is_alive():
                job_id = slot.current.value.decode()
                if job_id:
                    job = self.store.get_job(job_id)
                    if job is not None and job.status == "cancelled" and \
                            job.worker == slot.worker_id:
                        slot.process.kill()  # cancel a job that reports no progress
                        slot.process.join(5)
                        self._slots[i] = self._spawn(i)
                continue
            now = time.monotonic()
            if slot.died_at is None:
                slot.died_at = now
                self._failed_worker(slot)
            quick = slot.quick_deaths + 1 if slot.died_at - slot.started < 5 else 0
            if quick and now - slot.died_at < min(60.0, 2.0 ** quick):
                continue  # back off before starting yet another worker that dies at once
            self._slots[i] = self._spawn(i)
            self._slots[i].quick_deaths = quick

    def _failed_worker(self, slot: _Slot) -> None:
        """A worker died: fail the job it held, with the reason."""
        code = slot.process.exitcode
        reason = (f"signal {signal.Signals(-code).name}" if code is not None and code < 0
                  else f"exit code {code}")
        log.warning("worker %s died (%s); starting another", slot.worker_id, reason)
        slot.current.value = b""
        for job_id, claim in self.store.running_jobs_of(slot.worker_id):
            self.store.fail(job_id, claim, f"the worker process running this job died ({reason})")
            for listener in self._listeners:
                listener(job_id)

    def pids(self) -> list[int]:
        return [s.process.pid for s in self._slots]

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the workers; the jobs they held are queued again at the next start."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        for s in self._slots:
            s.process.terminate()
        for s in self._slots:
            s.process.join(timeout_s)
            if s.process.is_alive():
                s.process.kill()
        self._slots.clear()
        # a clean stop hands the running jobs back at once instead of after a lease
        self.store.requeue_orphans(self.settings.lease_s,
                                   frozenset({_server_prefix()}))
