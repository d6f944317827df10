"""The fp8 / MXFP8 / NVFP4 casts around a GEMM as Transformer Engine runs them: bytes and kernels
per cast by recipe, the TP amax all-reduce of current scaling, Megatron's fp8 store of the
SwiGLU input, MXFP8 scale swizzles and the weight gradient's block scales. ``workload.shard``
builds a linear from them (and re-exports them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import NVFP4_ELEMENT_BYTES, Comm, Elementwise, Fp8BlockScales, Gemm

if TYPE_CHECKING:
    from trainsim.config import RunConfig
    from trainsim.workload.shard import Shard


FP8_CAST_TRANSPOSE_BYTES = ACT + 2
"""Transformer Engine's cast_transpose per element: read 16 bits, write fp8 and its fp8
transpose (Hopper fp8 GEMMs take only the TN layout, so wgrad/dgrad need the transpose)."""
FP8_CAST_BYTES = ACT + 1
"""A cast to fp8 that writes no transpose, per element: read 16 bits, write fp8 (a rank's own
rows before a row-wise fp8 all-gather; any fp8 GEMM input where GEMMs take non-TN layouts)."""
CAST_KERNEL = "fp8_cast_transpose"
FP8_GATHER_CAST_KERNEL = "fp8_cast"
FP8_TRANSPOSE_KERNEL = "fp8_transpose"
FP8_RECIPE_EXTRA_BYTES = {"delayed": 0.0, "current": ACT, "blockwise": 2 * 4 / 128,
                          "mxfp8": 2 * 1 / 32}
"""What each Transformer Engine recipe adds per element to that cast: delayed scaling takes its
scale from the amax history, so one pass casts; current scaling needs this tensor's amax first,
one more read of the 16-bit input (TE ``Float8CurrentScaling``); blockwise writes an fp32 scale
per 128 elements for each of the two layouts; MXFP8 an 8-bit scale per 32 elements for each."""
FP8_ROWWISE_GATHER_RECIPES = ("delayed", "current")
"""Recipes whose quantizer all-gathers only row-wise fp8 data (TE tensor/float8_tensor.py
``supports_only_rowwise_all_gather``, v2.8): under SP each module casts its rank's rows
without a transpose (module/linear.py 175-194 and layernorm_linear.py 186-193 ``set_usage(
columnwise=False)``), gathers the 1-byte data (distributed.py 903-984 ``_all_gather_fp8``), and
makes the transpose of the gathered tensor for wgrad (linear.py 763-767 ``update_usage(
columnwise_usage=True)`` -> ``tex.fp8_transpose``); a row-parallel output gradient the same way
(module/base.py 1161-1193 ``grad_output_preprocess``; ``_all_gather_fp8`` 974-982). TE v1.5
does likewise (linear.py 110-136 ``cast_to_fp8`` then ``gather_along_first_dim``, 446-448
``fp8_transpose``; base.py 662-680)."""
FP8_AMAX_BYTES = 4
"""Current scaling shares one scale across a tensor's TP row shards before gathering it: the
column-parallel input's quantizer under SP and the row-parallel output gradient's reduce their
fp32 amax over the TP group (TE module/linear.py 1636-1661, layernorm_linear.py 1745-1791,
layernorm_mlp.py 2102-2154 ``with_amax_reduction``, v2.8), an all-reduce (MAX) the stream
waits on before the scale is computed (csrc/quantizer.cpp 521-528 ``quantize_impl``)."""


def amax_all_reduce(name: str) -> Comm:
    """The TP all-reduce of one fp32 amax (``FP8_AMAX_BYTES``); no gradient of its own."""
    return Comm(name, "all_reduce", FP8_AMAX_BYTES, "tp", grad_bytes=0, waited=True)


FP8_TRANSPOSE_BYTES = 2
"""``tex.fp8_transpose``: read and write one byte per element."""
FP8_RECIPE_KERNELS = {"delayed": 1, "current": 3, "blockwise": 1, "mxfp8": 1, "nvfp4": 2}
"""Kernels per cast: current scaling computes the amax, then the scale from it, then casts
(TransformerEngine pytorch/csrc quantizer.cpp ``Float8CurrentScalingQuantizer::quantize_impl``:
``nvte_compute_amax``, ``nvte_compute_scale_from_amax``, ``nvte_quantize_v2``); NVFP4 computes
the amax (with the random Hadamard transform, that of the input and of its transformed
transpose in one kernel), then quantizes (``NVFP4_CAST_BYTES``); the other recipes cast with
the scale in one kernel."""

NVFP4_CAST_BYTES = 2 * ACT + 2 * NVFP4_ELEMENT_BYTES
"""Per element of Transformer Engine's NVFP4 quantization of a 16-bit GEMM operand, both
layouts (NVFP4 GEMMs take only the TN layout: docs features/low_precision_training/nvfp4/
nvfp4.rst, "Handling transposes"): the amax pass reads the input (with RHT,
``nvte_hadamard_transform_amax``: the input's amax and its transformed transpose's in one read;
without, the weights, ``nvte_compute_amax_with_config``), the quantize pass reads it again and
writes the row-wise and the column-wise (RHT-transformed, for wgrad) 4-bit data and their
scales (``nvte_quantize_with_hadamard_transform``, or ``nvte_quantize_v2``): pytorch/csrc/
quantizer.cpp ``NVFP4Quantizer::quantize_impl`` (TransformerEngine@d0067d0d L2508-2735).
The 16x16 Hadamard products run on the tensor cores inside the cast (TE's RHT cast fusion),
so the pass is memory-bound like the others."""


FP8_INPUT_STORE_BYTES = ACT + 1
"""Per element of ``activation_func_fp8_input_store``'s cast: the 16-bit SwiGLU input read, its
fp8 copy written; the backward's cast back reads the fp8 byte and writes 16 bits."""


def fp8_input_store(cfg: RunConfig, name: str, inputs: float) -> list[Elementwise]:
    """Megatron-core's ``activation_func_fp8_input_store``: the fused SwiGLU saves its input as
    fp8 for the backward and casts it back there (NVIDIA/Megatron-LM@b1030e9d
    megatron/core/fusions/fused_bias_swiglu.py ``SwiGLUFunction`` / ``BiasSwiGLUFunction`` /
    ``WeightedSwiGLUFunction``: forward ``input.to(torch.float8_e4m3fn) if fp8_input_store``,
    backward ``input.to(ctx.ori_input_dtype)``): one torch cast kernel each way over the
    ``inputs`` elements (both halves of the gated input). Named after the activation ``name``, so
    a recomputed activation (``moe_act``) casts again in its re-run, as the checkpointed function
    runs its forward twice. None without the option or a gated activation."""
    if not (cfg.training.activation_func_fp8_input_store and cfg.model.activation == "swiglu"):
        return []
    b = inputs * FP8_INPUT_STORE_BYTES
    return [Elementwise(f"{name}.fp8_store_cast", bytes=b, bwd_bytes=b, kernel="copy")]


MXFP8_SWIZZLE_FEATURES = {"weight": "mxfp8_swizzle_weights",
                          "activation": "mxfp8_swizzle_activations",
                          "gathered": "mxfp8_swizzle_gathered"}
"""Operand classes of an MXFP8 GEMM whose scales may still need swizzling at the GEMM, and the
profile feature that says the framework's TE swizzles them there."""
MXFP8_SCALE_BYTES = 1 / 32
"""MXFP8's E8M0 scale: one byte per 32 elements along the GEMM's k."""
MXFP8_SWIZZLE_KERNEL = "mxfp8_swizzle"


def mxfp8_swizzle(sh: Shard, name: str, gemm: Gemm, operands: tuple[tuple[str, int], ...],
                  ) -> Elementwise | None:
    """The scale swizzles Transformer Engine runs before an MXFP8 GEMM: cuBLASLt reads block
    scales in its own tiled layout, so the GEMM call copies each operand's compact E8M0 scales
    into it (TE v2.9 pytorch/csrc/extensions/gemm.cpp 238-240 ``swizzle_scaling_factors`` ->
    ``nvte_swizzle_scaling_factors``), one kernel per operand whose scales are not already in
    that layout (``Shard.mxfp8_swizzled``; v2.16 csrc/extensions/swizzle.cpp 47-66), reading
    and writing its scale bytes. A grouped GEMM swizzles all its groups' scales of an operand
    in one launch (gemm.cpp 489-491 ``multi_tensor_swizzle_scaling_factors``). ``operands``:
    (class, elements of one group) of the GEMM's two inputs; a ``gathered`` operand is an
    activation too."""
    if gemm.fp8_block_scales != "mma" or not sh.mxfp8_swizzled:
        return None
    picked = [e for kind, e in operands if kind in sh.mxfp8_swizzled
              or kind == "gathered" and "activation" in sh.mxfp8_swizzled]
    if not picked:
        return None
    return Elementwise(f"{name}.mxfp8_swizzle",
                       bytes=2 * MXFP8_SCALE_BYTES * gemm.batch * sum(picked),
                       kernels=len(picked), kernel=MXFP8_SWIZZLE_KERNEL)


def wgrad_block_scales(sh: Shard, gemm: Gemm) -> Fp8BlockScales:
    """How the weight gradient of the fp8 GEMM ``gemm`` applies its operands' scales. Under the
    blockwise recipe the output gradient and the input are both scaled per 1x128 tile along
    the tokens, its k (DeepSeek-V3 report §3.3.1, Fig. 7; Transformer Engine
    ``Float8BlockScaling`` ``x_block_scaling_dim=1``, ``grad_block_scaling_dim=1``), so each
    output element's scale is a row's times a column's: ``outer``, whichever kernel runs it
    (DeepGEMM's 1D1D kernel and CUTLASS's blockwise mainloop both promote after waiting for
    the tensor cores: ``compute.roofline.PROMOTION_OPS``), on a GPU whose tensor cores cannot
    take the scales (``Shard.fp8_wgrad_outer``). Otherwise the forward's own tag (MXFP8's
    ``mma``, or per-tensor scales)."""
    if gemm.dtype == "fp8" and sh.fp8_wgrad_outer:
        return "outer"
    return gemm.fp8_block_scales


def activation_kind(sh: Shard, gemm: Gemm, side: str) -> str:
    """``gathered`` where sequence parallelism all-gathers this activation operand of ``gemm``
    (``side``: ``gather`` for a column-parallel input, ``scatter`` for a row-parallel output
    gradient), read from ``Gemm.seq_parallel`` in the forward and the backward alike."""
    return "gathered" if sh.tp > 1 and sh.sp and gemm.seq_parallel == side else "activation"
