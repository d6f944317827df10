"""Pipeline passes of a sharded-parameter run (ZeRO-3 / FSDP) with their parameter gathers:
per tensor and blocking (DeepSpeed 2021), or per FSDP unit, each gathered one unit ahead of its
compute. The task graph (``simulator``) places what these return in place of the plain passes.
"""

from __future__ import annotations

from typing import Literal

from trainsim.catalog.frameworks import profile_supports
from trainsim.chunks import Chunk
from trainsim.config import RunConfig
from trainsim.config.hybrid import layer_kind
from trainsim.pricing import DP, Priced, Pricer, interned
from trainsim.workload import fsdp2_copies, megatron_fsdp
from trainsim.workload.grad_accumulation import fsdp2_unsharded_grad_accumulation
from trainsim.workload.ops import Comm
from trainsim.workload.schedule import prefetch_exposed_s, prefetch_walk
from trainsim.workload.sharding import (
    fsdp_grad_bytes,
    fsdp_pp_mode,
    fsdp_unit_gathers,
    rank_grad_elements,
    zero3_regathers,
    zero3_tensor_gathers,
)
from trainsim.workload.sharding_grads import (
    fsdp1_grad_copies,
    zero3_grad_collective,
    zero3_reduce_bucket_ops,
)

GATHER_WAIT = "FSDP unit all-gathers"
"""Label of a pass's wait for its FSDP units' parameters."""


def unit_gather_waits(cfg: RunConfig, pricer: Pricer, chunks: dict[int, Chunk],
                      side_s: list[float]) -> dict[int, tuple[Priced, Priced]]:
    """:func:`unit_gather_passes`' passes."""
    return unit_gather_passes(cfg, pricer, chunks, side_s)[0]


