"""Megatron-core's combined 1F1B (``--overlap-moe-expert-parallel-comm``): one micro-batch's
expert-parallel all-to-alls hide behind another's compute only where a forward and a backward
run as a pair (core_v0.15.0 megatron/core/pipeline_parallel/combined_1f1b.py: "The forward
step for the first microbatch is executed alone, no a2a overlapping", and the last backward
likewise). The warm-up's forwards and the cool-down's backwards have nothing to pair with, so
they run as without the overlap, their all-to-alls exposed. (Under FSDP the gathered passes
keep the overlapped pricing on every pass: not modelled.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trainsim.chunks import chunks
from trainsim.pricing import Pricer
from trainsim.workload.shard import shard_of


def lone_pass_specs(graph: Any, last_v: int, first_wait: dict,
                    memo: dict) -> tuple[list, list, dict, dict] | None:
    """Per virtual stage, the pass specs of ``graph`` (a ``simulator._TaskGraph``) priced
    without the overlap, forwards then backwards, and the chunks they come from (the last
    micro-batch's split backward is a cool-down backward too), and the first forwards of the
    virtual stages that wait for their parameters first (``first_wait``: virtual stage -> the
    wait, as ``pass_specs`` puts it before the paired forward); None where the run does not pair
    passes. The chunks priced without the overlap are kept in ``memo`` (the graph's per-pricer
    store: a steady-state proof builds several graphs of one config)."""
    cfg, p = graph.cfg, graph.p
    if not (p.moe_overlap_ep_comm and cfg.model.is_moe and not graph.fsdp):
        return None
    alone = memo.get("lone_chunks")
    if alone is None:
        alone_cfg = replace(cfg, parallel=replace(p, moe_overlap_ep_comm=False))
        alone = memo["lone_chunks"] = chunks(alone_cfg, Pricer(alone_cfg), shard_of(alone_cfg),
                                             graph.layer_source)
    return ([graph._pass_spec(v % graph.pp, alone[v].fwd, v < last_v) for v in alone],
            [graph._pass_spec(v % graph.pp, alone[v].bwd, v > 0) for v in alone], alone,
            {v: graph._pass_spec(v % graph.pp, wait + alone[v].fwd, v < last_v)
             for v, wait in first_wait.items()})


def unpaired_bounds(orders: list[list[tuple]]) -> tuple[list[int], list[int]]:
    """Per stage, the schedule position of its first backward (the forwards before it are the
    warm-up) and of its last forward (the backwards after it are the cool-down)."""
    first_b = [next((i for i, x in enumerate(o) if x[0] == "B"), len(o)) for o in orders]
    last_f = [max((i for i, x in enumerate(o) if x[0] == "F"), default=-1) for o in orders]
    return first_b, last_f
