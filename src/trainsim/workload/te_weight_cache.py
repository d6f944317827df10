"""Transformer Engine's fp8 weight workspace, quantized once per iteration (profile feature
``te_weight_cache``).

Megatron-core's TE wrappers pass ``is_first_microbatch`` to every TE linear: True on the first
micro-batch of an iteration, False after (NVIDIA/Megatron-LM@03f77931 megatron/core/extensions/
transformer_engine.py L279-L283, L463-L467; ``MegatronModule.set_is_first_microbatch``, module.py
L90-L102). A TE module whose weight is a 16-bit parameter quantizes it into a cached fp8
workspace when that flag is True and reuses the workspace on later micro-batches
(NVIDIA/TransformerEngine@f05f12c9 (v2.5) pytorch/module/linear.py L230-L236 ``update_workspace
= is_first_microbatch is None or is_first_microbatch``, ``cache_name="weight"``; module/base.py
``get_weight_workspace`` L1244-L1354: ``quantize_`` into the cached tensor). So once per
iteration each rank casts every fp8 matmul weight it computes with, the same cast as an
activation's (the recipe's amax pass, the row-wise data, and the column-wise copy for the dgrad
GEMM where the tensor cores take fp8 only in the TN layout: ``workload.shard.Shard.
fp8_cast_bytes``), on the compute stream inside the first forward of each module. Under
Megatron-FSDP that is every weight of the unsharded layers the rank gathers, not a shard.

Weights kept in fp8 (``fp8_param_gather``: TE quantized parameters) are not cast here: TE returns
them as they are (base.py L1284-L1291); the optimizer step quantizes their shards instead. Each
step invalidates their transposes (Megatron-LM@3cdfd613 megatron/core/fp8_utils.py
``_quantize_param_shard_impl`` L170 ``model_param._reset_caches()``; TE >= 2.3's
``cast_master_weights_to_fp8`` the same), so where the fp8 GEMMs take only the TN layout the
first forward of each per-tensor scaled weight makes its transpose again for the dgrad GEMM
(TransformerEngine@bee4649c pytorch/tensor/float8_tensor.py ``update_usage`` L431-L466:
``_create_transpose`` = ``tex.fp8_transpose`` unless ``non_tn_fp8_gemm_supported()``).

Where each Transformer Engine release makes them (the profile's ``te_version``):

* 16-bit weights, every release read: the cast and its transpose (column-wise copy) together
  in the module's first forward of the step (TE@09ba842 linear.py L92, L145-147
  ``fp8_cast_transpose_fused``; v1.6rc1 9e4091e7 linear.py L149-167; v1.8 linear.py L996-1006
  ``get_fp8_workspace(with_transpose=...)``; v2.8 linear.py L243-263 ``get_weight_workspace``
  with the quantizer's column-wise usage). MXFP8 quantizes both layouts from the 16-bit weight
  there too (``fp8_cast_bytes``).
* fp8 parameters before TE 1.8: each module's backward makes the transpose
  (v1.6rc1 9e4091e7 linear.py L362-365, layernorm_linear.py L380-381, layernorm_mlp.py
  L606-611 ``transpose_2d(cache=ctx.is_first_microbatch is not None)``; v1.7 the same), cached
  until the optimizer writes the weight (float8_tensor.py L466-509, ``_reset_caches`` L540-545;
  NeMo v2.0.0.rc0.beta core/optim/distributed_adam.py L555-560 after each parameter sync): in
  each chunk's first backward of the step (:data:`TE_FORWARD_TRANSPOSE`).
* fp8 parameters from TE 1.8: the module's first forward fills the cache (v1.8 linear.py
  L983-995 ``transpose_2d(fill_cache=True)`` when ``is_first_microbatch``; b1a0e0a7, PR 820,
  2024-05-29); from TE 2.0 the forward's ``update_usage(columnwise_usage=True)`` (v2.8
  linear.py L392-395, tensor/_internal/float8_tensor_base.py L191-229) on the invalidated
  cache, the same place.
* MXFP8 parameters (TE >= 2.11, d126cdd6): the optimizer's cast writes both layouts
  (TransformerEngine@d0067d0d pytorch/tensor/utils.py L1015-1146): no transpose.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainsim.catalog.frameworks import framework_feature, profile_supports, te_at_least
from trainsim.config import RunConfig
from trainsim.config.hybrid import layer_kind
from trainsim.workload.fp8_gather import fp8_weight_shapes, fp8_weights_gathered
from trainsim.workload.ops import NVFP4_ELEMENT_BYTES, Elementwise, Op
from trainsim.workload.shard import (
    CAST_KERNEL,
    FP8_TRANSPOSE_BYTES,
    FP8_TRANSPOSE_KERNEL,
    shard_of,
)

WEIGHT_QUANTIZE = "te_weight_quantize"
"""Name of the once-per-iteration cast of a stage's 16-bit matmul weights into TE's cache."""


WEIGHT_TRANSPOSE = "te_weight_transpose"
"""Name of the once-per-iteration transpose of a stage's fp8 parameters (``fp8_param_gather``)."""


