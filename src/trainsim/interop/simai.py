"""SimAI workload files (``.txt``) for SimAI's analytical and NS-3 backends.

The format is what aicb writes and SimAI's ``Workload::initialize_workload`` reads
(``aliyun/SimAI``, ``astra-sim-alibabacloud/astra-sim/workload/Workload.cc``; example files
in ``example/workload_*.txt``):

* line 1: ``HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: <tp> ep: <ep> pp: <pp>
  vpp: <vpp> ga: <micro-batches> all_gpus: <gpus> checkpoints: 0 checkpoint_initiates: 0
  pp_comm: <bytes>`` (``pp_comm`` is the activation a stage sends per micro-batch, 0 without
  pipeline parallelism);
* line 2: the number of rows;
* one row per layer piece, whitespace separated: ``name -1 fwd_compute fwd_comm_type
  fwd_comm_size ig_compute ig_comm_type ig_comm_size wg_compute wg_comm_type wg_comm_size
  wg_update``. Compute times are SimAI ticks (nanoseconds); sizes bytes; comm types
  ``NONE``, ``ALLREDUCE``, ``ALLGATHER``, ``REDUCESCATTER``, ``ALLTOALL`` with an optional
  ``_EP``/``_DP_EP`` suffix picking the group (no suffix: TP for forward and input-gradient
  collectives, DP for weight-gradient ones).

SimAI runs rows forward in order (compute, then the row's collective, blocking) and backward
in reverse order (input-gradient compute and collective, then weight-gradient ones). So each
trainsim layer (its priced op list, as the simulator prices it) is cut into rows at its
blocking collectives: forward pieces fill rows front to back, backward pieces back to front,
and SimAI's traversal replays both in trainsim's order. What SimAI has no notion of is kept
as time: collectives trainsim overlaps with compute contribute their exposed part to the
compute before them, and context-parallel ring exchanges their exposed time. Data-parallel
gradient reduction and the parameter all-gather are the first rows (their weight-gradient
collective, which SimAI issues after the whole backward), as aicb writes them; the optimizer
step is their input-gradient compute. One representative rank of the first pipeline stage is
written (SimAI replicates it over stages and adds ``pp_comm`` sends). Where every micro-batch's
backward reduce-scatters its buckets (Megatron-LLaMA's overlapped optimizer), those are rows of
each micro-batch instead (``_every_backward_rows``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from trainsim.config import RunConfig
from trainsim.config.hybrid import layer_kind
from trainsim.config.safe_load import write_output
from trainsim.errors import ConfigError
from trainsim.limits import EXPORT_FLAG, check, check_simulation
from trainsim.memory import stage_param_split
from trainsim.simulator import LayerSource, Pricer
from trainsim.workload.ddp_buckets import bucket_ready, ddp_buckets
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Comm, Op
from trainsim.workload.optimizer_impl import run_optimizer_step
from trainsim.workload.pipeline_schedules import rank_chunks
from trainsim.workload.recompute import layer_recompute, recompute_drops_fp8
from trainsim.workload.shard import shard_of
from trainsim.workload.sharding import (
    bucket_copy_in,
    ddp_bucket_prep,
    dp_bucket_count,
    fsdp_per_unit,
    grad_buffer_rest,
    reduces_every_microbatch,
)

KINDS = {"all_reduce": "ALLREDUCE", "all_gather": "ALLGATHER", "reduce_scatter": "REDUCESCATTER",
         "all_to_all": "ALLTOALL"}
GROUP_SUFFIX = {"tp": "", "ep": "_EP", "etp": "", "edp": "_DP_EP", "dp": "", "dp_cp": ""}


@dataclass(frozen=True)
class Row:
    name: str
    fwd: tuple[float, str, int] = (0.0, "NONE", 0)
    ig: tuple[float, str, int] = (0.0, "NONE", 0)
    wg: tuple[float, str, int] = (0.0, "NONE", 0)

    def line(self) -> str:
        def ns(t: float) -> int:
            return max(1, round(t * 1e9))  # SimAI waits whole ticks; aicb writes 1 for "none"
        f, i, w = self.fwd, self.ig, self.wg
        return "\t".join(str(x) for x in (
            self.name, -1, ns(f[0]), f[1], f[2], ns(i[0]), i[1], i[2], ns(w[0]), w[1], w[2], 100))


def _pieces(ops: list[Op], pricer: Pricer) -> list[tuple[float, str, int]]:
    """(compute seconds, collective, bytes) pieces of a priced op list, cut at the blocking
    collectives SimAI can run."""
    priced = pricer.price(ops)
    comms = {op.name: op for op in ops if isinstance(op, Comm)}
    out: list[tuple[float, str, int]] = []
    compute = 0.0
    for cat, dur, name in priced.segments:
        op = comms.get(name)
        full = pricer.comm_time(op) if op is not None else 0.0
        blocking = op is not None and op.kind in KINDS and op.group in GROUP_SUFFIX \
            and dur >= full * (1 - 1e-12)
        if not blocking:
            compute += dur  # compute, or the exposed part of what SimAI cannot express
            continue
        kind = KINDS[op.kind] + GROUP_SUFFIX[op.group]  # type: ignore[union-attr]
        out.append((compute, kind, round(op.bytes)))  # type: ignore[union-attr]
        compute = 0.0
    if compute or not out:
        out.append((compute, "NONE", 0))
    return out


def _rows(name: str, fwd: list[tuple[float, str, int]], bwd: list[tuple[float, str, int]]
          ) -> list[Row]:
    n = max(len(fwd), len(bwd))
    none = (0.0, "NONE", 0)
    return [Row(f"{name}_{i}" if n > 1 else name, fwd[i] if i < len(fwd) else none,
                bwd[n - 1 - i] if n - 1 - i < len(bwd) else none) for i in range(n)]


def simai_rows(cfg: RunConfig, layer_source: LayerSource | None = None) -> list[Row]:
    """The rows of one iteration of the first pipeline stage's representative rank."""
    check_simulation(cfg, what=" (SimAI lists every micro-batch)", flag=EXPORT_FLAG)
    if cfg.parallel.dp_replicate > 1:  # its DP collectives span the whole data-parallel group
        raise ConfigError(f"parallel.dp_replicate={cfg.parallel.dp_replicate}: SimAI's workload "
                          "format has no second data-parallel group for HSDP's replica "
                          "all-reduce; export with dp_replicate=1")
    pricer = Pricer(cfg)
    sh = shard_of(cfg)
    p, m = cfg.parallel, cfg.model
    source = layer_source or (lambda c, s, moe: layer_forward(c, s, moe=moe))
    rows: list[Row] = []
    # data-parallel gradient reduction / parameter gather and the optimizer step
    dense, experts = stage_param_split(cfg, 0)
    zero = p.effective_zero_stage
    grad_bytes = 4 if cfg.training.grad_reduce_in_fp32 else 2
    local = 0.0
    groups = ((dense, "dp_cp", cfg.shard_ranks, ""),
              (experts, "edp", cfg.edp if m.is_moe else 1, "_DP_EP"))
    every = reduces_every_microbatch(cfg, False)  # each micro-batch's rows reduce (below)
    # ZeRO-3 / FSDP: the graph's own gathers and reductions (``_sharded_rows``)
    sharded = _sharded_rows(cfg, layer_source) if fsdp_per_unit(cfg, zero) else None
    for params, group, size, suffix in groups:
        if params <= 0:
            continue
        local += params / (size if zero >= 1 else 1)
        if size <= 1 or sharded is not None:
            continue
        if zero == 0:
            rows.append(Row(f"grad_allreduce{suffix.lower()}",
                            wg=(0.0, "ALLREDUCE" + suffix, int(params * grad_bytes))))
        else:
            if not every:
                rows.append(Row(f"grad_param_comm{suffix.lower()}",
                                wg=(0.0, "REDUCESCATTER" + suffix, int(params * grad_bytes))))
            rows.append(Row(f"grad_gather{suffix.lower()}",
                            wg=(0.0, "ALLGATHER" + suffix, int(params * 2))))
    step = run_optimizer_step(cfg, local)
    step_s = pricer.compute.time(step)
    if p.data_parallel_impl == "megatron":  # Megatron's DDP outside the layers: each bucket's
        # NaN check and scaling (one bucket without the overlap, as the simulator has it) and
        # the rest of the buffer zeroed, where the optimizer's shard leaves any
        params = dense + experts
        ranges = cfg.virtual_stage_layers()
        # one buffer per model chunk (DDP wraps each chunk), each bucketed on its own; only
        # the first chunk under ``dp_buckets: first_chunk`` (see ParallelConfig)
        n = sum(1 if p.dp_buckets == "first_chunk" and v else
                ddp_buckets(cfg, ranges[v], v == 0, v == len(ranges) - 1)
                for v in range(0, len(ranges), p.pp)) if p.overlap_grad_reduce else 1
        step_s += n * pricer.price(ddp_bucket_prep(cfg, params / max(1, n))).duration_s
        rest = grad_buffer_rest(cfg, params, local, grad_bytes)
        if rest is not None:
            step_s += pricer.compute.time(rest)
    rows.append(Row("optimizer", ig=(step_s, "NONE", 0)))
    # one micro-batch: embedding, the stage's layers, the head when it is on this stage
    mb: list[Row] = _every_backward_rows(cfg, pricer, groups, grad_bytes) if every else []
    if sharded is not None:
        rows = sharded[0] + rows
        mb = sharded[1]
    emb_f, emb_b = embedding_forward(cfg, sh), embedding_backward(cfg, sh)
    mb += _rows("embedding", _pieces(emb_f, pricer), _pieces(emb_b, pricer))
    cache: dict[tuple[bool | str, bool, bool], tuple[list, list]] = {}
    # a layer kept in 16 bits under fp8 (RunConfig.bf16_layers): its ops in bf16, priced by the
    # run's pricer, as the simulator's chunks price it; so a recomputed layer's recompute and
    # backward where they run in 16 bits (workload.recompute.recompute_drops_fp8)
    drops = recompute_drops_fp8(cfg)
    c16 = replace(cfg, training=replace(cfg.training, dtype="bf16"))
    sh16 = shard_of(c16) if cfg.bf16_layers or drops else sh
    ranges = cfg.virtual_stage_layers()
    chunks = rank_chunks(p.pipeline_schedule, 0, p.pp, p.vpp)
    # every chunk the rank holds (export59: the first only, a vpp-th of an interleaved rank's
    # layers; SimAI reads ``vpp`` from the header and replicates nothing by it)
    for i in (i for v in chunks for i in ranges[v]):
        key = (layer_kind(m, i), i in cfg.recomputed_layers, i in cfg.bf16_layers)
        if key not in cache:
            c, s = (c16, sh16) if key[2] else (cfg, sh)
            f = source(c, s, key[0])
            if key[1] and drops and not key[2]:
                f16 = source(c16, sh16, key[0])
                back = layer_recompute(cfg, sh16, f16) + backward_of(f16, sh16)
            else:
                back = layer_recompute(c, s, f, whole=key[1]) + backward_of(f, s)
            cache[key] = (_pieces(f, pricer), _pieces(back, pricer))
        mb += _rows(f"layer{i}", *cache[key])
    if len(ranges) - 1 in chunks:  # the output layer's chunk (DualPipe's rank 0 holds it too)
        hf = head_forward(cfg, sh)
        mb += _rows("head", _pieces(hf, pricer), _pieces(head_backward(cfg, sh, hf), pricer))
    # DualPipe feeds m/2 micro-batches from each end: each of a rank's two chunks runs half
    # of them (``pipeline_schedules.dualpipe``), so the rows of both run m/2 times
    repeats = cfg.num_microbatches // (2 if len(chunks) == 2 and p.pipeline_schedule ==
                                       "dualpipe" else 1)
    check("TRAINSIM_MAX_TASKS", len(rows) + len(mb) * repeats,
          "SimAI workload rows (every micro-batch's, each a task's worth)", EXPORT_FLAG,
          f"{repeats:,} micro-batches x {len(mb):,} rows")
    return rows + mb * repeats


