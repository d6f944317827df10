"""A named pipeline schedule placed in the event engine (``parallel.pipeline_schedule``).

Each rank's order (``workload.pipeline_schedules``) becomes tasks on its compute stream; a pass
waits for its input from the neighbouring virtual stage (a forward for the previous one's
output, a backward for the next one's input gradient), sent over the pipeline stream or on the
compute stream as Megatron's blocking p2p does. The engine times them: the bubble is what
falls out, not a formula.

A split backward (zero-bubble schedules, DualPipe) prices its two halves as two op lists, each
as it runs: the W pass holds the weight-gradient GEMMs (``*.wgrad``) and the accumulation of
their output into fp32 gradients; the I pass everything else (recompute, input-gradient GEMMs,
attention and elementwise backward, the embedding's scatter-add, and the collectives), as
Megatron's ``--delay-wgrad-compute`` and the zero-bubble code base defer only the linear layers'
weight gradients. Priced apart, a collective that hid behind a weight-gradient GEMM in the
whole backward (the input gradient's reduce-scatter, an overlapped all-to-all) is exposed in
the I pass unless other compute of that pass covers it.

DualPipe's overlapped forward & backward pair is one task: both passes' compute, with the
expert-parallel all-to-alls of each hidden behind compute (priced as ``moe_overlap_ep_comm``
prices them, each pass's all-to-alls behind its own compute), which is how DeepSeek-V3 §3.2.1
describes the pair hiding each other's communication. The exchange kernels hold their SMs
(DeepEP's 20 of the H800's 132, the report's §3.2.2 figure; ``pricing.Pricer.sm_share['ep']``)
only while an all-to-all runs: the compute beside it runs on the rest, the compute of the pair
that no all-to-all runs beside (the output head, the MTP module's head, the embedding, the
dense layers) on all of them (``pair_pricer``). Passes outside pairs keep the configured
pricing. Approximations: the pair's two halves run back to back on the compute stream
(DeepSeek splits them into finer chunks and interleaves attention, dispatch, MLP and combine),
and
DualPipe's second copy of the parameters adds no gradient traffic (its two copies' gradients
are summed by the data-parallel reduction, which trainsim prices once per rank).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from trainsim.catalog.framework_rules import sends_overlap
from trainsim.catalog.frameworks import profile_supports
from trainsim.chunks import chunks as priced_chunks
from trainsim.collectives.p2p_channels import batched_p2p_s
from trainsim.engine import Timeline
from trainsim.errors import ConfigError
from trainsim.last_backward import _around
from trainsim.pricing import Priced, Pricer, interned
from trainsim.workload.grad_accumulation import (
    FP32_ACCUMULATION,
    FP32_GRAD_ADD,
    GRAD16_ACCUMULATION,
)
from trainsim.workload.ops import Comm, Gemm, Op
from trainsim.workload.pipeline_schedules import (
    orders,
    rank_of,
    virtual_stage,
    zb_2p_settled_from,
    zb_w_fraction,
)
from trainsim.workload.schedule import Overlapped, Pass
from trainsim.workload.sharding import fsdp_pp_mode
from trainsim.workload.unshard_window import lowered, unshard_window

if TYPE_CHECKING:
    from trainsim.config import RunConfig
    from trainsim.simulator import _TaskGraph

WEIGHT_GRAD_ACCUMULATION = (FP32_ACCUMULATION, GRAD16_ACCUMULATION, FP32_GRAD_ADD)
"""The ops that add a backward's weight gradients into the accumulated ones (DeepSpeed's BF16
optimizer in fp32, autograd's ``AccumulateGrad`` in 16 bits, nanotron's fp32 ``add_``;
``workload.grad_accumulation.fp32_grad_accumulation``): they follow the weight gradients into the W
pass."""


def pipeline_send_s(cfg: RunConfig, pricer: Pricer, size_bytes: float) -> float:
    """Seconds of one pipeline send of ``size_bytes``: its slowest hop's.

    Stage s and s + 1 sit ``tp * cp * dp`` ranks apart (Megatron's rank order, tp innermost
    and pp outermost: megatron/core/parallel_state.py ``RankGenerator``). Where that stride is
    smaller than a node, most hops stay on NVLink but every hop that leaves a node goes over the
    NIC: on 8-GPU nodes with a stride of 1, the hops 7 -> 8, 15 -> 16, ... A pipeline moves in
    lock-step (each stage's next pass waits for its neighbour's send, and under Megatron's
    blocking exchange each send also waits for the receiver: ``_batched_p2p_ops`` then
    ``torch.cuda.synchronize``, megatron/core/pipeline_parallel/p2p_communication.py), so
    the slowest stage, the one sending over the NIC, paces all of them and every send is priced
    at that hop. A stride of a node or more puts every hop on the network already.

    Where the framework batches each exchange (``batched_p2p``: Megatron's
    ``_batched_p2p_ops``, ``torch.distributed.batch_isend_irecv`` on the pipeline group, unless
    ``overlap_p2p_comm`` sends each tensor alone) and the pipeline group sits in one node, NCCL
    spreads a send over only ``p2pnChannels / pp`` channels
    (``collectives.p2p_channels.batched_p2p_channels``): 4 channels of ``P2P_CHANNEL_Bps`` each for 8
    stages, 56 GB/s, where the links would carry 230. Across nodes the send is priced at the
    NIC's rate. NCCL up to 2.28 gives a network peer 2 channels (``collectives.nccl``, network
    peers; 4 on a 400 Gb/s NIC from 2.29); whether 2 reach such a NIC is not measured, and
    capping them at 2 x ``P2P_CHANNEL_Bps`` made the held-out CP rows worse (RESULTS.md)."""
    t = pricer.comm_time(Comm("p2p", "send_recv", size_bytes, "pp"))
    p = cfg.parallel
    stride, gpn = p.tp * p.cp * cfg.dp, cfg.cluster.gpus_per_domain
    if p.pp > 1 and stride < gpn and pricer.net.span(p.pp, stride).nodes > 1:
        across = pricer.net.collective("send_recv", size_bytes, pricer.net.span(2, gpn))
        t = max(t, across.time_s)
    elif (p.pp > 1 and not sends_overlap(cfg) and profile_supports(cfg, "batched_p2p")
          and pricer.net.span(p.pp, stride).nodes == 1):
        t = max(t, batched_p2p_s(size_bytes, p.pp))
    return t


def is_weight_grad(op: Op) -> bool:
    """Whether ``op`` belongs to a split backward's W pass: a weight-gradient GEMM, or the
    accumulation of weight gradients."""
    return (isinstance(op, Gemm) and op.name.endswith(".wgrad")) \
        or op.name in WEIGHT_GRAD_ACCUMULATION


def pair_pricer(cfg: RunConfig, kind: type[Pricer] = Pricer) -> tuple[RunConfig, Pricer]:
    """The config and pricer of a pass in a DualPipe pair: each pass's expert all-to-alls run
    on the communication stream behind the pass's compute (``moe_overlap_ep_comm``; DeepSeek-V3
    §3.2.1: "both all-to-all and PP communication can be fully hidden during execution"), and
    while one runs its kernels hold their SMs, so the compute beside it runs on the SMs they
    leave (§3.2.2: "only 20 SMs are sufficient to fully utilize the bandwidths of IB and
    NVLink"; DeepEP's ``Buffer.num_sms``, 20: ``workload.moe_dispatch.EXCHANGE_SMS``): an
    all-to-all of ``t`` seconds beside compute costs ``t`` times its SM share
    (``Pricer.hidden_behind``), and compute that no all-to-all runs beside keeps every SM.
    The same pricing as the overlapped 1F1B's passes; until the 39th session the pair's whole
    compute ran on the 112 SMs left, also the head's and MTP's where nothing runs beside it.
    ``kind``: the class of the graph's pricer (an export's records what it prices)."""
    pc = replace(cfg, parallel=replace(cfg.parallel, moe_overlap_ep_comm=True))
    return pc, kind(pc)


class HalfPricer:
    """A pricer that prices only the I (``weights`` false) or W ops of each list it is given;
    a collective that hid behind an op of the other pass runs exposed, and one beside the next
    compute ops (``Comm.beside_next``) runs beside only those of them its pass keeps."""

    def __init__(self, pricer: Pricer, weights: bool) -> None:
        self.pricer, self.weights = pricer, weights

    def price(self, ops: list[Op]) -> Priced:
        kept: list[Op] = []
        dropped = False  # whether the op before this one went to the other pass
        for i, op in enumerate(ops):
            if is_weight_grad(op) != self.weights:
                dropped = True
                continue
            if isinstance(op, Comm) and op.overlap_with_previous and dropped:
                op = replace(op, overlap_with_previous=False)  # what it hid behind is gone
            if isinstance(op, Comm) and op.beside_next:
                beside = [o for o in ops[i + 1:] if not isinstance(o, Comm)][:op.beside_next]
                op = replace(op, beside_next=sum(is_weight_grad(o) == self.weights
                                                 for o in beside))
            kept.append(op)
            dropped = False
        return self.pricer.price(kept)


def split_backward(graph: _TaskGraph) -> dict[int, tuple[Priced, Priced]]:
    """(I, W) passes of every virtual stage of ``graph``, each priced as its own op list."""
    from trainsim.workload.shard import shard_of
    cfg, sh = graph.cfg, shard_of(graph.cfg)
    i = priced_chunks(cfg, HalfPricer(graph.pricer, False), sh, graph.layer_source)  # type: ignore[arg-type]
    w = priced_chunks(cfg, HalfPricer(graph.pricer, True), sh, graph.layer_source)  # type: ignore[arg-type]
    return {v: (i[v].bwd, w[v].bwd) for v in graph.chunks}


def sharded_schedule_problem(cfg: RunConfig) -> str | None:
    """Why ``cfg``'s named schedule (``pipeline.ScheduledPipeline``: zero-bubble, DualPipe)
    cannot run its ZeRO-3 / FSDP parameters, or None. Modelled: torch.distributed.pipelining's
    (profile ``fsdp_pp_unsharded``, torchtitan: every schedule class torch's
    ``get_schedule_class`` knows, its FSDP2 units not resharded after forward under PP,
    torchtitan/distributed/fsdp.py ``get_fsdp_reshard_after_forward_policy`` at b5bcd76c6),
    whose stage keeps the units gathered and the gradients unreduced until the stage's last
    backward (stage.py ``backward_maybe_with_nosync``, ``perform_reduce_grad``). DeepSeek's
    DualPipe keeps two copies of every stage and runs no sharded data parallelism
    (deepseek-ai/DualPipe dualpipe.py); torch ships only its V form (``ScheduleDualPipeV``)."""
    name, t = cfg.parallel.pipeline_schedule, cfg.training
    if name == "dualpipe":
        return ("parallel.pipeline_schedule=dualpipe with ZeRO-3/FSDP is not modelled: "
                "DeepSeek's DualPipe holds two copies of each stage and no framework read shards them; use "
                "dualpipe_v (torch's ScheduleDualPipeV, which torchtitan runs with FSDP2) or "
                "zero_stage below 3")
    if fsdp_pp_mode(cfg) != "unsharded":
        who = f"{t.framework} {t.framework_version or ''}".strip() if t.framework else \
            "a run without a framework profile"
        return (f"parallel.pipeline_schedule={name} with ZeRO-3/FSDP is modelled as torch's "
                "pipelining runs it (units kept gathered, gradients reduce-scattered after each "
                f"stage's last backward: profile fsdp_pp_unsharded, torchtitan's); {who} gathers or "
                "reduces every micro-batch; use gpipe, 1f1b or interleaved_1f1b with it")
    return None


def schedule_refusal(cfg: RunConfig) -> str | None:
    """``sharded_schedule_problem`` where the run would meet it (a named schedule placed by
    ``ScheduledPipeline`` on pp > 1 with per-unit ZeRO-3 / FSDP), from the config alone: the
    service refuses such a job before queueing it, as ``simulate`` would after."""
    from trainsim.workload.pipeline_schedules_bfs import FB_SCHEDULES
    from trainsim.workload.sharding import fsdp_per_unit

    p = cfg.parallel
    if p.pp <= 1 or p.pipeline_schedule in FB_SCHEDULES:
        return None
    return sharded_schedule_problem(cfg) if fsdp_per_unit(cfg, p.effective_zero_stage) else None


def stage_starts(tl: Timeline, pp: int) -> list[float]:
    """When each stage's first pass starts: under optimizer post-validation (Qi et al. §4) a
    stage's next iteration starts once its own optimizer step is done, so stage s's start
    offset overlaps the previous iteration and the period is the longest stage's span."""
    start = [float("inf")] * pp
    for i, t in enumerate(tl.tasks):
        if t.stream[1] == "compute" and tl.start_s[i] < start[t.stream[0]]:
            start[t.stream[0]] = tl.start_s[i]
    return [0.0 if x == float("inf") else x for x in start]


