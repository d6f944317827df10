"""benchmarks/efa_regions.py (issue 17 scope 3 diagnostic): the aws-ofi-nccl P5 region tuner's
class of each published p5 EFA all_reduce row, and what the classes show."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "efa_regions.py")
GIB, MIB = SCRIPT.GIB, SCRIPT.MIB


@pytest.mark.parametrize("ranks,size,want", [
    (16, 30 * MIB, ("tree", "LL128")), (16, 30 * MIB + 1, ("nvls_tree", "Simple")),
    (32, 36 * MIB, ("tree", "LL128")), (32, GIB, ("ring", "LL128")),
    (32, 1.4 * GIB, ("nccl", "own tuner")), (32, 2 * GIB, ("ring", "Simple")),
    (64, 2 * GIB, ("ring", "LL128")), (128, 4 * GIB, ("nvls_tree", "Simple")),
    (128, 8 * GIB, ("ring", "Simple")), (256, GIB, ("nvls_tree", "Simple")),
    (256, 1025 * MIB, ("ring", "LL128")), (256, 8 * GIB, ("nvls_tree", "Simple")),
])
def test_band_edges_as_read(ranks, size, want):
    assert SCRIPT.tuner_choice(ranks, size) == want


def _by_class():
    out = {}
    for r in SCRIPT.efa_rows():
        out.setdefault(SCRIPT.tuner_choice(r["ranks"], r["size"]), []).append(r)
    return out


def test_every_row_has_a_tuner_class_and_the_large_ring_rows_plateau():
    """45 rows, none outside the table; ring/Simple within 348-357 GB/s on 4-16 nodes, and
    ring/LL128 from 1 GiB within 269-280 on 4-32 nodes: one rate per class."""
    groups = _by_class()
    assert sum(len(v) for v in groups.values()) == 45
    assert ("nccl", "own tuner") not in groups
    simple = [r["busbw"] for r in groups[("ring", "Simple")]]
    assert sorted({r["nodes"] for r in groups[("ring", "Simple")]}) == [4, 8, 16]
    assert max(simple) / min(simple) < 1.03
    ll128 = [r["busbw"] for r in groups[("ring", "LL128")] if r["size"] >= GIB]
    assert len(ll128) >= 6 and max(ll128) / min(ll128) < 1.05


def test_ring_fixed_cost_grows_with_the_ring_and_its_rate_does_not_fall():
    """ring/LL128 on 4, 8, 16 nodes: the fitted fixed cost rises with the node count, the rate
    stays within 2 % (no decline per doubling on EFA)."""
    rows = _by_class()[("ring", "LL128")]
    fits = {n: SCRIPT.line_fit([(r["size"], r["time"]) for r in rows if r["nodes"] == n])
            for n in (4, 8, 16)}
    fixed = [fits[n][0] for n in (4, 8, 16)]
    rates = [fits[n][1] * 2 * (8 * n - 1) / (8 * n) for n in (4, 8, 16)]  # as busbw
    assert fixed[0] < fixed[1] < fixed[2]
    assert max(rates) / min(rates) < 1.02


def test_line_fit_recovers_a_line():
    a, rate = SCRIPT.line_fit([(1e6, 1e-4 + 1e6 / 2e10), (4e6, 1e-4 + 4e6 / 2e10)])
    assert a == pytest.approx(1e-4) and rate == pytest.approx(2e10)
    assert SCRIPT.line_fit([(1e6, 1.0)]) is None
