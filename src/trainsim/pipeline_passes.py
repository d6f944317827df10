"""The pipeline passes of an iteration's task graph: each stage's forwards and backwards in its
schedule's order (Megatron's 1F1B and interleaved 1F1B), with their sends, the first forward's
parameter gathers and weight casts. A mixin of ``simulator._TaskGraph``, which prepares the
passes' work, streams and groups; backwards split per bucket or per unit go through
``last_backward.SplitBackwardTasks.backward``, other schedules through ``pipeline``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import profile_supports
from trainsim.combined_1f1b import beside_forward, lone_pass_specs, unpaired_bounds
from trainsim.engine import Task
from trainsim.optimizer_tasks import AFTER
from trainsim.pricing import DP, Priced, interned
from trainsim.sharded_passes import chunk_unshard
from trainsim.workload.pipeline_schedules import virtual_stage
from trainsim.workload.pipeline_schedules_bfs import FB_SCHEDULES, first_backward_microbatch
from trainsim.workload.schedule import (
    microbatch_group,
    pass_labels,
    prefetch_exposed_s,
    schedule,
    torch_warmup,
)
from trainsim.workload.sharding import dp_bucket_count
from trainsim.workload.te_weight_cache import weight_quantization
from trainsim.workload.unshard_window import lowered, unshard_window

if TYPE_CHECKING:
    from trainsim.chunks import Chunk
    from trainsim.combined_1f1b import LonePasses
    from trainsim.config import ParallelConfig, RunConfig
    from trainsim.deferred_wgrad import Deferral
    from trainsim.pricing import Pricer


class PipelineTasks:
    """The pipeline passes (the ``_TaskGraph`` methods that place them)."""

    cfg: RunConfig
    p: ParallelConfig
    pricer: Pricer
    pp: int
    vpp: int
    m: int
    last_mb: int
    tag: int
    zero: int
    fsdp: bool
    gather_once: bool
    window: int | None
    sync_every_mb: bool
    reduce_every_mb: bool
    tasks: list[Task]
    tags: list[int]
    chunks: dict[int, Chunk]
    groups: list[list[tuple[float, str, int]]]
    work: dict[int, tuple[Priced, Priced]]
    gathered: dict[int, tuple[Priced, Priced]]
    link_tail: dict[int, int]
    lone: LonePasses | None
    first_bwd: dict[int, tuple]
    deferral: Deferral | None
    last_bwd: dict[int, list[int]]
    """Per virtual stage, the work its first backward leads with (TE's weight transposes)."""
    _memo: dict
    collectives: dict[int, tuple]

    if TYPE_CHECKING:
        def _pass_spec(self, s: int, work: Priced, sends: bool, forward: bool = False
                       ) -> tuple: ...

        def param_gathers(self, s: int, fraction: float, deps: list[int], label: str
                          ) -> list[int]: ...

        def add(self, stream: tuple[int, str], priced: Priced | float, deps: list[int],
                label: str, cat: str = ...) -> int: ...

        def reduce_stream(self, group: str) -> str: ...

        def backward(self, s: int, v: int, mb: int, chunk: int, deps: list[int],
                     alone: bool = True) -> int: ...

    def pass_specs(self, sends: bool = True) -> tuple[dict, list, dict, list, list[bool]]:
        """Megatron's passes, resolved once: each chunk's first forward's gathers (added here),
        each virtual stage's forward, first forward and backward (:meth:`_pass_spec`; with
        their sends unless ``sends`` is False), and per stage whether backwards go through
        :meth:`backward` (split, ZeRO-3)."""
        pp, vpp, last_v = self.pp, self.vpp, self.pp * self.vpp - 1
        # Megatron's overlap_param_gather: each chunk's parameters are gathered ahead of its
        # first forward (from the end of the previous step); ZeRO-3 gathers before every pass.
        # A bucketed first chunk is gathered bucket after bucket from the forward pre-hooks,
        # unless the interleaved schedule aligns the gathers (profile align_param_gather):
        # then start_param_sync sends all its buckets at once, the first layers' last, and the
        # first forward waits for the whole chunk (core_v0.12.0 distributed_data_parallel.py).
        first_fwd_deps = {}
        first_wait: dict[int, Priced] = {}  # virtual stage -> wait before its first forward
        if self.zero in (1, 2) and self.p.overlap_param_gather and not self.fsdp:
            bucketed = self._bucketed_first_chunk() if self.gathers_by_bucket() else 1
            whole = [(s, c) for s in range(pp) for c in range(vpp) if bucketed == 1 or s or c]
            first_fwd_deps = {(s, c): self.param_gathers(s, 1 / vpp, [], f"chunk {c}")
                              for s, c in whole}
            if bucketed > 1:
                first_wait[0] = self._bucket_gather_wait(bucketed)
        # Transformer Engine casts each 16-bit fp8 weight into its cached workspace in the
        # iteration's first forward of the module (``workload.te_weight_cache``)
        # (before TE 1.8 fp8 parameters' transposes in its first backward instead: first_bwd)
        self.first_bwd = {}
        for v, layers in enumerate(self.cfg.virtual_ranges):
            cast = weight_quantization(self.cfg, layers)
            if cast:
                first_wait[v] = first_wait.get(v, interned(())) + self.pricer.price(cast)
            late = weight_quantization(self.cfg, layers, backward=True)
            if late:
                self.first_bwd[v] = self._pass_spec(v % pp, self.pricer.price(late), False)
        # the same tasks pass_and_send would add
        fwd_spec = [self._pass_spec(v % pp, self.work[v][0], sends and v < last_v, True)
                    for v in range(last_v + 1)]
        # torch's pipeline runtime gathers the chunks of its window as tasks of their own
        # (``_unshard``): then no forward leads with its gathers
        self.window = unshard_window(self.cfg) if self.gather_once else None
        if self.gather_once and self.window is None:
            # every chunk's first forward leads with its units' gathers
            first_spec = {v: self._pass_spec(v % pp, self.gathered[v][0],
                                             sends and v < last_v, True)
                          for v in range(last_v + 1)}
        else:
            first_spec = {v: self._pass_spec(v % pp, wait + self.work[v][0],
                                             sends and v < last_v, True)
                          for v, wait in first_wait.items()}
        bwd_spec = [self._pass_spec(v % pp, self.work[v][1], sends and v > 0)
                    for v in range(last_v + 1)]
        slow_bwd = [any(size > 1 for _, _, size in self.groups[s]) for s in range(pp)]
        self.lone = lone_pass_specs(self, last_v, first_wait, self._memo)  # combined 1F1B
        return first_fwd_deps, fwd_spec, first_spec, bwd_spec, slow_bwd

    def pipeline(self) -> None:
        """Passes in each stage's schedule order. Tasks must be created after the tasks they
        depend on: walk the per-stage orders round-robin until all are placed. A schedule
        other than Megatron's (``parallel.pipeline_schedule``) is placed by ``pipeline``, but
        torch's looped BFS, whose whole forwards and backwards run here in its own order (its
        framework's passes: FSDP, torch's runtime window), each chunk's gradients reduced after
        its backward of micro-batch 0 (``workload.pipeline_schedules_bfs``)."""
        if self.p.pipeline_schedule not in FB_SCHEDULES:
            from trainsim.pipeline import ScheduledPipeline
            ScheduledPipeline(self).place()
            return
        from trainsim.ds_lockstep import lockstep_applies, lockstep_tasks
        if lockstep_applies(self):  # DeepSpeed's PipelineEngine: step by step
            lockstep_tasks(self)  # type: ignore[arg-type]
            return
        pp, vpp, last_v = self.pp, self.vpp, self.pp * self.vpp - 1
        first_fwd_deps, fwd_spec, first_spec, bwd_spec, slow_bwd = self.pass_specs()
        last_mb = self.last_mb  # a chunk's last backward: its gradients reduced after it
        first_bwd_mb = first_backward_microbatch(self.p.pipeline_schedule, self.m)
        # the first micro-batches' last-stage backwards without the output layer's wgrad
        deferred = self.deferral
        n_deferred = deferred.n if deferred else 0
        deferred_spec = self._pass_spec(last_v % pp, deferred.chunk.bwd, last_v > 0) \
            if deferred else None
        tasks, tags = self.tasks, self.tags
        add_task, add_tag = tasks.append, tags.append
        # read once: the loop below runs per pass (the split backward adds to link_tail in
        # place, so the dict read here sees its entries)
        lone, link_tail, sync_every_mb = self.lone, self.link_tail, self.sync_every_mb
        split_fsdp = self.fsdp and not self.gather_once
        every_mb = self.reduce_every_mb  # each backward reduces its buckets (last_backward)

        def place(spec: tuple, deps: list[int], label: str, tag: int) -> int:
            """Add a pass and its send; returns the task its receiver waits on."""
            stream, duration, segments, detail, send, slows = spec
            add_tag(tag)
            add_task(Task(stream, duration, deps, label, segments, detail, slows))
            i = len(tasks) - 1
            if send is None:
                return i
            add_tag(tag)
            add_task(Task(send[0], send[1], [i], "send " + label, send[2], send[3], send[4]))
            return i + 1

        # by micro-batch * (pp * vpp) + virtual stage: the forward's task, and the tasks the
        # next (forward) and previous (backward) virtual stage wait on; -1 until created
        nv = last_v + 1
        fwd_task, sent_f, sent_b = [-1] * (self.m * nv), [-1] * (self.m * nv), [-1] * (self.m * nv)
        warmup, group = torch_warmup(self.cfg), microbatch_group(self.cfg)  # read once
        orders = [schedule(s, pp, vpp, self.m, self.p.pipeline_schedule, torch_warmup=warmup,
                           group=group) for s in range(pp)]
        # torch's runtime window (``workload.unshard_window``): what each pass is preceded by
        window = self.window
        events = [lowered(o, window)[0] for o in orders] if window is not None else None
        pending: list[dict[int, list[int]]] = [{} for _ in range(pp)]
        cursor = [0] * pp
        remaining = sum(len(o) for o in orders)
        first_b, last_f = unpaired_bounds(orders) if lone else ([], [])
        label = {kind: [pass_labels(kind, c, self.m) for c in range(vpp)] for kind in "FB"}
        label_f, label_b = label["F"], label["B"]
        while remaining:
            progressed = False
            for s in range(pp):
                order, k0 = orders[s], cursor[s]
                k, n = k0, len(order)
                while k < n:
                    kind, mb, chunk = order[k]
                    v = chunk * pp + s
                    at = mb * nv + v
                    if kind == "F":
                        if v > 0:
                            up = sent_f[at - 1]
                            if up < 0:
                                break  # the stage waits for a pass not yet created
                            deps = [up]
                        else:
                            deps = []
                        if mb == 0:
                            deps += first_fwd_deps.get((s, chunk), [])
                        if s in link_tail:  # its gathers queue behind the reductions
                            deps.append(link_tail[s])
                        if events is not None:
                            self.tag = k
                            self._unshard(s, chunk, events[s][k][1], pending[s])
                        spec = first_spec.get(v, fwd_spec[v]) if mb == 0 else fwd_spec[v]
                        if lone and k < first_b[s]:  # a warm-up forward: no partner
                            spec = lone.first.get(v, lone.fwd[v]) if mb == 0 else lone.fwd[v]
                        if spec[4] is None:  # no separate send: the pass is what the next waits on
                            add_tag(k)
                            add_task(Task(spec[0], spec[1], deps, label_f[chunk][mb],
                                          spec[2], spec[3], spec[5]))
                            fwd_task[at] = sent_f[at] = len(tasks) - 1
                        else:
                            sent_f[at] = place(spec, deps, label_f[chunk][mb], k)
                            fwd_task[at] = sent_f[at] - 1
                    else:
                        if v < last_v:
                            up = sent_b[at + 1]
                            if up < 0:
                                break
                            deps = [up, fwd_task[at]]
                        else:
                            deps = [fwd_task[at]]
                        if s in link_tail:
                            deps.append(link_tail[s])
                        if events is not None:
                            self.tag = k
                            self._unshard(s, chunk, events[s][k][1], pending[s])
                        if mb == first_bwd_mb and v in self.first_bwd:  # on the compute stream first
                            lead = self.first_bwd[v]
                            add_tag(k)
                            add_task(Task(lead[0], lead[1], deps, f"te weight transpose "
                                          f"chunk {chunk}", lead[2], lead[3], lead[5]))
                            deps = [*deps, len(tasks) - 1]
                        # ZeRO-3 / FSDP reduce each micro-batch's gradients per unit as its
                        # backward goes (the split pass): every backward but under no-sync
                        if slow_bwd[s] and (mb == last_mb or sync_every_mb or split_fsdp
                                            or every_mb):
                            self.tag = k
                            sent_b[at] = self.backward(s, v, mb, chunk, deps,
                                                       alone=mb == last_mb or bool(
                                                           lone and k > last_f[s]))
                        else:
                            spec = lone.bwd[v] if lone and k > last_f[s] \
                                else bwd_spec[v]  # a cool-down backward runs alone
                            # beside the next forward: only interleaving puts another
                            # virtual stage's forward there (else beside_forward keeps spec)
                            if lone and k <= last_f[s] and vpp > 1:
                                spec = beside_forward(self, spec, v, order, k)
                            if mb < n_deferred and v == last_v:
                                spec = deferred_spec
                            if spec[4] is None:  # place(), inline: no send
                                add_tag(k)
                                add_task(Task(spec[0], spec[1], deps, label_b[chunk][mb],
                                              spec[2], spec[3], spec[5]))
                                sent_b[at] = len(tasks) - 1
                            else:
                                sent_b[at] = place(spec, deps, label_b[chunk][mb], k)
                    k += 1
                if k != k0:
                    cursor[s] = k
                    remaining -= k - k0
                    progressed = True
            if not progressed:  # pragma: no cover - schedules are deadlock-free by construction
                raise RuntimeError("pipeline schedule has a cycle")
        if deferred:
            self._drain(deferred.drain, last_v)

    def _drain(self, drain: Priced, last_v: int) -> None:
        """The deferred output-layer weight gradients, on the last stage's compute stream after
        its last pass (the stage's step behind it); the reductions of its buckets were issued
        at the last backward as without deferral (``deferred_wgrad``)."""
        s = last_v % self.pp
        last = next(i for i in range(len(self.tasks) - 1, -1, -1)
                    if self.tasks[i].stream == (s, "compute"))
        self.tag = AFTER
        self.add((s, "compute"), drain, [last], "deferred output-layer wgrad drain")

    def _unshard(self, s: int, chunk: int, gather: tuple[int, ...],
                 pending: dict[int, list[int]]) -> None:
        """Before stage ``s``'s pass on ``chunk`` under torch's runtime window: the UNSHARDs the
        lowering puts there (each ``gather``ed chunk's unit all-gathers, issued from the compute
        stream: behind the compute enqueued so far on it, none at the step's start), then,
        where the pass's chunk was gathered and not yet waited for, the wait and FSDP2's
        copy-out on the compute stream (``_assert_unsharded``). The chunk's gathers are
        ``pending`` from their UNSHARD to that wait."""
        tasks, compute = self.tasks, (s, "compute")
        behind = next(([i] for i in range(len(tasks) - 1, -1, -1)
                       if tasks[i].stream == compute), [])
        name = self.p.pipeline_schedule
        for c in gather:
            v = virtual_stage(name, s, c, self.pp)  # a V's chunk 1: stage 2 pp - 1 - s
            key = ("unshard", v)
            hit = self._memo.get(key)
            if hit is None:
                hit = self._memo[key] = chunk_unshard(self.cfg, self.pricer, v)
            by_group, _, ops = hit
            pending[c] = [self.add((s, self.reduce_stream(group)), seconds, list(behind),
                                   f"FSDP UNSHARD all-gather {group} chunk {c}", DP)
                          for group, seconds in by_group.items() if seconds > 0]
            for i, group in zip(pending[c], [g for g, t in by_group.items() if t > 0]):
                self.collectives[i] = tuple((op, 1) for op in ops[group])
        waits = pending.pop(chunk, None)
        if waits is not None:
            copies = self._memo[("unshard", virtual_stage(name, s, chunk, self.pp))][1]
            self.add(compute, copies, waits, f"FSDP UNSHARD wait + copy-out chunk {chunk}")

    def gathers_by_bucket(self) -> bool:
        """Whether pipeline rank 0's first chunk is gathered bucket by bucket inside its first
        forward under overlap_param_gather: Megatron-core's DDP (``dp_buckets: first_chunk``)
        unless the interleaved schedule aligns the gathers (profile align_param_gather), and
        a stack that buckets every chunk (``every_chunk``: Megatron-LLaMA's forward pre-hooks
        wait on each leaf module's bucket, e3d671a; its later stages are priced waiting for
        the whole chunk)."""
        return self.p.dp_buckets in ("first_chunk", "every_chunk") and (
            self.vpp == 1 or not profile_supports(self.cfg, "align_param_gather"))

    def _bucketed_first_chunk(self) -> int:
        """Buckets of pipeline rank 0's first chunk under Megatron-core's DDP (see
        ParallelConfig.dp_buckets): ``dp_bucket_count``'s equal slices, gathered in that
        order, not the greedy buckets its last backward and reductions use
        (``ddp_buckets.bucket_ready``; Megatron gathers those in reverse, the word
        embedding's first: tried 2026-11-26, megatron-core 8.2 -> 9.3 %, not landed)."""
        ch = self.chunks[0]
        chunk_params = sum(params for params, _, _ in self.groups[0]) / self.vpp
        return dp_bucket_count(self.cfg, ch.layers, chunk_params, 0, 0)

    def _bucket_gather_wait(self, n: int) -> Priced:
        """Megatron-core's overlap_param_gather on a bucketed chunk: zero_grad dispatches the
        first bucket's all-gather and each bucket's forward pre-hook, once it has waited for
        its own, the next one's (core_v0.8.0 optimizer/distrib_optimizer.py
        ``_finish_param_sync_helper``: never all at once, so as not to block compute kernels
        under CUDA_DEVICE_MAX_CONNECTIONS=1). The first forward waits for the first bucket and
        then only where a gather outlasts the layers before it (``prefetch_exposed_s``)."""
        gathers = [self.param_gathers(0, 1 / self.vpp / n, [], f"chunk 0 bucket {k}")
                   for k in range(n)]
        gather = sum(self.tasks[i].duration_s for i in gathers[0])
        lead, *parts = (part.duration_s for part in self.chunks[0].fwd_parts)
        parts[0] += lead  # the pipe engine's receive gathers (empty here) with the embedding
        per = len(parts) / n
        compute = [sum(parts[round(per * k):round(per * (k + 1))]) for k in range(n)]
        wait = prefetch_exposed_s([gather] * n, compute)
        return interned(((DP, wait, "param all-gather wait"),) if wait > 0 else ())
