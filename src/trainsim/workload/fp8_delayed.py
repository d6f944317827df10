"""Transformer Engine's fp8 delayed-scaling bookkeeping: the per-module scaling updates (TE up
to 1.5) and the amax reductions of each ``fp8_autocast`` region (importable from
``workload.elementwise`` too)."""

from __future__ import annotations

from trainsim.workload.ops import Comm, Elementwise

FP8_SCALE_UPDATE_KERNEL = "fp8_scale_update"
FP8_SCALE_UPDATE_KERNELS = 3
"""Kernels one Transformer Engine module launches to update its fp8 delayed-scaling state at
the start of its forward (``TransformerEngineBaseModule.prepare_forward``) and again at the
start of its backward (``_prepare_backward``) up to TE 1.5 (NVIDIA/TransformerEngine@09ba842,
pytorch/module/base.py and fp8.py, unchanged through v1.5): the reduced amax copied back into
the module's history (``copy_amax_from_global_buffer``, one copy) and ``amax_and_scale_update``,
whose ``_fused_amax_and_scale_update`` is compiled by ``torch.compile`` (``jit_fuser``,
pytorch/jit.py): the max over the history with the scale and its inverse fused behind it, and
the rolled history (Inductor may fold the roll into the reduction: 2-3 kernels). The tensors
are a few KB; the cost is the launches. TE 1.6 (PR #575) replaced the per-module updates by
one fused update of all modules' tensors at each ``fp8_autocast`` exit."""


def fp8_scale_update_op(name: str) -> Elementwise:
    """One module's fp8 scaling update (``FP8_SCALE_UPDATE_KERNELS``); the backward's own update
    is placed by ``workload.layers.backward_of``, at the start of the module's backward."""
    return Elementwise(f"{name}.fp8_scale_update", bytes=0.0,
                       kernels=FP8_SCALE_UPDATE_KERNELS, kernel=FP8_SCALE_UPDATE_KERNEL,
                       bwd_bytes=0.0, bwd_kernels=0)


FP8_AMAX_BYTES_PER_LAYER = (4 * 3 * 4, 4 * 2 * 4)
"""fp32 amaxes one dense layer's four fp8 GEMMs (QKV, projection, FC1, FC2) hand to the
reduction: three per GEMM forward (input, weight, output), two backward (output and input
gradients): Transformer Engine's ``fp8_meta`` scaling_fwd / scaling_bwd amax history rows
(v1.0-v1.6, module/base.py ``set_meta_tensor``). Bytes hardly matter: the reduction is latency
bound."""


def fp8_amax_reductions(layers: int, group: str = "tp_dp_cp") -> tuple[list[Comm], list[Comm]]:
    """The fp8 delayed-scaling amax reductions of one model chunk's forward and backward.

    With a ``DelayedScaling`` recipe (``reduce_amax`` True by default) Transformer Engine
    max-reduces the amaxes of every fp8 module of an ``fp8_autocast`` region over the region's
    ``fp8_group`` once when the region exits in the forward (``fp8_autocast_exit``), and once
    when the region's first module finishes its backward (NVIDIA/TransformerEngine@09ba842
    pytorch/fp8.py ``global_amax_reduction``, module/base.py ``_prepare_backward``;
    v1.6 fp8.py ``reduce_and_update_fp8_tensors``, module/linear.py). The all_reduce is
    issued with ``async_op=False`` (09ba842: NVTE_ASYNC_AMAX_REDUCTION unset; v1.6: always),
    so the compute stream waits for it. Megatron and NeMo run one region per model chunk with
    ``fp8_group`` the tensor-and-data-parallel group (Megatron-LM core_v0.4.0
    megatron/core/parallel_state.py ``get_amax_reduction_group``; with context parallel,
    ``with_context_parallel=True``): every rank of the pipeline stage. At 10,000 GPUs that is
    a 1,000-rank tree all_reduce (~0.14 ms) per chunk per micro-batch, twice. TE < 1.6 could
    keep it to the TP group and asynchronous (NVTE_DP_AMAX_REDUCE_INTERVAL=0,
    NVTE_ASYNC_AMAX_REDUCTION=1: the framework profile's ``fp8_amax_tp_async``), and then it
    is not priced. Megatron-core's ``tp_only_amax_red`` (core_v0.11.0 parallel_state.py
    ``get_amax_reduction_group``, transformer_block.py L523-524) narrows ``fp8_group`` to the
    tensor-and-context-parallel ranks: ``group`` "tp_cp" (the profile's ``fp8_amax_tp_only``)."""
    fwd, bwd = (Comm(f"fp8_amax_reduce.{d}", "all_reduce", float(b * layers), group)
                for d, b in zip(("fwd", "bwd"), FP8_AMAX_BYTES_PER_LAYER))
    return [fwd], [bwd]
