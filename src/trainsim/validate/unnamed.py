"""A training row that names no framework (an empty ``framework`` cell; nothing reads it from the
row's source or note): no framework's defaults apply, so the settings on which the frameworks
differ are, like any other empty cell the framework leaves to its user, the authors' choice,
and the tuner takes the fastest that fits in memory (validation README, "Unknown cells").

- Options (an empty ``options`` cell): the overlaps ``UNNAMED_TUNED_OPTIONS``.
- Gradient-reduce dtype (an empty ``grad_reduce_dtype`` cell): fp32 or the run's 16-bit dtype
  (``grad_reduce_candidates``). It sets the gradient buffer's bytes as well as the reduction's,
  so it decides which recompute fits. The frameworks disagree (their profiles'
  ``grad_reduce_dtype``, catalog/frameworks/*.yaml): Megatron-LM forces
  accumulate_allreduce_grads_in_fp32 under --bf16 (megatron-lm.yaml), torchtitan and OLMo-core
  reduce in fp32, NeMo 2's bf16_mixed sets grad_reduce_in_fp32=True
  (nemo/collections/llm/recipes/precision/mixed_precision.py); every NeMo-Framework-Launcher
  24.07 fp8 example passes grad_sync_dtype=bf16 (nemo.yaml), Megatron-Bridge's performance
  recipes grad_reduce_in_fp32=False (megatron-bridge.yaml), MLPerf's NeMo reduces in bf16
  (mlperf-nemo.yaml), Megatron-core's own DistributedDataParallelConfig.grad_reduce_in_fp32
  defaults to False (core_v0.8.0 distributed/distributed_data_parallel_config.py).

Before, such a row ran trainsim's bare defaults: fp32 gradients and no overlap, the untuned
Megatron-LM of 2021, while its recompute, micro-batch, sequence parallelism and distributed
optimizer were tuned. NeMo 24.07's performance-summary rows without their framework came out
+15 to +52 % (benchmarks/RESULTS.md, 2026-11-26 defaults33): fp32 gradient buffers left no
room for the recipes' recompute none, and interleaved pipelines ran without their p2p overlap.
"""

from __future__ import annotations

from trainsim.validate.common import _cell

UNNAMED_TUNED_OPTIONS = ("dp_overlap", "tp_overlap", "pp_overlap")
"""The option switches tuned, each where it can act (``row_settings.tuned_switches``), for a
row that names no framework and states no options: the overlaps the Megatron family offers
(and FSDP engines by construction for DP) and the frameworks set differently by default. DP
overlap: Megatron-core's DistributedDataParallelConfig.overlap_grad_reduce and
overlap_param_gather default False (core_v0.8.0), on in every NeMo-Framework-Launcher 24.07
recipe (optim.overlap_grad_sync / overlap_param_sync, nemo.yaml) and every Megatron-Bridge
recipe (comm_overlap.py _get_optimizer_overlap_cfgs, megatron-bridge.yaml). TP overlap:
Transformer Engine userbuffers (--tp-comm-overlap, NeMo ub_tp_comm_overlap), set recipe by
recipe. PP overlap: overlap_p2p_comm, interleaved pipelines only, on in NeMo's and
Megatron-Bridge's interleaved recipes, off in Megatron-LM's arguments."""


def reduce_16bit(row: dict[str, str]) -> str:
    """The 16-bit gradient-reduce dtype of a row's compute dtype: fp16 for fp16, else bf16 (an
    fp8 run keeps bf16 parameters: Transformer Engine's fp8 is the GEMMs' only)."""
    return "fp16" if (_cell(row, "dtype") or "bf16").lower() == "fp16" else "bf16"


def grad_reduce_candidates(row: dict[str, str]) -> list[str]:
    """The gradient-reduce dtypes tuned for a row that names no framework and leaves
    ``grad_reduce_dtype`` empty: fp32 (the candidate kept on a tie) and the 16-bit one."""
    return ["fp32", reduce_16bit(row)]
