"""benchmarks/mds_host_bound.py: the launches a Megatron-DeepSpeed micro-batch issues, trainsim's
and at source, and the per-launch cost a host-bound micro-batch would imply."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "mds_host_bound.py")


def _row(row_id: str) -> dict[str, str]:
    with open(SCRIPT.DEFAULT, newline="") as f:
        return next(r for r in csv.DictReader(f) if r["id"] == row_id)


def test_source_counts_add_the_unfused_attention_only_where_it_runs():
    # the attention core is trainsim's count now (compute.host.MEGATRON_UNFUSED_LAUNCHES):
    # only the QKV split's backward cat is left beyond it
    assert SCRIPT.extra_source_launches(True) == (0, 1 + 4 + 2)
    assert SCRIPT.extra_source_launches(False) == (0, 4 + 2)


def test_the_125m_row_would_need_over_100_us_a_launch():
    s = SCRIPT.stage_launches(_row("mdsrebase-125m-a100-8"))
    assert s["mb"] == 64 and s["source"] > s["ours"]
    # last stage: 6 layers forward + full recompute + backward, and the head
    assert s["ours"] > 6 * s["layer"] and s["source_layer"] == s["layer"] + 7
    c_star = 1e3 * s["meas_ms"] / s["source"]
    assert 90 < c_star < 130
    serial = 1e3 * (s["meas_ms"] - s["pred_ms"]) / s["source"]
    assert 20 < serial < c_star