def unit_gather_passes(cfg: RunConfig, pricer: Pricer, chunks: dict[int, Chunk],
                       side_s: list[float],
                       block_ops: dict[int, list[tuple[Comm, ...]]] | None = None
                       ) -> tuple[dict[int, tuple[Priced, Priced]], dict[int, list[float]]]:
    """(forward, backward) pass of each virtual stage led by its wait for its FSDP units'
    parameters, each unit gathered one ahead of its compute (``workload.schedule.
    prefetch_exposed_s``). The root unit stays gathered through the backward (FSDP does not
    reshard the root after forward); every block is gathered again before its backward, except
    under pipelining with profile ``fsdp_pp_sync_every_microbatch`` or ``fsdp_pp_unsharded``
    (below). FSDP1's gradient casts on its side stream, and DeepSpeed's (>= 0.6) reduce-bucket
    pass, are added to ``side_s`` (per stage, per micro-batch). FSDP2's copies around its
    collectives (``workload.fsdp2_copies``) run on the compute stream: each gathered unit's
    copy-out before the pass that gathered it, the gradients' copy-in after each backward (on
    the reduce-scatter stream, ``side_s``, before torch's 2024-06 change that profile line
    ``fsdp2_reduce_scatter_wait`` marks). Alongside, by virtual stage whose backward pass
    regathers its blocks: each block's gather seconds in compute order, which the task graph's
    split pass runs as tasks of their own in place of the pass's wait (their collectives in
    ``block_ops``, where given; each wait's with the pricer's ``note_ops``, where it has one:
    for exports, a forward's with its walk: the units, their compute seconds, the chunk's
    forward parts and whether the root unit leads, so that an export can write the gathers
    beside the compute they hide behind)."""
    note = getattr(pricer, "note_ops", lambda segment, ops, walk=None: None)
    out: dict[int, tuple[Priced, Priced]] = {}
    gathers: dict[int, list[float]] = {}
    walks: dict[int, tuple[list[float], list[float], list[float], list]] = {}  # backward walks
    # (and each regathered block's collectives)
    fsdp2 = fsdp2_copies.applies(cfg)
    copy_in_on_compute = rs_wait = profile_supports(cfg, "fsdp2_reduce_scatter_wait")
    pp, vpp = cfg.parallel.pp, cfg.parallel.vpp
    # Units fully_shard'ed with reshard_after_forward=False stay gathered from a forward to the
    # next backward, which reshards them as it reduce-scatters their gradients (sync on every
    # micro-batch: the pipeline stage's no-sync never sees an FSDP module). A unit is then
    # gathered before every pass that follows one of its backward passes, and before its first:
    # once per micro-batch, whatever the order of its passes, charged here before the forward.
    # With profile ``fsdp_pp_unsharded`` the stage's no-sync also keeps them gathered through
    # every backward but the last: no gather before a backward either (the simulator charges
    # the forward's gathers to each chunk's first forward only)
    mode = fsdp_pp_mode(cfg)
    regather = cfg.parallel.zero_stage >= 3 and mode in (None, "regather")
    ranges = cfg.virtual_stage_layers()
    is_moe = cfg.model.is_moe_layer if cfg.model.hybrid_layer_pattern is None else \
        (lambda i: layer_kind(cfg.model, i))  # what block_reduce_s reads of a layer
    for v, layers in enumerate(ranges):
        first, last = v == 0, v == len(ranges) - 1
        units = fsdp_unit_gathers(cfg, layers, first, last)
        summed: dict[int, float] = {}  # by id of a unit's list (blocks of one kind share one)
        gather = [summed[id(unit)] if id(unit) in summed else
                  summed.setdefault(id(unit), sum(pricer.comm_time(c) for c in unit))
                  for unit in units]
        ch = chunks[v]
        # the pipe engine's receive gathers (empty under FSDP) run with the embedding part
        lead, *parts = (part.duration_s for part in ch.fwd_parts)
        parts[0] += lead
        # forward units: root with the embedding, blocks; the head runs in the last unit
        compute = ([parts[0]] if first or last else []) + parts[1:-1]
        # a chunk of only the embedding or the head is one part; a middle chunk without
        # layers (an empty first stage's later chunks) has no unit and nothing to compute
        if len(parts) > 1 and compute:
            compute[-1] += parts[-1]
        # SHARD_GRAD_OP keeps the blocks gathered from the forward through the backward
        blocks = gather[len(gather) - len(layers):][::-1] if layers and regather else []
        ops = [tuple(unit) for unit in units[len(units) - len(layers):][::-1]] if blocks else []
        if blocks and cfg.parallel.data_parallel_impl == "deepspeed":
            # DeepSpeed gathers a recomputed block for its recompute forward, then again
            # what that forward released by reuse distance (``zero3_regathers``)
            redo = cfg.recomputed_layers
            blocks = [g + sum(pricer.comm_time(c) for c in zero3_regathers(cfg, i))
                      if i in redo else g for g, i in zip(blocks, reversed(list(layers)))]
            ops = [o + tuple(zero3_regathers(cfg, i)) if i in redo else o
                   for o, i in zip(ops, reversed(list(layers)))]
        # each block's gradient reduction, issued as its backward ends, on the gathers' links;
        # the root unit's (embedding, head) with the last, FSDP's root post-backward
        # (priced once per (block kind, root unit or not): the index is read only through
        # is_moe_layer, rank_grad_elements)
        priced: dict[tuple[bool, bool, bool], float] = {}
        reduce = []
        for i in reversed(list(layers)) if blocks else ():
            k = (is_moe(i), first and i == layers[0], last and i == layers[0])
            t = priced.get(k)
            if t is None:
                t = priced[k] = block_reduce_s(cfg, pricer, i, k[1], k[2])
            reduce.append(t)
        back = [part.duration_s for part in ch.bwd_layers]
        if back:  # a chunk without layers gathers no block for its backward
            back[0] += ch.bwd_head.duration_s
            back[-1] += ch.bwd_tail.duration_s
        # exposed waits, plus the SMs the hidden gathers take from the compute beside them
        share = pricer.sm_share["dp"]
        exposed = prefetch_exposed_s(gather, compute)
        fwd = exposed + (sum(gather) - exposed) * share
        walks[v] = (blocks, back, reduce, ops)
        wait = interned(())  # after the gather wait (below, once ``side_s`` is complete)
        lead = interned(((DP, fwd, GATHER_WAIT),))
        note(lead.segments[0], [c for unit in units for c in unit],
             (units, compute, ch.fwd_parts, first or last))
        if fsdp2:
            lead = lead + pricer.price(fsdp2_copies.copy_out(units))
            if blocks:
                wait = wait + pricer.price(fsdp2_copies.copy_out(units[len(units) - len(layers):]))
            dense, experts = rank_grad_elements(cfg, layers, first, last)
            width = fsdp_grad_bytes(cfg)
            # under the no-sync the chunk's last backward reduces the gradients accumulated
            # in the reduce dtype (``fsdp2_unsharded_grad_accumulation``), once per step: a
            # single backward too, since the pipeline stage runs every backward without sync
            # and reduces after it (the cast into the accumulator is charged there)
            once = mode == "unsharded"
            copies = pricer.price(fsdp2_copies.copy_in(
                dense, experts, width, {"dp_cp": cfg.shard_ranks, "edp": cfg.edp},
                1 / cfg.schedule_microbatches if once else 1.0, width if once else None))
            if copy_in_on_compute:
                wait = wait + copies
            else:
                side_s[v % pp] += copies.duration_s / vpp
        if cfg.parallel.data_parallel_impl == "fsdp1":  # the side stream's, before the RS
            on_compute, side = map(pricer.price, fsdp1_grad_copies(cfg, layers, first, last))
            wait = wait + on_compute
            side_s[v % pp] += side.duration_s / vpp
        # Megatron-FSDP without fused wgrad accumulation: each unit's post-backward hook copies
        # its gradients into the bucket it reduce-scatters, on the compute stream
        wait = wait + pricer.price(megatron_fsdp.grad_copies(cfg, layers, first, last))
        # DeepSpeed >= 0.6: the bucket copies, cat and divide, all on the reduce stream
        side_s[v % pp] += pricer.price(zero3_reduce_bucket_ops(cfg, layers, first, last)
                                       ).duration_s / vpp
        if mode == "unsharded":  # no-sync accumulation
            wait = wait + pricer.price(fsdp2_unsharded_grad_accumulation(cfg, layers, first,
                                                                         last))
        out[v] = (lead + ch.fwd, wait + ch.bwd)
    share = pricer.sm_share["dp"]
    for v, (blocks, back, reduce, ops) in walks.items():
        if not blocks:
            out[v] = (out[v][0], interned(((DP, 0.0, GATHER_WAIT),)) + out[v][1])
            continue
        # the reduce stream's work before each reduction (``side_s``: FSDP1's casts,
        # DeepSpeed's bucket pass), as the task graph queues it with the reductions
        prep = side_s[v % pp] / len(blocks)
        exposed = backward_wait_s(blocks, back, [r + prep for r in reduce], rs_wait)
        # a wait behind the reductions is no hidden gather: no share for it
        bwd = exposed + max(0.0, sum(blocks) - exposed) * share
        lead = interned(((DP, bwd, GATHER_WAIT),))
        note(lead.segments[0], [c for block in ops for c in block])
        out[v] = (out[v][0], lead + out[v][1])
        gathers[v] = blocks
        if block_ops is not None:
            block_ops[v] = ops
    return out, gathers


