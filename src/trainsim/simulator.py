"""simulate(config) -> Result: build the workload, price it, run the event loop, add memory.

One representative rank per pipeline stage is simulated: ranks of the same stage (their TP,
CP and DP peers) do the same work at the same time, so their collectives are priced for the
whole group and the stage's timeline stands for all of them.
"""

from __future__ import annotations

import math

from trainsim.catalog.framework_rules import sends_overlap
from trainsim.catalog.frameworks import profile_supports
from trainsim.chunks import Chunk, LayerSource
from trainsim.config import RunConfig
from trainsim.deferred_wgrad import deferral
from trainsim.engine import Task, gc_paused, run
from trainsim.errors import ConfigError
from trainsim.last_backward import SplitBackwardTasks
from trainsim.limits import check_simulation
from trainsim.memo import per_config, per_pricer, shared_chunks, stage_memory
from trainsim.memory import stage_param_split
from trainsim.memory.params import stage_layer_params
from trainsim.model.counts import hardware_flops_per_iteration, model_flops_per_token
from trainsim.optimizer_tasks import (  # noqa: F401 - BEFORE, AFTER, LAMB_NORMS_PER_LAYER: re-exported
    AFTER,
    BEFORE,
    LAMB_NORMS_PER_LAYER,
    OptimizerTasks,
)
from trainsim.pipeline_passes import PipelineTasks
from trainsim.pricing import COMPUTE, DP, DP_STREAMS, PP, Priced, Pricer, interned
from trainsim.result import Result
from trainsim.schedule_steps import in_steps
from trainsim.sharded_passes import (
    blocking_gathers,
    has_replica_reduce,
    on_gather_links,
    replica_reduce,
    unit_gather_passes,
)
from trainsim.summary import (  # noqa: F401 - re-exported: summaries lived here
    TIE,
    Summary,
    breakdown_of,
    critical_stage,
    data_loading_s,
    stage_sums,
    summarize,
)
from trainsim.twin_graphs import (
    keep_graph,
    keep_summary,
    kept_graph,
    kept_memories,
    kept_summary,
    mark,
)
from trainsim.workload.fp8_gather import param_gather_width
from trainsim.workload.ops import Comm
from trainsim.workload.p2p_meta import exchange_messages
from trainsim.workload.pipe_engine import deepspeed_pipe_exchange
from trainsim.workload.pipeline_schedules_bfs import last_backward_microbatch
from trainsim.workload.recompute import (
    core_attn_rerun,
    per_op_sac_layout,
    per_op_sac_reruns_attention,
    remat_dce,
)
from trainsim.workload.remat_policy import remat_kept_params
from trainsim.workload.shard import shard_of
from trainsim.workload.sharding import (  # bucket_params, dp_bucket_count: re-exported
    bucket_params,  # noqa: F401
    dp_bucket_count,  # noqa: F401
    fsdp_grad_bytes,
    fsdp_per_unit,
    fsdp_pp_mode,
    reduces_every_microbatch,
)

_param_split = per_config(stage_param_split)
"""``stage_param_split(cfg, stage)`` once per config object: every task graph of a simulation
(the truncated runs, a fallback's full graph) and every candidate the tuner simulates twice
(its bound and its simulation) read each stage's."""

