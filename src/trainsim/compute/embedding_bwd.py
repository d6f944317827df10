"""The scatter of PyTorch's dense embedding backward (``aten::embedding_dense_backward`` on
CUDA, after its ``at::zeros`` fill, ``workload.head.embedding_zero_fill``), priced from how its
kernels are written and from what they measured on an H200 (``benchmarks/emb47_fit.py``).

Two paths, pytorch/pytorch@1c94016e aten/src/ATen/native/cuda/Embedding.cu
``embedding_dense_backward_cuda``:

- ``num_indices <= 3072`` (``SMALL_PATH_MAX_TOKENS``): one ``embedding_backward_feature_kernel``,
  a grid of ceil(hidden / 32) blocks of 32 x 32 threads. Each block walks the tokens in chunks
  of 32 rows, two ``__syncthreads`` a chunk: every warp loads one gradient row's 32 features,
  the first warp of each group of equal ids (the leader) adds its peers' rows in shared memory
  one after another and adds the sum into the table (a read and a write of global memory). A
  chunk is a few dependent memory round trips behind barriers: on the H200 its time follows
  the leaders' adds into the table (``LEADER_CLOCKS`` each, ``LEADER_CLOCKS_TWO`` where two
  blocks share an SM: 1024-thread blocks, 2048 threads an SM on sm_80-sm_100; a third waits
  for a slot) and the largest group's serial adds (``MATCH_CLOCKS`` each), in SM clocks; not
  the table or the hidden size while the blocks fit the SMs.
- else the sorted path (EmbeddingBackwardKernel.cu ``embedding_backward_cuda_kernel``): a cub
  radix sort of the ids (all 64 key bits: ``nbits`` is commented out) and a dozen small
  bookkeeping kernels, then ``compute_grad_weight`` (fp32 sums of each partial segment of at
  most ``NROWS_PER_THREAD`` equal ids) and ``sum_and_scatter`` (the partial sums of each
  distinct id added and written into its row). Both launch ``tokens x hidden`` threads (grid
  ``ceil_div(numel * stride_warped, block)``) whatever the number of segments; a thread past
  the segments reads the count, divides its 64-bit index and exits. One 16-bit or 32-bit element
  per thread per load: like the repo's other non-vectorized kernels (``compute.roofline.
  SCALAR_BYTES_PER_SM_CLOCK``) the rate is set by the SMs, not by the HBM: the fitted per-thread
  costs are SM clocks (``LAUNCH_CLOCKS`` a launched thread, ``SEGMENT_CLOCKS`` an element of
  a partial sum or of a distinct row) over SMs x clock, and the sort's chain of small kernels is
  ``SORT_CLOCKS`` of one SM's clock. The H200 measured the op at 5-8x the HBM roofline's time.

All clocks are the GPU's max SM clock (``GPUSpec.max_sm_clock_mhz``: a kernel this light does
not pull it down); a GPU that states none is priced by the roofline as before (None here)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from trainsim.config import GPUSpec
from trainsim.workload.token_ids import VOCAB_LISTED, expected_segments, uniform_binned

SMALL_PATH_MAX_TOKENS = 3072
"""Ids at most this many take the feature kernel (Embedding.cu ``num_indices <= 3072``)."""
WARP = 32
THREADS_PER_SM = 2048
"""Resident threads an SM holds (sm_80, sm_90, sm_100): two of the feature kernel's blocks."""
FEATURE_BLOCK_THREADS = WARP * 32

# fitted by benchmarks/emb47_fit.py to benchmarks/h200_2026-11-28_s47 (H200, 132 SMs, 1980 MHz)
SORT_CLOCKS = 247_000.0
LAUNCH_CLOCKS = 0.686
SEGMENT_CLOCKS = 1.08
LEADER_CLOCKS = 102.0
LEADER_CLOCKS_TWO = 127.0
MATCH_CLOCKS = 134.0


