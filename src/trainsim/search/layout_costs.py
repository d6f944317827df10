"""What a layout's stages run after their last pipeline pass, for the search's refined bound
(``search.lower_bounds.Bounds``): the gradient reductions, the optimizer step and the parameter
gathers, and ZeRO-3's slowdown of the passes."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from trainsim.config.hybrid import layer_kind


@dataclass(frozen=True)
class _Layout:
    """What every stage of one layout shares in :func:`after_passes`: the run, its pricer and
    ZeRO stage, whether it shards like FSDP, the data-parallel group sizes and reduce-scatter
    widths by group, the gradient reduction's kind, the fixed bucket size (None: per chunk),
    whether the optimizer steps per tensor, and the data-parallel stream's SM share."""

    cfg: Any
    pricer: Any
    zero: int
    fsdp: bool
    sizes: dict[str, int]
    width: dict[str, int]
    kind: str
    fixed: float | None
    per_tensor: bool
    share: float


@dataclass(frozen=True)
class BoundShape:
    """What the search's pipeline bound (``search.lower_bounds.Bounds``) takes from a memory
    group's config (the same for all its overlap variants)."""

    paired: bool
    """DualPipe's pairs hide the communication the passes priced alone expose: compute only."""
    schedule: str | None
    m: int
    pp: int
    vpp: int
    ranges: tuple[range, ...]
    kinds: tuple[tuple[int, int], ...]
    """(dense, routed-expert) layers of each virtual stage."""
    floor: float
    """ZeRO-3's gradient reduce-scatters, one after another on the data-parallel stream."""
    tails: dict[tuple[bool, bool], list[float]]
    """Per stage, after its last pass, by (overlap_grad_reduce, overlap_param_gather)."""
    every_backward: list[tuple[float, float]]
    """Per stage, under the gradient-reduce overlap where every micro-batch's backward reduces
    its buckets (``reduces_every_microbatch``): one backward's reduce-scatters times the SM
    share they hold, and its copy-ins and reduce-scatters on the data-parallel stream
    (:func:`after_passes`); zeros elsewhere."""
    contention: list[float]
    waits: list[float]
    """Per stage, its passes' least waits for ZeRO-3 / FSDP unit gathers, every micro-batch's
    (``layout_costs.gather_waits``)."""


def dp_comm_time(pricer: Any, cfg: Any, name: str, kind: str, size: float,
                 group: str) -> float:
    """Seconds of one data-parallel collective as the simulator issues it on the stage's
    data-parallel stream (``simulator._TaskGraph.comm``): under HSDP (``parallel.
    dp_replicate`` > 1) a gradient reduce-scatter over one replica's ranks is followed, on
    the same stream, by the all-reduce of its shard (``size`` / the replica's ranks) with
    the same shard of the other replicas (``ParallelConfig.dp_replicate``, sources cited
    there: torch FSDP1's HYBRID_SHARD ``_reduce_grad`` all-reduces ``new_sharded_grad`` over
    ``state._inter_node_pg`` after the shard group's reduce-scatter, torch/distributed/fsdp/
    _runtime_utils.py). Every other collective: its own time."""
    from trainsim.workload.ops import Comm

    t = pricer.comm_time(Comm(name, kind, size, group))  # type: ignore[arg-type]
    if kind == "reduce_scatter" and group == "dp_cp" and cfg.parallel.dp_replicate > 1:
        t += pricer.comm_time(Comm(f"{name}_replicas", "all_reduce", size / cfg.shard_ranks,
                                   "dp_rep"))
    return t


def paired_gathers(cfg: Any, pricer: Any, ranges: tuple[range, ...]
                   ) -> list[list[float] | None]:
    """Per virtual stage, its ZeRO-3 / FSDP units' gathers, each unit's summed
    (``fsdp_unit_gathers``, :func:`_unit_sums`); None where the units do not pair with its
    layers one for one (root unit with the embedding or head, one per block) or it holds no
    layer: what :func:`gather_waits` and :func:`link_floor` both read, worked out once for
    both by a caller that asks both."""
    from trainsim.workload.sharding import fsdp_unit_gathers

    out: list[list[float] | None] = []
    for v, layers in enumerate(ranges):
        first, last = v == 0, v == len(ranges) - 1
        units = fsdp_unit_gathers(cfg, layers, first, last)
        out.append(_unit_sums(pricer, units)
                   if len(layers) and len(units) == len(layers) + (first or last) else None)
    return out


