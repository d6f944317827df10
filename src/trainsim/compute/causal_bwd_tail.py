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


__all__ = ["CAUSAL_BWD_TAIL_EXACT_CTAS", "causal_backward_tail"]