class ScheduledPipeline:
    """Places ``graph``'s passes in the order of ``graph.p.pipeline_schedule``."""

    def __init__(self, graph: _TaskGraph) -> None:
        self.g = graph
        p = graph.p
        self.name = p.pipeline_schedule
        self.pp = p.pp
        n_virtual = len(graph.chunks)
        self.last_v = n_virtual - 1
        if graph.fsdp:
            problem = sharded_schedule_problem(graph.cfg)
            if problem:
                raise ConfigError(problem)
        self.fwd = {v: ch.fwd for v, ch in graph.chunks.items()}
        self.bwd = {v: ch.bwd for v, ch in graph.chunks.items()}
        self.split = split_backward(graph)
        # a chunk's first forward on its rank: under FSDP it leads with its units' gathers
        self.first_fwd = self.fwd
        self.fsdp_extra: dict[int, Priced] = {}  # the FSDP work each backward's W adds
        self.window: int | None = None
        if graph.fsdp:
            self._sharded()
        self.pair_fwd, self.pair_bwd = self.fwd, self.bwd
        self._pairs: dict[tuple[int, int, bool, bool, bool], Priced] = {}
        if self.name == "dualpipe" or self.name == "dualpipe_v":
            self._pair_pricing()

    def _sharded(self) -> None:
        """The passes of a ZeRO-3 / FSDP run as torch.distributed.pipelining runs them
        (``sharded_schedule_problem``: units kept gathered, gradients reduced once a step).
        Each chunk's units are gathered before its first forward on the rank (FSDP2's pre-
        forward unshard), or, under torch's pipeline runtime window (``workload.unshard_window``:
        the runtime schedules from torch 2.10), by the UNSHARD actions its lowering places. A
        backward adds the FSDP work ``pipeline_passes`` charges each 1F1B backward around the
        chunk's own (FSDP2's unsharded-gradient accumulation and copy-in), in its W pass: it
        follows the weight gradients (``FSDPParamGroup`` accumulates in the post-accumulate-
        grad hooks that ``stage_backward_weight``'s autograd call runs)."""
        g = self.g
        self.window = unshard_window(g.cfg)
        if self.window is None:
            self.first_fwd = dict(self.fwd)
        for v, ch in g.chunks.items():
            lead, trail = _around(g.work[v][1], ch.bwd)
            self.fsdp_extra[v] = lead + trail
            self.bwd[v] = g.work[v][1]
            i, w = self.split[v]
            self.split[v] = (i, w + self.fsdp_extra[v])
            if self.window is None:
                self.first_fwd[v] = g.gathered[v][0]

    def _pair_pricing(self) -> None:
        """Forward and backward of each virtual stage as they run in an overlapped pair
        (``pair_pricer``)."""
        from trainsim.workload.shard import shard_of
        g = self.g
        if not g.cfg.model.is_moe or g.p.ep == 1:
            return
        cfg, pricer = pair_pricer(g.cfg, type(g.pricer))
        chunks = priced_chunks(cfg, pricer, shard_of(cfg), g.layer_source)
        self.pair_fwd = {v: ch.fwd for v, ch in chunks.items()}
        self.pair_bwd = {v: ch.bwd + self.fsdp_extra[v] if v in self.fsdp_extra else ch.bwd
                         for v, ch in chunks.items()}

    def _times(self) -> tuple[list[float], list[float], list[float], float]:
        """Per-stage F, I and W seconds (all chunks of a rank) and the send, for zb_2p."""
        t_f, t_i, t_w = [0.0] * self.pp, [0.0] * self.pp, [0.0] * self.pp
        for v in self.fwd:
            s = rank_of(self.name, v, 0, self.pp)
            t_f[s] += self.fwd[v].duration_s
            t_i[s] += self.split[v][0].duration_s
            t_w[s] += self.split[v][1].duration_s
        return t_f, t_i, t_w, self.g.send.duration_s

    def settled_from(self) -> tuple[int | None, int]:
        """zb_2p's ``Searched.settled_from`` and ``settled_rounds`` for the iteration
        (``cfg.num_microbatches``), read from the priced pass times that :meth:`place` feeds
        its search, no pass placed (the periodic shortcut's first question, ``steady_state``)."""
        m = self.g.cfg.model
        wf = zb_w_fraction(m.hidden_size, m.num_attention_heads, self.g.cfg.training.seq_length)
        return zb_2p_settled_from(self.pp, self.g.cfg.num_microbatches, self._times(), wf)

    def sends(self, s: int, v: int, chunk: int, forward: bool) -> bool:
        """Whether a pass of virtual stage ``v`` on rank ``s`` sends to another rank."""
        nxt = v + 1 if forward else v - 1
        return 0 <= nxt <= self.last_v and rank_of(self.name, nxt, chunk, self.pp) != s

    def place(self) -> None:
        g = self.g
        pp = self.pp
        times = self._times() if self.name == "zb_2p" else None
        m = g.cfg.model  # ZB-2p's memory limit budgeted as the zero-bubble scheduler does
        wf = zb_w_fraction(m.hidden_size, m.num_attention_heads, g.cfg.training.seq_length)
        plan = orders(self.name, pp, g.vpp, g.m, times, wf,  # type: ignore[arg-type]
                      g.cfg.num_microbatches)
        g.settled_from = getattr(plan, "settled_from", None)  # zb_2p's (steady_state)
        g.settled_rounds = getattr(plan, "settled_rounds", 1)
        g.orders = plan
        first_fwd_deps: dict[tuple[int, int], list[int]] = {}
        if g.zero in (1, 2) and g.p.overlap_param_gather and not g.fsdp:
            chunks = 2 if self.name == "dualpipe" else g.vpp
            first_fwd_deps = {(s, c): g.param_gathers(s, 1 / chunks, [], f"chunk {c}")
                              for s in range(pp) for c in range(chunks)}
        self.sent: dict[tuple[str, int, int], int] = {}
        self.own: dict[tuple[str, int, int], int] = {}  # (F|B, mb, v) -> compute task
        self.first_fwd_deps = first_fwd_deps
        self.seen_fwd: set[tuple[int, int]] = set()
        self.backwards: dict[tuple[int, int], int] = {}  # (rank, chunk) -> its B and W passes
        # torch's runtime window: the chunks each step is preceded by the UNSHARD of
        self.events = [lowered(o, self.window)[0] for o in plan] \
            if self.window is not None else None
        self.unsharding: list[dict[int, list[int]]] = [{} for _ in range(pp)]
        cursor = [0] * pp
        while any(cursor[s] < len(plan[s]) for s in range(pp)):
            progressed = False
            for s in range(pp):
                while cursor[s] < len(plan[s]):
                    g.tag = cursor[s]  # the schedule position (steady_state's periods)
                    if not self._try(s, plan[s][cursor[s]]):
                        break
                    cursor[s] += 1
                    progressed = True
            if not progressed:  # pragma: no cover - the orders are deadlock-free
                raise RuntimeError(f"pipeline schedule {self.name} has a cycle")

    # -- one step ---------------------------------------------------------------------------
    def _upstream(self, s: int, p: Pass) -> list[int] | None:
        """Tasks pass ``p`` waits for, or None when one is not created yet."""
        v = virtual_stage(self.name, s, p.chunk, self.pp)
        deps: list[int] = []
        if p.kind == "F":
            if v > 0:
                key = ("F", p.microbatch, v - 1)
                if key not in self.sent:
                    return None
                deps.append(self.sent[key])
            if (s, p.chunk) not in self.seen_fwd:
                deps += self.first_fwd_deps.get((s, p.chunk), [])
            return deps
        if p.kind == "W":
            return [self.own[("B", p.microbatch, v)]]
        if v < self.last_v:
            key = ("B", p.microbatch, v + 1)
            if key not in self.sent:
                return None
            deps.append(self.sent[key])
        deps.append(self.own[("F", p.microbatch, v)])
        return deps

    def _try(self, s: int, step: Pass | Overlapped) -> bool:
        """Place ``step`` of stage ``s`` (at position ``g.tag`` of its order) once what it waits
        for is placed; False if not yet."""
        steps = step if isinstance(step, Overlapped) else (step,)
        ups = [self._upstream(s, p) for p in steps]
        if any(u is None for u in ups):
            return False
        deps = [d for u in ups for d in u]  # type: ignore[union-attr]
        if self.events is not None:  # the UNSHARDs before this step, then its chunks' waits
            for n, p in enumerate(steps):
                self.g._unshard(s, p.chunk, self.events[s][self.g.tag][1] if n == 0 else (),
                                self.unsharding[s])
        elif self.g.fsdp and self.g.link_tail.get(s) is not None and any(
                p.kind == "F" and (s, p.chunk) not in self.seen_fwd for p in steps):
            deps.append(self.g.link_tail[s])  # its gathers queue behind the reductions
        if isinstance(step, Overlapped):
            self._pair(s, step, deps)
        else:
            self._single(s, step, deps)
        for p in steps:
            if p.kind == "F":
                self.seen_fwd.add((s, p.chunk))
        return True

    def _single(self, s: int, p: Pass, deps: list[int]) -> None:
        g = self.g
        v = virtual_stage(self.name, s, p.chunk, self.pp)
        label = f"{p.kind} mb{p.microbatch} c{p.chunk}"
        if p.kind == "F":
            work = self.fwd[v] if (s, p.chunk) in self.seen_fwd else self.first_fwd[v]
        elif p.kind == "B":
            work = self.bwd[v]
        elif p.kind == "I":
            work = self.split[v][0]
        else:
            work = self.split[v][1]
        if p.kind == "W":
            i = g.add((s, "compute"), work, deps, label)
            self._grads_ready(s, p, i)
            return
        forward = p.kind == "F"
        i, out = g.pass_and_send(s, work, deps, label, self.sends(s, v, p.chunk, forward),
                                 forward)
        key = ("F" if forward else "B", p.microbatch, v)
        self.own[key] = i
        self.sent[key] = out
        if p.kind == "B":
            self._grads_ready(s, p, i)

    def _pair(self, s: int, step: Overlapped, deps: list[int]) -> None:
        g = self.g
        f, b = step
        vf = virtual_stage(self.name, s, f.chunk, self.pp)
        vb = virtual_stage(self.name, s, b.chunk, self.pp)
        send_f = self.sends(s, vf, f.chunk, True)
        send_b = self.sends(s, vb, b.chunk, False)
        blocking = not g.sends_overlap
        first = (s, f.chunk) not in self.seen_fwd and self.first_fwd is not self.fwd
        key = (vf, vb, send_f and blocking, send_b and blocking, first)
        work = self._pairs.get(key)
        if work is None:  # one Priced per kind of pair: its summary is computed once
            lead = interned(())
            if first:  # the forward's gathers lead the pair (FSDP)
                lead, trail = _around(self.first_fwd[vf], self.fwd[vf])
                lead = lead + trail
            work = lead + self.pair_fwd[vf] + self.pair_bwd[vb]
            work = work + g.send * (key[2] + key[3]) if blocking else work
            self._pairs[key] = work
        label = f"F mb{f.microbatch} c{f.chunk} & B mb{b.microbatch} c{b.chunk}"
        if not blocking:
            i = g.add((s, "compute"), work, deps, label)
            out_f = g.add((s, "pp"), g.send, [i], f"send F mb{f.microbatch}") if send_f else i
            out_b = g.add((s, "pp"), g.send, [i], f"send B mb{b.microbatch}") if send_b else i
        else:
            i = out_f = out_b = g.add((s, "compute"), work, deps, label)
        self.own[("F", f.microbatch, vf)] = i
        self.sent[("F", f.microbatch, vf)] = out_f
        self.own[("B", b.microbatch, vb)] = i
        self.sent[("B", b.microbatch, vb)] = out_b
        self._grads_ready(s, b, i)

    def _grads_ready(self, s: int, p: Pass, task: int) -> None:
        """The last pass that writes a chunk's weight gradients releases its reduction
        (``optimizer_steps`` reads ``last_bwd`` by Megatron's key chunk * pp + stage). Under
        FSDP the stage's gradients are reduce-scattered right after its m-th B or W pass, in
        one post_backward of every unit: torch's runtime adds REDUCE_GRAD there (v2.13.0
        schedules.py ``_add_reduce_grad`` L1252-L1282, counting W and FULL_BACKWARD actions,
        not I), which runs ``stage.perform_reduce_grad`` (stage.py L1164-L1195; every earlier
        backward ran under ``backward_maybe_with_nosync``'s no-sync, L781-L849)."""
        if self.g.fsdp:
            if p.kind in ("B", "W"):
                n = self.backwards[(s, p.chunk)] = self.backwards.get((s, p.chunk), 0) + 1
                if n == self.g.m:
                    v = virtual_stage(self.name, s, p.chunk, self.pp)
                    self.g._reduce_scatter(s, task, p.microbatch, v)
            return
        if p.microbatch != self._last_mb(p.chunk):
            return
        chunk = 0 if self.name == "dualpipe" else p.chunk
        key = chunk * self.pp + s
        prev = self.g.last_bwd.get(key)
        if prev is None or prev[0] < task:
            self.g.last_bwd[key] = [task]

    def _last_mb(self, chunk: int) -> int:
        if self.name == "dualpipe":
            return self.g.m // 2 - 1 if chunk == 0 else self.g.m - 1
        return self.g.m - 1
