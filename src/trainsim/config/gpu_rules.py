"""What a GPU's tensor cores and kernels cannot run, refused the way the libraries refuse it.

Pure functions of (setting, ``GPUSpec``) -> the reason, or None: ``RunConfig`` raises on them.
The fp8 and MX rules (fp8 tensor cores, mxfp8 on compute capability 10.x) stay in
``config.run``; these are the rules a GPU older or smaller than the H100 needs.
"""

from __future__ import annotations

from trainsim.config.cluster import GPUSpec

ATTENTION_MIN_ARCH = {"flash1": 75, "flash2": 80, "cudnn": 80, "flash3": 90, "flash4": 90}
"""Oldest NVIDIA compute capability (major x 10 + minor) each fused attention kernel runs on:
flash1 "Turing or Ampere GPUs" (Dao-AILab/flash-attention v1.0.9 README, sm75/sm80 builds);
flash2 "Ampere, Ada, or Hopper GPUs" (v2.x README: "Turing GPUs ... coming soon", setup.py
builds sm80 and later); cudnn, Transformer Engine's FusedAttention, needs sm80 and later for
every backend (cuDNN fused attention support matrix; TE get_attention_backend); flash3 is
Hopper's (v2.x hopper/ README: "H100 / H800 GPU"); flash4 is CuTe DSL for Hopper and Blackwell
(flash_attn/cute). Kernels not listed run on older GPUs too (unfused, eager, sdpa, whose
EFFICIENT_ATTENTION backend is xFormers' CUTLASS kernel from sm50, mem_efficient)."""

FP8_BLOCKWISE_MIN_ARCH = 90
"""Transformer Engine's Float8BlockScaling (``fp8_recipe=blockwise``):
``check_fp8_block_scaling_support`` returns "FP8 block scaled GEMM requires Hopper and CUDA >=
12.9" below compute capability 9.0 (transformer_engine/pytorch/fp8.py; later releases say
"compute capability 9.0 or higher")."""


NVFP4_MIN_ARCH = 100
"""Transformer Engine's ``NVFP4BlockScaling`` (``fp8_recipe=nvfp4``): ``_compute_nvfp4_support``
returns "Device compute capability 10.0 or higher required for NVFP4 execution" below 10.0
(TransformerEngine@d0067d0d transformer_engine/pytorch/quantization.py L171-175; its docs
features/low_precision_training/nvfp4/nvfp4.rst, "Supported devices": training on SM 10.0 and
10.3). The GEMMs run on the fp4 tensor cores, so the GPU's ``peak_tflops`` needs ``fp4``."""


def _arch(arch: int | None) -> str:
    """A compute capability as NVIDIA writes it (90 -> '9.0')."""
    arch = arch or 0
    return f"{arch // 10}.{arch % 10}"


def dtype_problem(dtype: str, fp8_recipe: str, gpu: GPUSpec) -> str | None:
    """Why ``gpu`` cannot train in ``dtype`` (with ``fp8_recipe`` when fp8), or None.

    bf16 needs bf16 tensor cores, which came with Ampere (sm80): on a V100 (Volta, sm70, fp16
    tensor cores only) cuBLAS would run a bf16 GEMM without tensor cores, ~8x below the fp16
    peak, and Megatron-LM's and DeepSpeed's V100 runs trained in fp16 with loss scaling
    (Megatron --fp16, DeepSpeed "fp16": {"enabled": true}). A GPU lists ``bf16`` in its
    ``peak_tflops`` when it has them."""
    if dtype == "bf16" and "bf16" not in gpu.peak_flops:
        return (f"training.dtype=bf16 needs bf16 tensor cores; cluster.gpu {gpu.name} has "
                f"none (peaks: {', '.join(gpu.peak_flops)}); use fp16 (loss-scaled, as V100 "
                "runs trained) or an Ampere-or-later GPU")
    arch = gpu.sm_arch
    if dtype == "fp8" and fp8_recipe == "nvfp4" and (
            arch is None or arch < NVFP4_MIN_ARCH or "fp4" not in gpu.peak_flops):
        what = f"compute capability {_arch(arch)}" if arch is not None else \
            f"vendor {gpu.vendor}"
        return (f"training.fp8_recipe=nvfp4 needs NVIDIA fp4 tensor cores (compute capability "
                f"10.0 or later: Transformer Engine's NVFP4BlockScaling); cluster.gpu "
                f"{gpu.name} is {what}; use an fp8 recipe (mxfp8, current, delayed)")
    if dtype == "fp8" and fp8_recipe == "blockwise" and arch is not None \
            and arch < FP8_BLOCKWISE_MIN_ARCH:
        return (f"training.fp8_recipe=blockwise needs compute capability 9.0 or later "
                f"(Transformer Engine's Float8BlockScaling); cluster.gpu {gpu.name} is "
                f"{_arch(gpu.sm_arch)}; use delayed or current")
    return None


def attention_problem(attention: str, gpu: GPUSpec,
                      field: str = "training.attention") -> str | None:
    """Why the attention kernel ``attention`` does not run on NVIDIA ``gpu`` (too old an
    architecture, ``ATTENTION_MIN_ARCH``), or None. Another vendor's GPU is not checked here
    (``config.training.NVIDIA_ONLY_ATTENTION`` is). ``field``: how the message names the
    setting (a kernel row's column)."""
    need = ATTENTION_MIN_ARCH.get(attention)
    arch = gpu.sm_arch
    if need is None or arch is None or arch >= need:
        return None
    runs = sorted(k for k, v in ATTENTION_MIN_ARCH.items() if arch >= v)
    where = "cluster.gpu" if field == "training.attention" else "column 'gpu'"
    return (f"{field}={attention} runs on compute capability {_arch(need)} "
            f"and later; {where} {gpu.name} is {_arch(gpu.sm_arch)}: set {field} to "
            f"one of {', '.join(['unfused', 'eager', 'sdpa', 'mem_efficient', *runs])}")


__all__ = ["ATTENTION_MIN_ARCH", "FP8_BLOCKWISE_MIN_ARCH", "NVFP4_MIN_ARCH", "attention_problem", "dtype_problem"]
