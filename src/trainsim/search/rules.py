"""What the frameworks refuse, as the search skips it: each rule is one that ``RunConfig``
raises on (its source cited there), applied to a memory group's sizes before a config is built,
so the enumeration never yields a layout only to have it refused, and a fixed ``--set`` field
that no candidate could pass is refused in one line (``search.cli._check_fixed``).
"""

from __future__ import annotations

from trainsim.config import ModelConfig

FLEX_DISPATCHERS = ("deepep", "hybridep")
"""Megatron-core's flex token dispatchers (DeepEP, HybridEP backends)."""


def kv_heads_fit(kv_heads: int, tp: int, split: bool) -> bool:
    """Whether ``tp`` ranks can hold ``kv_heads`` KV heads: tp divides them, or, where the
    framework does not split them over tp (``split`` False: profile feature ``kv_heads_split``),
    is a multiple of them (each head replicated). ``config.run``: Megatron-core
    ``divide(num_query_groups, tp)``."""
    return not kv_heads % tp or (not split and not tp % kv_heads)


def tp_fits(m: ModelConfig, tp: int, split: bool) -> bool:
    """Whether ``tp`` divides the attention heads and the FFN and can hold the KV heads."""
    return not (m.num_attention_heads % tp or m.ffn_size % tp) and kv_heads_fit(m.kv_heads, tp,
                                                                                 split)


def dispatcher_fits(dispatcher: str, expert_ranks: int) -> bool:
    """Whether ``dispatcher`` runs on ``expert_ranks`` (ep x expert tp) ranks: the flex
    dispatchers need at least 2 (``config.run``: MoEFlexTokenDispatcher, HybridEPBuffer)."""
    return dispatcher not in FLEX_DISPATCHERS or expert_ranks > 1


def zeros_fit(zeros: tuple[int, ...], data_parallel_impl: object, pp: int) -> tuple[int, ...]:
    """The optimizer shardings of ``zeros`` that run with ``pp`` stages: DeepSpeed's pipeline
    engine takes ZeRO 0-1 only (``config.parallel``: PipelineEngine asserts stage < 2)."""
    return tuple(z for z in zeros if z < 2) if data_parallel_impl == "deepspeed" and pp > 1 \
        else zeros


def schedules_fit(names: tuple[str, ...], pp: int, vpp: int, n_micro: int) -> tuple[str, ...]:
    """The pipeline schedules of ``names`` ("" = Megatron's 1F1B, interleaved when vpp > 1)
    that run ``vpp`` chunks per rank on ``pp`` stages with ``n_micro`` micro-batches: the V
    schedules two chunks, interleaved zero-bubble more than one, the others one (``config.
    parallel`` ``ParallelConfig._check_schedule``); DualPipe one chunk, an even pp and an even
    number of micro-batches, at least 2 pp (deepseek-ai/DualPipe dualpipe.py ``step``:
    ``num_chunks >= num_ranks * 2``, ``num_chunks % 2 == 0``)."""
    out = []
    for name in names:
        if name in ("zb_v", "dualpipe_v") and vpp != 2:
            continue
        if name == "dualpipe" and (vpp > 1 or pp % 2 or n_micro < 2 * pp or n_micro % 2):
            continue
        if name not in ("", "zb_v", "dualpipe_v", "interleaved_zb") and vpp > 1:
            continue
        if name == "interleaved_zb" and vpp == 1:
            continue
        out.append(name)
    return tuple(out)


__all__ = ["FLEX_DISPATCHERS", "dispatcher_fits", "kv_heads_fit", "schedules_fit", "tp_fits",
           "zeros_fit"]
