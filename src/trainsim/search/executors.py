"""Where candidate batches are simulated: this process, local worker processes, or Ray.

Every executor runs :func:`trainsim.search.evaluation.evaluate_batch` on the batches it is given
(with the search's ``token``: a worker shares its priced passes between the batches of one
search, ``pricing.shared``) and returns the results in the order of the batches, so the search
sees the same answers whatever runs them (and however many workers there are). Ray is imported only when asked for.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

from trainsim.cpus import cpus
from trainsim.engine.loop import collector_to_oldest
from trainsim.errors import ConfigError
from trainsim.search.evaluation import Evaluation, Skipped, evaluate_batch
from trainsim.search.space import Base, Candidate

log = logging.getLogger(__name__)
Batch = list[Candidate]
OnDone = Callable[[int], None]
"""Called with the number of candidates of each batch as it finishes (progress bars)."""


class Executor(Protocol):
    name: str
    workers: int

    def map(self, base: Base, batches: Sequence[Batch], on_done: OnDone | None = None,
            token: Hashable = None) -> list[list[Evaluation | Skipped]]: ...

    def close(self) -> None: ...


class SerialExecutor:
    """Simulates in this process (tests, tiny searches, debugging)."""

    name = "serial"
    workers = 1

    def map(self, base: Base, batches: Sequence[Batch], on_done: OnDone | None = None,
            token: Hashable = None) -> list[list[Evaluation | Skipped]]:
        out = []
        for b in batches:
            out.append(evaluate_batch(base, b, token))
            if on_done:
                on_done(len(b))
        return out

    def close(self) -> None:
        pass


class _Futures:
    """Batches running in a process pool."""

    def __init__(self, futures: list[cf.Future], batches: Sequence[Batch],
                 on_done: OnDone | None) -> None:
        self.futures, self.batches, self.on_done = futures, batches, on_done

    def done(self) -> bool:
        return all(f.done() for f in self.futures)

    def result(self) -> list[list[Evaluation | Skipped]]:
        index = {f: i for i, f in enumerate(self.futures)}
        out: list[list[Evaluation | Skipped]] = [[] for _ in self.batches]
        for fut in cf.as_completed(index):
            i = index[fut]
            out[i] = fut.result()
            if self.on_done:
                self.on_done(len(self.batches[i]))
        return out


class Stream:
    """Batches handed to an executor one at a time: each started at once where the executor
    can (local processes: ``submit``), so that the caller goes on working meanwhile; else all
    mapped together when the results are asked for (this process, Ray), as ``map`` does."""

    def __init__(self, executor: Executor, base: Base, token: Hashable = None) -> None:
        self.executor, self.base, self.token = executor, base, token
        self.start = getattr(executor, "submit", None)
        self.started: list[_Futures] = []
        self.held: list[Batch] = []

    def add(self, batch: Batch) -> None:
        if self.start is not None:
            self.started.append(self.start(self.base, [batch], token=self.token))
        else:
            self.held.append(batch)

    def busy(self) -> bool:
        """Whether batches are being simulated elsewhere now (worth working beside)."""
        return any(not f.done() for f in self.started)

    def results(self) -> list[Evaluation | Skipped]:
        """Every batch's evaluations (or Skipped: over a work limit), in the order the batches were
        added."""
        out = [e for f in self.started for res in f.result() for e in res]
        return out + [e for res in self.executor.map(self.base, self.held, token=self.token)
                      for e in res] if self.held else out


def _worker_start() -> None:
    """A forked worker's collector: what it inherited from the search's process (which ran
    with the collector paused, so all of it in the youngest generation) moved to the oldest
    (``gc.freeze`` then ``gc.unfreeze``, no object visited), so that the worker's first young
    collections do not scan it, then on (see ``LocalExecutor.submit``)."""
    collector_to_oldest()  # nor any freeze holder inherited (engine.loop)
    gc.enable()


def affinity(c: Candidate) -> tuple:
    """What a worker shares between the candidates it simulates: the passes priced under one
    tensor, context and sequence parallelism and micro batch (``pricing.shared``: the op lists
    and their spans), and with them every twin (``trainsim.twin_graphs``: the same layout less
    its recompute and ZeRO-1/2 settings) and every overlap sibling. Batches led by candidates
    of one affinity are sent to one worker (:class:`LocalExecutor`)."""
    m = c.mem
    return (m.num_gpus, m.tp, m.cp, m.micro_batch, m.sequence_parallel, m.ep, m.etp)


SPILL = 2
"""Batches a worker may have queued beyond the least busy one's before an affinity it holds
moves to that one (:class:`LocalExecutor`): the shared prices are worth less than an idle
worker."""


class LocalExecutor:
    """Local worker processes, one single-process pool each, kept for the executor's life.
    A batch goes to the worker that simulated its first candidate's :func:`affinity` before
    (it prices those passes and builds those twins' graphs once, not once per worker), unless
    that worker has ``SPILL`` batches more in hand than the least busy one; a new affinity goes
    to the least busy worker. Every evaluation is a pure function of its candidate, so where
    a batch runs changes no result (the 22B search's two workers: 520 -> 461 task graphs built,
    449 in one process; measured in benchmarks/RESULTS.md, searchspeed2)."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"--workers={workers} must be >= 1")
        self.workers = workers or cpus()  # affinity and cgroup quota (trainsim.cpus.cpus)
        self._pools: list[cf.ProcessPoolExecutor] = []
        self._home: dict[tuple, int] = {}
        self._token: Hashable = None
        self._queued: list[list[cf.Future]] = []

    def map(self, base: Base, batches: Sequence[Batch], on_done: OnDone | None = None,
            token: Hashable = None) -> list[list[Evaluation | Skipped]]:
        return self.submit(base, batches, on_done, token).result()

    def _route(self, batch: Batch, token: Hashable) -> int:
        """The worker a batch is sent to (see the class)."""
        if token != self._token:
            self._home, self._token = {}, token
        busy = [sum(not f.done() for f in q) for q in self._queued]
        for q in self._queued:
            q[:] = [f for f in q if not f.done()]
        idle = min(range(len(busy)), key=busy.__getitem__)
        key = affinity(batch[0]) if batch else ()
        home = self._home.get(key)
        if home is None or busy[home] > busy[idle] + SPILL:
            home = self._home[key] = idle
        return home

    def submit(self, base: Base, batches: Sequence[Batch], on_done: OnDone | None = None,
               token: Hashable = None) -> _Futures:
        """:meth:`map` without waiting: the workers start on the batches at once."""
        if not self._pools:
            # a pool made inside the search's gc_paused() would fork workers with the
            # collector off for life: each starts with it on (evaluate_batch pauses it itself)
            self._pools = [cf.ProcessPoolExecutor(max_workers=1, initializer=_worker_start)
                           for _ in range(self.workers)]
            self._queued = [[] for _ in self._pools]
        futures = []
        for b in batches:
            w = self._route(b, token)
            fut = self._pools[w].submit(evaluate_batch, base, b, token)
            self._queued[w].append(fut)
            futures.append(fut)
        return _Futures(futures, batches, on_done)

    def close(self) -> None:
        pools, self._pools, self._queued, self._home = self._pools, [], [], {}
        _shutdown(pools)


def _shutdown(pools: list) -> None:
    """Shut every pool down, the later ones too when one's shutdown raises (Ctrl-C while
    waiting): no worker process is left behind."""
    if pools:
        try:
            pools[0].shutdown(wait=True, cancel_futures=True)
        finally:
            _shutdown(pools[1:])


class RayExecutor:
    """The same batches as Ray tasks: ``ray.init(address=...)`` joins a running cluster;
    without an address a local Ray instance is started with ``workers`` CPUs."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"--workers={workers} must be >= 1")
        try:
            import ray
        except ImportError:
            raise ConfigError("--executor ray needs Ray: pip install 'ray[default]'") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            kwargs = {"address": address} if address else {"num_cpus": workers or cpus()}
            ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
                     **kwargs)
            self._started = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self._remote = ray.remote(evaluate_batch)
        self._base_ref = None
        self._base: Base | None = None

    def map(self, base: Base, batches: Sequence[Batch], on_done: OnDone | None = None,
            token: Hashable = None) -> list[list[Evaluation | Skipped]]:
        ray = self._ray
        if self._base is not base:  # ship the base once per search, not with every batch
            self._base_ref, self._base = ray.put(base), base
        refs = [self._remote.remote(self._base_ref, b, token) for b in batches]
        index = {r: i for i, r in enumerate(refs)}
        out: list[list[Evaluation | Skipped]] = [[] for _ in batches]
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for r in done:
                i = index[r]
                out[i] = ray.get(r)
                if on_done:
                    on_done(len(batches[i]))
        return out

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False


def make_executor(name: str, workers: int | None = None, address: str | None = None) -> Executor:
    """An executor by name: 'local' (default), 'ray' or 'serial'; ``address`` (a Ray
    cluster to join) with 'ray' only: the others join no cluster, and ignored it silently."""
    if address is not None and name != "ray":
        raise ConfigError(f"--ray-address {address!r} needs --executor ray (the {name} "
                          "executor joins no cluster)")
    if name == "local":
        if workers == 1:
            return SerialExecutor()
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(workers, address)
    if name == "serial":
        return SerialExecutor()
    raise ConfigError(f"--executor {name!r} is not one of local, ray, serial")


__all__ = ["Executor", "LocalExecutor", "RayExecutor", "SerialExecutor", "make_executor"]
