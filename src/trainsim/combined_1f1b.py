"""Megatron-core's combined 1F1B (``--overlap-moe-expert-parallel-comm``): one micro-batch's
expert-parallel all-to-alls hide behind another's compute only where a forward and a backward
run as a pair (core_v0.15.0 megatron/core/pipeline_parallel/combined_1f1b.py: "The forward
step for the first microbatch is executed alone, no a2a overlapping", and the last backward
likewise). The warm-up's forwards and the cool-down's backwards have nothing to pair with, so
they run as without the overlap, their all-to-alls exposed. The schedule is the same whatever
shards the parameters: without pipelining (``combined_1f1b_schedule_for_no_pipelining``, which
``forward_backward_no_pipelining`` calls for any data-parallel wrapper, FSDP included) the
first forward and the last backward run alone; under ZeRO-3 / FSDP those passes keep their
parameter gathers, priced from the chunks without the overlap.

The steady pairs are (backward, forward): a stage's forwards up to its first backward are its
warm-up (Megatron's interleaved warm-up count plus the one extra forward
``get_pp_rank_microbatches`` schedules with the overlap), each later backward runs beside the
forward that follows it, and the backwards after its last forward are its cool-down. A
chunk's passes are priced beside a forward of the same chunk; a steady backward beside a
forward of another chunk (interleaving) takes the exposed time of that forward's layers beside
its own (``beside_forward``). The last micro-batch's split backward and FSDP's per-micro-batch
backwards (``simulator._TaskGraph.backward``) keep their own chunk's pairing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

from trainsim.chunks import chunks
from trainsim.config import RunConfig
from trainsim.ep_pairs import chunk_exposed, own_segments, with_exposed
from trainsim.pricing import interned
from trainsim.sharded_passes import blocking_gathers, unit_gather_passes
from trainsim.workload.schedule import combined_1f1b
from trainsim.workload.shard import shard_of


def pairs_passes(cfg: RunConfig) -> bool:
    """Whether ``cfg`` runs Megatron-core's combined 1F1B (forward and backward in pairs;
    ``workload.schedule.combined_1f1b``, which the memory estimate reads too)."""
    return combined_1f1b(cfg)


class LonePasses(NamedTuple):
    """What a combined-1F1B graph runs without a partner, per virtual stage."""

    fwd: list  # forward pass specs priced without the overlap
    bwd: list  # backward pass specs priced without the overlap
    chunks: dict  # the chunks they come from (the last micro-batch's split backward reads them)
    first: dict  # first forwards led by their parameter wait (virtual stage -> spec)
    work: dict  # (forward, backward) passes, with their ZeRO-3 / FSDP gathers
    blocks: dict  # virtual stage -> its backward's block gathers (``unit_gather_passes``)
    block_ops: dict  # virtual stage -> those gathers' collectives (for exports)


def lone_pass_specs(graph: Any, last_v: int, first_wait: dict,
                    memo: dict) -> LonePasses | None:
    """Per virtual stage, the pass specs of ``graph`` (a ``simulator._TaskGraph``) priced
    without the overlap, forwards then backwards, the chunks they come from (the last
    micro-batch's split backward is a cool-down backward too), the first forwards of the
    virtual stages that wait for their parameters first (``first_wait``: virtual stage -> the
    wait, as ``pass_specs`` puts it before the paired forward), and the (forward, backward)
    passes with their ZeRO-3 / FSDP parameter gathers (the chunks' own passes otherwise); None
    where the run does not pair passes. What is priced without the overlap is kept in ``memo``
    (the graph's per-pricer store: a steady-state proof builds several graphs of one config)."""
    cfg, p = graph.cfg, graph.p
    if not pairs_passes(cfg):
        return None
    hit = memo.get("lone_chunks")
    if hit is None:
        alone_cfg = replace(cfg, parallel=replace(p, moe_overlap_ep_comm=False))
        pricer = type(graph.pricer)(alone_cfg)  # of the graph's kind (an export records)
        alone = chunks(alone_cfg, pricer, shard_of(alone_cfg), graph.layer_source)
        work = {v: (ch.fwd, ch.bwd) for v, ch in alone.items()}
        blocks: dict = {}  # the split backward's block gathers (``unit_gather_passes``)
        block_ops: dict = {}  # and their collectives
        once: dict = {}  # under gather_once: every chunk's first forward, led by its gathers
        if graph.fsdp:  # the same gathers as the paired passes (side streams counted there)
            work, blocks = (blocking_gathers(alone_cfg, pricer, alone, [0.0] * graph.pp), {}) \
                if p.zero3_gather == "per_parameter" else \
                unit_gather_passes(alone_cfg, pricer, alone, [0.0] * graph.pp, block_ops)
            if graph.gather_once:  # as the paired passes: only the first forward gathers
                # (none under torch's runtime window: its gathers are tasks, pass_specs)
                once = {v: fwd for v, (fwd, _) in work.items()} if graph.window is None else {}
                work = {v: (alone[v].fwd, bwd) for v, (_, bwd) in work.items()}
        hit = memo["lone_chunks"] = (alone, work, once, blocks, block_ops)
    alone, work, once, blocks, block_ops = hit
    firsts = once or {v: wait + work[v][0] for v, wait in first_wait.items()}
    return LonePasses(
        [graph._pass_spec(v % graph.pp, work[v][0], v < last_v, True) for v in alone],
        [graph._pass_spec(v % graph.pp, work[v][1], v > 0) for v in alone], alone,
        {v: graph._pass_spec(v % graph.pp, fwd, v < last_v, True) for v, fwd in firsts.items()},
        work, blocks, block_ops)


def unpaired_bounds(orders: list[list[tuple]]) -> tuple[list[int], list[int]]:
    """Per stage, the schedule position of its first backward (the forwards before it are the
    warm-up) and of its last forward (the backwards after it are the cool-down)."""
    first_b = [next((i for i, x in enumerate(o) if x[0] == "B"), len(o)) for o in orders]
    last_f = [max((i for i, x in enumerate(o) if x[0] == "F"), default=-1) for o in orders]
    return first_b, last_f


def beside_forward(graph: Any, spec: tuple, v: int, order: list, k: int) -> tuple:
    """The pass spec of the steady backward at position ``k`` of a stage's ``order``
    (virtual stage ``v``, priced as ``spec``: beside a forward of its own chunk) beside the
    forward that follows it, as Megatron-core pairs them: step k of the 1F1B phase runs the
    backward of micro-batch k beside the forward of micro-batch k + warm-up
    (schedules.py ``forward_backward_pipelining_with_interleaving``: ``forward_k`` and
    ``backward_k`` to ``combined_1f1b_schedule_for_interleaved_pipelining``, core_v0.16.0),
    the forward and backward chunk's layers paired by ``ep_pairs.chunk_exposed``. Where
    that forward is of another virtual stage (interleaving), the chunks may differ in
    their layers (dense or MoE, MTP, their count): the exposed time is that pair's."""
    if k + 1 >= len(order) or order[k + 1][0] != "F":
        return spec
    v_f = order[k + 1][2] * graph.pp + v % graph.pp
    if v_f == v:
        return spec
    memo = graph._beside  # (backward's virtual stage, forward's) -> pass spec
    hit = memo.get((v, v_f))
    if hit is None:
        b_ch, f_ch = graph.chunks[v], graph.chunks[v_f]
        if f_ch.pair_sides == b_ch.pair_sides:  # the same layers: the chunk's own pairing
            memo[(v, v_f)] = spec
            return spec
        work = graph.work[v][1]
        own = interned(own_segments(work))
        extra = sum(chunk_exposed(f_ch.pair_sides, b_ch.pair_sides,
                                  graph.pricer.sm_share["ep"], graph.pricer.ep_gemm_share))
        hit = memo[(v, v_f)] = graph._pass_spec(v % graph.pp, with_exposed(own, extra), v > 0)
    return hit