class _TaskGraph(PipelineTasks, SplitBackwardTasks, OptimizerTasks):
    """Builds one iteration's tasks: pipeline passes with their sends (``PipelineTasks``; the
    split backwards: ``SplitBackwardTasks``), then per stage the data-parallel gradient reduction, the
    optimizer step and the parameter all-gather (``OptimizerTasks``)."""

    def __init__(self, cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None,
                 microbatches: int | None = None) -> None:
        p = cfg.parallel
        self.cfg, self.p, self.pricer = cfg, p, pricer
        self.sends_overlap = sends_overlap(cfg)  # pipeline sends on a stream of their own
        self.pp, self.vpp = p.pp, p.vpp
        self.m = microbatches or cfg.num_microbatches  # fewer: a truncated steady state
        # the micro-batch whose backward is each chunk's last: its gradients reduce after it
        self.last_mb = last_backward_microbatch(cfg.parallel.pipeline_schedule, self.m)
        self.tags: list[int] = []
        """Per task: the position in its stage's schedule of the pass it belongs to (BEFORE
        for tasks placed ahead of the passes, AFTER for the optimizer's), for steady_state."""
        self.tag = BEFORE
        self.ends: list[int] = []
        self._slows: dict[tuple[int, str], tuple] = {}  # stream -> (its Task.slows,)
        self._known: dict[int, tuple[float, tuple]] = {}  # id(Priced) -> duration, summary
        self._beside: dict[tuple[int, int], tuple] = {}  # combined_1f1b.beside_forward's memo
        self._parts: dict = {}  # last_backward's split backward passes, by virtual stage
        sh = shard_of(cfg)
        self.layer_source = layer_source
        shared = per_pricer(cfg, pricer, layer_source)
        if "chunks" not in shared:
            shared["chunks"] = shared_chunks(cfg, pricer, sh, layer_source)
        self.chunks: dict[int, Chunk] = shared["chunks"]
        self._memo = shared
        # the output layer's weight gradients left to a drain after the schedule
        self.deferral = deferral(cfg, pricer, self.chunks, self.m, shared)
        self.tasks: list[Task] = []
        self.zero = p.effective_zero_stage
        self.grad_bytes = 4 if cfg.training.grad_reduce_in_fp32 else 2
        self.dp_size = cfg.shard_ranks  # HSDP: one replica's ranks
        # FSDP1's SHARD_GRAD_OP (zero 2) gathers each unit for its forward and keeps it through
        # the backward; like FULL_SHARD it reduce-scatters each unit after every backward (no
        # no_sync: Composer syncs every micro-batch); so does torch's fully_shard with
        # reshard_after_forward False (profile ``fsdp2_copies``). Meta's own FSDP-style zero 2
        # (Llama 3 under pipelining) reduces once per step: not this path (``fsdp_per_unit``)
        self.fsdp = fsdp_per_unit(cfg, self.zero)
        # (params, group, group size) per stage: non-expert parameters reduce over the data-
        # parallel (with CP) ranks, routed experts over their expert-data-parallel group
        edp = cfg.edp if cfg.model.is_moe else 1
        self.groups = [[(dense, "dp_cp", self.dp_size), (experts, "edp", edp)]
                       for dense, experts in (_param_split(cfg, s) for s in range(self.pp))]
        # bytes per element of each group's parameter all-gather (distributed optimizer): the
        # matmul weights in fp8 under fp8_param_gather; routed experts are all matmul weights
        self.gather_width = [
            {"dp_cp": param_gather_width(cfg, dense, stage_layer_params(cfg, s) - experts),
             "edp": param_gather_width(cfg, experts, experts)}
            for s, ((dense, _, _), (experts, _, _)) in enumerate(self.groups)]
        # bytes per gradient element of each group's ZeRO-3 reduce-scatter
        self.fsdp_grad_bytes = fsdp_grad_bytes(cfg)
        mode = fsdp_pp_mode(cfg) if self.fsdp else None
        # profile ``fsdp_pp_sync_every_microbatch``: under pipelining no backward is told it is
        # not the last (FSDPModule.set_is_last_backward is never called), so FSDP2's root
        # post-backward callback ends every micro-batch's backward with finalize_backward,
        # which makes the compute stream wait for that backward's reduce-scatters
        # (_fsdp_param_group.py _wait_for_post_backward on _post_reduce_event; torch 2.8 era,
        # still at 2.13): every backward pass is split per layer like the last one and ends
        # on that wait
        self.sync_every_mb = mode == "sync_every"
        # profile ``fsdp_pp_unsharded``: units not resharded after forward under PP, and the
        # pipeline stage's no-sync (torch pipelining/stage.py backward_maybe_with_nosync) keeps
        # them gathered and their gradients unreduced until the chunk's last backward, then
        # runs every group's post_backward: gathered before each chunk's first forward only,
        # reduce-scattered once per step, after that backward (sources in torchtitan.yaml)
        self.gather_once = mode == "unsharded"
        # profile ``fsdp2_reduce_scatter_wait``: FSDP2's post_backward of a unit makes the compute
        # stream wait for the previous unit's reduce-scatter before its own copy-in (one
        # reduce-scatter input buffer; _fsdp_param_group.py, sources in torchtitan.yaml), so a
        # unit's backward starts only once the reduce-scatter two units before it has ended
        self.rs_wait = self.fsdp and profile_supports(cfg, "fsdp2_reduce_scatter_wait")
        # profile ``dp_reduce_every_microbatch``: the distributed optimizer's gradient hooks
        # reduce-scatter every micro-batch's buckets as its backward makes them ready, not the
        # last micro-batch's only (workload.sharding ``reduces_every_microbatch``)
        self.reduce_every_mb = reduces_every_microbatch(cfg, self.fsdp)
        # Megatron's scatter-gather optimisation: each TP rank sends 1/tp of the activation
        # (DeepSpeed's PipelineEngine too: PartitionedTensor over the TP group).
        act_bytes = self.act_bytes = sh.tokens * cfg.model.hidden_size * 2 / p.tp
        from trainsim.pipeline import pipeline_send_s  # the pipeline group's slowest hop
        send = pipeline_send_s(cfg, pricer, act_bytes)
        segs: tuple[tuple[str, float, str], ...] = ((PP, send, "p2p send"),)
        if p.data_parallel_impl == "deepspeed":  # its send, then the step's receive
            names = ("p2p send", "p2p receive (same step)")
            segs = tuple((PP, sum(pricer.comm_time(c) for c in comms), name)
                         for comms, name in zip(deepspeed_pipe_exchange(cfg, act_bytes), names))
        fwd_segs = segs
        if profile_supports(cfg, "p2p_tensor_metadata"):  # each tensor after its metadata
            fwd_segs, segs = (((PP, sum(pipeline_send_s(cfg, pricer, b) for b in
                                        exchange_messages(sh, act_bytes, forward)), "p2p send"),)
                              for forward in (True, False))
        self.send = interned(segs)
        """What a backward pass that sends waits for (the gradient it sends)."""
        self.send_fwd = interned(fwd_segs)
        """What a forward pass that sends waits for: ``send`` but where the profile sends more
        forward (``p2p_tensor_metadata``: the sequence mask beside the hidden states)."""
        # a pass with its send, by id of the pass (kept beside it, so the id is its own)
        self._plus_send: dict[tuple[int, bool], tuple[Priced, Priced]] = shared.setdefault(
            "plus_send", {})
        self._splits: dict[tuple[int, int, bool], list[Priced]] = shared.setdefault("splits", {})
        # each split's buckets' shares of the chunk's gradients (``ddp_buckets.bucket_ready``)
        self._shares: dict[tuple[int, int], tuple[tuple[float, float], ...]] = \
            shared.setdefault("shares", {})
        self._comms: dict[tuple, float] = shared.setdefault("comms", {})  # comm()'s seconds
        # each data-parallel-stream collective task's ops, one after another, each with how
        # many times it runs, for exports (Chakra): a bucketed collective's ``count`` equal
        # ones, InternEvo's broadcasts, FSDP's unit all-gathers
        self.collectives: dict[int, tuple[tuple[Comm, int], ...]] = {}
        # ... and the unit all-gathers of each block of a split backward (``last_backward``)
        self.block_ops: dict[int, list[tuple[Comm, ...]]] = shared.setdefault("block_ops", {})
        self.last_bwd: dict[int, list[int]] = {}  # virtual stage -> bucket-ready task ids
        self.bucket_shares: dict[int, tuple[tuple[float, float], ...]] = {}  # and their shares
        self.fsdp_reduce: dict[int, list[int]] = {s: [] for s in range(self.pp)}
        # ZeRO-3 / FSDP: the last gradient reduction issued on each stage's sharding group: the
        # next pass's parameter gathers run on that group's one NCCL stream after it (FSDP's and
        # DeepSpeed's collectives of a process group run in issue order), so the pass waits
        self.link_tail: dict[int, int] = {}
        # ZeRO-3 / FSDP: each virtual stage's (forward, backward) pass with its parameter gathers
        # what runs on the reduce-scatter's stream before it (FSDP1 casts, DeepSpeed's bucket)
        self.side_s = shared.setdefault("side_s", [0.0] * self.pp)
        if self.fsdp and "gathered" not in shared:
            shared["gathered"] = (blocking_gathers(cfg, pricer, self.chunks, self.side_s), {}) \
                if p.zero3_gather == "per_parameter" else \
                unit_gather_passes(cfg, pricer, self.chunks, self.side_s, self.block_ops)
        self.gathered: dict[int, tuple[Priced, Priced]] = shared["gathered"][0] \
            if self.fsdp else {}
        # the split backward's block gathers, by virtual stage (``unit_gather_passes``)
        self.block_gathers: dict[int, list[float]] = shared["gathered"][1] if self.fsdp else {}
        # (forward, backward) pass of each virtual stage
        self.work = {v: self.gathered.get(v) or (ch.fwd, ch.bwd) for v, ch in self.chunks.items()}
        if self.gather_once:  # the gathers lead each chunk's first forward (``pass_specs``)
            self.work = {v: (ch.fwd, self.work[v][1]) for v, ch in self.chunks.items()}

    def add(self, stream: tuple[int, str], priced: Priced | float, deps: list[int], label: str,
            cat: str = COMPUTE) -> int:
        # a collective on a side stream holds SMs the stage's compute stream then lacks
        slows = self._slows.get(stream)
        if slows is None:
            share = self.pricer.sm_share.get("dp" if stream[1] in DP_STREAMS else stream[1])
            slows = self._slows[stream] = (None if share is None else
                                           ((stream[0], "compute"), share), )
        self.tags.append(self.tag)
        if isinstance(priced, Priced):
            # every Priced given here stays alive in its task, so its id is its own
            known = self._known.get(id(priced))
            if known is None:
                known = self._known[id(priced)] = (priced.duration_s, priced.summary)
            self.tasks.append(Task(stream, known[0], deps, label, known[1], priced, slows[0]))
        else:
            self.tasks.append(Task(stream, priced, deps, label, ((cat, priced),), None, slows[0]))
        return len(self.tasks) - 1

    def comm(self, s: int, name: str, kind: str, size: float, group: str, deps: list[int],
             label: str, count: int = 1) -> int:
        """A data-parallel-stream collective on stage ``s`` (``count`` equal collectives of
        size / count, one after another: fixed-size buckets, each paying its own latency); the
        id of its last task (under HSDP, a reduce-scatter's replica all-reduce)."""
        return self.collective(s, name, kind, size, group, deps, label, count)[1]

    def collective(self, s: int, name: str, kind: str, size: float, group: str,
                   deps: list[int], label: str, count: int = 1,
                   replicas: bool = True) -> tuple[int, int]:
        """:meth:`comm`'s tasks: (the collective's own id, the id of its last task, which is
        HSDP's all-reduce over the replicas after a reduce-scatter over the sharding group;
        not ``replicas``: the caller places that all-reduce, ``workload.xla_combine``)."""
        key = (name, kind, size, group, count)  # priced once per graph (ZeRO-3: per backward)
        t = self._comms.get(key)
        if t is None:
            t = self._comms[key] = count * self.pricer.comm_time(
                Comm(name, kind, size / count, group))  # type: ignore[arg-type]
        i = self.add((s, self.reduce_stream(group)), t, deps, label, DP)
        self.collectives[i] = ((Comm(name, kind, size / count, group), count),)  # type: ignore
        if not replicas or not has_replica_reduce(kind, group, self.p.dp_replicate):
            return i, i  # no HSDP replica all-reduce follows
        replicas = replica_reduce(self.cfg, Comm(name, kind, size, group))  # type: ignore[arg-type]
        if replicas is None:
            return i, i
        return i, self.collective(s, replicas.name, replicas.kind, replicas.bytes,
                                  replicas.group, [i], f"{label} + HSDP all-reduce over "
                                  f"{self.p.dp_replicate} replicas", count)[1]

    def reduce_stream(self, group: str) -> str:
        """The stream of a collective over ``group``: the data-parallel one, but under ZeRO-3 /
        FSDP a reduction over a process group other than the sharding group's (HSDP's replicas,
        FSDP1 ``_reduce_grad`` on ``_all_reduce_stream`` over ``_inter_node_pg``, FSDP2
        ``foreach_reduce`` on ``all_reduce_stream``; the experts' data-parallel group) runs on
        a stream of its own, beside the gathers, unless it crosses their links
        (``on_gather_links``: then it holds them in issue order, as the walk counts it)."""
        if not self.fsdp or group not in ("dp_rep", "edp") or \
                on_gather_links(self.pricer, group):
            return "dp"
        return group

    def fixed_buckets(self, params: float) -> int:
        """Collectives that carry ``params`` parameters under fixed-size buckets (Apex
        DistributedFusedAdam, ``dp_buckets='fixed'``); one otherwise."""
        if self.p.dp_buckets != "fixed" or not self.p.ddp_bucket_size:
            return 1
        return max(1, math.ceil(params / self.p.ddp_bucket_size))

    def pass_and_send(self, s: int, work: Priced, deps: list[int], label: str,
                      sends: bool, forward: bool = False) -> tuple[int, int]:
        """Add a pass; returns (pass task, task the receiver waits on). A blocking send
        (no overlap_p2p_comm) runs on the compute stream right after the pass, so it is folded
        into the same task. ``forward``: a forward pass's send (``send_fwd``)."""
        if not sends:
            i = self.add((s, "compute"), work, deps, label)
            return i, i
        if self.sends_overlap:
            i = self.add((s, "compute"), work, deps, label)
            send = self.send_fwd if forward else self.send
            return i, self.add((s, "pp"), send, [i], f"send {label}")
        i = self.add((s, "compute"), self._with_send(work, forward), deps, label)
        return i, i

    def _with_send(self, work: Priced, forward: bool = False) -> Priced:
        """``work`` followed by the blocking send, built once per pass."""
        key = (id(work), forward)
        hit = self._plus_send.get(key)
        if hit is None or hit[0] is not work:
            hit = self._plus_send[key] = (work, work + (self.send_fwd if forward
                                                         else self.send))
        return hit[1]

    def _pass_spec(self, s: int, work: Priced, sends: bool, forward: bool = False) -> tuple:
        """(stream, duration, segments, detail, send, slows) of a pass as :meth:`pass_and_send`
        adds it; ``send``: the separate send task's (stream, duration, segments, detail, slows)
        under overlap_p2p_comm, else None (none, or folded into the pass)."""
        if sends and not self.sends_overlap:
            work = self._with_send(work, forward)
        send = None
        if sends and self.sends_overlap:
            stream = (s, "pp")
            share = self.pricer.sm_share.get("pp")
            sent = self.send_fwd if forward else self.send
            send = (stream, sent.duration_s, sent.summary, sent,
                    None if share is None else ((s, "compute"), share))
        share = self.pricer.sm_share.get("compute")
        slows = None if share is None else ((s, "compute"), share)
        return ((s, "compute"), work.duration_s, work.summary, work, send, slows)

    def param_gathers(self, s: int, fraction: float, deps: list[int], label: str) -> list[int]:
        """All-gathers of ``fraction`` of stage ``s``'s parameters, one per group, each element
        at its group's ``gather_width`` (16-bit, or 1 byte for fp8-gathered weights)."""
        return [self.comm(s, "param_all_gather", "all_gather",
                          params * fraction * self.gather_width[s][group], group,
                          deps, f"param all-gather {group} {label}",
                          self.fixed_buckets(params * fraction))
                for params, group, size in self.groups[s] if size > 1 and params > 0]


