"""benchmarks/zero3_coordinator.py (issue 17 items 2-3 diagnostics): DeepSpeed 0.6.2's ZeRO-3
parameter coordinator replayed on a module trace. Hand-worked toy traces for its three limits
(prefetch bucket, live parameters, reuse distance), then the finding it prints: under the
DeepSpeed-on-Azure recipe no gather waits for its own module (the prefetch runs ahead up to
stage3_max_live_parameters), and the backward gathers again what trainsim's reuse-distance
rule says it does at the same distance."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
# a script, imported after the path is set: its dataclasses need sys.modules
import zero3_coordinator as SCRIPT

M = 1_000_000  # elements of each toy weight (above the 1e5 persistence threshold)


def _toy(names: str) -> list:
    """Fetch then release each module in ``names`` (one weight of M elements each; a name
    seen twice is the same weight used again)."""
    params = {n: SCRIPT.Param(f"{n}.w", M) for n in set(names)}
    out = []
    for n in names:
        out += [("+", (params[n],), "forward"), ("-", (params[n],), "forward")]
    return out


def _gathers(events, **limits):
    c = SCRIPT.Coordinator(events, **limits).run()
    return [(g.param.name, g.issued, g.used) for g in c.gathers]


def test_each_fetch_prefetches_one_entry_of_the_queue():
    # bucket 1 element: every fetch pops one queue entry ahead. A is gathered at its own
    # fetch (step 0, nothing ahead of it); B and C one step before they run.
    got = _gathers(_toy("ABC"), max_live=10 * M, max_reuse=0, prefetch=1)
    assert got == [("A.w", 0, 0), ("B.w", 0, 1), ("C.w", 1, 2)]


def test_live_parameters_stop_the_prefetch():
    # max_live of one weight: with A gathered, the budget min(M - M, 1) is 0: nothing is
    # prefetched, every gather waits for its own module
    got = _gathers(_toy("ABC"), max_live=M, max_reuse=0, prefetch=1)
    assert got == [("A.w", 0, 0), ("B.w", 1, 1), ("C.w", 2, 2)]


def test_bucket_counts_weights_already_gathered():
    # A B A: at B's fetch the queue's next entry is A (still gathered: kept for its reuse);
    # popping it fills the bucket, so nothing is gathered though the queue moved on
    got = _gathers(_toy("ABA"), max_live=10 * M, max_reuse=2 * M, prefetch=1)
    assert got == [("A.w", 0, 0), ("B.w", 0, 1)]


@pytest.mark.parametrize(("distance", "regathered"), [(2 * M, False), (M // 2, True)])
def test_reuse_distance_keeps_or_releases(distance, regathered):
    # A B A with no prefetch: A's release walks B (M elements) before reaching A again;
    # the walk stops once it has passed more than the distance
    got = _gathers(_toy("ABA"), max_live=M, max_reuse=distance, prefetch=1)
    assert (("A.w", 2, 2) in got) is regathered


def test_azure_recipe_never_gathers_on_demand():
    for model in SCRIPT.MODELS:
        r = SCRIPT.report(model, SCRIPT.AZURE)
        assert r["on_demand_per_block"] == 0
        # only the first block's first weight, prefetched at the embedding, has no weight's
        # product to hide behind (the embedding lookup is no GEMM): under 0.2 % of the bytes
        assert r["bytes_no_cover"] < 0.002
    # 175B: the whole block stays gathered from its recompute to its backward
    assert SCRIPT.report("175B", SCRIPT.AZURE, layers=6)["backward_regathers_per_block"] == 0


def test_default_live_parameters_starve_530b():
    # stage3_max_live_parameters' default (1e9) is below one 530B weight (1.26e9-1.68e9):
    # once one is gathered nothing is prefetched
    r = SCRIPT.report("530B", SCRIPT.DEFAULTS, layers=6)
    assert r["on_demand_per_block"] == pytest.approx(3.0, abs=0.5)


def _row(prefix: str) -> dict[str, str]:
    with open(ROOT / "benchmarks" / "training_dsazure.csv", newline="") as f:
        return next(r for r in csv.DictReader(f) if r["id"].startswith(prefix))


@pytest.mark.parametrize("model", ["175B", "530B"])
@pytest.mark.parametrize("distance", [1e9, 3e9])
def test_backward_regathers_match_trainsim(monkeypatch, model, distance):
    """The replayed backward gathers as many weights per block after the recompute as
    ``workload.sharding.zero3_regathers`` prices at the same distance."""
    from trainsim.validate.training import row_config
    from trainsim.workload import sharding

    prefix = {"175B": "dsazure-fig5-175b-s512-128gpu-mbs1",
              "530B": "dsazure-fig6-530b-s1024-512gpu-mbs1"}[model]
    cfg = row_config(_row(prefix))
    monkeypatch.setattr(sharding, "ZERO3_MAX_REUSE_DISTANCE", distance)
    priced = len(sharding.zero3_regathers(cfg, 1))
    limits = {**SCRIPT.AZURE, "max_reuse": distance}
    replayed = SCRIPT.report(model, limits, layers=6)["backward_regathers_per_block"]
    assert replayed == pytest.approx(priced)