def gather_waits(cfg: Any, pricer: Any, ranges: tuple[range, ...],
                 paired: list[list[float] | None] | None = None) -> list[float]:
    """Per stage, the least its compute stream spends per micro-batch in its passes' waits for
    ZeRO-3 / FSDP unit gathers (``sharded_passes.unit_gather_waits``: each unit gathered one
    ahead of its compute, ``workload.schedule.prefetch_exposed_s``). A pass waits for its
    first unit's gather whole, and the gathers it hides hold ``sm_share['dp']`` of the SMs of
    the compute beside them: its lead is ``exposed + share x (gathers - exposed)``, at least
    ``g0 + share x (gathers - g0)`` (``exposed >= g0``, the first unit's gather); the
    forward's units and, where the blocks are gathered again for the backward
    (``fsdp_pp_mode`` None or 'regather', stage 3), the blocks in backward order. Virtual
    stages whose units do not pair with their computation one for one (root unit with the
    embedding or head, one per block) are left out, as are DeepSpeed's regathers of
    recomputed blocks (they only add). ``paired``: :func:`paired_gathers`, where the caller
    has it."""
    from trainsim.workload.sharding import fsdp_pp_mode

    p = cfg.parallel
    share = pricer.sm_share["dp"]
    regather = p.zero_stage >= 3 and fsdp_pp_mode(cfg) in (None, "regather")
    out = [0.0] * p.pp
    if paired is None:
        paired = paired_gathers(cfg, pricer, ranges)
    for v, layers in enumerate(ranges):
        gather = paired[v]
        if gather is None:
            continue
        waits = [gather] + ([gather[len(gather) - len(layers):][::-1]] if regather else [])
        out[v % p.pp] += sum(g[0] + share * (sum(g) - g[0]) for g in waits)
    return out


def link_floor(cfg: Any, pricer: Any, ranges: tuple[range, ...],
               paired: list[list[float] | None] | None = None) -> list[tuple[float, float]]:
    """Per stage, what ZeRO-3 / FSDP's regathering puts on the sharding group's links each
    micro-batch: (its passes' unit gathers, its blocks' gradient reductions). One process
    group's NCCL collectives run on one stream in issue order (ProcessGroupNCCL), and the
    simulator queues them so (``sharded_passes.unit_gather_waits``, ``schedule.prefetch_walk``):
    a forward lasts at least its units' gathers (``prefetch_exposed_s``), the split backward
    runs its blocks' gathers as tasks on that stream with each block's reduction
    (``block_reduce_s``) after them, and every pass waits for the stage's last reduction
    (``simulator._TaskGraph.link_tail``). So the gathers of every micro-batch's forward and
    backward and the reductions of all backwards but the last lie one after another on a
    stage's time line: a lower bound, priced as the simulator prices them. Only where the
    blocks are gathered again for the backward (stage 3, ``fsdp_pp_mode`` None or 'regather')
    and by unit (not DeepSpeed's per-parameter gathers, whose regathers of recomputed blocks
    only add); zeros elsewhere. ``paired``: :func:`paired_gathers`, where the caller has it."""
    from trainsim.sharded_passes import block_reduce_s
    from trainsim.workload.sharding import fsdp_pp_mode

    p, mdl = cfg.parallel, cfg.model
    out = [(0.0, 0.0)] * p.pp

    def is_moe(i: int) -> bool | str:  # a hybrid layer's kind: its symbol (hsearch51)
        return layer_kind(mdl, i)
    if p.zero_stage < 3 or fsdp_pp_mode(cfg) not in (None, "regather") \
            or p.zero3_gather == "per_parameter":
        return out
    if paired is None:
        paired = paired_gathers(cfg, pricer, ranges)
    # a block's reduction reads its index only through layer_kind (rank_grad_elements):
    # priced once per kind (for the layout: the 22B search's 2,267 -> 168), added per block in
    # the same order
    reduce: dict[bool | str, float] = {}
    for v, layers in enumerate(ranges):
        gather = paired[v]
        if gather is None:
            continue  # as gather_waits: units that do not pair with the layers one for one
        regather = gather[len(gather) - len(layers):]
        g, r = out[v % p.pp]
        for i in layers:
            if is_moe(i) not in reduce:
                reduce[is_moe(i)] = block_reduce_s(cfg, pricer, i)
        out[v % p.pp] = (g + sum(gather) + sum(regather),
                         r + sum(reduce[is_moe(i)] for i in layers))
    return out


