"""Which optimizer step a run takes: its framework's Adam implementation (profile
``optimizer_impl``: fused, foreach or a per-tensor loop), how many parameter tensors a loop
walks, and whether the loop clips gradients first (``training.no_grad_clip``). One place for
the simulator's task graph, the search's speed bound and the SimAI export."""

from __future__ import annotations

from trainsim.catalog.frameworks import framework_feature
from trainsim.config import RunConfig
from trainsim.workload.elementwise import optimizer_step
from trainsim.workload.fsdp_optimizer import fsdp_optimizer_pieces
from trainsim.workload.ops import Elementwise
from trainsim.workload.zero1_broadcast import busiest_owner


def optimizer_impl(cfg: RunConfig) -> str:
    """The framework profile's ``optimizer_impl`` for this run; ``fused`` where it records
    none or the run names no framework (the behaviour before the feature existed)."""
    tr = cfg.training
    if not tr.framework:
        return "fused"
    return framework_feature(tr.framework, tr.framework_version, "optimizer_impl") or "fused"


def run_optimizer_step(cfg: RunConfig, local_params: float, stage: int = 0) -> Elementwise:
    """The optimizer step of pipeline stage ``stage`` over ``local_params`` parameters, as the
    run's framework and loop take it (``workload.elementwise.optimizer_step``)."""
    impl = optimizer_impl(cfg)
    tensors = 1
    if impl == "for_loop" and cfg.parallel.data_parallel_impl == "ddp" \
            and cfg.parallel.effective_zero_stage:  # ZeroRedundancyOptimizer: whole tensors
        tensors = busiest_owner(cfg, stage)[1]
    elif impl == "for_loop":
        tensors = len(fsdp_optimizer_pieces(cfg, stage))
    return optimizer_step(local_params, cfg.training.optimizer,
                          cfg.parallel.data_parallel_impl != "ddp", impl=impl, tensors=tensors,
                          clip=not cfg.training.no_grad_clip)