def _every_backward_rows(cfg: RunConfig, pricer: Pricer,
                         groups: tuple[tuple[float, str, int, str], ...],
                         grad_bytes: int) -> list[Row]:
    """Where every micro-batch's backward reduce-scatters its gradient buckets
    (``workload.sharding.reduces_every_microbatch``: Megatron-LLaMA's overlapped optimizer),
    one row per bucket and data-parallel group in each micro-batch's rows, as the simulator
    runs them (``last_backward._bucket_reductions``): the bucket's copy-in as the row's
    weight-gradient compute, its reduce-scatter as the row's weight-gradient collective. Put
    before the embedding, last bucket first, so that SimAI's backward (rows in reverse)
    reaches them after the micro-batch's layers, first bucket first."""
    p = cfg.parallel
    ranges = cfg.virtual_stage_layers()
    out: list[Row] = []
    for chunk, v in enumerate(rank_chunks(p.pipeline_schedule, 0, p.pp, p.vpp)):
        n = dp_bucket_count(cfg, len(ranges[v]), sum(g[0] for g in groups) / p.vpp, 0, chunk)
        shares = ((1.0, 1.0),) if n == 1 else \
            bucket_ready(cfg, ranges[v], v == 0, v == len(ranges) - 1)[1]
        for k, share in enumerate(shares):
            for params, group, size, suffix in groups:
                part = params / p.vpp * share[group == "edp"]
                if size <= 1 or part <= 0:
                    continue
                copy = bucket_copy_in(cfg, part)
                out.append(Row(f"grad_reduce_c{chunk}_b{k}{suffix.lower()}",
                               wg=(pricer.compute.time(copy) if copy is not None else 0.0,
                                   "REDUCESCATTER" + suffix, int(part * grad_bytes))))
    return out[::-1]


