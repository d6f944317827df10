"""A causal FlashAttention-2 backward's tail: the makespan of its key blocks, one CTA each, over
their mean load per SM.

FlashAttention-2's backward launches one CTA per key block of each (batch, head), the grid
``(num_n_block, b, h)`` with ``n_block = blockIdx.x`` (Dao-AILab/flash-attention@0251105a
csrc/flash_attn/src/flash_bwd_launch_template.h L75-L82, ``run_flash_bwd_seqk_parallel``;
flash_bwd_kernel.h L827-L836, ``compute_dq_dk_dv_seqk_parallel``), and key block j walks the
query blocks from the last down to ``m_block_min = (j kBlockN + seqlen_q - seqlen_k) / kBlockM``
(flash_bwd_kernel.h L317-L320, L457): under a causal mask the first key block of a head runs
every query block, the last only those on the diagonal. So, unlike the forward
(``attention.causal_forward_tail``, lightest block first), each head's heaviest CTA starts
first. Its head-dim-128 kernel on Hopper needs 144 KiB of shared memory
(``fa2_traits``: 64 x 128 tiles, "max_smem_per_block >= 144 * 1024"), so one CTA runs on an SM
at a time. With fewer CTAs than a few waves (tensor parallelism leaving 4-8 heads, one sequence
of 4-8k tokens) the SMs that drew a head's first blocks finish long after the rest: 4 heads of
32 key blocks on 132 SMs take 2x the mean (each SM holds one CTA, the longest runs every query
block). With many CTAs the heavy-first order balances the load and the tail vanishes.

Measured: the H200 database's 16 FlashAttention-2 head-dim-128 causal backward records (batch
1, 4-64 heads, 4k and 8k tokens: ``benchmarks/h200db48_bwd_tail.py``) run 0.98-1.93x the
analytic model's time without this tail, a ratio this tail accounts for within -5 to +1 %. A
database reads its records with it (``database.RECORD_BWD_TAIL``); the roofline alone does not
(``attention.FA2_BWD_TAIL``).
"""

from __future__ import annotations

import functools
import heapq
import math

from trainsim.config import GPUSpec
from trainsim.workload.ops import Attention

CAUSAL_BWD_TAIL_EXACT_CTAS = 1 << 16
"""CTAs up to which ``causal_backward_tail`` simulates the dispatch; beyond, the mean load per
SM is over 400 CTAs and one CTA more or less moves the makespan by under 0.3 %: 1 is returned."""


@functools.lru_cache(maxsize=4096)
def causal_backward_tail(heads: int, q_blocks: int, kv_blocks: int, block_m: int,
                         block_n: int, sms: int) -> float:
    """Makespan over mean load when a causal backward's ``heads`` x ``kv_blocks`` CTAs (query
    and key lengths equal, ``heads`` counting batch x heads) run one at a time an SM, SM by SM
    in launch order, key block j of a head doing ``q_blocks - j block_n // block_m`` query
    blocks of work, the heaviest first (the module docstring)."""
    works = [max(1, q_blocks - j * block_n // block_m) for j in range(kv_blocks)]
    total = heads * sum(works)
    if heads * kv_blocks <= sms:  # every CTA has an SM to itself: the heaviest ends last
        return works[0] / (total / sms)
    if heads * kv_blocks > CAUSAL_BWD_TAIL_EXACT_CTAS:
        return 1.0
    free = [0] * sms  # when each SM frees, in query-block units
    for _ in range(heads):
        for work in works:
            heapq.heapreplace(free, free[0] + work)
    return max(free) / (total / sms)


WARP_SPECIALISED_BWD_TAIL = ("cudnn", "flash3", "flash4")
"""Warp-specialised causal backwards priced with their critical path on Blackwell
(``warp_specialised_bwd_tail``)."""


def warp_specialised_bwd_tail(op: Attention, tile: tuple[int, int], gpu: GPUSpec) -> float:
    """Makespan over mean load of a warp-specialised causal backward (``WARP_SPECIALISED_BWD_TAIL``)
    on a Blackwell data-centre GPU (``GPUSpec.sm_arch`` 100-119), its key blocks one CTA each: the
    longer of the heaviest key block (a head's first, which runs every query block) and the mean
    load per SM. It binds only while the CTAs are fewer than about two an SM: 4 heads of 4k
    tokens (128 CTAs of 128 keys) on a B200's 148 SMs take 32 / (4 x 528 / 148) = 2.24x the
    mean, 8 heads 1.12x, 16 none. 1 for any other op.

    Measured: the SimuMax B200 node's TE cuDNN backwards (benchmarks/kernels_simumax_b200.csv,
    b 1, s 4096) ran 2.09x (4 heads), 1.13-1.17x (8), 0.99-1.03x (16) and 0.92-1.05x (32-128)
    the model without it; the per-head heavy-first dispatch of ``causal_backward_tail`` would
    put 16 heads at 1.31x. Hopper's cuDNN 9.19 backward records (the bundled H100 and H200
    kernel databases, b 1, 4-64 heads, 4k and 8k) follow that per-head dispatch instead: 0.86-0.98
    of the model times ``causal_backward_tail`` on all 32 records, against 0.92-1.74 of the model
    alone; they are read as they are (a lead: benchmarks/RESULTS.md, 54th session, simumax54)."""
    arch = gpu.sm_arch or 0
    if not (op.backward and op.causal and op.window is None and op.q_len == op.kv_len
            and op.impl in WARP_SPECIALISED_BWD_TAIL and 100 <= arch < 120):
        return 1.0
    q_blocks, kv_blocks = math.ceil(op.q_len / tile[0]), math.ceil(op.kv_len / tile[1])
    works = [max(1, q_blocks - j * tile[1] // tile[0]) for j in range(kv_blocks)]
    return max(1.0, works[0] / (op.batch * op.heads * sum(works) / gpu.num_sms))


__all__ = ["CAUSAL_BWD_TAIL_EXACT_CTAS", "WARP_SPECIALISED_BWD_TAIL", "causal_backward_tail",
           "warp_specialised_bwd_tail"]
