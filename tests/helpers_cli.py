"""The CLI run in-process, its one error line, the fuzzers' hypothesis settings, a small
config file's text to break, and a benchmarks/ script imported as a module."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from trainsim.cli import main

# ---------------------------------------------------------------------------- the CLI, fuzzing

FAST = settings(max_examples=25, deadline=timedelta(seconds=20), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
SLOW = settings(FAST, max_examples=400)

BASE = """model: {hidden_size: 256, num_layers: 4, num_attention_heads: 4, vocab_size: 1024}
training: {global_batch_size: 16, seq_length: 512}
cluster: {gpu: h100-sxm-80gb, num_gpus: 8, gpus_per_node: 8, compute_db: null}
"""
"""A small valid run config file (its text), for the fuzzers to break."""


def cli(*args: str, cwd=None):
    """The CLI in-process with TRAINSIM_DEBUG=1: anything but a TrainsimError or a click usage
    error escapes as the exception it is (and fails the test with its traceback)."""
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        # a TRAINSIM_MAX_TASKS in the caller's environment must not bound the tests' runs
        result = CliRunner().invoke(main, list(args),
                                    env={"TRAINSIM_DEBUG": "1", "TRAINSIM_MAX_TASKS": None})
    finally:
        os.chdir(old)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "Traceback" not in result.output
    return result


def one_error_line(result, warnings: bool = True) -> str:
    """The one ``error:`` line a refused input ends with (exit code 2); ``warnings=False``: and
    nothing else on stderr, not even a ``warning:`` line."""
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines()
             if ln.strip() and not (warnings and ln.startswith("warning: "))]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr  # click's too
    return lines[-1]



def load_script(path: Path):
    """A benchmarks/ script imported as a module (they are not a package); its folder goes on
    ``sys.path`` so that it can import the scripts beside it."""
    import importlib.util
    import sys

    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def service_problem(kind: str, config, options=None):
    """The service's up-front check of a ``kind`` job (``service.jobs.problem``: None where it
    would be queued, else ``(status, field, text)``), on copies, with no workers."""
    import copy

    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    return problem(kind, copy.deepcopy(config), copy.deepcopy(options or {}),
                   Settings(workers=0, checkers=0))
