"""16-bit atomic adds into global memory: PyTorch's ``index_add_`` and ``scatter_add_`` on
bf16/fp16 tensors (``Elementwise.atomic_adds``), priced by their count instead of their bytes.

``index_add_`` on CUDA (pytorch/pytorch aten/src/ATen/native/cuda/Indexing.cu, the torch 2.11
profile's ``indexFuncLargeIndex<c10::BFloat16, ..., ReduceAdd>``) launches one thread per element
of the source, each reading its index and its element and adding it into the destination with
Indexing.cu's ``ReduceAdd``: ``fastAtomicAdd(self_data_start, index, numel, *src_data, true)``.
``scatter_add_`` (ScatterGatherKernel.cu, its own ``ReduceAdd``) calls the same. On bf16 from
sm_80 ``fastAtomicAdd`` packs the element into a 32-bit ``__nv_bfloat162`` add with a zero half
(aten/src/ATen/native/cuda/KernelUtils.cuh ``fastSpecializedAtomicAdd``): one atomic per
element, which the L2 executes as a read-modify-write of its sector, so the kernel runs at the
L2's atomic rate, not at HBM's (the H200's 4.5 ms for 537 M adds moves 2.1 GB: 0.24 TB/s).

One constant, ``ATOMIC_ADDS_PER_SM_CLOCK``: adds per SM per SM clock, so that the rate follows
the chip (SMs x max SM clock, as ``compute.roofline.SCALAR_BYTES_PER_SM_CLOCK``). Fitted by
``benchmarks/atomics54_fit.py`` to the H200's profiled ``indexFuncLargeIndex<c10::BFloat16>``
kernels of ``benchmarks/h200_2026-11-28_s54/run6`` (seven MoE un-permutes, hidden 2,048-7,168,
top-2 to top-10, 16k-328k routed rows): 113-124 G adds/s, 0.43-0.47 adds per SM clock, no trend
with hidden size, top-k or rows (uniform routing puts a token's k adds in k far-apart places
of the sorted order, so few adds of one warp contend for one sector). H100 SXM is the same
GH100 die at the same clock (the same rate); Blackwell's is the SMs' and clock's scaling, not
measured."""

from __future__ import annotations

from trainsim.config import GPUSpec

ATOMIC_ADDS_PER_SM_CLOCK = 0.455
"""bf16 atomic adds of ``index_add_`` per SM per SM clock (``benchmarks/atomics54_fit.py``:
the median of run6's seven cases; H200, 132 SMs at 1980 MHz: 118.9 G adds/s)."""

REFERENCE_SM_CLOCK_MHZ = 1980.0
"""The clock of the GPU the constant was measured on (H200 SXM), taken for a GPU that states
no ``GPUSpec.max_sm_clock_mhz``."""


def atomic_rate(gpu: GPUSpec) -> float:
    """16-bit atomic adds per second of ``index_add_``/``scatter_add_`` on ``gpu``."""
    clock = gpu.max_sm_clock_mhz or REFERENCE_SM_CLOCK_MHZ
    return ATOMIC_ADDS_PER_SM_CLOCK * gpu.num_sms * clock * 1e6


def atomic_time(gpu: GPUSpec, adds: float) -> float:
    """Seconds ``adds`` 16-bit atomic adds take on ``gpu`` (no launch)."""
    return adds / atomic_rate(gpu)


__all__ = ["ATOMIC_ADDS_PER_SM_CLOCK", "REFERENCE_SM_CLOCK_MHZ", "atomic_rate", "atomic_time"]
