"""The memory estimate's module caches (a layer's activation bytes by config, the stages'
parameter splits by config and by layer placement, the schedules' peaks) give the answers
computed afresh: a search's configs that share a model and place the same layers ask them
warm; ``memory.cache_clear`` forgets them."""

from __future__ import annotations

import dataclasses

from helpers import TINY_MODEL, make_base

from trainsim.memory import cache_clear, estimate_stage_memory
from trainsim.search import SearchSpace
from trainsim.search.space import Candidate

MOE = {**TINY_MODEL, "name": "tiny-moe", "num_experts": 8, "moe_router_topk": 2,
       "moe_ffn_hidden_size": 512, "moe_layer_freq": 2}


def _sampled(space: SearchSpace, samples: int, configs, keep=lambda key: True) -> list:
    """``configs(base, key)`` for about ``samples`` of the memory keys of ``space`` that
    ``keep`` accepts, evenly spread, of the tiny dense and MoE models on 16 GPUs (batch 64)."""
    out = []
    for model in (TINY_MODEL, MOE):
        base = make_base(model, gpus=16, batch=64)
        keys = [k for k in space.memory_keys(base, 16) if keep(k)]
        for key in keys[:: max(1, len(keys) // samples)]:
            out += configs(base, key)
    return out


def _configs() -> list:
    def with_other_recompute(base, key) -> list:
        out = [Candidate(key).to_config(base)]
        if key.pp > 1:  # the same placement, another recompute: the splits asked warm
            other = "full" if key.recompute != "full" else "none"
            out.append(Candidate(dataclasses.replace(key, recompute=other)).to_config(base))
        return out

    return _sampled(SearchSpace(recompute=("none", "selective", "full"), max_micro_batch=2),
                    12, with_other_recompute)


def test_cached_answers_equal_the_ones_computed_cold():
    cfgs = _configs()
    assert any(c.parallel.pp > 1 for c in cfgs) and any(c.model.num_experts for c in cfgs)
    cache_clear()
    warm = [[estimate_stage_memory(c, s) for s in range(c.parallel.pp)] for c in cfgs]
    for cfg, kept in zip(cfgs, warm):
        cache_clear()
        assert [estimate_stage_memory(cfg, s) for s in range(cfg.parallel.pp)] == kept


def test_model_states_shared_inside_a_search_equal_the_ones_computed_alone(monkeypatch):
    """Inside ``states_shared`` (a search) the model state is kept by every field it reads:
    configs that differ only in the micro-batch or the recompute share one answer, and every
    answer is the one computed outside it (other ZeRO stages, TP, PP: their own)."""
    from trainsim.memory import state

    base = make_base(MOE, gpus=16, batch=64)
    space = SearchSpace(recompute=("none", "selective", "full"), max_micro_batch=4,
                        zero=(0, 1, 3))  # Megatron's stages (config.validity.ZERO_STAGES)
    cfgs = [Candidate(key).to_config(base) for key in list(space.memory_keys(base, 16))[::3]]
    alone = [[state.model_state(c, s) for s in range(c.parallel.pp)] for c in cfgs]
    made = []
    real = state._model_state
    monkeypatch.setattr(state, "_model_state", lambda c, s: made.append(1) or real(c, s))
    with state.states_shared():
        inside = [[state.model_state(c, s) for s in range(c.parallel.pp)] for c in cfgs]
    assert inside == alone
    assert len(made) < sum(c.parallel.pp for c in cfgs) // 2
    assert {c.parallel.zero_stage for c in cfgs} >= {0, 3}


def test_activations_shared_by_the_optimizer_shardings_equal_the_ones_computed_alone():
    """``memory.free_of.zero_free``: inside ``states_shared`` (a search) the memory groups
    that differ only in the optimizer sharding (every one asked here, dense and MoE, pipelined
    or not) work out their activations in flight once; every stage's estimate is the one
    computed outside it, after ``cache_clear``."""
    from trainsim.memory import free_of
    from trainsim.memory.state import states_shared

    def every_zero(base, key) -> list:
        return [Candidate(dataclasses.replace(key, zero=z)).to_config(base) for z in (0, 1, 3)]

    space = SearchSpace(recompute=("none", "full"), max_micro_batch=2, zero=(0, 1, 3))
    cfgs = _sampled(space, 8, every_zero, keep=lambda k: k.dp > 1)
    assert any(c.parallel.pp > 1 for c in cfgs) and any(c.model.num_experts for c in cfgs)
    cache_clear()
    with states_shared():
        warm = [[estimate_stage_memory(c, s) for s in range(c.parallel.pp)] for c in cfgs]
        kept = len(free_of._ZERO[-1]._kept)
    assert 0 < kept <= sum(c.parallel.pp for c in cfgs) // 3  # shared by the 3 stages
    assert not free_of._ZERO  # dropped on exit
    for cfg, answer in zip(cfgs, warm):
        cache_clear()
        assert [estimate_stage_memory(cfg, s) for s in range(cfg.parallel.pp)] == answer


def test_memory_shared_by_overlap_siblings_equals_the_one_computed_alone():
    """``twin_graphs.kept_memories``: inside ``runs_shared`` ``simulate`` reports one memory for
    the configs that differ only in the data-parallel and p2p overlap switches (every variant
    of each group asked here), each stage the estimate computed outside it, after
    ``cache_clear``."""
    from trainsim import memo, simulate
    from trainsim.engine.loop import runs_shared, shared_store
    from trainsim.twin_graphs import _MEMORY

    space = SearchSpace(recompute=("none", "full"), max_micro_batch=2, zero=(0, 1, 3))
    cfgs = _sampled(space, 4, lambda base, key: [c.to_config(base) for c in space.variants(key)],
                    keep=lambda k: k.dp > 1 and k.pp > 1)
    assert len(cfgs) > 16 and any(c.parallel.overlap_param_gather for c in cfgs)
    cache_clear()
    with runs_shared():
        reported = [simulate(c).memory for c in cfgs]
        kept = len(shared_store()[_MEMORY]._kept)
    assert 0 < kept < sum(c.parallel.pp for c in cfgs) // 2  # shared
    for cfg, answer in zip(cfgs, reported):
        cache_clear()
        memo.stage_memory.cache_clear()
        assert [estimate_stage_memory(cfg, s) for s in range(cfg.parallel.pp)] == answer
