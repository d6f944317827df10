"""Search speed, exact (issue 21 acceptance 4): a layer's rank tensors, a ZeRO-3 block's gradient
reduction and a unit's gathers are worked out once per layer kind (with or without routed
experts) and give, to the bit, what the per-layer computation they replace gives."""

from __future__ import annotations

import itertools

from trainsim.catalog import run_config_from_dict
from trainsim.model.counts import layer_tensors
from trainsim.pricing import Pricer
from trainsim.search.layout_costs import gather_waits, link_floor
from trainsim.sharded_passes import block_reduce_s
from trainsim.workload import sharding
from trainsim.workload.sharding import fsdp_pp_mode, fsdp_unit_gathers


def _cfg(preset: str, *, tp: int = 1, pp: int = 1, ep: int = 1, etp: int | None = None,
         zero: int = 3, framework: str | None = None, gpus: int = 64):
    parallel: dict = {"tp": tp, "pp": pp, "zero_stage": zero, "sequence_parallel": tp > 1}
    if ep > 1:
        parallel["ep"] = ep
    if etp:
        parallel["expert_tensor_parallel_size"] = etp
    training = {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096}
    if framework:
        training["framework"] = framework
    return run_config_from_dict({"model": {"preset": preset}, "parallel": parallel,
                                 "training": training,
                                 "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": gpus}})


def _rank_tensors_per_layer(cfg, layers):
    """The per-layer computation the kept one replaces."""
    m, p = cfg.model, cfg.parallel
    out = []
    for i in layers:
        tensors = layer_tensors(m, i)
        dense = [(n / p.tp, False) for n, expert in tensors if not expert]
        experts = [(n / p.etp, True) for n, expert in tensors if expert]
        out += dense + experts[:len(experts) // p.ep]
    return out


def test_rank_tensors_kept_per_kind_equal_the_per_layer_ones():
    """Over dense models, every-layer MoE and MoE behind dense first layers (DeepSeek's), with
    tp, ep and expert tp varied, the kept tensors equal the per-layer ones for every layer and
    for whole stages; a model with other shapes gets its own (the cache holds each model)."""
    checked = 0
    for preset, (tp, ep, etp) in itertools.product(
            ("llama3-8b", "mixtral-8x7b", "deepseek-v2-lite"),
            ((1, 1, None), (2, 1, None), (2, 4, None), (4, 2, 2))):
        if preset == "llama3-8b" and ep > 1:
            continue
        cfg = _cfg(preset, tp=tp, ep=ep, etp=etp, zero=1)
        n = cfg.model.num_layers
        for layers in ([0], [1], [n - 1], range(n), range(1, n, 3)):
            want = _rank_tensors_per_layer(cfg, layers)
            for _ in range(2):  # first computed, then kept
                assert sharding.rank_tensors(cfg, layers) == want
            checked += 1
    assert checked >= 30
    a, b = _cfg("llama3-8b", tp=2, zero=1), _cfg("llama3-70b", tp=2, zero=1)
    assert sharding.rank_tensors(a, [0]) != sharding.rank_tensors(b, [0])
    assert sharding.rank_tensors(b, [0]) == _rank_tensors_per_layer(b, [0])


def _link_floor_per_layer(cfg, pricer, ranges):
    """``link_floor`` with every block's reduction priced on its own (the code it replaces)."""
    p = cfg.parallel
    out = [(0.0, 0.0)] * p.pp
    if p.zero_stage < 3 or fsdp_pp_mode(cfg) not in (None, "regather") \
            or p.zero3_gather == "per_parameter":
        return out
    for v, layers in enumerate(ranges):
        first, last = v == 0, v == len(ranges) - 1
        units = fsdp_unit_gathers(cfg, layers, first, last)
        if not len(layers) or len(units) != len(layers) + (first or last):
            continue
        gather = [sum(pricer.comm_time(c) for c in unit) for unit in units]
        regather = gather[len(gather) - len(layers):]
        g, r = out[v % p.pp]
        out[v % p.pp] = (g + sum(gather) + sum(regather),
                         r + sum(block_reduce_s(cfg, pricer, i) for i in layers))
    return out


def _gather_waits_per_unit(cfg, pricer, ranges):
    """``gather_waits`` with every unit's gathers summed on its own (the code it replaces)."""
    p = cfg.parallel
    share = pricer.sm_share["dp"]
    regather = p.zero_stage >= 3 and fsdp_pp_mode(cfg) in (None, "regather")
    out = [0.0] * p.pp
    for v, layers in enumerate(ranges):
        first, last = v == 0, v == len(ranges) - 1
        units = fsdp_unit_gathers(cfg, layers, first, last)
        if not len(layers) or len(units) != len(layers) + (first or last):
            continue
        gather = [sum(pricer.comm_time(c) for c in unit) for unit in units]
        waits = [gather] + ([gather[len(gather) - len(layers):][::-1]] if regather else [])
        out[v % p.pp] += sum(g[0] + share * (sum(g) - g[0]) for g in waits)
    return out


def test_link_floor_prices_each_block_kind_once_to_the_same_bits():
    """ZeRO-3 over a dense model, an every-layer MoE and one with dense first layers, one and
    several stages: the link floor (gathers, reductions) and the gather waits are the
    per-block sums exactly, and some are not zero (so this can fail)."""
    nonzero = 0
    for preset, pp, ep in (("llama3-8b", 1, 1), ("llama3-8b", 4, 1), ("mixtral-8x7b", 2, 4),
                           ("deepseek-v2-lite", 3, 8), ("deepseek-v2-lite", 1, 2)):
        cfg = _cfg(preset, tp=2 if preset == "llama3-8b" else 1, pp=pp, ep=ep,
                   framework="megatron-core" if pp > 1 else None, gpus=16 * pp)
        pricer = Pricer(cfg)
        ranges = tuple(cfg.virtual_stage_layers())
        got = link_floor(cfg, pricer, ranges)
        assert got == _link_floor_per_layer(cfg, pricer, ranges)
        assert gather_waits(cfg, pricer, ranges) == _gather_waits_per_unit(cfg, pricer, ranges)
        nonzero += any(g and r for g, r in got)
    assert nonzero >= 3