def scatter_path(scatter: tuple[float, ...]) -> str:
    """Which of PyTorch's two paths an ``Elementwise.scatter`` runs: ``small`` (the feature
    kernel), ``sorted``, or ``""`` for an op that is no such scatter."""
    if not scatter:
        return ""
    return "small" if scatter[0] <= SMALL_PATH_MAX_TOKENS else "sorted"


def sm_clock_hz(gpu: GPUSpec) -> float | None:
    return gpu.max_sm_clock_mhz * 1e6 if gpu.max_sm_clock_mhz else None


def feature_kernel_clocks(tokens: float, hidden: float, num_sms: int, top_share: float,
                          leaders: float, consts: tuple[float, float, float] | None = None
                          ) -> float:
    """SM clocks of the small path on its busiest SM: chunks of 32 tokens, each costing its
    leaders' adds into the table (``leaders``: the distinct ids among a chunk's 32 rows;
    ``LEADER_CLOCKS`` each with one block on the SM, ``LEADER_CLOCKS_TWO`` with two) and the
    serial shared-memory adds of its largest group of equal ids (``top_share`` of the tokens
    carry the most frequent id: 32 x top_share rows, less the leader's own; ``MATCH_CLOCKS``
    each). A third block on an SM waits for a slot: one more pass of the chunks alone."""
    leader, leader_two, match = consts or (LEADER_CLOCKS, LEADER_CLOCKS_TWO, MATCH_CLOCKS)
    chunks = math.ceil(tokens / WARP)
    blocks = math.ceil(hidden / WARP)
    per_sm = math.ceil(blocks / num_sms)
    pairs, single = divmod(per_sm, THREADS_PER_SM // FEATURE_BLOCK_THREADS)
    chain = max(0.0, WARP * top_share - 1.0)
    return chunks * (pairs * (leaders * leader_two + chain * match)
                     + single * (leaders * leader + chain * match))


def sorted_path_terms(tokens: float, hidden: float, distinct: float,
                      partials: float) -> tuple[float, float]:
    """(threads launched by the two kernels, segment rows they work: each partial sum
    written by the first and read by the second, each distinct row summed and written by the
    second), each x the padded row width: what ``LAUNCH_CLOCKS`` and ``SEGMENT_CLOCKS``
    multiply."""
    width = math.ceil(hidden / WARP) * WARP  # stride_warped
    return 2.0 * tokens * width, (partials + distinct) * width


def scatter_time(gpu: GPUSpec, tokens: float, hidden: float, distinct: float, partials: float,
                 top_share: float, leaders: float) -> float | None:
    """Seconds of the scatter (the op less its fill) on ``gpu`` for ``tokens`` ids of which
    ``distinct`` differ and form ``partials`` partial segments (``expected_segments``), the
    most frequent carrying ``top_share`` of them, ``leaders`` distinct among 32 in a row;
    None where the GPU states no SM clock."""
    clock = sm_clock_hz(gpu)
    if clock is None or tokens <= 0 or hidden <= 0:
        return None
    if tokens <= SMALL_PATH_MAX_TOKENS:
        return feature_kernel_clocks(tokens, hidden, gpu.num_sms, top_share, leaders) / clock
    launched, segments = sorted_path_terms(tokens, hidden, distinct, partials)
    sm_clocks = LAUNCH_CLOCKS * launched + SEGMENT_CLOCKS * segments
    return SORT_CLOCKS / clock + sm_clocks / (gpu.num_sms * clock)


@lru_cache(maxsize=256)
def uniform_segments(tokens: float, rows: int) -> tuple[float, float]:
    """``expected_segments`` of ids drawn uniformly over ``rows`` (a profiler's
    ``torch.randint``): past ``VOCAB_LISTED`` rows one weight stands for them all (robust49: a
    kernel database's table of 2**31 rows allocated 16 GiB a table)."""
    if rows > VOCAB_LISTED:
        return uniform_binned(tokens, rows)
    return expected_segments(tokens, np.full(rows, 1.0 / rows))
