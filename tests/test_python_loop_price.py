"""benchmarks/python_loop_price.py: one measured price for a bare Python loop of tensor ops
(``compute.host.PY_LAUNCH_S``, ``PY_VIEW_S``) against the two readings it replaced, on the
DeepSpeed 2021 ZeRO-3 rows and the nanotron file."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

from trainsim.compute import host

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "python_loop_price.py")


def test_the_price_context_restores_the_constants():
    """The what-if leaves the shipped figures as it found them."""
    before = host.PY_LAUNCH_S, host.PY_VIEW_S
    with SCRIPT.loop_price(1.0, 2.0):
        assert (host.PY_LAUNCH_S, host.PY_VIEW_S) == (1.0, 2.0)
    assert (host.PY_LAUNCH_S, host.PY_VIEW_S) == before


@pytest.mark.slow
def test_the_measured_price_beats_both_readings_it_replaced():
    """At the measured per-op price the 2021 DeepSpeed rows are nearer than at an eager
    module's 30 us a copy (the 30th session's DeepSpeed reading) and the nanotron file nearer
    than with the loop's host time left out (its nanotron reading); ~10 s."""
    ds = [r for r in SCRIPT.read(SCRIPT.BUNDLED_DIR / "training_public.csv")
          if r["framework"] == "deepspeed" and r["framework_version"] < "2021-07"]
    nano = SCRIPT.read(SCRIPT.NANOTRON)

    def mape(rows, price):
        with SCRIPT.loop_price(*SCRIPT.PRICES[price]):
            errs = SCRIPT.errors(rows)
        return sum(map(abs, errs)) / len(errs)

    assert len(ds) == 4
    assert mape(ds, "measured") < mape(ds, "eager module")
    assert mape(nano, "measured") < mape(nano, "GPU only")
