"""The Megatron-core allocator replay of benchmarks/alloc59_replay.py (the evidence behind
memory.megatron_step) against SimuMax's per-rank allocated and reserved on B200 (benchmarks/alloc59_simumax_ranks.csv,
from MooreThreads/SimuMax@4dcaae5 docs/b200/b200_release_v1.2_summary.json)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import alloc59_replay as R

MiB = 2**20


@pytest.fixture(scope="module")
def cases():
    return R.cases()


@pytest.fixture(scope="module")
def replays(cases):
    return {(c.name, s): R.replayed(c, s) for c, _ in cases for s in range(c.pp)}


def test_the_rank_file_holds_every_dense_case_once_with_eight_ranks(cases):
    assert len(cases) == 15
    assert all(sorted(ranks) == list(range(8)) for _, ranks in cases)
    assert all(r >= a for _, ranks in cases for a, r in ranks.values())


def test_optimizer_shards_partition_every_parameter():
    c = R.Case("t", 8192, 28672, 8192, 1024, 128256, 12, 1, 2, 1, 4096, 4)
    rep = R.Replay(c, 1)
    owned = [sum(col) for col in zip(*(rep.shards(4, r) for r in range(4)))]
    assert owned == rep.params()


def test_weights_moved_into_the_ddp_buffer_stay_cached_but_free():
    c = R.Case("t", 8192, 28672, 8192, 1024, 128256, 12, 8, 1, 1, 4096, 4)
    rep = R.Replay(c, 0)
    rep.construct()
    weights = [2 * n for n in rep.params() if 2 * n > MiB]
    # each freed weight keeps its block (a segment of its own from 10 MiB, rounded to 2 MiB)
    free = rep.al.reserved - rep.al.allocated
    assert sum(weights) <= free < sum(weights) + 2 * MiB * len(weights) + 20 * MiB
    rep.build(dp=1, rank=0)  # the fp32 main shards of the smaller weights fit in larger ones
    assert rep.al.reserved - rep.al.allocated < free


def test_activations_alone_strand_under_half_the_measured_reserve(cases, replays):
    measured = sum(sum(v) / len(v) for c, ranks in cases for s in range(c.pp)
                   for v in [[x for xs in R.measured_by_shard(c, ranks, s).values() for x in xs]])
    activations = sum(act for act, _ in replays.values())
    with_state = sum(sum(sh) / len(sh) for _, sh in replays.values())
    assert activations < 0.5 * measured
    assert abs(with_state - measured) < abs(activations - measured)


def test_the_replay_finds_the_shard_with_the_largest_reserve_more_often_than_chance(cases,
                                                                                      replays):
    hits, chance = 0, 0.0
    for c, ranks in cases:
        for s in range(c.pp):
            meas = {d: max(v) for d, v in R.measured_by_shard(c, ranks, s).items()}
            if len(meas) < 2:
                continue
            shards = replays[(c.name, s)][1]
            hits += max(meas, key=meas.get) == max(range(len(shards)), key=shards.__getitem__)
            chance += 1 / len(meas)
    assert hits >= chance + 3  # 8 of 15 case-stages against about 4 by chance


def test_the_replayed_reserve_brings_reserved_closer_on_every_row():
    rows = R.trainsim_rows()
    assert len(rows) == 15

    def mape(k: int) -> float:
        return sum(abs(r[k] / r[1] - 1) for r in rows) / len(rows)

    assert mape(4) < 0.05 < mape(2)  # allocated + every shard's replay; allocated alone
    assert mape(3) < 0.05  # trainsim's reserved (memory.megatron_step: three shards)
    assert all(abs(rep / m - 1) < abs(pa / m - 1) for _, m, pa, _, rep in rows)