TE_FORWARD_TRANSPOSE = "1.8"
"""The first Transformer Engine release whose modules make a cached fp8 parameter's transpose in
the step's first forward (TransformerEngine@b1a0e0a7, 2024-05-29, "Refactor FP8 workspaces in
linear modules", between v1.7 and v1.8); before it the first backward made it. A profile with
no ``te_version`` is taken as this release or later."""


def transposes_in_backward(cfg: RunConfig) -> bool:
    """Whether the run's fp8 parameter transposes (:func:`transposes`) are made in each chunk's
    first backward of the step rather than its first forward: a recorded ``te_version`` before
    :data:`TE_FORWARD_TRANSPOSE`."""
    t = cfg.training
    return transposes(cfg) and framework_feature(
        t.framework, t.framework_version, "te_version") is not None and \
        not te_at_least(t.framework, t.framework_version, TE_FORWARD_TRANSPOSE)


def transposes(cfg: RunConfig) -> bool:
    """Whether the run's fp8 parameters get their transposes made again every iteration: fp8
    weights kept as per-tensor scaled TE tensors on TN-only fp8 GEMMs (``Shard.
    fp8_gathered_transpose``), in a framework whose TE modules cache weights
    (``te_weight_cache``: Megatron-core's). NVFP4 weights in Megatron-core's packed buffer
    (profile ``nvfp4_param_buffer``) likewise: the buffer holds their row-wise data, and after
    each all-gather ``post_all_gather_processing`` makes the column-wise copy the dgrad GEMM
    takes (Megatron-LM@d0b3b775 distributed/param_and_grad_buffer.py L311;
    TransformerEngine@d0067d0d pytorch/tensor/utils.py L1404-1450,
    ``_nvfp4_2d_multi_tensor_transpose``)."""
    t = cfg.training
    if t.dtype != "fp8" or not fp8_weights_gathered(cfg) or \
            not profile_supports(cfg, "te_weight_cache"):
        return False
    if t.fp8_recipe == "nvfp4":
        return bool(profile_supports(cfg, "nvfp4_param_buffer"))
    return shard_of(cfg).fp8_gathered_transpose


def applies(cfg: RunConfig) -> bool:
    """Whether the run casts 16-bit matmul weights into TE's fp8 workspace each iteration."""
    t = cfg.training
    return t.dtype == "fp8" and not fp8_weights_gathered(cfg) and \
        profile_supports(cfg, "te_weight_cache")


def weight_quantization(cfg: RunConfig, layers: Iterable[int], backward: bool = False
                        ) -> list[Op]:
    """The cast of the fp8 matmul weights of ``layers`` (as one rank holds them, ``fp8_weight_
    shapes``; routed experts' by their local count) at the iteration's first micro-batch:
    per weight element the recipe's cast bytes, each tensor the recipe's cast kernels; under
    ``transposes`` the fp8 parameters' transposes instead. ``backward``: the work of the
    chunk's first backward (:func:`transposes_in_backward`), else of its first forward.
    Empty where neither applies there."""
    transpose = transposes(cfg)
    if not applies(cfg) and not transpose or \
            backward != (transpose and transposes_in_backward(cfg)):
        return []
    sh = shard_of(cfg)
    elements = tensors = 0.0
    kinds: dict[bool | str, tuple[float, float]] = {}  # per layer kind: (elements, tensors)
    bf16 = cfg.bf16_layers  # kept in 16 bits: no fp8 weights to cast
    for i in layers:
        if i in bf16:
            continue
        kind = layer_kind(cfg.model, i)
        if kind not in kinds:
            shapes = fp8_weight_shapes(cfg, i)
            kinds[kind] = (sum(r * c * n for r, c, n, _ in shapes), sum(n for *_, n, _ in shapes))
        e, n = kinds[kind]
        elements += e
        tensors += n
    if elements <= 0:
        return []
    if transpose and cfg.training.fp8_recipe == "nvfp4":  # one batched multi-tensor kernel
        # reading and writing the 4-bit data with its E4M3 tile scales
        return [Elementwise(WEIGHT_TRANSPOSE, bytes=elements * 2 * NVFP4_ELEMENT_BYTES,
                            kernels=1, kernel=FP8_TRANSPOSE_KERNEL)]
    if transpose:
        return [Elementwise(WEIGHT_TRANSPOSE, bytes=elements * FP8_TRANSPOSE_BYTES,
                            kernels=max(1, round(tensors)), kernel=FP8_TRANSPOSE_KERNEL)]
    return [Elementwise(WEIGHT_QUANTIZE, bytes=elements * sh.fp8_cast_bytes,
                        kernels=max(1, round(tensors)) * sh.fp8_cast_kernels, kernel=CAST_KERNEL)]
