"""The fuzz scripts' HTTP surfaces exit the service app's TestClient once their cases have run
(or are dropped): its lifespan's shutdown stops the app's threads and unfreezes the collector,
which a client left open kept frozen with every object of the process (``engine.loop``)."""
from __future__ import annotations

import gc
import importlib.util
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    script = ROOT / "benchmarks" / f"{name}.py"
    sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unfrozen() -> bool:
    from trainsim.engine import loop
    return gc.get_freeze_count() == 0 and loop._FROZEN == [0]


@pytest.fixture(autouse=True)
def _nothing_frozen_before():
    pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    assert _unfrozen()


def _served(cases, n: int) -> None:
    """Run the first ``n`` cases (all with n < 0), checking the app is serving meanwhile."""
    for i, (label, thunk) in enumerate(cases):
        if i == n:
            break
        assert thunk() is None, label
        assert gc.get_freeze_count() > 0  # the app's startup freeze, while it serves


def test_sweep7_service_surface_exits_its_client_after_the_last_case():
    _served(_script("fuzz_sweep7").service_cases(), -1)
    assert _unfrozen()


def test_sweep8_service_surface_exits_its_client_when_dropped():
    cases = _script("fuzz_sweep8").service_cases()
    _served(cases, 3)
    cases.close()
    assert _unfrozen()


def test_struct_http_surface_exits_its_client_when_dropped(tmp_path):
    cases = _script("fuzz_struct_cli").http_cases(random.Random(0), tmp_path, 10)
    _served(cases, 3)
    cases.close()
    assert _unfrozen()
