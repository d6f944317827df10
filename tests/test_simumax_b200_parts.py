"""SimuMax's B200 node part by part (b200node55, 2026-11-28): benchmarks/simumax_b200_parts.py and
the SimuMax estimates it wrote (benchmarks/simumax_b200_parts.json, SimuMax @ 4dcaae5 re-run from
the mirror), the GEMM repricing at the node's measured rates and the per-micro-batch fits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import simumax_b200_parts as parts


def _sm() -> dict[str, dict[str, float]]:
    return json.loads(parts.PARTS.read_text())


def test_report_strings_and_line_fit():
    assert parts._ms("260.1568 ms") == pytest.approx(260.1568)
    assert parts._ms("2.5 s") == pytest.approx(2500.0)
    assert parts._ms("40 us") == pytest.approx(0.04)
    slope, cut = parts._line([4, 8, 32], [3 * 4 + 7, 3 * 8 + 7, 3 * 32 + 7])
    assert (slope, cut) == (pytest.approx(3.0), pytest.approx(7.0))


def test_simumax_parts_add_up_and_cover_the_cases():
    sm = _sm()
    assert set(sm) <= set(parts.CASES) and len(sm) == 8  # the two 405B cases: no SimuMax entry
    for case, p in sm.items():
        m = int(case.rsplit("mbc", 1)[1])
        if "pp1" in case:  # one stage: m chunks (compute + exposed intra-node comm), dp, optim
            assert p["chunk_ms"] * m + p["dp_exposed_ms"] + p["optimizer_ms"] == \
                pytest.approx(p["total_ms"], rel=5e-3)
            assert p["fwd_compute_ms"] + p["bwd_compute_ms"] + p["intra_node_exposed_ms"] == \
                pytest.approx(p["chunk_ms"] * m, rel=5e-3)


@pytest.mark.skipif(not parts.MIRROR.exists(), reason="needs the SimuMax mirror")
def test_rerun_matches_published_and_measured():
    """SimuMax's re-run estimate is the perf_ms it published for the case (to its rounding) and
    within 11 % of the measured step (its own table: -10..0 %)."""
    published = {r["case"].removesuffix("_cef"): r for r in
                 json.loads(parts.show(parts.SUMMARY))["rows"]}
    for case, p in _sm().items():
        row = published[case]
        assert p["total_ms"] == pytest.approx(row["perf_ms"], abs=0.06)
        assert p["total_ms"] == pytest.approx(row["real_ms"], rel=0.11)


def test_node_gemm_rates_slow_trainsim_s_dense_gemms():
    """The Llama 3 70B tp8 row: its breakdown adds up; its layer GEMMs are found in the node's
    sweep and run slower there than trainsim prices them, by less than the row's gap."""
    got = parts.trainsim_parts("simumax-b200-llama3-70b-l12-tp8-pp1-dp1-mbc4")
    total = got["compute_ms"] + got["bubble_ms"] + got["optimizer_ms"] + got["host_ms"] + \
        sum(got[f"x{g}_ms"] for g in ("tp", "ep", "dp", "pp", "cp"))
    assert total == pytest.approx(got["predicted_ms"], rel=1e-6)
    assert got["gemm_matched_ms"] > 0.7 * got["gemm_ms"] > 0
    assert 0 < got["gemm_delta_ms"] < got["measured_ms"] - got["predicted_ms"]


def test_table_runs_without_the_mirror(monkeypatch):
    monkeypatch.setattr(parts, "MIRROR", Path("/nonexistent"))
    monkeypatch.setattr(parts, "CASES", {"llama3_70b_l12_tp8_pp1_dp1_mbc4":
                                         "simumax-b200-llama3-70b-l12-tp8-pp1-dp1-mbc4"})
    lines = parts.table()
    assert len(lines) == 3 and "| 280.9 |" in lines[2]


def test_unknown_flag_is_refused(capsys):
    assert parts.main(["--bogus"]) == 2
    assert "usage" in capsys.readouterr().err