def build_tasks(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None = None
                ) -> tuple[list[Task], list[int]]:
    """The task graph of one iteration; returns tasks and the last task of each stage."""
    graph = build_graph(cfg, pricer, layer_source)
    return graph.tasks, graph.ends


def build_graph(cfg: RunConfig, pricer: Pricer, layer_source: LayerSource | None = None,
                microbatches: int | None = None) -> _TaskGraph:
    """The task graph of one iteration (of ``microbatches`` instead of the configured number,
    for a truncated steady state); ``.tasks``, ``.ends`` (last task of each stage), ``.tags``.
    Inside ``engine.runs_shared`` a twin's graph is handed back (``trainsim.twin_graphs``)."""
    graph, key = kept_graph(cfg, pricer, layer_source, microbatches)
    if graph is not None:
        return graph
    before = mark(pricer) if key is not None else (0, 0)
    graph = _TaskGraph(cfg, pricer, layer_source, microbatches)
    graph.pipeline()
    graph.ends = graph.optimizer_steps()
    keep_graph(key, graph, pricer, before)
    return graph


def simulate(cfg: RunConfig, keep_timeline: bool = False,
             layer_source: LayerSource | None = None, *, pricer: Pricer | None = None) -> Result:
    """Simulate one training iteration of ``cfg`` (``layer_source``: where each layer's forward
    ops come from; the analytical builder by default). Long pipelines (Megatron's, zero-bubble,
    DualPipeV) take the periodic steady-state shortcut (:mod:`trainsim.steady_state`) unless a timeline is asked for;
    ``Result.simulation`` says which way it went and why. ``pricer``: a ``Pricer`` of this
    ``cfg`` built earlier (e.g. by its lower bound), whose priced passes are reused. Where the
    schedule runs several times per iteration (``training.local_batch_size``), one step is
    simulated and repeated (:mod:`trainsim.schedule_steps`; a timeline is that one step's)."""
    if not isinstance(cfg, RunConfig):
        raise ConfigError(f"simulate() takes a RunConfig, got {type(cfg).__name__}; build one "
                          "with trainsim.run_config_from_dict(mapping) or "
                          "trainsim.load_run_config(path)")
    if pricer is not None and pricer.cfg is not cfg:
        raise ValueError("simulate(cfg, pricer=...) takes a Pricer built for that cfg")
    from trainsim.network.forced_algo import forced_algo_problem

    if problem := forced_algo_problem(cfg):  # before any work, as the service's check refuses
        raise ConfigError(problem)
    with gc_paused():
        if cfg.schedule_steps > 1:
            return in_steps(cfg, keep_timeline, layer_source, pricer, _simulate)
        return _simulate(cfg, keep_timeline, layer_source, pricer)


