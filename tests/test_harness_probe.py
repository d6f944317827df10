"""benchmarks/harness_probe.py: the device check that would give the do_bench per-call cost a
measurement outside Liger-Kernel's held-out rows (RESULTS.md, 29th session kern29 block). Only
its code paths run here (CPU, no timing is meaningful); the fit is checked on known lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

pytest.importorskip("torch")  # the script times kernels through trainsim.profile.device
probe = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "harness_probe.py")


def test_analyze_recovers_each_harness_intercept_and_rate():
    hbm = 3.35e12
    lines = {"graph": (1.5e-6, 0.90), "queued": (3.6e-6, 0.90), "do_bench": (7.0e-6, 0.89),
             "do_bench_read": (6.0e-6, 0.89)}
    rows = [{"harness": how, "bytes": str(b), "time_s": str(a + b / (r * hbm))}
            for how, (a, r) in lines.items() for b in (2 ** 21, 2 ** 25, 2 ** 29)]
    out = {how: (n, a_us, rate, over) for how, n, a_us, rate, over in probe.analyze(rows, hbm)}
    assert list(out) == list(probe.HARNESSES)
    for how, (a, r) in lines.items():
        n, a_us, rate, over = out[how]
        assert n == 3 and abs(a_us - a * 1e6) < 1e-3 and abs(rate - r) < 1e-6
        assert abs(over - (a - lines["queued"][0]) * 1e6) < 1e-3


def test_every_harness_runs_off_gpu(tmp_path):
    dev = probe.open_device("cpu")
    rows = probe.probe(dev, (1,), 3, 2 ** 20)
    assert [r["harness"] for r in rows] == list(probe.HARNESSES)
    assert all(float(r["time_s"]) > 0 and r["bytes"] == 2 ** 20 for r in rows)
