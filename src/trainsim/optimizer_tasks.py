"""The end of one iteration's task graph, per pipeline stage: the data-parallel gradient
reduction (bucketed, overlapped with the last backward where the framework does), the tied-
embedding all-reduce, LAMB's norms, the optimizer step with ``zero_grad_buffer``'s rest, and
the parameter all-gather after the step. A mixin of ``simulator._TaskGraph``, which builds the
pipeline passes these tasks wait on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import framework_supports
from trainsim.compute.host import loop_host_s
from trainsim.pricing import COMPUTE, DP, OPT, Priced
from trainsim.workload.fp8_gather import amax_all_reduce_bytes
from trainsim.workload.fsdp_optimizer import fsdp_optimizer_pieces, per_tensor_optimizer
from trainsim.workload.ops import Comm
from trainsim.workload.optimizer_impl import run_optimizer_step
from trainsim.workload.pipe_engine import deepspeed_lockstep
from trainsim.workload.pipeline_schedules import rank_chunks
from trainsim.workload.sharding import grad_buffer_rest, unsharded_clip, zero1_gather_copies
from trainsim.workload.vocab import rank_vocab
from trainsim.workload.zero1_broadcast import (
    busiest_owner,
    owner_loads,
    owner_tensors,
    stage_tensors,
)
from trainsim.workload.zero3_persistent import zero3_persistent_regather

if TYPE_CHECKING:
    from trainsim.chunks import Chunk
    from trainsim.config import ParallelConfig, RunConfig
    from trainsim.engine import Task
    from trainsim.pricing import Pricer
    from trainsim.workload.ops import Elementwise

BEFORE, AFTER = -1, 1 << 60
"""Schedule-position tags of the tasks placed before any pass and after every pass."""

LAMB_NORMS_PER_LAYER = 16
"""Parameter tensors of one transformer layer whose norms LAMB needs (weights, biases and norm
scales; a GPT layer has 12, a Llama layer 9, MoE routers and MLA more): with a sharded
optimizer every norm is a sum over data-parallel shards, one fp32 all-reduce for the weight
norms and one for the update norms."""


class OptimizerTasks:
    """Per stage, what runs after its last backward: gradient reductions, the optimizer step
    and the parameter all-gather (the ``_TaskGraph`` methods of data parallelism)."""

    cfg: RunConfig
    p: ParallelConfig
    pricer: Pricer
    pp: int
    vpp: int
    tag: int
    zero: int
    fsdp: bool
    reduce_every_mb: bool
    grad_bytes: int
    tasks: list[Task]
    chunks: dict[int, Chunk]
    groups: list[list[tuple[float, str, int]]]
    gather_width: list[dict[str, float]]
    last_bwd: dict[int, list[int]]
    bucket_shares: dict[int, tuple[tuple[float, float], ...]]
    fsdp_reduce: dict[int, list[int]]

    if TYPE_CHECKING:
        def add(self, stream: tuple[int, str], priced: Priced | float, deps: list[int],
                label: str, cat: str = COMPUTE) -> int: ...

        def comm(self, s: int, name: str, kind: str, size: float, group: str, deps: list[int],
                 label: str, count: int = 1) -> int: ...

        def fixed_buckets(self, params: float) -> int: ...

        def param_gathers(self, s: int, fraction: float, deps: list[int], label: str
                          ) -> list[int]: ...

    def optimizer_step(self, s: int) -> Priced | float:
        """Stage ``s``'s optimizer step, a task on its compute stream."""
        cfg = self.cfg
        if framework_supports(cfg.training.framework, cfg.training.framework_version,
                              "per_tensor_optimizer"):
            priced = self.pricer.price_ops(per_tensor_optimizer(
                fsdp_optimizer_pieces(cfg, s), "dp_cp"))[0]
            return Priced(tuple((OPT, t, name) for _, t, name in priced.segments))
        local = sum(params / (size if self.zero >= 1 else 1) for params, _, size in self.groups[s])
        if self.zero >= 1 and self.p.data_parallel_impl == "ddp":  # whole tensors: the busiest
            local = sum(params for params, _, _ in self.groups[s]) * busiest_owner(cfg, s)[0]
        return self.pricer.compute.time(run_optimizer_step(cfg, local, s))

    def step_tasks(self, s: int) -> list[tuple[Priced | float, str, str]]:
        """Stage ``s``'s compute tasks after its reductions: the step, then zero_grad_buffer's."""
        out = [(self.optimizer_step(s), "optimizer step", OPT)]
        local = sum(params / (size if self.zero >= 1 else 1)
                    for params, _, size in self.groups[s])  # what this rank's step updates
        total = sum(params for params, _, _ in self.groups[s])
        clip = unsharded_clip(self.cfg, total, local)
        if clip is not None:
            out.append((self.pricer.compute.time(clip), "gradient clip beyond the shard",
                        COMPUTE))
        rest = grad_buffer_rest(self.cfg, total, local, self.grad_bytes)
        if rest is not None:
            out.append((self.pricer.compute.time(rest), "zero_grad_buffer", COMPUTE))
        regather = zero3_persistent_regather(self.cfg, self.stage_layers(s)[1], s == self.pp - 1)
        if regather:  # DeepSpeed ZeRO-3's _post_step
            out.append((self.pricer.price(regather), "ZeRO-3 persistent parameters gathered",
                        COMPUTE))
        return out

    def stage_layers(self, s: int) -> tuple[tuple[int, ...], list[int]]:
        """Stage ``s``'s virtual chunks under the run's schedule and the layers they hold."""
        chunks = rank_chunks(self.p.pipeline_schedule, s, self.pp, self.vpp)
        return chunks, [i for v in chunks for i in self.cfg.virtual_ranges[v]]

    def gather_copies(self, s: int) -> Elementwise | None:
        """Stage ``s``'s copies around its list all-gather of the parameters after the step
        (``workload.sharding.zero1_gather_copies``), on the compute stream once the gathers
        are done, as long as the longer of its GPU time and its Python loop's host time; None
        where the profile has none."""
        chunks, layers = self.stage_layers(s)
        ranks = max((size for _, group, size in self.groups[s] if group == "dp_cp"), default=1)
        return zero1_gather_copies(self.cfg, layers, 0 in chunks,
                                   self.pp * self.vpp - 1 in chunks, ranks)

    def param_syncs(self, s: int, deps: list[int], label: str) -> list[int]:
        """Stage ``s``'s parameter exchange after the step (ZeRO-1/2 without the gather
        overlap): the all-gathers of every group's shards, or (``parallel.zero1_param_sync``
        broadcast) one task per group of its owners' broadcasts in series."""
        if self.p.zero1_param_sync != "broadcast":
            return self.param_gathers(s, 1.0, deps, label)
        chunks, layers = self.stage_layers(s)
        tensors = stage_tensors(self.cfg, layers, 0 in chunks, self.pp * self.vpp - 1 in chunks)
        out = []
        for (params, group, size), own in zip(self.groups[s], tensors):
            if size <= 1 or params <= 0:
                continue
            width = self.gather_width[s][group]
            if self.p.data_parallel_impl == "ddp":  # ZeroRedundancyOptimizer: a broadcast
                # per tensor from its owner (workload.zero1_broadcast)
                loads = [n for owned in owner_tensors(own, size) for n in owned]
                what = f"{len(loads)} tensors from their owners of {size} ranks"
            else:
                loads = owner_loads(own, size)
                what = f"{len(loads)} owners of {size} ranks"
            ops = tuple(Comm("param_broadcast", "broadcast", n * width, group)  # type: ignore
                        for n in loads)
            seconds = sum(self.pricer.comm_time(op) for op in ops)
            out.append(self.add((s, "dp"), seconds, deps, f"param broadcast {group} {label}: "
                                f"{what}, one after another", DP))
            self.collectives[out[-1]] = tuple((op, 1) for op in ops)
        return out

    def amax_all_reduces(self, s: int, step: int) -> list[int]:
        """Stage ``s``'s all-reduces of its fp8 weights' amaxes after the step (``step``), one
        per data-parallel group that has more than one rank (``workload.fp8_gather.
        amax_all_reduce_bytes``): Megatron-core's distributed optimizer under fp8_param_gather,
        where the profile has ``fp8_param_amax_all_reduce``. In series: torch.distributed makes
        the compute stream wait for each before the next kernel."""
        cfg = self.cfg
        if self.zero not in (1, 2) or self.fsdp or self.p.data_parallel_impl != "megatron" or \
                not framework_supports(cfg.training.framework, cfg.training.framework_version,
                                       "fp8_param_amax_all_reduce"):
            return []
        out, dep = [], step  # the rank's own layers: each counted by its kind
        for nbytes, (_, group, size) in zip(amax_all_reduce_bytes(cfg, self.stage_layers(s)[1]),
                                            self.groups[s]):
            if size > 1 and nbytes > 0:
                dep = self.comm(s, "fp8_amax_all_reduce", "all_reduce", nbytes, group, [dep],
                                f"fp8 amax all-reduce {group}")
                out.append(dep)
        return out

    def tied_first(self, last_compute: dict[int, int]) -> dict[int, int]:
        """Under DeepSpeed's PipelineEngine (``workload.pipe_engine.deepspeed_lockstep``), the
        tied embedding all-reduce of the first and the last stage, each by stage, as the
        engine runs it: ``TrainSchedule``'s last step is ``ReduceTiedGrads``, then
        ``ReduceGrads``, then ``OptimizerStep`` (microsoft/DeepSpeed v0.5.10, 3293cf72,
        deepspeed/runtime/pipe/schedule.py L235-237), and ``_exec_reduce_tied_grads``
        all-reduces over the tied group (engine.py L233-244; module.py L416-420
        ``allreduce_tied_weight_gradients``, a blocking ``dist.all_reduce``): both sides start
        once both stages ended their last backward, and each stage's data-parallel reduction
        waits for it. Empty elsewhere (the all-reduce is then priced per stage after its own
        last task, beside the data-parallel one)."""
        cfg, pp = self.cfg, self.pp
        if not (cfg.model.tied_embeddings and pp > 1 and deepspeed_lockstep(cfg)):
            return {}
        size = rank_vocab(cfg) * cfg.model.hidden_size * self.grad_bytes
        both = [last_compute[0], last_compute[pp - 1]]
        return {s: self.comm(s, "embedding_grad", "all_reduce", size, "embd", both,
                             "tied embedding all-reduce") for s in (0, pp - 1)}

    def optimizer_steps(self) -> list[int]:
        """Per stage: gradient reduction (bucketed; overlapped with the last backward when
        overlap_grad_reduce), tied-embedding all-reduce, optimizer step, parameter all-gather.
        Returns the last task of each stage."""
        cfg, p, pp, vpp = self.cfg, self.p, self.pp, self.vpp
        self.tag = AFTER
        last_compute: dict[int, int] = {}  # per stage, its last compute task: from the end
        for i in range(len(self.tasks) - 1, -1, -1):
            stage, kind = self.tasks[i].stream
            if kind == "compute" and stage not in last_compute:
                last_compute[stage] = i
                if len(last_compute) == pp:
                    break
        kind = "all_reduce" if self.zero == 0 or (
            self.zero == 1 and p.zero1_grad_reduce == "all_reduce") else "reduce_scatter"
        ends = []
        tied = self.tied_first(last_compute)
        for s in range(pp):
            last = last_compute[s]
            dp_tasks = list(self.fsdp_reduce[s])
            if s in tied:  # DeepSpeed: the data-parallel reduction after the tied one
                last = tied[s]
            # Buckets are reduced in the order the backward makes them ready (DDP's gradient
            # hooks): under the interleaved schedule the last chunk finishes its backward first,
            # so its reduction overlaps the other chunks' last backward passes.
            buckets = []
            # (every backward's buckets already reduced as they became ready: fsdp_reduce)
            for c in range(0 if self.fsdp or self.reduce_every_mb else vpp):
                ready = self.last_bwd.get(c * pp + s, [last])
                shares = self.bucket_shares.get(c * pp + s)
                if shares is not None and len(shares) != len(ready):  # a pass not split
                    shares = None
                for k, r in enumerate(ready):
                    # CUDA_LAUNCH_BLOCKING: the backward cannot go on beside a reduction
                    overlap = p.overlap_grad_reduce and not cfg.training.cuda_launch_blocking
                    dep = r if overlap else last
                    buckets.append((dep, c, k, len(ready), shares))
            for dep, c, k, n_ready, shares in sorted(buckets, key=lambda b: b[:3]):
                for params, group, size in self.groups[s]:
                    # each part's buckets of the dense and the expert buffer
                    # (``ddp_buckets.bucket_ready``; a pass not split: the whole chunk)
                    part = params / vpp / n_ready if shares is None else \
                        params / vpp * shares[k][group == "edp"]
                    if size > 1 and part > 0:
                        # a whole-gradient all-reduce spans every data-parallel rank, past
                        # the replicas of a zero1 group (InternEvo: ParallelMode.DATA)
                        over = "dp" if kind == "all_reduce" and group == "dp_cp" and \
                            p.dp_replicate > 1 else group
                        dp_tasks.append(self.comm(
                            s, "grad_reduce", kind, part * self.grad_bytes, over, [dep],
                            f"grad {kind} {over} c{c} b{k}", self.fixed_buckets(part)))
            if cfg.model.tied_embeddings and pp > 1 and s in (0, pp - 1) and not tied:
                size = rank_vocab(cfg) * cfg.model.hidden_size * self.grad_bytes
                dp_tasks.append(self.comm(s, "embedding_grad", "all_reduce", size, "embd", [last],
                                          "tied embedding all-reduce"))
            if cfg.training.optimizer == "lamb" and self.zero >= 1:
                layers = sum(self.chunks[c * pp + s].layers for c in range(vpp))
                norms = (layers * LAMB_NORMS_PER_LAYER + 2) * 4
                for group in dict.fromkeys(g for _, g, n in self.groups[s] if n > 1):
                    for what in ("weight", "update"):
                        dp_tasks.append(self.comm(s, "lamb_norms", "all_reduce", norms, group,
                                                  [last], f"LAMB {what} norms {group}"))
            (step, label, cat), *more = self.step_tasks(s)
            end = self.add((s, "compute"), step, [last] + dp_tasks, label, cat)
            for reduce in self.amax_all_reduces(s, end):  # blocking: the stream waits on it
                end = reduce
            for priced, label, cat in more:
                end = self.add((s, "compute"), priced, [end], label, cat)
            if self.zero in (1, 2) and not p.overlap_param_gather and not self.fsdp:
                gathers = self.param_syncs(s, [end], "after the step")
                for g in gathers:
                    end = g
                copies = self.gather_copies(s)
                if copies is not None and gathers:
                    # the loop in series after the gathers: its slices come before the
                    # gathers' launch, its copies beside them (an upper bound of the wait)
                    gpu = self.pricer.compute.time(copies)
                    host_s = loop_host_s(copies) if self.pricer.host_s_per_kernel else 0.0
                    end = self.add((s, "compute"), max(gpu, host_s), gathers,
                                   "parameter all-gather copies", OPT)
            ends.append(end)
        return ends