def _sharded_rows(cfg: RunConfig, layer_source: LayerSource | None
                  ) -> tuple[list[Row], list[Row]]:
    """(leading rows, rows of each micro-batch) of a run that gathers its parameters and
    reduce-scatters its gradients unit by unit (ZeRO-3 / FSDP: ``fsdp_per_unit``): the first
    stage's data-parallel collectives as its simulated task graph issues them
    (``interop.chakra_audit.first_stage_collectives``: each FSDP unit's all-gathers for the
    forward and again for the backward, the reduce-scatters after every backward, each as often
    as the engine runs it; until export59 one gather and one reduction a step, a micro-batch's
    worth of one pass), a row each, the collective as its weight-gradient one (SimAI's data-
    parallel group). A collective the graph issues c times is c // m times in each micro-batch's
    rows (ahead of the embedding: SimAI's backward reaches them after the micro-batch's layers)
    and c % m times in the leading rows (a gather once a step: torchtitan's pipelined units)."""
    from trainsim.interop.chakra_audit import first_stage_collectives

    m = cfg.num_microbatches
    seen: dict[tuple[str, str, float], list] = {}
    for _, op, _, n in first_stage_collectives(cfg, layer_source)[1]:
        suffix = {"dp": "", "dp_cp": "", "edp": "_DP_EP"}.get(op.group)
        if suffix is not None and op.kind in KINDS:
            seen.setdefault((op.kind, op.group, op.bytes), [op.name, suffix, 0])[2] += n
    total = sum(count for _, _, count in seen.values())
    check("TRAINSIM_MAX_TASKS", total, "SimAI rows of the data-parallel collectives (each a "
          "task's worth)", EXPORT_FLAG, f"{total:,} collectives (fixed-size buckets each one)")
    lead: list[Row] = []
    each: list[Row] = []
    for (kind, _, size), (name, suffix, count) in seen.items():
        row = Row(f"{name}{suffix.lower()}", wg=(0.0, KINDS[kind] + suffix, round(size)))
        each += [row] * (count // m)
        lead += [row] * (count % m)
    fwd_s, bwd_s = _sharded_compute(cfg, layer_source)
    if fwd_s > 0 or bwd_s > 0:  # a row of its own in each micro-batch, a step's m-th
        each.append(Row("fsdp_unit_copies", fwd=(fwd_s / m, "NONE", 0),
                        ig=(bwd_s / m, "NONE", 0)))
    return lead, each[::-1]


def _sharded_compute(cfg: RunConfig, layer_source: LayerSource | None) -> tuple[float, float]:
    """(forward, backward) seconds of one step that the first stage's passes compute for
    their FSDP units beside the layers' own work, as the simulated task graph prices them
    (``sharded_passes.unit_gather_passes``: FSDP2's all-gather copy-out and reduce-scatter
    copy-in, FSDP1's gradient flattening, Megatron-FSDP's gradient copies, the no-sync
    accumulation): the pass tasks' compute and host segments that are not the chunks'. Until
    export61 the SimAI rows (the layers' op lists) had none of it: 2.16 of 55.7 ms a step under
    torchtitan's FSDP2 (4 micro-batches), 6.35 of 54.6 ms under Megatron-FSDP
    (benchmarks/export61_pairs.py ``--simai``)."""
    from trainsim.simulator import build_graph

    graph = build_graph(cfg, Pricer(cfg), layer_source)
    lone = getattr(graph, "lone", None)  # the combined 1F1B's passes priced alone
    chunks = [*graph.chunks.values(), *(lone.chunks.values() if lone is not None else ())]
    own = {id(seg) for ch in chunks for seg in ch.fwd.segments + ch.bwd.segments}
    out = [0.0, 0.0]
    for t in graph.tasks:
        if t.stream != (0, "compute") or t.detail is None:
            continue
        extra = sum(seg[1] for seg in t.detail.segments  # type: ignore[attr-defined]
                    if seg[0] in ("compute", "host") and id(seg) not in own)
        out[not t.label.startswith("F ")] += extra
    return out[0], out[1]


def header(cfg: RunConfig) -> str:
    p = cfg.parallel
    sh = shard_of(cfg)
    pp_comm = int(sh.tokens * cfg.model.hidden_size * 2 / p.tp) if p.pp > 1 else 0
    return (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {p.tp} ep: {p.ep} "
            f"pp: {p.pp} vpp: {p.vpp} ga: {cfg.num_microbatches} all_gpus: "
            f"{cfg.cluster.num_gpus} checkpoints: 0 checkpoint_initiates: 0 pp_comm: {pp_comm}")


def write_simai(cfg: RunConfig, path: str | Path, layer_source: LayerSource | None = None
                ) -> int:
    """Write the SimAI workload of ``cfg``; returns the number of rows. Warns
    (``simai_limits.SimAIApproximation``) with one line for each thing of the simulated run
    the file cannot state (export60)."""
    from trainsim.interop.simai_limits import SimAIApproximation, simai_limits

    rows = simai_rows(cfg, layer_source)
    write_output(path, "\n".join([header(cfg), str(len(rows))] + [r.line() for r in rows])
                          + "\n")
    for line in simai_limits(cfg, layer_source, rows):
        warnings.warn(line, SimAIApproximation, stacklevel=2)
    return len(rows)


def read_simai(path: str | Path) -> tuple[dict[str, int], list[Row]]:
    """(header fields, rows) of a SimAI workload file (times back in seconds)."""
    lines = Path(path).read_text().split("\n")
    tokens = lines[0].split()
    head = {tokens[i].rstrip(":"): int(tokens[i + 1]) for i in range(1, len(tokens) - 1)
            if tokens[i].endswith(":") and tokens[i + 1].lstrip("-").isdigit()}
    n = int(lines[1])
    rows = []
    for line in lines[2:2 + n]:
        f = line.split()
        rows.append(Row(f[0], (int(f[2]) * 1e-9, f[3], int(f[4])),
                        (int(f[5]) * 1e-9, f[6], int(f[7])), (int(f[8]) * 1e-9, f[9], int(f[10]))))
    return head, rows
