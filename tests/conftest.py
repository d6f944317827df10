"""Shared test isolation."""

from __future__ import annotations

import os

import pytest


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


@pytest.fixture(scope="module")
def executor():
    """A local search executor, shared by a module's searches and closed after them."""
    from trainsim.search import LocalExecutor

    ex = LocalExecutor()
    yield ex
    ex.close()