def param_broadcasts_s(cfg: Any, pricer: Any, s: int, widths: dict[str, float]) -> float:
    """Seconds of stage ``s``'s parameter broadcasts after the step under ``parallel.
    zero1_param_sync: broadcast``, as the simulator issues them one after another on the
    data-parallel stream (``optimizer_tasks.param_syncs``): under DistributedDataParallel
    (``ZeroRedundancyOptimizer``) one broadcast per tensor from its owner, elsewhere
    (InternEvo) one per owner of its flat shard (``workload.zero1_broadcast``), each group's
    elements at its width in ``widths`` (the groups of more than one rank that hold
    parameters). The same sizes in the same order as the simulator's, so the bound's tail
    equals the simulated one rather than a whole-stage all-gather, which a per-tensor
    broadcast's latency and algorithm do not bound (torcheager61)."""
    from trainsim.workload.ops import Comm
    from trainsim.workload.pipeline_schedules import rank_chunks
    from trainsim.workload.zero1_broadcast import owner_loads, owner_tensors, stage_tensors

    p = cfg.parallel
    chunks = rank_chunks(p.pipeline_schedule, s, p.pp, p.vpp)
    layers = [i for v in chunks for i in cfg.virtual_ranges[v]]
    tensors = stage_tensors(cfg, layers, 0 in chunks, p.pp * p.vpp - 1 in chunks)
    sizes = {"dp_cp": cfg.shard_ranks, "edp": cfg.edp if cfg.model.is_moe else 1}
    out = 0.0
    for group, own in zip(("dp_cp", "edp"), tensors):
        if group not in widths:
            continue
        loads = [n for owned in owner_tensors(own, sizes[group]) for n in owned] \
            if p.data_parallel_impl == "ddp" else owner_loads(own, sizes[group])
        out += sum(pricer.comm_time(Comm("param_broadcast", "broadcast", n * widths[group],
                                         group)) for n in loads)  # type: ignore[arg-type]
    return out


def _unit_sums(pricer: Any, units: list[list[Any]]) -> list[float]:
    """Each unit's gathers summed (``fsdp_unit_gathers`` hands one list per block kind: each
    distinct list summed once)."""
    sums: dict[int, float] = {}
    out = []
    for unit in units:
        t = sums.get(id(unit))
        if t is None:
            t = sums[id(unit)] = sum(pricer.comm_time(c) for c in unit)
        out.append(t)
    return out


