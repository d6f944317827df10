"""Shared test isolation."""

from __future__ import annotations

import gc
import os

import pytest

from trainsim.engine.loop import gc_paused


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """The collector stays off while the test modules are imported: pytest rewrites ~6,000
    asserts into fresh AST objects, and each full collection then walks every object torch,
    transformers and SQLAlchemy left alive (collection 17.2 s of CPU with it on, 13.5 s with
    it off, measured 2026-11-26 on this machine). Only when the collector runs changes, never
    a result: it is back on, as it was, before the first test (``engine.loop.gc_paused``, as
    a simulation pauses it)."""
    with gc_paused():
        yield


@pytest.fixture(autouse=True)
def _work_limits_do_not_leak():
    """A CLI flag such as ``--max-tasks`` sets its TRAINSIM_MAX_* limit for the process (and the
    workers it starts); restore them after each test so one test's limit never bounds another's."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("TRAINSIM_MAX_")}
    yield
    for k in [k for k in os.environ if k.startswith("TRAINSIM_MAX_")]:
        if k not in saved:
            del os.environ[k]
    os.environ.update(saved)


@pytest.fixture(scope="module", autouse=True)
def _collector_unfrozen_after_each_module():
    """A module that leaves a service app running (a TestClient entered and never exited) leaves
    the app's freeze in place: every object alive then stays in the permanent generation and
    ``engine.loop.runs_shared`` sees a holder, so it no longer freezes its own kept graphs. Reset
    after the module through ``engine.loop.collector_to_oldest`` (unfrozen, no holder counted);
    freezing changes which objects the collector scans, never a result. A module's own served app
    (``test_service_api``) is torn down before this, keeping its freeze while it runs."""
    yield
    if gc.get_freeze_count():
        from trainsim.engine.loop import collector_to_oldest

        collector_to_oldest()  # unfrozen, and no holder left counted (engine.loop._FROZEN)


@pytest.fixture(scope="session", autouse=True)
def _public_run_shared_between_workers(tmp_path_factory):
    """Under xdist, the directory every worker of this session shares (the parent of each
    worker's basetemp) holds ``helpers.public_training_validated``'s run, so that the
    scoreboard and determinism tests validate the public file once per session, not once per
    worker (~17 CPU-seconds each time). Alone (no xdist), the process keeps it in memory."""
    import helpers

    if os.environ.get("PYTEST_XDIST_WORKER"):
        helpers.PUBLIC_SHARED_DIR[:] = [tmp_path_factory.getbasetemp().parent]
    yield


@pytest.fixture(scope="module")
def executor():
    """A local search executor, shared by a module's searches and closed after them."""
    from trainsim.search import LocalExecutor

    ex = LocalExecutor()
    yield ex
    ex.close()
