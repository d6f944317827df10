"""benchmarks/scale_trend.py (signed error against log2 GPUs within each source): the slope and
the pooled within-group slope on known lines, how rows form groups, and the slowest-of-N
what-if's expected maximum against closed forms and tables."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "scale_trend.py")


def _row(i: int, gpus: int, model: str = "m", source: str = "Paper A @ abc, table 1",
         tp: str = "8", batch: int | None = None) -> dict[str, str]:
    return {"id": f"r{i}", "source": source, "model": model, "gpu": "h100-sxm-80gb",
            "dtype": "bf16", "num_gpus": str(gpus), "tp": tp, "pp": "1", "cp": "1",
            "global_batch_size": str(batch if batch is not None else gpus)}


def test_slope_of_an_exact_line_has_no_error():
    """Points on y = 1 + 2x: slope 2, standard error 0; two points give no standard error."""
    b, se = SCRIPT.slope([0.0, 1.0, 2.0], [1.0, 3.0, 5.0])
    assert b == pytest.approx(2.0) and se == pytest.approx(0.0)
    assert SCRIPT.slope([0.0, 1.0], [0.0, -1.0]) == (pytest.approx(-1.0), None)


def test_pooled_slope_ignores_each_groups_offset():
    """Two groups on parallel lines far apart: the within-group slope is theirs, where one
    regression through all points would mix the offsets in."""
    rows = [_row(1, 8), _row(2, 64), _row(3, 16, "n"), _row(4, 128, "n")]
    # slope -1 per doubling in both; offsets +10 and -20
    results = {"r1": 1.10, "r2": 1.07, "r3": 0.80, "r4": 0.77}
    results = {k: {"predicted": v, "measured": 1.0} for k, v in results.items()}
    groups = SCRIPT.make_groups("training_x", rows, results)
    assert len(groups) == 2
    b, _, n = SCRIPT.pooled(groups)
    assert b == pytest.approx(-1.0) and n == 4


def test_groups_fixed_config_then_mixed_and_at_least_a_doubling():
    """Rows of one config at two GPU counts form a weak-scaling group; a source whose model
    changes with every GPU count is fitted whole ('mixed'); 96 and 128 GPUs (less than a
    doubling) form nothing."""
    ok = {"predicted": 1.0, "measured": 1.0}
    rows = [_row(1, 8), _row(2, 64), _row(3, 8, "a", "Paper B"), _row(4, 32, "b", "Paper B"),
            _row(5, 96, "c", "Paper C"), _row(6, 128, "c", "Paper C")]
    groups = SCRIPT.make_groups("training_x", rows, {r["id"]: ok for r in rows})
    by_source = {g.source: g for g in groups}
    assert set(by_source) == {"Paper A", "Paper B"}
    assert "*" in by_source["Paper A"].label
    assert by_source["Paper A"].kind() == "weak"
    assert by_source["Paper B"].label == "mixed"


def test_config_change_splits_a_models_rows():
    """Same model at 8 and 64 GPUs but a different TP: not one config; the rows fall back to a
    fixed-model group (config varies, no '*')."""
    ok = {"predicted": 1.0, "measured": 1.0}
    rows = [_row(1, 8, tp="8"), _row(2, 64, tp="4")]
    (g,) = SCRIPT.make_groups("training_x", rows, {r["id"]: ok for r in rows})
    assert "*" not in g.label and g.label != "mixed"


def test_source_key_drops_commits_and_keeps_the_submitter():
    text = ("mlcommons/training_results_v5.0 (commit 0fdc28f013) NVIDIA/results/eos_n64/"
            "llama31_405b/result_*.txt")
    assert SCRIPT.source_key(text) == "mlcommons/training_results_v5.0 NVIDIA"
    assert SCRIPT.source_key("NVIDIA/dgxc-benchmarking a/README.md @ 35a9, table") == \
        "NVIDIA/dgxc-benchmarking a/README.md"


def test_expected_max_of_normals_matches_closed_forms():
    """E[max of 2] = 1/sqrt(pi), E[max of 3] = 3/(2 sqrt(pi)); E[max of 10] = 1.5388 (order
    statistics tables); none for one draw; grows with n."""
    assert SCRIPT.expected_max(1) == 0.0
    assert SCRIPT.expected_max(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-6)
    assert SCRIPT.expected_max(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-6)
    assert SCRIPT.expected_max(10) == pytest.approx(1.5388, abs=1e-4)
    assert SCRIPT.expected_max(2048) > SCRIPT.expected_max(64) > SCRIPT.expected_max(10)


def test_stretch_counts_from_the_reference_on():
    """With the stretch counted from 8 GPUs, an 8-GPU row keeps its prediction and a 4-GPU row
    is not sped up; a 64-GPU row grows by sigma * (E_64 - E_8)."""
    rows = [_row(1, 4), _row(2, 8), _row(3, 64)]
    res = {r["id"]: {"predicted": 2.0, "measured": 2.0} for r in rows}
    out = SCRIPT.stretched(res, rows, 0.01, reference=8)
    assert out["r1"]["predicted"] == 2.0 and out["r2"]["predicted"] == 2.0
    grow = 0.01 * (SCRIPT.expected_max(64) - SCRIPT.expected_max(8))
    assert out["r3"]["predicted"] == pytest.approx(2.0 * (1 + grow))
