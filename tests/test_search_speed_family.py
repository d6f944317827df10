"""benchmarks/search_speed_family.py: the family bound's prototype answers as the plain search
(top, every evaluation, front, counts) at every family width and works out fewer groups' passes'
bounds; its pruning counts add up to the search's; the bound is a true lower bound (at most
every member's passes' bound and every simulated time: random members simulated); the
instrumented search puts back everything it wraps."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.search import SearchSpace
from trainsim.search.candidate import Candidate

ROOT = Path(__file__).resolve().parent.parent
SMALL = ("llama3-8b", "a100-sxm-80gb", 8, 16, 2048)  # 426 memory groups, ~1 s a search


@pytest.fixture(scope="module")
def script():
    return load_script(ROOT / "benchmarks" / "search_speed_family.py")


@pytest.fixture(scope="module")
def base():
    from trainsim.search.cli import build_base

    return build_base(*SMALL, 8, 400.0, "bf16")


def _space() -> SearchSpace:
    return SearchSpace(zero=(1,), max_micro_batch=2)


@pytest.fixture(scope="module")
def runs(script, base):
    from trainsim.search import core, executors, lower_bounds

    b = lower_bounds.Bounds
    before = (core.run_waves, executors.Stream.results, b.passes_bound, b.refined, b._pass_times,
              executors.evaluate_batch)
    out = {w: script.measure(base, SMALL[2], w, _space()) for w in (None, *script.LEVELS)}
    after = (core.run_waves, executors.Stream.results, b.passes_bound, b.refined, b._pass_times,
             executors.evaluate_batch)
    return out, before, after


def test_every_width_answers_as_the_plain_search_with_fewer_passes_bounds(script, runs):
    out, before, after = runs
    assert after == before
    plain = out[None]
    assert plain["result"].stats.simulated > 0 and plain["counts"]["pops family"] == 0
    for width in script.LEVELS:
        got = out[width]
        assert got["answer"] == plain["answer"], width
        assert got["counts"]["pops family"] > 0
        assert got["counts"]["lows"] < plain["counts"]["lows"], width


def test_the_pruning_counts_add_up_to_the_search(runs):
    for got in runs[0].values():
        s, c = got["result"].stats, got["counts"]
        pruned = sum(n for k, n in c.items() if k.startswith("pruned"))
        assert c["pruned by memory"] == s.memory_pruned
        assert pruned == s.memory_pruned + s.bound_pruned
        assert s.enumerated == pruned + s.simulated


def test_the_family_bound_is_a_lower_bound(script, base):
    from trainsim.errors import ConfigError
    from trainsim.search.evaluation import evaluate
    from trainsim.search.lower_bounds import Bounds

    bounds, heap = Bounds(base), []
    for i, k in enumerate(_space().held_by(base).memory_keys(base, SMALL[2])):
        try:
            bounds.prime(k, Candidate(k).to_config(base))
        except ConfigError:
            continue
        heap.append((bounds.cheap(k), i, Candidate(k), None, False))
    widths = {w: script.family_bound(bounds, heap, f) for w, f in script.LEVELS.items()}
    for _, _, c, _, _ in heap:
        m = c.mem
        for tp in {False, m.tp > 1}:  # every pricing class's lead: passes_bound reads these
            x = Candidate(m, False, False, tp, False, False)
            low = bounds.passes_bound(x)
            assert widths["family"](x) <= widths["family+mb"](x) <= \
                widths["family+mb+rc"](x) <= low
    # and below the simulated time of random members, with any overlap switch
    rng = random.Random(0)
    for _, _, c, _, _ in rng.sample(heap, 8):
        m = c.mem
        x = Candidate(m, rng.random() < 0.5 and m.dp > 1, False, rng.random() < 0.5 and m.tp > 1,
                      rng.random() < 0.5 and m.pp > 1)
        try:
            t = evaluate(x, base).iteration_time_s
        except ConfigError:  # a switch this member's config refuses
            continue
        assert max(f(x) for f in widths.values()) <= t
