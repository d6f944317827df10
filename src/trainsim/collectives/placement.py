"""Where a process group lands when the job's NVLink domains hold unequal numbers of its GPUs.

A job need not fill whole NVLink domains: on GB200 NVL72 racks (72 GPUs, 18 trays of 4) a
256-GPU job packed rack by rack holds 72 + 72 + 72 + 40 GPUs, and a Slurm job submitted with
``--segment`` takes whole segments of trays, each inside one rack (``config.cluster.segment_domains``).
``cluster.domain_gpus`` states the job's GPUs in each domain, in rank order; ``placed_span``
finds, for a group kind of Megatron's rank order, the group that lands worst over them. Every
group of a kind runs its collectives at the same points of the step and the data-parallel
reduction and the pipeline wait on the slowest, so that group's span prices the kind.
"""

from __future__ import annotations

import functools
from collections import Counter

from trainsim.collectives.nccl import GroupSpan


@functools.lru_cache(maxsize=4096)
def placed_span(size: int, stride: int, domains: tuple[int, ...]) -> GroupSpan:
    """Span of the worst-placed group of ``size`` ranks ``stride`` apart (Megatron's rank order:
    the groups ``{b + i * stride}`` for each ``b`` with ``b mod (size * stride) < stride``) when
    ranks fill the domains ``domains`` (GPUs each) in order. Worst: the group with the smallest
    share of one domain (those ranks send the largest part of an all-to-all over their NICs,
    ``(n - k) / n``, and carry a ring's whole cross-domain traffic on ``k`` NICs), then the one
    over most domains (:func:`worst_group`). A group inside one domain is one node; equal shares
    are an even span; unequal ones keep their domain count (``GroupSpan.uneven_nodes``)."""
    if size <= 1:
        return GroupSpan(max(size, 1), max(size, 1))
    ranks = worst_group(size, stride, domains)
    owner = _owner(domains)
    shares = Counter(owner[r] for r in ranks)
    if len(shares) <= 1:
        return GroupSpan(size, size)
    k = min(shares.values())
    if all(c == k for c in shares.values()):
        return GroupSpan(size, k)
    return GroupSpan(size, k, uneven_nodes=len(shares))


@functools.lru_cache(maxsize=4096)
def worst_group(size: int, stride: int, domains: tuple[int, ...]) -> tuple[int, ...]:
    """The ranks of the group :func:`placed_span` prices (the first of the worst-placed ones in
    rank order); empty where no group of the kind fits in the domains."""
    owner = _owner(domains)
    period, last = size * stride, len(owner) - (size - 1) * stride
    worst: tuple[int, int] | None = None
    ranks: tuple[int, ...] = ()
    for base in range(max(last, 0)):
        if base % period >= stride:
            continue
        group = tuple(base + i * stride for i in range(size))
        counts = Counter(owner[r] for r in group)
        key = (min(counts.values()), -len(counts))
        if worst is None or key < worst:
            worst, ranks = key, group
    return ranks


def _owner(domains: tuple[int, ...]) -> list[int]:
    """Each rank's domain, ranks filling ``domains`` in order."""
    return [d for d, gpus in enumerate(domains) for _ in range(gpus)]
