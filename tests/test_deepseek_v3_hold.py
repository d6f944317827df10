"""benchmarks/deepseek_v3_hold.py's kept launch figures of DeepEP in DeepSeek's profiled
DualPipe pair (deepseek-ai/profile-data@4496024 train.json) and the what-if it prices."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
try:
    import deepseek_v3_hold as dh
finally:
    sys.path.remove(str(BENCH))

KEPT = json.loads(dh.KEPT.read_text())


def test_kept_launches_and_blocks():
    """16 notify kernels (32.6 ms, cast44's figure) on 9 = 1 + 8 RDMA ranks or 20 = 2 x 10
    channels blocks (DeepEP's launch configs), 16 dispatch / combine on the 20 SMs given."""
    r = dh.residency(KEPT)
    assert r["ms"]["notify"] == pytest.approx(32.6, abs=0.05)
    assert r["ms"]["exchange"] == pytest.approx(80.5, abs=0.05)
    assert r["blocks"] == {"notify": [9, 20], "exchange": [20]}
    assert sum(x["kind"] in dh.NOTIFY for x in KEPT["launches"]) == 16
    assert sum(x["kind"] in dh.EXCHANGE for x in KEPT["launches"]) == 16
    assert r["sm_ms"]["notify_waiting"] < r["sm_ms"]["notify_as_launched"] / 9


def test_holds_grow_through_the_pair_and_the_exchange_does_not():
    b = dh.by_place(KEPT)
    n, x = b["notify"], b["exchange"]
    assert list(n) == [1, 2, 3, 4]
    assert n[1] < n[2] < n[3] < n[4] and n[4] > 2.5 * n[1]
    assert max(x.values()) / min(x.values()) < 1.05
    s = dh.spread(KEPT)
    assert all(v < 1.2 for k, v in s.items() if "notify" not in k)


def test_exchange_stream_runs_back_to_back():
    r = dh.residency(KEPT)
    assert r["back_to_back"] >= 0.7 * (r["launches"] - 1)
    assert r["notify_back_to_back"] >= 12
    assert KEPT["exchange_stream_busy_us"] > 0.85 * KEPT["span_us"]


def test_what_if_orders():
    """The source's holds (one waiting block) charge less than the whole residency at 20 SMs
    and more than the transfer-time charge the example prices."""
    p = {"pair_s": 0.1279, "compute_s": 0.118, "grid_s": 0.05, "norms_s": 0.004,
         "exchange_charge_s": 0.004}
    w = dh.what_if(p, KEPT, 20 / 132)
    assert p["pair_s"] < w["lower_s"] < w["upper_s"] < w["whole_residency_at_exchange_sms_s"]
