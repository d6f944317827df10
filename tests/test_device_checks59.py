"""benchmarks/device_checks59.py without a GPU: its plan, and the passes' shapes it times."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def dc59():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("device_checks59", BENCH / "device_checks59.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_lists_every_section(dc59, capsys):
    assert dc59.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in dc59.SECTIONS)
    with pytest.raises(SystemExit):
        dc59.main(["--dry-run", "--sections", "grok_gemm,nope"])


def test_the_three_passes_do_the_same_work_with_the_tokens_moving_to_k(dc59):
    for tokens, out_f, in_f in dc59.SHAPES:
        shapes = {kind: dc59.gemm_shape(tokens, out_f, in_f, kind) for kind in ("fwd", "dgrad", "wgrad")}
        assert shapes["fwd"] == (tokens, out_f, in_f)
        assert shapes["dgrad"] == (tokens, in_f, out_f)
        assert shapes["wgrad"][2] == tokens
        assert len({m * n * k for m, n, k in shapes.values()}) == 1
    assert dc59.ratio(2.0, 1.0) == 2.0
