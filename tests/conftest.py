"""Shared test isolation."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

from trainsim.engine.loop import gc_paused


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``-n N`` without a ``--dist`` runs xdist's work-stealing schedule, not its default
    ``load``: each worker starts on its own contiguous half of the collection (a module's
    tests stay on one worker, so a module-scoped fixture is built once, not on both) and a
    worker that runs out takes half of the other's queue (both stay busy to the end, where
    ``load`` left one idle while the other ran its long last chunk). Which worker runs a test
    and in what order changes, never what it checks. Measured 2026-11-27 on this 2-core host
    at load ~11: the default suite's user+sys CPU 633 -> 600 s (tests 567 -> 548 s, collection
    26.6 -> 23.0 s), the workers' busy time 1372 / 1492 s of 1537 -> 1658 / 1641 of 1693 s.
    An explicit ``--dist`` (``load`` included) is kept."""
    args = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if config.getvalue("dist") != "load" or \
            any(a in ("-d", "--dist") or a.startswith("--dist=") for a in args):
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


def pytest_configure(config):
    """Hypothesis and anyio are imported as libraries (by the tests, and by fastapi's test
    client), without pytest's assert rewriting. pytest marks every module of a distribution
    that registers a plugin (both do) for rewriting, and on a host with PYTHONDONTWRITEBYTECODE
    (this one) each process rewrites them again, ~90 modules (~0.6 CPU s a process, measured
    2026-11-28). Rewriting only changes the message of an assert failing inside those
    libraries, never what a test checks (the tests' own asserts are rewritten as before)."""
    from _pytest.assertion.rewrite import assertstate_key

    hook = getattr(config.stash.get(assertstate_key, None), "hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set) and marked & LIBRARIES_NOT_REWRITTEN:
        marked -= LIBRARIES_NOT_REWRITTEN
        getattr(hook, "_marked_for_rewrite_cache", {}).clear()
    _project_bytecode_cached(config)  # before xdist starts its workers (at session start)


LIBRARIES_NOT_REWRITTEN = {"hypothesis", "anyio"}


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """At the end of a process pytest's unraisable-exception check runs five full collections
    (``_pytest.unraisableexception.cleanup``: ``gc_collect_harder(5)``, then it reports what
    the finalizers raised); each one walks every object still alive (~1M in a worker at the end
    of the suite, ~0.4-0.8 CPU s a walk on this 2-core host, measured 2026-11-28). Here, after
    every other plugin's unconfigure, the collections run until one finds nothing unreachable
    (at most the same five), and pytest's loop is told to run none. A collection that finds
    nothing runs no finalizer and frees nothing, so the ones after it would find nothing too:
    every finalizer that pytest's five would have run, and so every unraisable exception it
    would have reported, still runs before its report; only the walks that cannot find
    anything are left out. A pytest without that stash key keeps its own loop."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:
        return
    iterations = config.stash.get(gc_collect_iterations_key, 5)
    for _ in range(iterations):
        if gc.collect() == 0:
            break
    config.stash[gc_collect_iterations_key] = 0


def _project_bytecode_cached(config) -> None:
    """On a host that sets PYTHONDONTWRITEBYTECODE (this one does), nothing writes the bytecode
    of trainsim's package, of benchmarks/ (imported by the tests as modules) or of tests/'
    helpers, so every Python process of the run compiled them from source again: the xdist
    workers, the controller, and each child the tests start (the CLI or a script in a fresh
    interpreter, the service's spawned workers and checkers; ~0.5 CPU s each for trainsim's
    ~240 modules, measured 2026-11-28). The controller (or the one process without xdist)
    writes the ``__pycache__`` files a host without that variable writes on its own: standard
    CPython bytecode, checked by every import against its source's mtime and size (a stale file
    is recompiled, never run), in folders git ignores. Only when a module is compiled changes,
    never what it runs. The already-cached check is a stat and a header read per file; a host
    that writes bytecode itself, an xdist worker or a read-only tree skips this."""
    if not sys.dont_write_bytecode or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import compileall

    import trainsim

    here = Path(__file__).parent
    bench = Path(config.rootpath) / "benchmarks"
    try:
        compileall.compile_dir(Path(trainsim.__file__).parent, quiet=2)
        if bench.is_dir():
            compileall.compile_dir(bench, quiet=2, maxlevels=0)
        for f in here.glob("*.py"):
            if not f.name.startswith("test_") and f.name != "conftest.py":  # pytest caches these
                compileall.compile_file(f, quiet=2)
    except OSError:
        pass  # a read-only tree: each process compiles as before


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """The collector stays off while the test modules are imported: pytest rewrites ~6,000
    asserts into fresh AST objects, and each full collection then walks every object torch,
    transformers and SQLAlchemy left alive (collection 17.2 s of CPU with it on, 13.5 s with
    it off, measured 2026-11-26 on this machine). Only when the collector runs changes, never
    a result: it is back on, as it was, before the first test (``engine.loop.gc_paused``, as
    a simulation pauses it). Under xdist each worker first writes its share of pytest's
    rewritten-module cache (:func:`_rewrite_my_share`)."""
    with gc_paused():
        _rewrite_my_share(session.config)
        yield


def _rewrite_my_share(config) -> None:
    """Each xdist worker collects every test module, and pytest rewrites each module's asserts
    before it runs it (~11 CPU-seconds for the ~370 modules on this 2-core host) unless its
    cache (``tests/__pycache__/*-pytest-*.pyc``, checked against the source's mtime and size)
    holds the module already. A host that sets PYTHONDONTWRITEBYTECODE (this one does) never
    writes that cache, so every worker paid the whole rewrite. Worker k of n writes the cache of
    every n-th module from the k-th before collecting; the modules of the others are then read
    from the cache, or rewritten here when not written yet. The cached code is what pytest's
    own import hook compiles and reads, so no test changes; a pytest without these internals,
    a read-only tree or ``--assert=plain`` just rewrite as before."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or config.getoption("assertmode") != "rewrite":
        return
    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
            try_makedirs,
        )
    except ImportError:
        return
    state = config.stash.get(assertstate_key, None)
    if state is None or state.hook is None:
        return
    here = Path(__file__).parent
    files = sorted({f for a in config.args for f in _test_files(Path(a.split("::")[0]), here)})
    if not files or not try_makedirs(get_cache_dir(files[0])):
        return
    for fn in files[int(worker.removeprefix("gw")) :: int(count)]:
        pyc = get_cache_dir(fn) / (fn.name[:-3] + PYC_TAIL)
        if _read_pyc(fn, pyc) is None:
            try:
                stat, co = _rewrite_test(fn, config)
            except SyntaxError:
                continue  # collection reports it, as without the cache
            _write_pyc(state, co, stat, pyc)


def _test_files(arg: Path, here: Path) -> list[Path]:
    """The test modules of this directory that a command-line argument names (all of them for
    the directory, as the default run's testpaths)."""
    arg = arg.resolve()
    if arg.is_dir() and (arg == here or here.is_relative_to(arg)):
        return list(here.glob("test_*.py"))
    if arg.parent == here and arg.name.startswith("test_") and arg.suffix == ".py":
        return [arg]
    return []


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


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """A module that runs PyTorch on the CPU runs it on one intra-op thread, as ``trainsim
    profile`` runs its CPU dry run (``profile.run._cpu_threads``): the tensors of these tests
    are tiny, and with two xdist workers on two cores OpenMP's spinning threads cost more than
    the ops (a three-block forward and backward under ``MemTracker``: 4.3 -> 1.7 CPU s, 10.8 ->
    4.4 s wall, measured 2026-11-28 on this host). What a test checks (bytes kept, shapes,
    flops, fp32 results within their tolerance) does not read the thread count. Torch is never
    imported for this: only where a test module (or what it ran) already did."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads") and torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session", autouse=True)
def _public_run_shared_between_workers(tmp_path_factory):
    """Under xdist, the directory every worker of this session shares (the parent of each
    worker's basetemp) holds ``helpers.public_training_validated``'s and
    ``helpers.kernels_published_validated``'s runs, so that the scoreboard and determinism
    tests validate the public file (~17 CPU-seconds) and three tests the published kernels
    file (~5) once per session, not once per worker. Alone (no xdist), the process keeps them
    in memory."""
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


@pytest.fixture(scope="module")
def fit_script():
    """benchmarks/fit_kernels.py imported as a module (registered in ``sys.modules`` while the
    test module runs: its dataclasses look their module up)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "fit_kernels.py"
    spec = importlib.util.spec_from_file_location("fit_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["fit_kernels"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("fit_kernels", None)
