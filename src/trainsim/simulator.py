"""simulate(config) -> Result: build the workload, price it, run the event loop, add memory.

One representative rank per pipeline stage is simulated: ranks of the same stage (their TP,
CP and DP peers) do the same work at the same time, so their collectives are priced for the
whole group and the stage's timeline stands for all of them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import compute_model_for
from trainsim.config import RunConfig
from trainsim.engine import Task, Timeline, run
from trainsim.memory import estimate_stage_memory, stage_param_split, stage_params
from trainsim.model.counts import hardware_flops_per_iteration, model_flops_per_token
from trainsim.network import network_for
from trainsim.result import Result
from trainsim.workload.layers import (
    Shard,
    backward_of,
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
    layer_forward,
    layer_recompute,
    shard_of,
)
from trainsim.workload.ops import Comm, Gemm, Op
from trainsim.workload.schedule import schedule

COMPUTE, TP, CP, EP, PP, DP, OPT = ("compute", "tp_comm", "cp_comm", "ep_comm", "pp_comm",
                                     "dp_comm", "optimizer")
OPTIMIZER_BYTES_PER_PARAM = 4 + 8 + (4 + 3 * 8) + (4 + 2) + 4
"""Megatron's optimizer step, bytes per local parameter: gradient-norm read of the fp32 main
gradient (4), clipping scale in place (8), fused Adam reading the gradient and reading/writing
the fp32 master weight and both moments (4 + 24), copying master weights to the 16-bit model
weights (4 + 2) and zeroing the gradient buffer (4). Memory-bound multi-tensor kernels."""


@dataclass(frozen=True)
class Priced:
    """An op list priced into an ordered list of (category, seconds, name) segments."""

    segments: tuple[tuple[str, float, str], ...]

    @functools.cached_property
    def duration_s(self) -> float:
        return sum(s[1] for s in self.segments)

    def __add__(self, other: Priced) -> Priced:
        return Priced(self.segments + other.segments)

    def __mul__(self, n: int) -> Priced:
        return Priced(self.segments * n)

    @functools.cached_property
    def summary(self) -> tuple[tuple[str, float], ...]:
        out: dict[str, float] = {}
        for cat, dur, _ in self.segments:
            out[cat] = out.get(cat, 0.0) + dur
        return tuple(out.items())


class Pricer:
    """Prices ops on the configured compute model and network."""

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.compute = compute_model_for(cfg.cluster.gpu, cfg.cluster.compute_db, catalog_gpu)
        self.net = network_for(cfg.cluster)
        p = cfg.parallel
        self.spans = {
            "tp": self.net.span(p.tp, 1),
            "cp": self.net.span(p.cp, p.tp),
            "dp": self.net.span(cfg.dp, p.tp * p.cp),
            "dp_cp": self.net.span(cfg.dp * p.cp, p.tp),
            "pp": self.net.span(2, p.tp * p.cp * cfg.dp),
            "embd": self.net.span(2, p.tp * p.cp * cfg.dp * max(p.pp - 1, 1)),
            # Megatron-core's expert rank order: etp-ep-edp-pp
            "ep": self.net.span(p.ep, p.etp),
            "etp": self.net.span(p.etp, 1),
            "edp": self.net.span(cfg.edp, p.etp * p.ep),
        }

    def comm_time(self, op: Comm) -> float:
        return self.net.collective(op.kind, op.bytes, self.spans[op.group]).time_s

    def price(self, ops: list[Op]) -> Priced:
        """Segments of an op list. Communication runs blocking, except: ``overlap_with_previous``
        (and TP comm under tp_comm_overlap) hides behind the preceding compute op; with
        moe_overlap_ep_comm, expert all-to-alls hide behind the list's whole compute, as when
        one micro-batch's dispatch runs under another's attention and MLP (DeepSeek-V3's
        DualPipe, Megatron-core's overlapped 1F1B)."""
        segs: list[tuple[str, float, str]] = []
        p = self.cfg.parallel
        pooled: list[tuple[str, float, str]] = []
        for op in ops:
            if isinstance(op, Comm):
                t = self.comm_time(op)
                cat = {"tp": TP, "cp": CP, "pp": PP, "ep": EP, "etp": EP}.get(op.group, DP)
                if p.moe_overlap_ep_comm and op.group in ("ep", "etp"):
                    pooled.append((cat, t, op.name))
                    continue
                if (op.overlap_with_previous or (p.tp_comm_overlap and op.group == "tp")) and segs:
                    hidden = segs[-1][1] if segs[-1][0] == COMPUTE else 0.0
                    t = max(0.0, t - hidden)
                segs.append((cat, t, op.name))
            else:
                segs.append((COMPUTE, self.compute.time(op), op.name))
        if pooled:
            budget = sum(t for cat, t, _ in segs if cat == COMPUTE)
            for cat, t, name in pooled:
                segs.append((cat, max(0.0, t - budget), name))
                budget = max(0.0, budget - t)
        return Priced(tuple(segs))


@dataclass(eq=False)
class _Chunk:
    """Priced forward and backward of one model chunk (virtual pipeline stage)."""

    fwd: Priced
    bwd_head: Priced  # head backward (last virtual stage only; empty otherwise)
    bwd_layers: tuple[Priced, ...]  # recompute + backward of each layer, in backward order
    bwd_tail: Priced  # embedding backward (first virtual stage only)

    @property
    def layers(self) -> int:
        return len(self.bwd_layers)

    @functools.cached_property
    def bwd(self) -> Priced:
        return _concat((self.bwd_head, *self.bwd_layers, self.bwd_tail))


def _concat(parts: tuple[Priced, ...] | list[Priced]) -> Priced:
    return Priced(tuple(seg for part in parts for seg in part.segments))


LayerSource = Callable[[RunConfig, Shard, bool], list[Op]]
"""Builds one layer's forward ops for (config, shard, is_moe); the analytical builder is
``workload.layers.layer_forward``; ``trainsim capture`` supplies ops recorded from PyTorch."""


def _chunks(cfg: RunConfig, pricer: Pricer, sh: Shard,
            layer_source: LayerSource | None = None) -> dict[int, _Chunk]:
    """Priced chunks by virtual stage index v = chunk * pp + stage."""
    m = cfg.model
    source = layer_source or (lambda c, s, moe: layer_forward(c, s, moe=moe))
    layer_f: dict[bool, Priced] = {}
    layer_b: dict[bool, Priced] = {}
    for moe in {m.is_moe_layer(i) for i in range(m.num_layers)}:
        lf = source(cfg, sh, moe)
        layer_f[moe] = pricer.price(lf)
        layer_b[moe] = pricer.price(layer_recompute(cfg, sh, lf) + backward_of(lf, sh))
    hf = head_forward(cfg, sh)
    head_f, head_b = pricer.price(hf), pricer.price(head_backward(cfg, sh, hf))
    if m.mtp_num_layers:  # DeepSeek-V3 MTP: per module a 2h->h projection, a layer and a head
        last_moe = m.is_moe_layer(m.num_layers - 1)
        proj = [Gemm("mtp_proj", sh.tokens, m.hidden_size, 2 * m.hidden_size, sh.dtype)]
        mtp_f = pricer.price(proj) + layer_f[last_moe] + head_f
        mtp_b = head_b + layer_b[last_moe] + pricer.price(backward_of(proj, sh))
        head_f = head_f + mtp_f * m.mtp_num_layers
        head_b = mtp_b * m.mtp_num_layers + head_b
    emb_f, emb_b = pricer.price(embedding_forward(cfg, sh)), pricer.price(embedding_backward(cfg, sh))
    empty = Priced(())
    ranges = cfg.virtual_stage_layers()
    out = {}
    for v, layers in enumerate(ranges):
        first, last = v == 0, v == len(ranges) - 1
        kinds = [m.is_moe_layer(i) for i in layers]
        fwd = _concat([emb_f if first else empty] + [layer_f[k] for k in kinds]
                      + [head_f if last else empty])
        out[v] = _Chunk(fwd, head_b if last else empty,
                        tuple(layer_b[k] for k in reversed(kinds)), emb_b if first else empty)
    return out


def _bucket_params(cfg: RunConfig) -> float:
    """Megatron DDP bucket size: max(40M, 1M * dp) parameters unless configured."""
    return cfg.parallel.ddp_bucket_size or max(40_000_000, 1_000_000 * cfg.dp)


def build_tasks(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None = None
                ) -> tuple[list[Task], list[int]]:
    """The task graph of one iteration; returns tasks and the last task of each stage."""
    p, m = cfg.parallel, cfg.num_microbatches
    pp, vpp = p.pp, p.vpp
    sh = shard_of(cfg)
    chunks = _chunks(cfg, pricer, sh, layer_source)
    tasks: list[Task] = []

    def add(stream: tuple[int, str], priced: Priced | float, deps: list[int], label: str,
            cat: str = COMPUTE) -> int:
        if isinstance(priced, Priced):
            tasks.append(Task(stream, priced.duration_s, deps, label, priced.summary, priced))
        else:
            tasks.append(Task(stream, priced, deps, label, ((cat, priced),)))
        return len(tasks) - 1

    # Megatron's scatter-gather optimisation: each TP rank sends 1/tp of the activation.
    act_bytes = sh.tokens * cfg.model.hidden_size * 2 / p.tp
    p2p_time = pricer.comm_time(Comm("p2p", "send_recv", act_bytes, "pp"))
    send = Priced(((PP, p2p_time, "p2p send"),))
    plus_send: dict[int, Priced] = {}  # by id of a chunk's (long-lived) Priced pass

    def pass_and_send(s: int, work: Priced, deps: list[int], label: str, sends: bool) -> tuple[int, int]:
        """Add a pass; returns (pass task, task the receiver waits on). A blocking send
        (no overlap_p2p_comm) runs on the compute stream right after the pass, so it is folded
        into the same task."""
        if not sends:
            i = add((s, "compute"), work, deps, label)
            return i, i
        if p.overlap_p2p_comm:
            i = add((s, "compute"), work, deps, label)
            return i, add((s, "pp"), send, [i], f"send {label}")
        with_send = plus_send.get(id(work))
        if with_send is None:
            with_send = plus_send[id(work)] = work + send
        i = add((s, "compute"), with_send, deps, label)
        return i, i
    grad_bytes = 4 if cfg.training.grad_reduce_in_fp32 else 2
    zero = 1 if (p.distributed_optimizer and p.zero_stage == 0) else p.zero_stage
    dp_group = "dp_cp"
    dp_size = cfg.dp * p.cp
    bucket = _bucket_params(cfg)

    # Sends: (kind, microbatch, virtual stage) -> task id of the transfer out of that pass.
    sent: dict[tuple[str, int, int], int] = {}
    fwd_task: dict[tuple[int, int], int] = {}
    orders = [schedule(s, pp, vpp, m) for s in range(pp)]
    # Passes must be created in an order where every dependency already exists: walk the
    # per-stage orders round-robin until all are placed (a topological sort of the pipeline).
    cursor = [0] * pp
    last_bwd: dict[int, list[int]] = {}  # virtual stage -> bucket-ready task ids (last micro-batch)
    pending = sum(len(o) for o in orders)
    gather_deps: dict[tuple[int, int], int] = {}
    # ZeRO-3 / FSDP: every pass all-gathers its chunk's parameters first (prefetched on the
    # data-parallel stream) and every backward reduce-scatters the chunk's gradients.
    fsdp = zero >= 3 and dp_size > 1
    fsdp_gather = {s: pricer.comm_time(Comm("param_all_gather", "all_gather",
                                            stage_params(cfg, s) / vpp * 2, dp_group))
                   for s in range(pp)} if fsdp else {}
    fsdp_scatter = {s: pricer.comm_time(Comm("grad_reduce_scatter", "reduce_scatter",
                                             stage_params(cfg, s) / vpp * grad_bytes, dp_group))
                    for s in range(pp)} if fsdp else {}
    fsdp_reduce: dict[int, list[int]] = {s: [] for s in range(pp)}
    if zero in (1, 2) and p.overlap_param_gather and dp_size > 1:
        for s in range(pp):
            for c in range(vpp):
                params = stage_params(cfg, s) / vpp
                t = pricer.comm_time(Comm("param_all_gather", "all_gather", params * 2, dp_group))
                gather_deps[(s, c)] = add((s, "dp"), t, [], f"param all-gather chunk {c}", DP)
    while pending:
        progressed = False
        for s in range(pp):
            while cursor[s] < len(orders[s]):
                ps = orders[s][cursor[s]]
                v = ps.chunk * pp + s
                if ps.kind == "F":
                    src = ("F", ps.microbatch, v - 1)
                    if v > 0 and src not in sent:
                        break
                    deps = [sent[src]] if v > 0 else []
                    if ps.microbatch == 0 and (s, ps.chunk) in gather_deps:
                        deps.append(gather_deps[(s, ps.chunk)])
                    if fsdp:
                        deps.append(add((s, "dp"), fsdp_gather[s], [],
                                        f"ZeRO-3 param all-gather F mb{ps.microbatch}", DP))
                    i, out = pass_and_send(s, chunks[v].fwd, deps,
                                           f"F mb{ps.microbatch} c{ps.chunk}", v < pp * vpp - 1)
                    fwd_task[(ps.microbatch, v)] = i
                    sent[("F", ps.microbatch, v)] = out
                else:
                    src = ("B", ps.microbatch, v + 1)
                    if v < pp * vpp - 1 and src not in sent:
                        break
                    deps = [fwd_task[(ps.microbatch, v)]]
                    if v < pp * vpp - 1:
                        deps.append(sent[src])
                    if fsdp:
                        deps.append(add((s, "dp"), fsdp_gather[s], [],
                                        f"ZeRO-3 param all-gather B mb{ps.microbatch}", DP))
                    ch = chunks[v]
                    if ps.microbatch == m - 1 and (dp_size > 1 or cfg.edp > 1) and zero < 3:
                        i = _split_last_backward(add, s, ch, deps, ps.chunk, bucket,
                                                 stage_params(cfg, s) / vpp, last_bwd, v)
                        out = i
                        if v > 0:
                            out = add((s, "pp" if p.overlap_p2p_comm else "compute"), send, [i],
                                      f"send grad mb{ps.microbatch}")
                    else:
                        i, out = pass_and_send(s, ch.bwd, deps,
                                               f"B mb{ps.microbatch} c{ps.chunk}", v > 0)
                    if fsdp:  # gradients reduce-scattered after every backward pass
                        fsdp_reduce[s].append(add((s, "dp"), fsdp_scatter[s], [i],
                                                  f"ZeRO-3 grad reduce-scatter mb{ps.microbatch}", DP))
                    sent[("B", ps.microbatch, v)] = out
                cursor[s] += 1
                pending -= 1
                progressed = True
        if not progressed:  # pragma: no cover - schedules are deadlock-free by construction
            raise RuntimeError("pipeline schedule has a cycle")

    # Data-parallel gradient reduction, optimizer step, parameter all-gather.
    last_on_compute = {}
    for i, t in enumerate(tasks):
        if t.stream[1] == "compute":
            last_on_compute[t.stream[0]] = i
    ends = []
    edp = cfg.edp if cfg.model.is_moe else 1
    for s in range(pp):
        dense, experts = stage_param_split(cfg, s)
        # (params, group, group size): non-expert parameters reduce over data-parallel (with
        # CP) ranks, routed experts over their expert-data-parallel group
        groups = [(dense, dp_group, dp_size), (experts, "edp", edp)]
        last_compute = last_on_compute[s]
        dp_tasks: list[int] = list(fsdp_reduce[s])
        kind = "all_reduce" if zero == 0 else "reduce_scatter"
        for c in range(vpp if not fsdp else 0):
            v = c * pp + s
            ready = last_bwd.get(v, [last_compute])
            for k, r in enumerate(ready):
                dep = r if p.overlap_grad_reduce else last_compute
                for params, group, size in groups:
                    if size > 1 and params > 0:
                        t = pricer.comm_time(Comm("grad_reduce", kind,
                                                  params / vpp / len(ready) * grad_bytes, group))
                        dp_tasks.append(add((s, "dp"), t, [dep], f"grad {kind} {group} c{c} b{k}", DP))
        if cfg.model.tied_embeddings and pp > 1 and s in (0, pp - 1):
            size = cfg.model.vocab_size * cfg.model.hidden_size / p.tp * grad_bytes
            t = pricer.comm_time(Comm("embedding_grad", "all_reduce", size, "embd"))
            dp_tasks.append(add((s, "dp"), t, [last_compute], "tied embedding all-reduce", DP))
        local = sum(params / (size if zero >= 1 else 1) for params, _, size in groups)
        opt_t = local * OPTIMIZER_BYTES_PER_PARAM / (cfg.cluster.gpu.hbm_bw_Bps * 0.85) + 20e-6
        end = add((s, "compute"), opt_t, [last_compute] + dp_tasks, "optimizer step", OPT)
        if zero in (1, 2) and not p.overlap_param_gather:
            for params, group, size in groups:
                if size > 1 and params > 0:
                    t = pricer.comm_time(Comm("param_all_gather", "all_gather", params * 2, group))
                    end = add((s, "dp"), t, [end], f"param all-gather {group}", DP)
        ends.append(end)
    return tasks, ends


def _split_last_backward(add, s: int, ch: _Chunk, deps: list[int], chunk: int, bucket: float,
                         chunk_params: float, last_bwd: dict[int, list[int]], v: int) -> int:
    """The last micro-batch's backward, split where gradient buckets become ready."""
    n_buckets = max(1, min(ch.layers, math.ceil(chunk_params / bucket)))
    per = ch.layers / n_buckets
    bounds = [round(per * k) for k in range(n_buckets + 1)]
    ids = []
    for k in range(n_buckets):
        parts = list(ch.bwd_layers[bounds[k]:bounds[k + 1]])
        if k == 0:
            parts.insert(0, ch.bwd_head)
        if k == n_buckets - 1:
            parts.append(ch.bwd_tail)
        ids.append(add((s, "compute"), _concat(parts), list(deps) if k == 0 else [ids[-1]],
                       f"B last c{chunk} part{k}"))
    last_bwd[v] = ids
    return ids[-1]


def _breakdown(cfg: RunConfig, tl: Timeline, stage: int, end_task: int,
               iteration_s: float) -> tuple[dict, dict]:
    """Attribute the iteration to one stage's timeline: busy categories on its compute stream,
    gaps by the reason it waited (pipeline bubble, or data-parallel communication), and the
    wait for slower stages after it finished (bubble too)."""
    cats = {COMPUTE: 0.0, TP: 0.0, CP: 0.0, EP: 0.0, PP: 0.0, DP: 0.0, OPT: 0.0}
    bubble = 0.0
    prev_end = 0.0
    tasks = tl.tasks
    for i, t in enumerate(tasks):
        if t.stream != (stage, "compute"):
            continue
        gap = tl.start_s[i] - prev_end
        if gap > 0:
            waited_on = max(t.deps, key=lambda d: tl.end_s[d], default=None)
            if waited_on is not None and tasks[waited_on].stream == (stage, "dp"):
                cats[DP] += gap
            else:
                bubble += gap
        for cat, dur in t.segments:
            cats[cat] = cats.get(cat, 0.0) + dur
        prev_end = tl.end_s[i]
    tail = tl.end_s[end_task] - prev_end  # exposed parameter all-gather after the step
    cats[DP] += max(0.0, tail)
    bubble += iteration_s - tl.end_s[end_task]
    total = iteration_s
    exposed = {"tp": cats[TP], "cp": cats[CP], "ep": cats[EP], "pp": cats[PP], "dp": cats[DP]}
    breakdown = {"compute_s": cats[COMPUTE], "exposed_comm_s": sum(exposed.values()),
                 "pipeline_bubble_s": bubble, "optimizer_s": cats[OPT]}
    breakdown["other_s"] = max(0.0, total - sum(breakdown.values()))
    return breakdown, exposed


def simulate(cfg: RunConfig, keep_timeline: bool = False,
             layer_source: LayerSource | None = None) -> Result:
    """Simulate one training iteration of ``cfg`` (``layer_source``: where each layer's forward
    ops come from; the analytical builder by default)."""
    pricer = Pricer(cfg)
    tasks, ends = build_tasks(cfg, pricer, layer_source)
    tl = run(tasks)
    iteration_s = max(tl.end_s[e] for e in ends)
    # The stage that bounds throughput: the most work on its compute stream (ties: the one
    # that finishes last, then the lowest index)
    busy = [0.0] * len(ends)
    for t in tl.tasks:
        if t.stream[1] == "compute":
            busy[t.stream[0]] += t.duration_s
    stage = max(range(len(ends)), key=lambda s: (round(busy[s], 12), tl.end_s[ends[s]], -s))
    breakdown, exposed = _breakdown(cfg, tl, stage, ends[stage], iteration_s)
    memory = [estimate_stage_memory(cfg, s) for s in range(cfg.parallel.pp)]
    tokens = cfg.tokens_per_iteration
    return Result(
        config=cfg,
        iteration_time_s=iteration_s,
        breakdown=breakdown,
        exposed_comm=exposed,
        memory=memory,
        model_flops=model_flops_per_token(cfg.model, cfg.training.seq_length) * tokens,
        hardware_flops=hardware_flops_per_iteration(cfg),
        critical_stage=stage,
        timeline=tl if keep_timeline else None,
        compute_sources=dict(sorted(pricer.compute.sources.items())),
    )


__all__ = ["LayerSource", "Pricer", "build_tasks", "simulate"]
