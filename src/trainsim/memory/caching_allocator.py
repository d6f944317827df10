"""A replay of PyTorch's CUDA caching allocator: what ``max_memory_reserved`` becomes for a given
sequence of allocations and frees.

The rules are those of c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch@001074d2, the same
in every release since 1.10 for the settings below; default ``PYTORCH_CUDA_ALLOC_CONF``, so
``max_split_size`` unlimited, no garbage-collection threshold, no expandable segments):

- a request is rounded up to a multiple of 512 bytes (``round_size``, ``kMinBlockSize``);
- requests of at most 1 MiB (``kSmallSize``) are served from the small pool, the rest from the
  large pool; a block of one pool never serves the other;
- a request is served by the smallest cached free block of its pool that is at least as large,
  the lowest address among equal sizes (``get_free_block``: ``lower_bound`` on a set ordered by
  (stream, size, address)); everything here runs on one stream;
- without one, a new segment is ``cudaMalloc``-ed (``alloc_block``): 2 MiB (``kSmallBuffer``)
  for a small request, 20 MiB (``kLargeBuffer``) for one under 10 MiB (``kMinLargeAlloc``),
  else the request rounded up to 2 MiB (``kRoundLarge``; ``get_allocation_size``);
- the block handed out is split when the rest is at least 512 bytes (small pool) or more than
  1 MiB (large pool; ``should_split``): the request takes the block's start, the rest stays a
  free block of the same segment;
- a freed block merges with its free neighbours of the same segment (``free_block`` /
  ``try_merge_blocks``); blocks of different segments never merge, and segments are returned
  to the driver only when a ``cudaMalloc`` fails or on ``empty_cache`` (not modelled: the
  device is assumed large enough that no ``cudaMalloc`` fails).

``allocated`` counts the rounded sizes of live blocks (``allocated_bytes``), ``reserved`` the
sizes of all segments (``reserved_bytes``), as ``torch.cuda.memory_stats`` does.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

MIN_BLOCK = 512
"""``kMinBlockSize``: every request is rounded up to a multiple of it."""
SMALL_SIZE = 1 << 20
"""``kSmallSize``: the largest request of the small pool (1 MiB)."""
SMALL_BUFFER = 2 << 20
"""``kSmallBuffer``: the segment size of the small pool (2 MiB)."""
LARGE_BUFFER = 20 << 20
"""``kLargeBuffer``: the segment a large request under ``MIN_LARGE_ALLOC`` gets (20 MiB)."""
MIN_LARGE_ALLOC = 10 << 20
"""``kMinLargeAlloc``: requests from here up get a segment of their own size (10 MiB)."""
ROUND_LARGE = 2 << 20
"""``kRoundLarge``: such a segment is rounded up to a multiple of 2 MiB."""


def round_size(size: int) -> int:
    """The bytes a request of ``size`` occupies (``round_size``)."""
    return max(MIN_BLOCK, -(-size // MIN_BLOCK) * MIN_BLOCK)


def segment_size(size: int) -> int:
    """The ``cudaMalloc`` a rounded request gets when no cached block fits (``get_allocation_size``)."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


@dataclass(eq=False)
class _Block:
    addr: int
    size: int
    small: bool
    allocated: bool = False
    prev: _Block | None = field(default=None, repr=False)
    next: _Block | None = field(default=None, repr=False)


class CachingAllocator:
    """One device's caching allocator on one stream (module docstring). ``malloc`` returns a
    handle for ``free``; ``allocated``, ``reserved`` and their peaks are in bytes."""

    def __init__(self) -> None:
        self._free: dict[bool, list[tuple[int, int]]] = {True: [], False: []}
        self._by_addr: dict[int, _Block] = {}
        self._top = 0  # next segment's address: a fresh range per cudaMalloc
        self.allocated = self.reserved = 0
        self.peak_allocated = self.peak_reserved = 0
        self.segments = 0

    def _insert(self, b: _Block) -> None:
        bisect.insort(self._free[b.small], (b.size, b.addr))

    def _remove(self, b: _Block) -> None:
        lst = self._free[b.small]
        del lst[bisect.bisect_left(lst, (b.size, b.addr))]

    def malloc(self, size: int) -> int:
        size = round_size(size)
        small = size <= SMALL_SIZE
        lst = self._free[small]
        i = bisect.bisect_left(lst, (size, -1))
        if i < len(lst):
            block = self._by_addr[lst.pop(i)[1]]
        else:  # cudaMalloc a new segment
            seg = segment_size(size)
            block = _Block(self._top, seg, small)
            self._top += seg + ROUND_LARGE  # segments are never adjacent
            self._by_addr[block.addr] = block
            self.reserved += seg
            self.segments += 1
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        rest = block.size - size
        if rest >= MIN_BLOCK if small else rest > SMALL_SIZE:
            tail = _Block(block.addr + size, rest, small, prev=block, next=block.next)
            if block.next is not None:
                block.next.prev = tail
            block.next, block.size = tail, size
            self._by_addr[tail.addr] = tail
            self._insert(tail)
        block.allocated = True
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return block.addr

    def free(self, handle: int) -> None:
        block = self._by_addr[handle]
        if not block.allocated:
            raise ValueError(f"block at {handle} freed twice")
        block.allocated = False
        self.allocated -= block.size
        prev, nxt = block.prev, block.next
        if nxt is not None and not nxt.allocated:  # merge with free neighbours of the segment
            self._remove(nxt)
            self._join(block, nxt)
        if prev is not None and not prev.allocated:
            self._remove(prev)
            self._join(prev, block)
            block = prev
        self._insert(block)

    def _join(self, left: _Block, right: _Block) -> None:
        """``left`` absorbs ``right``, its next neighbour in the segment (neither in the free set)."""
        del self._by_addr[right.addr]
        left.size += right.size
        left.next = right.next
        if right.next is not None:
            right.next.prev = left

    def reset_peaks(self) -> None:
        """``torch.cuda.reset_peak_memory_stats``: each peak becomes the current value."""
        self.peak_allocated, self.peak_reserved = self.allocated, self.reserved
