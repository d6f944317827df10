"""The in-flight peak of the schedules that walk every micro-batch, from a period proven on
their construction (``workload.peak_period``) or on zb_2p's settled search, against the walk
of the whole order: random configs, 4,096 and 16,384 micro-batches, and the cost on counts."""

from __future__ import annotations

import random

import pytest
from helpers import pipelined_configs

from trainsim.memory import estimate
from trainsim.workload import peak_period, zb_search
from trainsim.workload import pipeline_schedules as ps
from trainsim.workload.peak_period import PERIODIC, peak_base
from trainsim.workload.schedule import peak_in_flight, schedule_peak_in_flight

NAMES = ("gpipe", "zb_h1", "zb_h2", "zb_v", "interleaved_zb", "dualpipe", "dualpipe_v", "zb_2p")
N_CONFIGS = 240


def _vpp(name: str, rng: random.Random) -> int:
    return 2 if name in ("zb_v", "dualpipe_v") else rng.choice([1, 2, 3, 4]) \
        if name == "interleaved_zb" else 1


def _weight(rng: random.Random, vpp: int, name: str) -> dict[int, float] | None:
    """None (counts), positive chunk weights, or one negative weight in five."""
    chunks = 2 if name == "dualpipe" else vpp
    draw = rng.random()
    if draw < 0.3:
        return None
    return {c: rng.uniform(-2.0 if draw > 0.8 else 0.1, 5.0) for c in range(chunks)}


def _walk(name: str, stage: int, pp: int, vpp: int, m: int, weight) -> float:
    """The walk of the whole order (``pipeline_schedules.stage_order``: zb_2p's full search)."""
    return peak_in_flight(list(ps.stage_order(name, stage, pp, vpp, m)), weight)


