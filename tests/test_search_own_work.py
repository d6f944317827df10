"""The search's own work, exact (issue 21 item 4, 44th session): a group's most headroom asked
only where the dominance answer needs it (``search.waves``, ``FrontIndex.most_headroom``), the
FLOP bound kept by the fields it reads (``Bounds.cheap``), a whole family's pricing-class leads
built once (``Family.class_leads``): each gives the answer it replaces."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

from helpers import TINY_MODEL, make_base

from trainsim.search import SearchSpace
from trainsim.search import lower_bounds as lb
from trainsim.search.explain import FrontIndex
from trainsim.search.family import Family
from trainsim.search.lower_bounds import Bounds, lower_bound_s
from trainsim.search.space import Candidate

MOE = {**TINY_MODEL, "name": "tiny-moe", "num_experts": 8, "moe_router_topk": 2,
       "moe_ffn_hidden_size": 512, "moe_layer_freq": 2}


def test_the_most_headroom_of_faster_evaluations_answers_dominated_for_every_headroom():
    """``dominated(t, h, n)`` is exactly ``h <= most_headroom(t, n)`` (False where that is
    None), at the fronts' own headrooms, one ulp either side and at random, over three GPU
    counts; both answers occur (so this can fail)."""
    rng = random.Random(44)
    index, heads = FrontIndex(), []
    for _ in range(120):
        h = float(rng.randrange(1, 40)) * 2**30
        heads.append(h)
        index.add(SimpleNamespace(num_gpus=rng.choice((8, 16, 32)),
                                  tokens_per_s=rng.uniform(1e4, 1e5), memory_headroom_bytes=h))
    seen = set()
    for _ in range(3000):
        t, n = rng.uniform(5e3, 1.2e5), rng.choice((4, 8, 16, 32))
        base = rng.choice(heads)
        for h in (base, math.nextafter(base, 0), math.nextafter(base, math.inf),
                  rng.uniform(0, 45) * 2**30):
            most = index.most_headroom(t, n)
            got = most is not None and h <= most
            assert index.dominated(t, h, n) == got
            seen.add(got)
    assert seen == {False, True}
    assert FrontIndex().most_headroom(1.0, 8) is None


def test_a_group_s_most_headroom_is_the_smaller_of_hbm_less_each_stage_s_floor():
    """``search.waves`` prunes a group dominated with ``hbm - max(floors)`` by asking each
    stage's ``hbm - floor`` in turn (float subtraction rounds monotonically): at the values
    where the answer turns (each side's headroom and one ulp around it) both tests agree, on
    the peak floors of real groups (TP, PP, CP, recompute, ZeRO 0-3)."""
    from trainsim.errors import ConfigError
    from trainsim.memory.estimate import peak_floor

    base = make_base(gpus=16, batch=64)
    space = SearchSpace(max_micro_batch=2, max_cp=2)
    checked = 0
    for key in list(space.memory_keys(base, 16))[::5]:
        try:
            cfg = Candidate(key).to_config(base)
        except ConfigError:
            continue
        hbm, pp = cfg.cluster.gpu.hbm_bytes, cfg.parallel.pp
        floors = [peak_floor(cfg, s) for s in dict.fromkeys((0, pp - 1))]
        whole = hbm - max(floors)
        for side in floors:
            for most in (hbm - side, math.nextafter(hbm - side, 0),
                         math.nextafter(hbm - side, math.inf), whole,
                         math.nextafter(whole, 0)):
                assert (whole <= most) == any(hbm - f <= most for f in floors)
                checked += 1
    assert checked > 200


def test_the_flop_bound_kept_by_the_fields_it_reads_is_each_group_s_own(monkeypatch):
    """``Bounds.cheap`` keeps one ``lower_bound_s`` per (GPUs, tp, pp, cp, vpp, micro-batch,
    full recompute, named schedule): every group of a dense and a MoE space (ZeRO stages, SP,
    EP, dispatchers, DualPipe, uneven pipelines) gets its own value to the bit, from fewer
    computations than groups."""
    computed, real = [], lb.lower_bound_s
    for model, gpus, space in (
            (TINY_MODEL, 16, SearchSpace(max_micro_batch=4, max_cp=2)),
            (MOE, 16, SearchSpace(pp=(1, 2, 3), max_vpp=2, max_micro_batch=2))):
        base = make_base(model, gpus=gpus, batch=64, seq=4096)
        keys = list(space.memory_keys(base, gpus))
        bounds, calls = Bounds(base), []
        monkeypatch.setattr(lb, "lower_bound_s", lambda *a, n=calls: n.append(1) or real(*a))
        got = [bounds.cheap(k) for k in keys]
        monkeypatch.undo()
        assert got == [lower_bound_s(k, base) for k in keys]
        assert [x.hex() for x in got] == [lower_bound_s(k, base).hex() for k in keys]
        computed.append((len(calls), len(keys), {k.schedule for k in keys}))
    assert all(n < k for n, k, _ in computed)
    assert "dualpipe" in computed[1][2]


def test_a_family_s_class_leads_are_built_once_and_are_its_own():
    """``Family.class_leads`` returns the same list each time, equal to one built afresh."""
    base = make_base(MOE, gpus=16, batch=64, seq=4096)
    space = SearchSpace(pp=(1, 2), max_vpp=2, max_micro_batch=1)
    sizes = set()
    for key in space.memory_keys(base, 16):
        switches = tuple(space.switches(key).values())
        family = Family.of(key, switches, space.variants)
        leads = family.class_leads()
        assert family.class_leads() is leads
        assert leads == Family.of(key, switches, space.variants).class_leads()
        sizes.add(len(leads))
    assert {1, 2, 4} <= sizes
