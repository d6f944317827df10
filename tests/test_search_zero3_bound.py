"""The search's refined bound under ZeRO-3 / FSDP counts each pass's least wait for its unit
gathers (``search.layout_costs.gather_waits``) and stays below the simulated time."""

from __future__ import annotations

import random
import warnings

import pytest
from helpers import loadable_keys

from trainsim.pricing import Pricer
from trainsim.search.cli_inputs import build_base
from trainsim.search.evaluation import Bounds, evaluate
from trainsim.search.layout_costs import gather_waits
from trainsim.search.space import Candidate, SearchSpace
from trainsim.workload.sharding import fsdp_unit_gathers


def _base(sets: tuple[str, ...], model: str = "llama2-7b"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_base(model, "h100-sxm-80gb", 16, 64, 4096, 8, 400, "bf16", sets)


def test_gather_waits_by_hand():
    """Two stages of one chunk each, blocks gathered again for the backward: per stage the
    forward's first unit whole plus the SM share of the rest, and the same of the blocks in
    backward order (the last block's gather whole)."""
    base = _base(("training.framework=megatron-core",))
    space = SearchSpace(tp=(1,), pp=(2,), cp=(1,), zero=(3,), max_micro_batch=1, max_vpp=1)
    key = next(k for k in space.memory_keys(base, 16) if k.vpp == 1)
    cfg = Candidate(key).to_config(base)
    ranges = tuple(cfg.virtual_stage_layers())
    pricer = Pricer(cfg)
    share = pricer.sm_share["dp"]
    assert 0 < share < 1
    got = gather_waits(cfg, pricer, ranges)
    for s, layers in enumerate(ranges):
        units = fsdp_unit_gathers(cfg, layers, s == 0, s == 1)
        g = [sum(pricer.comm_time(c) for c in u) for u in units]
        assert len(g) == len(layers) + 1  # the root unit (embedding or head) and the blocks
        blocks = g[1:][::-1]
        want = g[0] + share * sum(g[1:]) + blocks[0] + share * sum(blocks[1:])
        assert got[s] == pytest.approx(want) and want > 0


@pytest.mark.parametrize("sets", [
    ("training.framework=megatron-core",),
    ("training.framework=torchtitan",),
    ("training.framework=megatron-bridge",),
    (),
])
def test_zero3_bound_stays_below_the_simulated_time(sets):
    """Sampled ZeRO-3 groups of 16 GPUs, with and without pipelining, each variant class's
    lead: the refined bound (waits counted) never exceeds the simulated iteration."""
    base = _base(sets)
    space = SearchSpace(zero=(3,), max_micro_batch=2, max_vpp=4).held_by(base)
    keys = loadable_keys(space, base, 16)
    assert any(k.pp > 1 for k in keys) and any(k.pp == 1 for k in keys)
    rnd = random.Random(3)
    drawn = rnd.sample([k for k in keys if k.pp > 1], 6) + rnd.sample(
        [k for k in keys if k.pp == 1], 2)
    bounds = Bounds(base)
    for k in drawn:
        variants = space.variants(k)
        for c in {variants[0], variants[-1]}:
            assert bounds.refined(c) < evaluate(c, base).iteration_time_s, c.label()
    assert bounds.failed is None