def chunk_unshard(cfg: RunConfig, pricer: Pricer, v: int
                  ) -> tuple[dict[str, float], Priced, dict[str, list[Comm]]]:
    """Virtual stage ``v``'s UNSHARD under torch's pipeline runtime (``workload.unshard_window``):
    the seconds of its FSDP units' all-gathers by process group (``dp_cp``, ``edp``), issued
    together, one after another on that group's NCCL stream; and the FSDP2 copy-out the stage's
    next compute action runs first (``_assert_unsharded`` -> ``wait_for_unshard``); and the
    all-gathers themselves by process group (for exports)."""
    ranges = cfg.virtual_stage_layers()
    units = fsdp_unit_gathers(cfg, ranges[v], v == 0, v == len(ranges) - 1)
    by_group: dict[str, float] = {}
    ops: dict[str, list[Comm]] = {}
    for unit in units:
        for c in unit:
            by_group[c.group] = by_group.get(c.group, 0.0) + pricer.comm_time(c)
            ops.setdefault(c.group, []).append(c)
    copies = pricer.price(fsdp2_copies.copy_out(units)) if fsdp2_copies.applies(cfg) \
        else interned(())
    return by_group, copies, ops


def backward_wait_s(gather_s: list[float], compute_s: list[float], reduce_s: list[float],
                    rs_wait: bool = False) -> float:
    """What a backward pass waits for its units' gathers (``prefetch_exposed_s``) when each
    unit's gradient reduction, issued as its compute ends, holds the same links before the
    gathers issued after it: the pass as one piece (its priced total). The task graph's split
    backward runs the gathers themselves as tasks instead (``unit_gather_passes``' blocks,
    ``last_backward``), which is the walk; here the pass ends, for what follows, when its last
    reduction does, and the wait makes that end the end of the links' queue
    (``prefetch_walk``, the last reduction included): the end with no wait shifts by it. Never less than without the reductions. ``rs_wait``: a unit's
    compute starts once the reduction two units before it has ended (profile
    ``fsdp2_reduce_scatter_wait``), as the graph runs it."""
    alone = prefetch_exposed_s(gather_s, compute_s)
    queue_end = prefetch_walk(gather_s, compute_s, reduce_s, rs_wait)[1]
    done = end = 0.0  # the graph with no wait: compute parts, reductions beside them
    ends: list[float] = []
    for k, (c, r) in enumerate(zip(compute_s, reduce_s)):
        end = (max(end, ends[k - 2]) if rs_wait and k >= 2 else end) + c
        done = max(done, end) + r
        ends.append(done)
    return max(alone, queue_end - max(end, done))


