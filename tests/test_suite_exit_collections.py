"""tests/conftest.py ``pytest_unconfigure``: the end-of-process collections of pytest's
unraisable-exception check run until one finds nothing (at most pytest's five), and every
finalizer pytest's own five would run still runs before the check reports."""

from __future__ import annotations

import gc
import types

import conftest
import pytest
from _pytest.unraisableexception import gc_collect_harder, gc_collect_iterations_key

from trainsim.engine.loop import freeze_collector, thaw_collector


class _Link:
    """A self-referencing object whose finalizer records itself and leaves the next link of
    the chain as new cyclic garbage (found only by a later collection)."""

    def __init__(self, depth: int, ran: list[int]) -> None:
        self.me, self.depth, self.ran = self, depth, ran

    def __del__(self) -> None:
        self.ran.append(self.depth)
        if self.depth > 1:
            _Link(self.depth - 1, self.ran)


def _finalized(depth: int, collect) -> tuple[list[int], int]:
    """The finalizers run and the collections made when ``collect`` ends a process whose last
    garbage is a chain of ``depth`` links (the automatic collector off meanwhile, and every
    object alive before frozen: each walk here is of this test's few objects, not the worker's
    million)."""
    ran: list[int] = []
    passes: list[int] = []

    def count(phase, info):
        if phase == "stop" and info["generation"] == 2:
            passes.append(info["collected"])

    was = gc.isenabled()
    gc.disable()
    freeze_collector()
    gc.callbacks.append(count)
    try:
        if depth:
            _Link(depth, ran)
        collect()
        seen = list(ran)
    finally:
        gc.callbacks.remove(count)
        while gc.collect():  # what a capped loop left (its finalizers append to ``ran`` only)
            pass
        thaw_collector()
        if was:
            gc.enable()
    return seen, len(passes)


def _config(iterations: int | None = None):
    stash = pytest.Stash()
    if iterations is not None:
        stash[gc_collect_iterations_key] = iterations
    return types.SimpleNamespace(stash=stash)


@pytest.mark.parametrize("depth", [0, 1, 2, 4])
def test_the_exit_collections_run_every_finalizer_pytests_five_run_in_fewer_walks(depth):
    ours = _config()
    ran, walks = _finalized(depth, lambda: conftest.pytest_unconfigure(ours))
    theirs, five = _finalized(depth, lambda: gc_collect_harder(5))
    assert ran == theirs == list(range(depth, 0, -1))
    assert five == 5 and walks == depth + 1  # each link's pass, then one that finds nothing
    assert ours.stash[gc_collect_iterations_key] == 0  # pytest's cleanup adds no walk


@pytest.mark.parametrize("iterations", [None, 2])
def test_the_exit_collections_stop_where_pytests_would(iterations):
    """A chain longer than the walks allowed: as many links finalized as pytest's loop, for its
    default five and for a count set in the stash."""
    cfg = _config(iterations)
    ran, walks = _finalized(7, lambda: conftest.pytest_unconfigure(cfg))
    theirs, _ = _finalized(7, lambda: gc_collect_harder(iterations or 5))
    assert ran == theirs == list(range(7, 7 - (iterations or 5), -1))
    assert walks == (iterations or 5)