def after_passes(cfg: Any, pricer: Any, ranges: tuple[range, ...],
                 split: list[tuple[float, float]], zero: int
                 ) -> tuple[dict[tuple[bool, bool], list[float]], list[float],
                            list[tuple[float, float]]]:
    """Per stage, what the simulator's task graph (``simulator._TaskGraph``) runs after the
    stage's last pass ends, by (overlap_grad_reduce, overlap_param_gather): the gradient
    reductions that wait for that pass (every bucket without the overlap, one per gradient
    buffer under Megatron's DDP, else the last bucket of chunk 0), the optimizer step after
    them on the compute stream, and without the gather overlap the parameter all-gathers
    after the step, one after another on the data-parallel stream; and the compute stream's
    slowdown under ZeRO-3 / FSDP's per-pass
    gradient reduce-scatters of one micro-batch, as every backward but the last micro-batch's
    runs them (a task holding ``share`` of the SMs leaves the passes at most ``1 - share``
    of their rate, so ``T >= passes + share x reductions``); and, where every micro-batch's
    backward reduce-scatters its buckets under the gradient-reduce overlap (Megatron-LLaMA's
    overlapped optimizer, ``workload.sharding.reduces_every_microbatch``), one backward's
    reductions times their SM share and its copy-ins plus reductions on the data-parallel
    stream (``last_backward._bucket_reductions``: the same buckets every micro-batch), which
    the bound takes m times (``BoundShape.every_backward``)."""
    from trainsim.catalog.frameworks import framework_supports
    from trainsim.workload.sharding import fsdp_grad_bytes, fsdp_per_unit

    p, pp, vpp = cfg.parallel, cfg.parallel.pp, cfg.parallel.vpp
    dp_size = cfg.shard_ranks  # HSDP: one replica (its replicas' all-reduce: dp_comm_time)
    sizes = {"dp_cp": dp_size, "edp": cfg.edp if cfg.model.is_moe else 1}
    fsdp = fsdp_per_unit(cfg, zero)
    width = fsdp_grad_bytes(cfg)  # of its reduce-scatters, by group
    kind = "all_reduce" if zero == 0 or (zero == 1 and p.zero1_grad_reduce == "all_reduce") \
        else "reduce_scatter"
    fixed = p.ddp_bucket_size if p.dp_buckets == "fixed" and p.ddp_bucket_size else None
    per_tensor = framework_supports(cfg.training.framework, cfg.training.framework_version,
                                    "per_tensor_optimizer")
    run = _Layout(cfg, pricer, zero, fsdp, sizes, width, kind, fixed, per_tensor,
                  pricer.sm_share["dp"])
    tails = {(og, op): [0.0] * pp for og in (False, True) for op in (False, True)}
    contention = [0.0] * pp
    every_backward = [(0.0, 0.0)] * pp
    # a stage's costs read its parameter split, its chunks' layer counts and (for
    # ``dp_buckets: first_chunk``) whether it is stage 0: the middle stages of a layout
    # share them, worked out once (the same sums in the same order)
    done: dict[tuple, tuple[Any, ...]] = {}
    moe = functools.partial(layer_kind, cfg.model)  # a hybrid layer's symbol (hsearch51)
    for s in range(pp):
        own = tuple(ranges[c * pp + s] for c in range(vpp))
        # (and its chunks' MoE layers and ends, which place the buckets: ``bucket_ready``)
        key = (split[s], tuple(len(r) for r in own), s == 0, s == pp - 1,
               tuple(tuple(moe(i) for i in r) for r in own))
        hit = done.get(key)
        if hit is None:
            hit = done[key] = _stage_after(run, split[s], own, s)
        every, last, gathers, contention[s], step, every_backward[s] = hit
        for (og, op), tail in tails.items():
            tail[s] = (last if og and not cfg.training.cuda_launch_blocking else every[og]) \
                + step + (0.0 if op else gathers)
    return tails, contention, every_backward