def block_reduce_s(cfg: RunConfig, pricer: Pricer, layer: int, first: bool = False,
                   last: bool = False) -> float:
    """Seconds of the gradient reduction of block ``layer``'s unit after its backward (FSDP's
    post-backward reduce-scatter, DeepSpeed's reduce bucket with overlap_comm: the block's share
    of it) that hold the parameter gathers' links: its dense gradients over the sharding group
    (``grad_reduce``, as the task graph's ``last_backward`` prices them). A process group's
    collectives run in issue order on that group's one NCCL stream (ProcessGroupNCCL); its
    routed experts' reduction (the expert data-parallel group) and HSDP's all-reduce over the
    replicas (FSDP1 ``_inter_node_pg`` on ``_all_reduce_stream``, FSDP2's replicate mesh
    dimension) run over process groups of their own, concurrently, but where that group leaves
    the node its traffic crosses the same NICs as the gathers (the walk counts the experts'
    gathers already): the experts' reduction counts then, and HSDP's replica all-reduce where
    the sharding group spans nodes as well (inside one node the gathers ride NVLink).
    ``first`` / ``last``: with the root unit's parameters (embedding, head) of the first /
    last virtual stage, reduced with the last block of the backward (the root's post-backward)."""
    (dense, _), (experts, _) = rank_grad_elements(cfg, [layer], first, last)
    if cfg.shard_ranks <= 1:
        return 0.0
    out = 0.0
    if dense > 0:
        op = grad_reduce(cfg, dense, "dp_cp", "fsdp_unit_grad_reduce")
        out += pricer.comm_time(op)
        replicas = replica_reduce(cfg, op)
        if replicas is not None and on_gather_links(pricer, "dp_rep"):
            out += pricer.comm_time(replicas)
    if experts > 0 and cfg.edp > 1 and on_gather_links(pricer, "edp"):
        out += pricer.comm_time(grad_reduce(cfg, experts, "edp", "fsdp_unit_grad_reduce"))
    return out


def on_gather_links(pricer: Pricer, group: str) -> bool:
    """Whether a gradient reduction over ``group`` delays the sharded parameter gathers
    (``block_reduce_s``): the sharding group's own (``dp_cp``, one NCCL stream in issue order);
    the experts' (``edp``) where it leaves the node, through the NICs the gathers use; HSDP's
    replicas' (``dp_rep``) where the sharding group spans nodes too."""
    if group == "dp_cp":
        return True
    if group == "dp_rep":
        return pricer.spans["dp_cp"].nodes > 1 and pricer.spans["dp_rep"].nodes > 1
    return pricer.spans[group].nodes > 1


