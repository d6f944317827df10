"""The output layer's deferred weight gradient (Megatron-core ``defer_embedding_wgrad_compute``,
NeMo's MLPerf GPT-3 from v4.0, NeMo's Launcher and NeMo 2 performance recipes): on the last
pipeline stage the first ``wgrad_deferral_limit`` micro-batches (0: all;
``catalog.framework_rules.deferred_microbatches``) run a backward without the output layer's
weight-gradient GEMM and its input's sequence-parallel re-gather; their inputs and output
gradients are kept, and after the schedule one task on that stage's compute stream computes
them all (``workload.head.deferred_wgrad_ops``), in the cool-down's idle time of the last stage;
the stage's step waits for it. The data-parallel reduction of the bucket that holds the output
weight does not: a deferred backward still returns a (dummy) weight gradient (Megatron-LM
7094270c6f tensor_parallel/layers.py L521-551), so Megatron-core's DDP hook marks the weight
ready and the bucket group's reduction starts at the last micro-batch's backward
(distributed/param_and_grad_buffer.py L419-436), and the schedule calls each chunk's
``grad_sync_func`` before ``finish_embedding_wgrad_compute`` (schedules.py L1070-1076,
L1557-1576; Megatron-LM issue #1012 reports the order, closed unchanged). NeMo 1 with Apex's
distributed Adam is the same: its ``grad_sync_func`` (NVIDIA/NeMo v2.0.0 megatron_gpt_model.py
L685, ``reduce_overlap_gradients``: Apex ``try_grad_sync``, megatron_base_model.py L681-693)
runs in the schedule, before megatron_gpt_model.py L886 drains and L907
``_finish_bucket_grad_sync`` waits. ``simulator._TaskGraph`` reads :func:`deferral` once;
``pipeline_passes`` places the passes and the drain."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from trainsim.catalog.framework_rules import deferred_microbatches
from trainsim.errors import ConfigError
from trainsim.workload.head import deferred_wgrad_ops, head_backward, head_forward
from trainsim.workload.pipe_engine import deepspeed_loss_read
from trainsim.workload.schedule import combined_1f1b
from trainsim.workload.shard import shard_of

if TYPE_CHECKING:
    from trainsim.chunks import Chunk
    from trainsim.config import RunConfig
    from trainsim.pricing import Priced, Pricer


def deferral_problem(cfg: RunConfig) -> str | None:
    """Why the run's output-layer deferral (stated, or its profile's default at this batch:
    ``deferred_microbatches``) cannot be priced, from the config alone, or None: the service
    refuses such a job before queueing it, in the words :func:`deferral` raises (robust63: it
    queued ``zb_h1`` under mlperf-nemo's default, refused only when priced)."""
    if not deferred_microbatches(cfg, cfg.num_microbatches):
        return None
    p = cfg.parallel
    said = "" if p.defer_embedding_wgrad_compute is not None else \
        f" (on by default under training.framework={cfg.training.framework} at this batch)"
    if p.pipeline_schedule not in (None, "1f1b", "interleaved_1f1b") or \
            p.effective_zero_stage == 3 or combined_1f1b(cfg) or cfg.model.mtp_num_layers \
            or deepspeed_loss_read(cfg):
        return (f"parallel.defer_embedding_wgrad_compute{said} is modelled under Megatron's "
                "1F1B / interleaved schedules without ZeRO-3, combined 1F1B or MTP layers; set "
                "it false")
    if cfg.training.gradient_accumulation_fusion is False:
        # Megatron-LM 7094270c6f model_parallel_config.py L372-376 refuses it (the drain
        # accumulates into main_grad with the fused wgrad GEMM)
        return (f"parallel.defer_embedding_wgrad_compute{said} needs gradient accumulation "
                "fusion; training.gradient_accumulation_fusion is false")
    return None


@dataclass(frozen=True, eq=False)
class Deferral:
    """The deferral of one iteration's graph: ``n`` micro-batches (the first ``n``) run the
    last virtual stage as ``chunk`` (its head's backward without the weight gradient), and
    ``drain`` computes the iteration's deferred weight gradients after the schedule."""

    n: int
    chunk: Chunk
    drain: Priced


def deferral(cfg: RunConfig, pricer: Pricer, chunks: dict[int, Chunk], m: int,
             memo: dict) -> Deferral | None:
    """The deferral of an iteration of ``m`` micro-batches, or None where the run defers
    nothing; ``memo``: the pricer's shared dict (one priced drain per count)."""
    total = deferred_microbatches(cfg, cfg.num_microbatches)
    if not total:
        return None
    # where every micro-batch defers, a truncated run of the steady state (``steady_state``)
    # defers each of its own and drains the iteration's: the iteration less whole periods
    n = m if total == cfg.num_microbatches else min(total, m)
    if problem := deferral_problem(cfg):
        raise ConfigError(problem)
    key = ("deferred_wgrad", n, total)
    hit = memo.get(key)
    if hit is None:
        sh = shard_of(cfg)
        fwd = head_forward(cfg, sh)
        last = chunks[len(chunks) - 1]
        head = pricer.price(head_backward(cfg, sh, fwd, deferred=True))
        hit = memo[key] = Deferral(n, replace(last, bwd_head=head),
                                   pricer.price(deferred_wgrad_ops(cfg, sh, fwd, total)))
    return hit

