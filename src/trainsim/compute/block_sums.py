"""Causal attention's tiles counted in closed form: the key blocks each query block of a
FlashAttention forward runs, and the query blocks each key block of its backward runs, summed
without a loop over the blocks (``attention.tile_scores``; a loop was O(sequence / block): a
sequence of 2^53 tokens hung the simulation).

Both sums are sums of floors of a linear function of the block index, clipped where the mask
covers no key or every key; :func:`floor_sum` sums the floors in O(log) steps (the Euclid-like
reduction of sum floor((a i + b) / m): Graham, Knuth and Patashnik, Concrete Mathematics,
2nd ed., §3.5)."""

from __future__ import annotations

import math


def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """sum_{i=0}^{n-1} floor((a i + b) / m) for n >= 0, m >= 1, a >= 0, b >= 0."""
    total = 0
    while n > 0:
        if a >= m:
            total += n * (n - 1) // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        top = a * n + b  # the largest numerator left, below (a + 1) n m
        if top < m:
            break
        # swap the roles of rows and columns of the lattice points under the line
        n, b, m, a = top // m, top % m, a, m
    return total


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def causal_forward_blocks(q_blocks: int, block_m: int, block_n: int, offset: int,
                          kv_blocks: int) -> int:
    """sum over query blocks i of the key blocks up to the last key block i's last row sees
    (bottom-right aligned: row r sees keys up to r + offset), at most ``kv_blocks``. The last
    query block's last row is the last query, which sees every key."""
    if q_blocks <= 0 or kv_blocks <= 0:
        return 0
    # full query blocks i < q_blocks - 1 end at row (i + 1) block_m - 1: they see the keys
    # below x_i = (i + 1) block_m + offset, ceil(x_i / block_n) blocks, none while x_i <= 0
    full = q_blocks - 1
    i0 = min(full, max(0, _ceil_div(1 - offset, block_m) - 1))  # first with x_i >= 1
    i1 = min(full, max(i0, _ceil_div((kv_blocks - 1) * block_n + 1 - offset, block_m) - 1))
    partial = floor_sum(i1 - i0, block_n, block_m,
                        block_m * (i0 + 1) + offset + block_n - 1)  # ceil(x_i / block_n)
    return partial + (full - i1) * kv_blocks + kv_blocks


def causal_backward_blocks(q_blocks: int, q_len: int, block_m: int, block_n: int,
                           offset: int, kv_blocks: int) -> int:
    """sum over key blocks j of the query blocks from the one holding the first row that sees
    key j block_n (row j block_n - offset, at least 0) to the last; key blocks no row sees
    count none."""
    if q_blocks <= 0 or kv_blocks <= 0:
        return 0
    # key blocks whose first key row 0 already sees run every query block
    j0 = min(kv_blocks, offset // block_n + 1) if offset >= 0 else 0
    # the rest start at row r_j = j block_n - offset >= 1, while r_j < q_len
    j1 = min(kv_blocks, max(j0, _ceil_div(q_len + offset, block_n)))
    skipped = floor_sum(j1 - j0, block_m, block_n, j0 * block_n - offset)
    return j0 * q_blocks + (j1 - j0) * q_blocks - skipped


def local_forward_skipped(q_blocks: int, block_m: int, block_n: int, left: int) -> int:
    """Key blocks a local (sliding-window) forward skips left of its windows, query and key
    lengths equal: query block i from row m0 = i block_m starts at key block
    max(0, floor((m0 - left) / block_n)) (FlashAttention hopper/block.h
    ``get_n_block_min_max``, v2.8.3), so it skips that many of the blocks the causal kernel
    runs (``causal_forward_blocks``)."""
    i0 = _ceil_div(left, block_m)  # the first block whose first row's window starts past key 0
    if q_blocks <= i0:
        return 0
    return floor_sum(q_blocks - i0, block_n, block_m, i0 * block_m - left)


def local_backward_skipped(q_blocks: int, kv_blocks: int, block_m: int, block_n: int,
                           left: int) -> int:
    """Query blocks a local backward skips below its windows, query and key lengths equal:
    key block j, keys up to (j + 1) block_n, runs query blocks up to
    ceil(((j + 1) block_n + left) / block_m) (block.h ``get_m_block_min_max``, v2.8.3), so it
    skips q_blocks less that, where positive, of the blocks the causal kernel runs
    (``causal_backward_blocks``): key blocks j < J = floor(((q_blocks - 1) block_m - left) /
    block_n) do."""
    top = (q_blocks - 1) * block_m - left
    if top < block_n:
        return 0
    j_end = min(kv_blocks, top // block_n)
    return j_end * q_blocks - floor_sum(j_end, block_m, block_n, block_n + left + block_m - 1)


def window_edge_keys(block_m: int, block_n: int, backward: bool, left: int) -> float:
    """Keys a local (sliding-window) kernel computes per query row left of the row's window,
    on average, for a window reaching ``left`` keys back from the diagonal: the tiles it keeps
    hold the window's left edge, which it masks as it masks the diagonal. The forward's query
    block from row m0 starts at key block floor((m0 - left) / block_n), so its row r computes
    r + (m0 - left) mod block_n keys before its first; the backward's key block from column
    n0 runs to query block ceil((n0 + block_n + left) / block_m), so its column t computes
    block_n - 1 - t + (-(n0 + block_n + left)) mod block_m rows past its last (FlashAttention
    hopper/block.h ``get_n_block_min_max``, ``get_m_block_min_max``, v2.8.3). The offsets
    repeat every lcm(block_m, block_n) rows; their mean over that period is the answer."""
    own, other = (block_n, block_m) if backward else (block_m, block_n)
    steps = other // math.gcd(block_m, block_n)  # blocks of ``own`` in one period
    if backward:
        offsets = (-(j * own + own + left) % other for j in range(steps))
    else:
        offsets = ((k * own - left) % other for k in range(steps))
    return (own - 1) / 2 + sum(offsets) / steps
