"""What Megatron-FSDP (``optim_grads_params``) runs on the compute stream after each FSDP unit's
backward beyond its reduce-scatter, where the run's recipe turns Transformer Engine's fused
weight-gradient accumulation off (``gradient_accumulation_fusion = False``; profile feature
``megatron_fsdp_unfused_wgrad``).

* **Gradient copy into the bucket.** Without the fusion the weight-gradient GEMM writes a fresh
  16-bit ``param.grad``; the unit's post-backward hook (``_grad_acc``) fetches the unit's
  temporary gradient bucket (``main_grad``) and copies each gradient into it before the bucket
  is reduce-scattered: ``param.main_grad.copy_(param.grad)``, then ``del param.grad``
  (NVIDIA/Megatron-LM@3cdfd613 (core_r0.12, NeMo 25.04) and @03f77931 (core_r0.13, NeMo 25.07)
  megatron/core/distributed/custom_fsdp/fully_sharded_data_parallel.py ``_grad_acc``;
  @d7288711 (Megatron-Bridge v0.4.0's pin) megatron/core/distributed/fsdp/src/megatron_fsdp/
  megatron_fsdp.py ``_grad_acc`` L555-L587, the sharded-gradient branch). The hook runs on the
  current (compute) stream, once per micro-batch: per gradient element the 16-bit gradient read
  and the bucket element written in the reduce dtype; one ``copy_`` kernel per parameter
  tensor. With the fusion on, the GEMM accumulates into the zeroed bucket itself.

The recipes that turn the fusion off under Megatron-FSDP: NVIDIA/NeMo@v2.3.0 scripts/
performance/utils.py ``set_primary_perf_configs`` L313 and @v2.4.0 helpers.py L189;
NVIDIA-NeMo/Megatron-Bridge@v0.2.0-v0.5.0 scripts/performance/configs/llama*/llama*_llm_pretrain.py
("Disabled to avoid functional errors"), after ``set_workload_base_configs`` (whose FSDP
override turns it on); @v0.1.0rc3 keeps it on (utils/helpers.py L78). Op lists only;
``sharded_passes`` places them.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Elementwise, Op
from trainsim.workload.sharding import _grad_tensors, fsdp_grad_bytes

GRAD_COPY = "megatron_fsdp_grad_copy"
"""Name of the post-backward copy of the unfused weight gradients into the gradient bucket."""


def applies(cfg: RunConfig) -> bool:
    """Whether the run is Megatron-FSDP (Megatron's data parallelism at zero stage 3 over more
    than one rank) with the fused weight-gradient accumulation off: as the run states it
    (``training.gradient_accumulation_fusion``), else as its framework's recipe sets it."""
    p = cfg.parallel
    fusion = cfg.training.gradient_accumulation_fusion  # the run's, else the recipe's
    return p.data_parallel_impl == "megatron" and p.zero_stage >= 3 and cfg.shard_ranks > 1 \
        and (not fusion if fusion is not None
             else profile_supports(cfg, "megatron_fsdp_unfused_wgrad"))


def grad_copies(cfg: RunConfig, layers: range | list[int], first: bool, last: bool
                ) -> list[Op]:
    """The post-backward copies of one micro-batch's backward of a virtual stage's units
    (``layers``, with the embedding and output matrices of the first and last stage): per
    gradient element read 2 bytes, write the reduce dtype's; one kernel per tensor. Empty where
    ``applies`` does not."""
    if not applies(cfg):
        return []
    tensors = _grad_tensors(cfg, layers, first, last)
    if not tensors:
        return []
    width = fsdp_grad_bytes(cfg)["dp_cp"]
    return [Elementwise(GRAD_COPY, bytes=(ACT + width) * sum(tensors), kernels=len(tensors),
                        kernel="copy")]