def grad_reduce(cfg: RunConfig, elements: float, group: Literal["dp_cp", "edp"],
                name: str | None = None, width: dict[str, int] | None = None) -> Comm:
    """The ZeRO-3 / FSDP reduction of ``elements`` gradients over ``group`` (``dp_cp``: the
    sharding group, ``edp``: the routed experts'): ``zero3_grad_collective`` in the reduce
    dtype (``fsdp_grad_bytes``, or ``width`` where the caller holds it)."""
    kind = zero3_grad_collective(cfg)
    return Comm(name or f"grad_{kind}", kind, elements * (width or fsdp_grad_bytes(cfg))[group],
                group)


def has_replica_reduce(kind: str, group: str, dp_replicate: int) -> bool:
    """Whether a collective of ``kind`` over ``group`` is followed by HSDP's all-reduce over
    the replicas (:func:`replica_reduce`'s test, shared with the simulator's early return so
    the two cannot diverge)."""
    return kind == "reduce_scatter" and group == "dp_cp" and dp_replicate > 1


def replica_reduce(cfg: RunConfig, op: Comm) -> Comm | None:
    """Under HSDP (``parallel.dp_replicate`` > 1) a gradient reduce-scatter over one replica's
    sharding group is followed by the all-reduce of its shard over the replicas (FSDP's
    HYBRID_SHARD, FSDP2's 2-D mesh): that all-reduce, else None."""
    if not has_replica_reduce(op.kind, op.group, cfg.parallel.dp_replicate):
        return None
    return Comm(f"{op.name}_replicas", "all_reduce", op.bytes / cfg.shard_ranks, "dp_rep")


def blocking_gathers(cfg: RunConfig, pricer: Pricer, chunks: dict[int, Chunk],
                     side_s: list[float]) -> dict[int, tuple[Priced, Priced]]:
    """(forward, backward) pass of each virtual stage under per-tensor ZeRO-3, each led by its
    gathers: every gather waits for the previous one and the module waits for all of them; a
    recomputed layer gathers its tensors again for the recompute, and for its backward only
    those released after the recompute (``workload.sharding.ZERO3_MAX_REUSE_DISTANCE``).
    The reduce bucket's copies (``zero3_reduce_bucket_ops``) end the backward, on the compute
    stream; its divides are added to ``side_s`` (per stage, per micro-batch): they run ahead of
    the reduce-scatters, which the next gather's ``torch.cuda.synchronize()`` waits for."""
    pp, vpp = cfg.parallel.pp, cfg.parallel.vpp
    out: dict[int, tuple[Priced, Priced]] = {}
    ranges = cfg.virtual_stage_layers()
    recomputed = cfg.recomputed_layers
    for v, layers in enumerate(ranges):
        first, last = v == 0, v == len(ranges) - 1
        fwd = pricer.price(zero3_tensor_gathers(cfg, layers, first, last))
        again = [i for i in layers if i in recomputed]
        plain = [i for i in layers if i not in recomputed]
        redo = pricer.price(zero3_tensor_gathers(cfg, again, False, False))
        # after a recompute the layer's last tensors are still gathered for its backward
        back = pricer.price(zero3_tensor_gathers(cfg, plain, first, last)
                            + zero3_tensor_gathers(cfg, again, False, False, True))
        # the copy into the bucket runs in the gradient's autograd hook, on the compute stream
        # (``reduce_independent_p_g_buckets_and_remove_grads``: no stream context); only
        # ``average_tensor``'s divide runs on the reduction stream
        bucket = zero3_reduce_bucket_ops(cfg, layers, first, last)
        copy = pricer.price([op for op in bucket if op.name == "zero3_grad_to_bucket"])
        side_s[v % pp] += pricer.price(
            [op for op in bucket if op.name != "zero3_grad_to_bucket"]).duration_s / vpp
        out[v] = (fwd + chunks[v].fwd, back + redo + chunks[v].bwd + copy)
    return out