def _random_configs(n: int, seed: int):
    rng = random.Random(seed)
    for i in range(n):
        name = NAMES[i % len(NAMES)]
        pp = rng.choice([2, 4, 6, 8]) if name == "dualpipe" else rng.choice([2, 3, 4, 5, 6, 8])
        vpp = _vpp(name, rng)
        m = rng.randint(2 * pp, 30 * pp)
        if name == "dualpipe":
            m += m % 2
        # torch runs an m that its rounds (max(1, m // pp)) divide only
        if name == "interleaved_zb" and (rng.random() < 0.8 or m % max(1, m // pp)):
            m -= m % pp
        yield name, rng.randrange(pp), pp, vpp, m, _weight(rng, vpp, name)


def test_the_peak_equals_the_walk_on_random_configs():
    """On 240 random (schedule, stage, pp, vpp, micro-batches, weights), the peak from the
    proven period equals the walk of the whole order to 1e-9 (counts exactly)."""
    shortened = 0
    for name, stage, pp, vpp, m, weight in _random_configs(N_CONFIGS, 57):
        fast = schedule_peak_in_flight(stage, pp, vpp, m, name, weight=weight)
        walk = _walk(name, stage, pp, vpp, m, weight)
        assert fast == pytest.approx(walk, rel=1e-9, abs=1e-9), (name, stage, pp, vpp, m)
        if weight is None:
            assert fast == walk
        shortened += peak_base(name, pp, m) < m
    assert shortened >= N_CONFIGS // 2


@pytest.mark.parametrize("m", [4096, pytest.param(16384, marks=pytest.mark.slow)])
def test_the_peak_at_long_iterations_equals_the_walk(m):
    """At 4,096 and 16,384 micro-batches every schedule's peak, first and last rank, counts and
    two chunk weights, equals the whole walk to 1e-9 (the walk's running sum rounds once per
    inserted period)."""
    for name in NAMES:
        vpp = 2 if name in ("zb_v", "dualpipe_v", "interleaved_zb") else 1
        pp = 4
        for stage in (0, pp - 1):
            for weight in (None, {0: 1.7, 1: 0.3}):
                fast = schedule_peak_in_flight(stage, pp, vpp, m, name, weight=weight)
                walk = _walk(name, stage, pp, vpp, m, weight)
                assert fast == pytest.approx(walk, rel=1e-9), (name, stage, weight)


def test_a_base_is_short_and_in_the_residue():
    """The order walked has at most ``m_a + q`` micro-batches, as many modulo ``q`` as ``m``;
    an odd DualPipe count and a short interleaved group are walked whole."""
    for name, (stages, q) in PERIODIC.items():
        for pp in (2, 4, 8):
            q_ = q or pp
            for m in (stages * pp + 1, 1000 * q_, 1000 * q_ + q_ - 1, 16384):
                base = peak_base(name, pp, m)
                if name in ("dualpipe", "interleaved_zb") and m % q_:
                    assert base == m
                    continue
                assert base <= stages * pp + q_ and (m - base) % q_ == 0
    assert peak_base("zb_2p", 4, 4096) == 4096  # zb_2p's own: its search's settling point


def test_the_cost_does_not_grow_with_the_micro_batches(monkeypatch):
    """Counts, not time: zb_2p's peak at 4,096 and 16,384 micro-batches places the same passes
    in its searches (the settling probes and one search past the settling point), and the
    other schedules build orders of the same lengths."""
    placed: list[int] = []
    real = zb_search._Builder.place

    def counting(self, stage, kind):
        placed.append(1)
        real(self, stage, kind)

    built: list[int] = []
    real_order = ps.stage_order.__wrapped__

    def order(name, stage, pp, vpp, m):
        out = real_order(name, stage, pp, vpp, m)
        built.append(len(out))
        return out

    monkeypatch.setattr(zb_search._Builder, "place", counting)
    monkeypatch.setattr(ps, "stage_order", order)
    counts = []
    for m in (4096, 16384):
        ps.equal_zb_2p_peak_orders.cache_clear()
        ps._chosen.cache_clear()
        placed.clear()
        built.clear()
        for name in NAMES:
            vpp = 2 if name in ("zb_v", "dualpipe_v", "interleaved_zb") else 1
            schedule_peak_in_flight(1, 4, vpp, m, name)
            schedule_peak_in_flight(1, 4, vpp, m, name, weight={0: 1.0, 1: 2.0})
        counts.append((len(placed), sum(built)))
    assert counts[0] == counts[1]
    assert 0 < counts[0][0] < 2 * 4096 and 0 < counts[0][1] < 4 * 4096


def test_zb2p_memory_estimates_equal_the_walks_on_200_random_configs(monkeypatch):
    """tests/test_steady_zb2p.py's 200 random zb_2p configs (40 pp + 8 to 80 pp micro-batches):
    every stage's memory estimate equals the one from the walk of the whole searched order
    (``named_peak`` refused) to 1e-9, and each config's own peak counts and a weighted peak,
    first and last stage, equal the walk's."""
    configs = pipelined_configs(200, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp))
    rng = random.Random(5)
    for cfg in configs[:20]:
        estimate.cache_clear()
        fast = [estimate.estimate_stage_memory(cfg, s).total for s in range(cfg.parallel.pp)]
        with monkeypatch.context() as patch:
            patch.setattr(peak_period, "named_peak", lambda *a: None)
            estimate.cache_clear()
            walk = [estimate.estimate_stage_memory(cfg, s).total for s in range(cfg.parallel.pp)]
        assert fast == pytest.approx(walk, rel=1e-9)
    estimate.cache_clear()
    for cfg in configs:
        pp, m = cfg.parallel.pp, cfg.schedule_microbatches
        assert len(ps.equal_zb_2p_peak_orders(pp, m)[0]) < len(ps.stage_order("zb_2p", 0, pp, 1, m))
        for stage in (0, pp - 1):
            for weight in (None, {0: rng.uniform(0.1, 5.0)}):
                fast = schedule_peak_in_flight(stage, pp, 1, m, "zb_2p", weight=weight)
                assert fast == pytest.approx(_walk("zb_2p", stage, pp, 1, m, weight), rel=1e-9)