def _stage_after(run: _Layout, split: tuple[float, float], own: tuple[range, ...], s: int
                 ) -> tuple[tuple[float, float], float, float, float, float,
                            tuple[float, float]]:
    """:func:`after_passes` of stage ``s`` of layout ``run`` (parameter split ``split``, its
    chunks' layers ``own``): (every bucket's reductions without and with the gradient-reduce
    overlap, the last bucket's with it, the parameter gathers, the passes' slowdown, the
    optimizer step, one backward's reductions x their SM share and its data-parallel stream
    where every backward reduces)."""
    from trainsim.memory.params import stage_layer_params
    from trainsim.workload.ddp_buckets import bucket_ready
    from trainsim.workload.fp8_gather import param_gather_width
    from trainsim.workload.optimizer_impl import run_optimizer_step
    from trainsim.workload.sharding import (
        bucket_copy_in,
        dp_bucket_count,
        grad_buffer_rest,
        reduces_every_microbatch,
    )
    from trainsim.workload.zero1_broadcast import busiest_owner

    cfg, pricer, zero, sizes, fixed = run.cfg, run.pricer, run.zero, run.sizes, run.fixed
    p, vpp = cfg.parallel, len(own)
    lens = tuple(len(r) for r in own)
    chunks = len(own) * p.pp
    grad_bytes = 4 if cfg.training.grad_reduce_in_fp32 else 2

    def comm(kind: str, params: float, width: float, group: str) -> float:
        count = max(1, math.ceil(params / fixed)) if fixed else 1
        return count * dp_comm_time(pricer, cfg, "b", kind, params * width / count, group)

    groups = [(params, group) for params, group in zip(split, ("dp_cp", "edp"))
              if sizes[group] > 1 and params > 0]
    every, last, gathers, contention = [0.0, 0.0], 0.0, 0.0, 0.0
    # the copy-ins of a bucket's gradients where every backward reduces (the simulator's
    # ``_bucket_reductions``), by the bucket's shares of the two buffers
    each_mb = bool(groups) and reduces_every_microbatch(cfg, run.fsdp, overlap=True)
    copies = 0.0
    by_copy: dict[tuple[float, float], float] = {}

    def copy_s(share: tuple[float, float]) -> float:
        hit = by_copy.get(share)
        if hit is None:
            ops = [bucket_copy_in(cfg, params / vpp * share[group == "edp"])
                   for params, group in groups if share[group == "edp"] > 0]
            hit = by_copy[share] = sum(pricer.compute.time(op) for op in ops if op is not None)
        return hit
    if groups and not run.fsdp:
        chunk_params = sum(split) / vpp
        # a bucket's reductions by its shares of the two buffers: the full buckets of a
        # chunk's like layers hold equal shares (the 22B search priced 40,896 bucket
        # collectives for 8,293 distinct ones, each a Comm built and looked up)
        by_share: dict[tuple[float, float], float] = {}

        def bucket_s(share: tuple[float, float]) -> float:
            hit = by_share.get(share)
            if hit is None:
                hit = by_share[share] = sum(
                    comm(run.kind, params / vpp * share[group == "edp"], grad_bytes, group)
                    for params, group in groups if share[group == "edp"] > 0)
            return hit

        for c in range(vpp):
            v = c * p.pp + s
            bucket: list[float] = []
            n_on = 0
            for og in (True, False):  # Megatron's DDP: one bucket without the overlap
                n = dp_bucket_count(cfg, lens[c], chunk_params, s, c, og)
                if og or n != n_on:
                    # the simulator's parts (``last_backward.split_last_backward``)
                    shares = ((1.0, 1.0),) if n == 1 else \
                        bucket_ready(cfg, own[c], v == 0, v == chunks - 1)[1]
                    bucket = [bucket_s(share) for share in shares]
                every[og] += sum(bucket)
                if og:
                    n_on, last = n, bucket[-1] if c == 0 else last
                    if each_mb:
                        copies += sum(copy_s(share) for share in shares)
        if zero in (1, 2):  # at the simulator's widths (fp8 weights at one byte)
            fp8 = {"dp_cp": stage_layer_params(cfg, s) - split[1], "edp": split[1]}
            widths = {g: param_gather_width(cfg, n, fp8[g]) for n, g in groups}
            gathers = param_broadcasts_s(cfg, pricer, s, widths) \
                if p.zero1_param_sync == "broadcast" else \
                sum(comm("all_gather", n, widths[g], g) for n, g in groups)
    elif groups:  # every backward but the last micro-batch's reduce-scatters whole
        contention = run.share * vpp * sum(
            dp_comm_time(pricer, cfg, "r", "reduce_scatter", params / vpp * run.width[group],
                         group)
            for params, group in groups)
    step = 0.0
    if not run.per_tensor:
        local = sum(params / (sizes[group] if zero >= 1 else 1)
                    for params, group in zip(split, ("dp_cp", "edp")))
        # ZeroRedundancyOptimizer's step: the busiest owner's whole tensors, on the stage's
        # own tensor count (``OptimizerTasks.optimizer_step``)
        busiest = sum(split) * busiest_owner(cfg, s)[0] \
            if zero >= 1 and p.data_parallel_impl == "ddp" else local
        step = pricer.compute.time(run_optimizer_step(cfg, busiest, s))
        rest = grad_buffer_rest(cfg, sum(split), local, grad_bytes)
        if rest is not None:  # the simulator's zero_grad_buffer task after the step
            step += pricer.compute.time(rest)
    backward = (run.share * every[1], every[1] + copies) if each_mb else (0.0, 0.0)
    return (every[0], every[1]), last, gathers, contention, step, backward


__all__ = ["BoundShape", "after_passes", "dp_comm_time", "gather_waits", "link_floor",
           "paired_gathers", "param_broadcasts_s"]