def _simulate(cfg: RunConfig, keep_timeline: bool, layer_source: LayerSource | None,
              pricer: Pricer | None) -> Result:
    from trainsim import steady_state

    # bounded work: refuse a run over the task limit before building it (counting what the
    # shortcut simulates where it applies; the full graph is checked again before a fallback)
    check_simulation(cfg, None if keep_timeline else steady_state.simulated_tasks(cfg))
    pricer = pricer or Pricer(cfg)
    summary, tl, reason = None, None, "a timeline was asked for"
    if keep_timeline:  # say so only where the shortcut would have run: the reason otherwise
        shortcut, why = steady_state.plan(cfg)
        reason = reason if shortcut is not None else why
    else:  # the periodic steady state extrapolated, where it is proven
        summary, reason = steady_state.attempt(cfg, pricer, layer_source)
    method = "steady-state" if summary is not None else "full"
    if summary is None:
        check_simulation(cfg, what=f" (simulated in full: {reason})")
        graph = build_graph(cfg, pricer, layer_source)
        # a twin handed a graph whose full run was summarized here (trainsim.twin_graphs)
        summary = None if keep_timeline else kept_summary(graph, cfg)
        if summary is None:
            tl = run(graph.tasks)
            summary = summarize(cfg, tl, graph.ends)
            keep_summary(graph, cfg, summary)
    iteration_s = max(e - o for e, o in zip(summary.end_s, summary.origin_s))
    stage = critical_stage(summary.busy_s, summary.end_s)
    breakdown, exposed = breakdown_of(summary.sums[stage], iteration_s)
    loading = data_loading_s(cfg, iteration_s)
    iteration_s += loading
    breakdown["data_loading_s"] = loading
    memory = kept_memories(cfg)  # overlap siblings' (trainsim.twin_graphs)
    tokens = cfg.tokens_per_iteration
    return Result(
        config=cfg,
        iteration_time_s=iteration_s,
        breakdown=breakdown,
        exposed_comm=exposed,
        memory=memory,
        model_flops=model_flops_per_token(cfg.model, cfg.training.seq_length) * tokens,
        hardware_flops=hardware_flops_per_iteration(cfg, core_attn_rerun(cfg, fused=True),
                                                    per_op_sac_layout(cfg),
                                                    per_op_sac_reruns_attention(cfg),
                                                    remat_dce(cfg), remat_kept_params(cfg)),
        critical_stage=stage,
        timeline=tl if keep_timeline else None,
        compute_sources=dict(sorted(pricer.compute_sources().items())),
        simulation={"method": method, "reason": reason},
    )


__all__ = ["LayerSource", "Pricer", "Summary", "build_graph", "build_tasks", "simulate",
           "stage_memory"]
