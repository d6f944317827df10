"""Rules that tie two fields together the way a framework refuses them, in one place: ``RunConfig``
raises on them, and the search (``search.rules``, ``search.cli._check_fixed``) skips or refuses a
``--set`` with the same functions, so the two cannot drift.
"""

from __future__ import annotations

FLEX_DISPATCHERS = ("deepep", "hybridep")
"""Megatron-core's flex token dispatchers (MoEFlexTokenDispatcher's DeepEP and HybridEP
backends)."""


def kv_heads_fit(kv_heads: int, tp: int, split: bool) -> bool:
    """Whether ``tp`` ranks can hold ``kv_heads`` KV heads (query groups).

    ``split`` (``ParallelConfig.kv_heads_split``, profile feature ``kv_heads_split``): every
    rank holds its own share, so tp must divide them (Megatron-core before core_v0.16.0,
    transformer/attention.py ``num_query_groups_per_partition = divide(num_query_groups,
    tp)``, which asserts). Otherwise one must divide the other: tp divides them, or is a
    multiple of them and each group is held by tp / groups ranks (core_v0.16.0, f7dfb99795 of
    2025-12-07, PR #2565: TransformerConfig requires num_query_groups to be a multiple or a
    divisor of tp, one query group per rank when they are fewer; the same rule where a
    framework replicates the KV heads)."""
    if not kv_heads % tp:
        return True
    return not split and not tp % kv_heads


def dispatcher_fits(dispatcher: str, expert_ranks: int, two_ranks: tuple[str, ...]) -> bool:
    """Whether ``dispatcher`` runs on ``expert_ranks`` (ep x expert tp) ranks: those of
    ``two_ranks`` (``ParallelConfig.flex_two_ranks``, the profile's feature
    ``flex_dispatchers_two_ranks``) need at least 2 (Megatron-core token_dispatcher.py
    MoEFlexTokenDispatcher: ``assert tp_size * ep_size > 1``, kept for DeepEP only from
    core_v0.18.0)."""
    return dispatcher not in two_ranks or expert_ranks > 1


__all__ = ["FLEX_DISPATCHERS", "dispatcher_fits", "kv_heads_fit"]
