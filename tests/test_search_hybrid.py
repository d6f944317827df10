"""hsearch51: ``trainsim search`` over hybrid Mamba-2 / attention / MLP / MoE models. Its
bounds count each layer by its kind (``config.hybrid.layer_kind``), so they stay below what
they bound on random small hybrid patterns; the pruned search's top k equals an exhaustive
simulate-everything ranking of the same space; the hybrid rules (no cp with Mamba, tp dividing
the Mamba heads and groups, no expert-exchange overlap, no DualPipe) are skipped or refused in
one line, never a crash."""

from __future__ import annotations

import json
import random

import pytest

from trainsim.errors import ConfigError
from trainsim.search import SearchSpace, evaluate, search
from trainsim.search.cli import build_base
from trainsim.search.evaluation import Bounds, lower_bound_s
from trainsim.search.space import Candidate

TINY = {"hidden_size": 512, "num_attention_heads": 8, "num_kv_heads": 4, "vocab_size": 32000,
        "activation": "swiglu", "position_embedding": "none", "normalization": "rmsnorm",
        "tied_embeddings": False, "add_bias_linear": False, "ffn_hidden_size": 1536,
        "mamba_head_dim": 64, "mamba_num_groups": 2, "mamba_state_dim": 64}
EXPERTS = {"num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 768}


def _pattern(rng: random.Random) -> str:
    """4-8 layers of M * - E with at least one Mamba layer."""
    while True:
        p = "".join(rng.choice("MM*-E") for _ in range(rng.randint(4, 8)))
        if "M" in p:
            return p


def _base(tmp_path, pattern: str, gpus: int = 8):
    model = {**TINY, "name": f"tiny-{pattern}", "num_layers": len(pattern),
             "hybrid_layer_pattern": pattern, **(EXPERTS if "E" in pattern else {})}
    path = tmp_path / f"{pattern.replace('*', 'A').replace('-', 'L')}.json"
    path.write_text(json.dumps({"model": model}))
    return build_base(str(path), "h100-sxm-80gb", gpus, 16, 1024, 8, 400.0, "bf16")


@pytest.mark.parametrize("seed", range(4))
def test_bounds_stay_below_the_simulated_hybrid_iteration(tmp_path, seed):
    """Random small hybrid patterns, tp 1/2, pp 1/2, cp 1/2, ep where E layers are: every
    bound the search prunes with (the FLOP bound, the refined pass bound, the composed passes
    bound, the schedule bound) is below the iteration it bounds; cp > 1 with Mamba is refused by
    the config's own check (the memory group pruned), never priced."""
    rng = random.Random(seed)
    pattern = _pattern(rng)
    base = _base(tmp_path, pattern)
    space = SearchSpace(recompute=("none", "full"), max_micro_batch=2, tp=(1, 2), pp=(1, 2),
                        cp=(1, 2)).held_by(base)
    keys = list(space.memory_keys(base, 8))
    assert any(k.cp == 2 for k in keys) and any(k.pp == 2 for k in keys)
    bounds, checked, refused = Bounds(base), 0, 0
    for k in rng.sample(keys, min(14, len(keys))):
        try:
            Candidate(k).to_config(base)
        except ConfigError as exc:
            assert k.cp > 1 and "context parallelism over the Mamba mixer" in str(exc)
            refused += 1
            continue
        for c in rng.sample(space.variants(k), min(2, len(space.variants(k)))):
            assert not c.moe_overlap_ep_comm and not c.mem.schedule.startswith("dualpipe")
            t = evaluate(c, base).iteration_time_s
            assert lower_bound_s(k, base) < t, (pattern, c.label())
            assert bounds.refined(c) < t and bounds.passes_bound(c) < t, (pattern, c.label())
            assert bounds.scheduled(c) < t, (pattern, c.label())
            checked += 1
    assert checked >= 4, (pattern, checked, refused)


def test_search_on_nemotron_h_8b_equals_the_exhaustive_ranking():
    """Nemotron-H 8B on 16 H100 (64 x 4,096 tokens): the pruned search's top 5 (candidates,
    times to the bit) equals the ranking of every configuration simulated, and it simulates a
    small part of them (hsearch51: 376 of 4,938)."""
    base = build_base("nemotron-h-8b", "h100-sxm-80gb", 16, 64, 4096, 8, 400.0, "bf16")
    pruned = search(base, [16], top_k=5)
    full = search(base, [16], top_k=5, exhaustive=True)

    def top(r):
        return [(repr(x.evaluation.candidate), x.evaluation.iteration_time_s.hex())
                for x in r.top]
    assert len(pruned.top) == 5 and top(pruned) == top(full)
    assert pruned.stats.simulated < full.stats.simulated / 5
    assert {e.candidate.mem.cp for e in full.evaluated} == {1}  # Mamba: no cp


def test_hybrid_moe_search_skips_the_exchange_overlap_and_dualpipe(tmp_path):
    """A hybrid MoE model: EP and the dispatchers are searched, the expert all-to-all overlap
    and DualPipe never (Megatron-core's hybrid model has neither); asking for DualPipe is
    refused in one line."""
    base = _base(tmp_path, "ME*EM-ME", gpus=16)
    space = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1, 2), pp=(1, 2))
    r = search(base, [16], space, top_k=3)
    assert r.top and r.stats.simulated > 0
    keys = list(space.held_by(base).memory_keys(base, 16))
    assert {k.ep for k in keys} >= {1, 2, 4, 8} and {k.schedule for k in keys} == {""}
    assert not any(c.moe_overlap_ep_comm for k in keys for c in space.held_by(base).variants(k))
    with pytest.raises(ConfigError, match="^--schedules dualpipe with model.hybrid_layer_pattern: "
                                          ".*; use one of gpipe, "):
        search(base, [16], SearchSpace(pp=(2,), schedules=("", "dualpipe")))


def test_tp_not_dividing_the_mamba_heads_is_pruned_cleanly(tmp_path):
    """tp 4 does not divide mamba_num_groups=2: those groups are refused by the config's check
    and the search answers from the rest."""
    base = _base(tmp_path, "M*M-")
    space = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1, 2, 4), pp=(1,))
    with pytest.raises(ConfigError, match="must divide the Mamba heads"):
        Candidate(next(k for k in space.memory_keys(base, 8) if k.tp == 4)).to_config(base)
    r = search(base, [8], space, top_k=3)
    assert r.top and all(x.evaluation.candidate.mem.tp in (1, 2) for x in r.top)
