"""A lower bound on the iteration of a named pipeline schedule (DualPipe, zero-bubble ones): the
busiest rank's compute stream, each pass at the duration the simulator gives its task.

``pipeline.ScheduledPipeline.place`` puts every step of a rank's order
(``workload.pipeline_schedules.orders``) on that rank's compute stream as one task: a single
pass (F, B, or a split backward's I and W) priced as its chunk's op list, a DualPipe pair as
its forward and backward priced the paired way (``ScheduledPipeline._pair_pricing``: the
expert all-to-alls behind the pair's compute, the compute beside them on the SMs their kernels
leave: ``pipeline.pair_pricer``), plus a blocking send where the pass sends and p2p is not overlapped. A stream
runs one task at a time and the event loop never runs a task faster than its duration, so the
iteration is at least the sum of one rank's step durations (sends left out: the bound is the
same whatever ``overlap_p2p_comm`` says). The optimizer step and what the other streams run are
left out, so it stays a bound. :func:`compute_busy_s` builds the simulator's own passes (tests
check it against the task graph); :func:`layered_busy_s`, what the search asks, sums each
chunk's passes from one priced copy of each kind of layer (a chunk's priced pass is its parts
joined, ``chunks.Chunk``), which a search prices once per shard shape for all its layouts.

The search's per-layer bound (``search.lower_bounds.Bounds.refined``) counts only the passes'
compute for DualPipe (the pairs hide what they can); this one also counts the communication a
pair leaves exposed (tensor-parallel collectives, an all-to-all longer than the compute it
hides behind) and the pairs' slower compute: on the 2,048-GPU DeepSeek-V3 search under
Megatron-Bridge the simulated DualPipe iterations were 1.30-6.5x (median 1.96x) the per-layer
bound and 1.005-1.20x (median 1.04x, 40 sampled) this one.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any


def compute_busy_s(cfg: Any) -> list[float]:
    """Per rank, the seconds of the pipeline passes the simulator places on its compute stream
    under ``cfg``'s named schedule (``parallel.pipeline_schedule`` other than Megatron's
    1F1B), sends left out."""
    from trainsim.pipeline import ScheduledPipeline
    from trainsim.pricing import Pricer
    from trainsim.simulator import _TaskGraph
    from trainsim.workload.pipeline_schedules import zb_w_fraction

    graph = _TaskGraph(cfg, Pricer(cfg), None)
    sp = ScheduledPipeline(graph)
    m = cfg.model
    wf = zb_w_fraction(m.hidden_size, m.num_attention_heads, cfg.training.seq_length)
    if sp.name == "zb_2p":  # its order depends on the passes' times
        counts = _step_counts(sp.name, sp.pp, graph.vpp, graph.m, wf, sp._times())
    else:
        counts = _kept_counts(sp.name, sp.pp, graph.vpp, graph.m, wf)
    single = {"F": sp.fwd, "B": sp.bwd}
    busy = []
    for kinds in counts:
        total = 0.0
        for key, n in kinds:
            if key[0] == "pair":
                d = (sp.pair_fwd[key[1]] + sp.pair_bwd[key[2]]).duration_s
            elif key[0] in single:
                d = single[key[0]][key[1]].duration_s
            else:  # a split backward's I or W
                d = sp.split[key[1]][0 if key[0] == "I" else 1].duration_s
            total += n * d
        busy.append(total)
    return busy


def _step_counts(name: str, pp: int, vpp: int, m: int, wf: float, times: Any = None
                 ) -> tuple[tuple[tuple[tuple, int], ...], ...]:
    """Per rank, how many steps of each kind its order (``orders``) holds: ("pair", forward's
    virtual stage, backward's) or (pass kind, virtual stage), in sorted order."""
    from trainsim.workload.pipeline_schedules import orders, virtual_stage
    from trainsim.workload.schedule import Overlapped

    out = []
    for s, steps in enumerate(orders(name, pp, vpp, m, times, wf)):  # type: ignore[arg-type]
        kinds: Counter = Counter()
        for step in steps:  # the same step kinds recur once per micro-batch: count them
            if isinstance(step, Overlapped):
                f, b = step
                kinds["pair", virtual_stage(name, s, f.chunk, pp),
                      virtual_stage(name, s, b.chunk, pp)] += 1
            else:
                kinds[step.kind, virtual_stage(name, s, step.chunk, pp)] += 1
        out.append(tuple(sorted(kinds.items())))
    return tuple(out)


_kept_counts = functools.lru_cache(maxsize=1024)(_step_counts)
"""``_step_counts`` of orders that need no times, once per process: the memory groups of a
search share their pipeline sizes and micro-batch counts (half of a bound's cost)."""


def layer_pass_s(cfg: Any, kind: tuple[bool, bool, bool, bool]) -> dict[str, float]:
    """Seconds of one layer of ``kind`` ((routed experts, windowed, recomputed, kept in 16 bits
    under fp8: ``RunConfig.bf16_layers``), as ``chunks.chunks`` sorts layers) in each way the simulator prices a pass of a named
    schedule: "F" and "B" alone, a split backward's "I" and "W" (``pipeline.split_backward``),
    and "pair F" and "pair B" in a DualPipe pair (``ScheduledPipeline._pair_pricing``). The
    same op lists and pricers as theirs: a chunk's pass is its layers' passes joined (plus
    the embedding, head and gradient-accumulation parts, left out here)."""
    from dataclasses import replace

    from trainsim.pipeline import HalfPricer, pair_pricer
    from trainsim.pricing import Pricer
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.recompute import layer_recompute, recompute_drops_fp8
    from trainsim.workload.shard import shard_of

    m = cfg.model
    c = cfg if kind[1] or m.sliding_window is None else \
        replace(cfg, model=replace(m, sliding_window=None, window_attn_skip_freq=None))
    pricer = Pricer(c)

    def passes(c: Any) -> tuple[list, list]:  # (forward, recompute + backward) ops, as
        # ``chunks.chunks`` builds them and prices them with the run's pricer
        c16 = replace(c, training=replace(c.training, dtype="bf16"))
        if kind[3]:  # outside fp8_autocast: its linears in 16 bits
            sh16 = shard_of(c16)
            lf = layer_forward(c16, sh16, moe=kind[0])
            return lf, layer_recompute(c16, sh16, lf, whole=kind[2]) + backward_of(lf, sh16)
        sh = shard_of(c)
        lf = layer_forward(c, sh, moe=kind[0])
        if kind[2] and recompute_drops_fp8(c):  # the recompute and backward in 16 bits
            sh16 = shard_of(c16)
            lf16 = layer_forward(c16, sh16, moe=kind[0])
            return lf, layer_recompute(c, sh16, lf16) + backward_of(lf16, sh16)
        return lf, layer_recompute(c, sh, lf, whole=kind[2]) + backward_of(lf, sh)

    lf, lb = passes(c)
    out = {"F": pricer.price(lf).duration_s, "B": pricer.price(lb).duration_s,
           "I": HalfPricer(pricer, False).price(lb).duration_s,
           "W": HalfPricer(pricer, True).price(lb).duration_s}
    out["pair F"], out["pair B"] = out["F"], out["B"]
    if m.is_moe and c.parallel.ep > 1:
        pc, paired = pair_pricer(c)
        plf, plb = passes(pc)
        out["pair F"] = paired.price(plf).duration_s
        out["pair B"] = paired.price(plb).duration_s
    return out


def layered_busy_s(cfg: Any, per_kind: Any) -> list[float]:
    """Per rank, :func:`compute_busy_s` from the layers alone: each step's passes as the sum of
    their layers' (``per_kind(kind)``: :func:`layer_pass_s`, which a search keeps for every
    layout of one shard shape), the embedding, head and accumulation parts left out, so never
    above it."""
    from trainsim.config.hybrid import layer_kind
    from trainsim.workload.pipeline_schedules import zb_w_fraction

    p, m = cfg.parallel, cfg.model
    recomputed, bf16 = cfg.recomputed_layers, cfg.bf16_layers
    stages = []
    for layers in cfg.virtual_stage_layers():
        sums: dict[str, float] = {}
        for i in layers:
            d = per_kind((layer_kind(m, i), m.layer_window(i) is not None, i in recomputed,
                          i in bf16))
            for k, x in d.items():
                sums[k] = sums.get(k, 0.0) + x
        stages.append(sums)
    if p.pipeline_schedule == "zb_2p":  # its order depends on the passes' times
        return compute_busy_s(cfg)
    wf = zb_w_fraction(m.hidden_size, m.num_attention_heads, cfg.training.seq_length)
    busy = []
    for kinds in _kept_counts(p.pipeline_schedule, p.pp, p.vpp, cfg.num_microbatches, wf):
        total = 0.0
        for key, n in kinds:
            if key[0] == "pair":
                d = stages[key[1]].get("pair F", 0.0) + stages[key[2]].get("pair B", 0.0)
            else:
                d = stages[key[1]].get(key[0], 0.0)
            total += n * d
        busy.append(total)
    return busy


__all__ = ["compute_busy_s", "layer_pass_s", "layered_busy_s"]
