"""Transformer Engine's fp8 delayed-scaling bookkeeping: the per-module scaling updates (TE up
to 1.5) and the amax reductions of each ``fp8_autocast`` region (importable from
``workload.elementwise`` too)."""

from __future__ import annotations

from trainsim.workload.ops import Comm, Elementwise, Op

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


def fp8_amax_reductions(layers: int, group: str = "tp_dp_cp", rank_layers: int | None = None,
                        bulk_update: bool = False) -> tuple[list[Op], list[Op]]:
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
    tensor-and-context-parallel ranks: ``group`` "tp_cp" (the profile's ``fp8_amax_tp_only``).

    ``bulk_update`` (Transformer Engine >= 1.6, PR #575): the global buffer is keyed by the
    recipe and the group only (v1.10, 08a85d3b, fp8.py L147-157 ``get_key_in_buffer``, L378-387
    ``get_unique_autocast_key``), and every module adds its amax to it once
    (``add_fp8_tensors_to_global_buffer`` L168-236), so each reduction carries the amaxes of
    all the rank's fp8 modules, every chunk's (``rank_layers`` layers), not the chunk's alone.
    Each is ``torch.cat`` of the buffer (L338), the all_reduce (L346), and
    ``tex.fused_amax_and_scale_update_after_reduction`` (L356-364) over every module's history,
    scale and inverse: ``fp8_amax_bulk_kernels`` on the compute stream around the
    all_reduce (the same lines at v1.6 L339-353, v1.13 L316-334, v2.2 L357-375, v2.8
    L425-443)."""
    modules = rank_layers if bulk_update and rank_layers else layers
    out: tuple[list[Op], list[Op]] = ([], [])
    for ops, d, b in zip(out, ("fwd", "bwd"), FP8_AMAX_BYTES_PER_LAYER):
        nbytes = float(b * modules)
        cat, update = fp8_amax_bulk_kernels(d, modules, nbytes) if bulk_update else ([], [])
        ops.extend([*cat, Comm(f"fp8_amax_reduce.{d}", "all_reduce", nbytes, group), *update])
    return out


TE_BULK_AMAX = "1.6"
"""The first Transformer Engine release that reduces one bulk buffer per ``fp8_autocast``
exit with a fused update (v1.6rc1, PR #575, 73f8d90fe, 2024-04-12: ``bulk_update``); before
it each module updated its own state (``FP8_SCALE_UPDATE_KERNELS``)."""

TE_MODULES_PER_LAYER = 3
"""Transformer Engine modules of one dense layer under Megatron-core's TE spec, each one
entry of the amax buffer: ``TELayerNormColumnParallelLinear`` (QKV), ``TERowParallelLinear``
(projection) and ``LayerNormMLP`` (FC1 and FC2; the four GEMMs of
``FP8_AMAX_BYTES_PER_LAYER``)."""

CAT_INPUTS_PER_KERNEL = 128
"""``torch.cat`` on CUDA copies up to 128 inputs per kernel (pytorch/pytorch
aten/src/ATen/native/cuda/Shape.cu ``CAT_ARRAY_BATCH_SIZE = 128``; v2.1-v2.9)."""


def fp8_amax_bulk_kernels(direction: str, layers: int,
                          nbytes: float) -> tuple[list[Op], list[Op]]:
    """The compute-stream kernels around one bulk amax reduction (``fp8_amax_reductions``):
    ``torch.cat`` of the modules' current amaxes (one kernel per ``CAT_INPUTS_PER_KERNEL``
    modules; reads and writes ``nbytes``), and the fused update, one kernel for up to 1,023
    modules (TE v1.10 common/recipe/delayed_scaling.cu L60-68 ``AMAX_PARAMS_LIMIT``, 32 KB of
    kernel parameters over 32 bytes each from CUDA 12.1; L385 ``num_kernels``), one thread
    block per module rolling its amax history and writing the scale and its inverse
    (L174-262 ``kernel_bulk``). The history's length is not a config field: the update reads
    and writes one row here (NeMo's recipes keep 1,024 rows: about 1.4 MB for 14 layers'
    forward, under 0.5 us of HBM time on an H100 beside the launch). Both are plain calls from
    Python outside any module or autograd record (``reduce_and_update_fp8_tensors`` runs on
    the amax tensors, which need no gradient): ``py_kernels``, ``compute.host.PY_LAUNCH_S``
    each, not an eager module's ``HOST_S_PER_KERNEL``."""
    modules = max(1, TE_MODULES_PER_LAYER * layers)
    cats, updates = -(-modules // CAT_INPUTS_PER_KERNEL), -(-modules // 1023)
    cat = Elementwise(f"fp8_amax_cat.{direction}", bytes=2 * nbytes, kernels=cats,
                      py_kernels=cats, kernel=FP8_SCALE_UPDATE_KERNEL)
    update = Elementwise(f"fp8_amax_update.{direction}", bytes=2 * nbytes, kernels=updates,
                         py_kernels=updates, kernel=FP8_SCALE_UPDATE_KERNEL)
    return [cat], [update]
