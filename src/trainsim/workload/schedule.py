"""Pipeline schedules: the order in which one pipeline rank runs its forward/backward passes.

1F1B (PipeDream-Flush; Narayanan et al. 2021 §2.2.1) and interleaved 1F1B (ibid. §2.2.2),
with Megatron-LM's warm-up counts and micro-batch/chunk numbering
(``megatron/core/pipeline_parallel/schedules.py``), the defaults. The other schedules (GPipe,
zero-bubble, DualPipe) are in ``workload.pipeline_schedules``; ``schedule(..., name)`` picks.

Interleaving runs micro-batches through the model chunks in groups (``group``, Megatron-core's
``microbatch_group_size_per_vp_stage`` N from core_v0.10.0, ``get_schedule_table``): the
forwards of micro-batches g..g+N-1 on chunk 0, then the same ones on chunk 1, and so on, the
last group holding what is left; the k-th backward takes the k-th entry of the same table on
the mirrored chunk. Warm-up: ``2 (pp - 1 - rank) + (vpp - 1) N`` forwards, at most all
(``get_pp_rank_microbatches``). ``group=None`` is the order before core_v0.10.0: groups of pp,
and every forward first when m == pp (core_v0.9.0 ``all_warmup_microbatches``). The Llama 3
paper's schedule makes N tunable the same way (Grattafiori et al. 2024 §3.3.2, Figure 6).
"""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from trainsim.config import RunConfig


class Pass(NamedTuple):
    kind: str  # "F", "B" (whole backward), or a split backward's "I" (input) and "W" (weights)
    microbatch: int
    chunk: int  # model chunk (virtual stage) on this rank


class Overlapped(NamedTuple):
    """DualPipe's forward of one micro-batch run together with the backward of another."""

    f: Pass
    b: Pass


W_MEMORY_FRACTION = 32 / 34
"""Share of a micro-batch's activations a split backward keeps from its I pass until its W
pass: Qi et al. 2024 Table 1, M_W = 32sbh against M_B = sb(34h + 5as); with FlashAttention the
5as score term is not stored (Korthikanti et al. 2022 §4), leaving 32/34."""


def megatron_warmup(stage: int, pp: int, vpp: int, m: int, torch_warmup: bool = False,
                    group: int | None = None) -> int:
    """Forward passes before a stage's first (forward, backward) pair in Megatron's 1F1B
    (``pp - stage - 1``) and interleaved 1F1B (``2 (pp - stage - 1) + (vpp - 1) N``, N =
    ``group`` or pp), at most all ``m vpp`` of them."""
    total = m * vpp
    if vpp == 1:
        return min(pp - stage - 1, m)
    if group is None and m == pp and not torch_warmup:
        return total
    return min((pp - stage - 1) * 2 + (vpp - 1) * (group or pp), total)


def one_f_one_b(stage: int, pp: int, m: int) -> list[Pass]:
    return _warmup_pairs_cooldown(megatron_warmup(stage, pp, 1, m), *_passes(pp, 1, m))


def interleaved_one_f_one_b(stage: int, pp: int, vpp: int, m: int,
                            torch_warmup: bool = False, group: int | None = None) -> list[Pass]:
    """Megatron's interleaved schedule (RunConfig checks m against the group size). Before
    core_v0.10.0 Megatron runs every forward first when m == pp (schedules.py
    ``all_warmup_microbatches``); torch's ``ScheduleInterleaved1F1B`` (``torch_warmup``,
    torch/distributed/pipelining/schedules.py ``get_rank_warmup_ops``, torch 2.4-2.6) keeps
    ``(vpp-1) pp + 2 (pp-1-stage)`` warm-up forwards, capped at ``m vpp``, whatever m, and
    otherwise orders the passes the same way. ``group``: Megatron-core's
    ``microbatch_group_size_per_vp_stage`` (module docstring)."""
    warmup = megatron_warmup(stage, pp, vpp, m, torch_warmup, group)
    return _warmup_pairs_cooldown(warmup, *_passes(pp, vpp, m, group))


def _warmup_pairs_cooldown(warmup: int, fwd: tuple[Pass, ...], bwd: tuple[Pass, ...]
                           ) -> list[Pass]:
    """``warmup`` forwards, then (forward, backward) pairs, then the remaining backwards."""
    total = len(fwd)
    steady = total - warmup
    order: list[Pass] = [None] * (2 * total)  # type: ignore[list-item]
    order[:warmup] = fwd[:warmup]
    order[warmup:warmup + 2 * steady:2] = fwd[warmup:]
    order[warmup + 1:warmup + 2 * steady:2] = bwd[:steady]
    order[warmup + 2 * steady:] = bwd[steady:]
    return order


@functools.lru_cache(maxsize=64)
def _passes(pp: int, vpp: int, m: int, group: int | None = None
            ) -> tuple[tuple[Pass, ...], tuple[Pass, ...]]:
    """The k-th forward and backward of every rank (the same on all ranks: only the warm-up
    differs), in Megatron's micro-batch and chunk numbering: groups of ``group`` (default pp)
    micro-batches go through the chunks in turn, the last group what is left, backwards
    through the chunks in reverse (schedules.py ``get_schedule_table`` and
    ``get_model_chunk_id``, core_v0.10.0-core_v0.15.0)."""
    n = group or pp
    fwd, bwd = [], []
    for first in range(0, m, n):
        mbs = range(first, min(first + n, m))
        for chunk in range(vpp):
            for mb in mbs:
                fwd.append(Pass("F", mb, chunk))
                bwd.append(Pass("B", mb, vpp - 1 - chunk))
    return tuple(fwd), tuple(bwd)


def microbatch_group(cfg: RunConfig) -> int | None:
    """The group size N the config's interleaved 1F1B runs with, None for the order before
    Megatron-core 0.10 (no ``microbatch_group_size_per_vp_stage`` and no framework rule):
    ``parallel.microbatch_group_size_per_vp_stage``, else pp (Megatron-core's default,
    model_parallel_config.py ``__post_init__``), at most m where any N runs (``flexible``)."""
    p = cfg.parallel
    if p.vpp == 1 or p.pipeline_schedule not in (None, "1f1b", "interleaved_1f1b"):
        return None
    n = p.microbatch_group_size_per_vp_stage
    if n is None and p.microbatch_group_rule is None:
        return None
    n = n or p.pp
    return min(n, cfg.schedule_microbatches) if p.microbatch_group_rule == "flexible" else n


def combined_1f1b(cfg: RunConfig) -> bool:
    """Whether the run pairs one micro-batch's forward with another's backward to hide the
    expert all-to-alls (Megatron-core's combined 1F1B, --overlap-moe-expert-parallel-comm,
    core_v0.15.0 megatron/core/pipeline_parallel/combined_1f1b.py): an MoE model under its 1F1B
    schedules, where Megatron-core accepts the overlap (transformer_config.py __post_init__
    asserts EP > 1, virtual stages when pp > 1, no full recompute, the alltoall or flex
    dispatcher). The time path (``trainsim.combined_1f1b``) and the memory estimate both read
    it. Elsewhere ``moe_overlap_ep_comm`` hides every pass's exchange (the DeepSeek-V3
    example's stand-in for DualPipe, which pairs its own passes: ``trainsim.pipeline``)."""
    p = cfg.parallel
    return (p.moe_overlap_ep_comm and cfg.model.is_moe and p.ep > 1
            and p.pipeline_schedule in (None, "1f1b", "interleaved_1f1b")
            and (p.pp == 1 or p.vpp > 1) and p.recompute != "full"
            and p.moe_token_dispatcher_type != "allgather")


def torch_warmup(cfg: RunConfig) -> bool:
    """Whether the config's framework interleaves with torch.distributed.pipelining's warm-up
    count (profile feature ``torch_interleaved_warmup``)."""
    from trainsim.catalog.frameworks import framework_supports
    t = cfg.training
    return framework_supports(t.framework, t.framework_version, "torch_interleaved_warmup")


def schedule(stage: int, pp: int, vpp: int, m: int, name: str | None = None,
             torch_warmup: bool = False, group: int | None = None) -> list[Pass | Overlapped]:
    """One rank's order; ``name``: a ``parallel.pipeline_schedule`` (None: Megatron's);
    ``torch_warmup``: interleaving with torch.distributed.pipelining's warm-up count (the
    framework profile's ``torch_interleaved_warmup``); ``group``: the interleaved order's
    micro-batch group size (:func:`microbatch_group`)."""
    return list(_order(stage, pp, vpp, m, name, torch_warmup, group))


@functools.lru_cache(maxsize=1024)
def _order(stage: int, pp: int, vpp: int, m: int, name: str | None,
           torch_warmup: bool = False, group: int | None = None
           ) -> tuple[Pass | Overlapped, ...]:
    """The order, built once per process (a search and the tuner ask for the same ones)."""
    if name is None or name in ("1f1b", "interleaved_1f1b"):
        if vpp > 1:
            return tuple(interleaved_one_f_one_b(stage, pp, vpp, m, torch_warmup, group))
        return tuple(one_f_one_b(stage, pp, m))
    from trainsim.workload.pipeline_schedules import stage_order
    return tuple(stage_order(name, stage, pp, vpp, m))


def peak_in_flight(order: list[Pass | Overlapped],
                   weight: dict[int, float] | None = None) -> float:
    """Largest weighted number of forward passes whose backward has not run yet (a split
    backward frees ``1 - W_MEMORY_FRACTION`` of it at its I pass, the rest at its W pass).

    With ``weight`` (chunk -> activation bytes), this is the peak activation memory of a rank.
    """
    if weight is None and all(type(step) is Pass and step.kind in ("F", "B") for step in order):
        # whole forwards and backwards, unweighted: counts of +-1, exact in any order
        return max(0.0, *itertools.accumulate(1.0 if step.kind == "F" else -1.0
                                              for step in order)) if order else 0.0
    live = peak = 0.0
    for step in order:
        for p in (step if isinstance(step, Overlapped) else (step,)):
            w = 1.0 if weight is None else weight[p.chunk]
            if p.kind == "F":
                live += w
            elif p.kind == "I":
                live -= w * (1.0 - W_MEMORY_FRACTION)
            elif p.kind == "W":
                live -= w * W_MEMORY_FRACTION
            else:
                live -= w
            peak = max(peak, live)
    return peak


def schedule_peak_in_flight(stage: int, pp: int, vpp: int, m: int, name: str | None = None,
                            torch_warmup: bool = False,
                            weight: dict[int, float] | None = None,
                            group: int | None = None) -> float:
    """:func:`peak_in_flight` of ``schedule(stage, pp, vpp, m, name, torch_warmup, group)``,
    in O(N x vpp) steps for Megatron's 1F1B and interleaved 1F1B whatever ``m`` (N = ``group``
    or pp; negative weights and a short last group walk the order). The other schedules walk
    an order whose length does not grow with ``m`` where a period is proven
    (``workload.peak_period``), else their own.

    Megatron's order is W warm-up forwards, (forward, backward) pairs, then backwards
    (Narayanan et al. 2021 §2.2; ``_warmup_pairs_cooldown``). Where N divides m, the k-th
    forward's chunk and the k-th backward's depend on k only through ``(k // N) % vpp``
    (``_passes``), so the change over one pair, the (W + j + 1)-th forward's weight less the
    j-th backward's, repeats every N x vpp pairs, and over such a run it sums to zero (each
    chunk forwarded and backwarded N times). The live weight after each pair's forward
    therefore repeats with that period, the cool-down only frees, and weights are not
    negative: the peak is reached within the warm-up and the first N x vpp pairs. Those steps
    are walked with the same additions, in the same order, as the whole walk; later periods
    reach the same values (to rounding, from adding and subtracting the same weights again)."""
    n = group or pp
    if name not in (None, "1f1b", "interleaved_1f1b"):
        from trainsim.workload.peak_period import named_peak
        peak = named_peak(name, stage, pp, vpp, m, weight)
        if peak is not None:
            return peak
    if name not in (None, "1f1b", "interleaved_1f1b") or (
            weight is not None and min(weight.values(), default=0.0) < 0) or (
            weight is not None and vpp > 1 and m % n):
        return peak_in_flight(schedule(stage, pp, vpp, m, name, torch_warmup, group), weight)
    total = m * vpp
    warmup = megatron_warmup(stage, pp, vpp, m, torch_warmup, group)
    if weight is None:  # counts of +-1, exact: the warm-up, and one more forward if any pair
        return float(warmup + (1 if warmup < total else 0))
    period = n * vpp
    w_fwd = [weight[(k // n) % vpp] for k in range(period)]
    w_bwd = [weight[vpp - 1 - (k // n) % vpp] for k in range(period)]
    live = peak = 0.0
    for k in range(warmup):
        live += w_fwd[k % period]
        peak = max(peak, live)
    for j in range(min(total - warmup, period)):
        live += w_fwd[(warmup + j) % period]
        peak = max(peak, live)
        live -= w_bwd[j]  # cannot raise the peak (weights >= 0); walked as peak_in_flight does
        peak = max(peak, live)
    return peak


def prefetch_exposed_s(gather_s: list[float], compute_s: list[float],
                       reduce_s: list[float] | None = None) -> float:
    """Time a pass waits for its units' parameters when each unit's all-gather is issued as the
    unit before it starts computing (one unit ahead, on one communication stream): PyTorch
    FSDP's pre-forward/backward unshard with the CPU running ahead and ``limit_all_gathers``
    capping the gathers in flight at two (``torch/distributed/fsdp/_runtime_utils.py``), and
    FSDP2's one-block prefetch. The first unit's gather is exposed whole; a later one only where
    it outlasts the computation it hides behind.

    ``reduce_s``: in a backward, each unit's gradient reduce-scatter, issued when the unit's
    compute ends, on the same group and so the same links as the gathers (the NICs of a
    multi-node group): it holds them before the gathers issued after it, i.e. from the gather
    two units on (issued when the next unit starts). The last unit's is left to the caller
    (it follows the pass)."""
    return prefetch_walk(gather_s, compute_s, reduce_s)[0]


def prefetch_walk(gather_s: list[float], compute_s: list[float],
                  reduce_s: list[float] | None = None, rs_wait: bool = False
                  ) -> tuple[float, float]:
    """``prefetch_exposed_s``'s walk: (the exposed wait, the end of the links' queue from the
    pass's start, the last unit's reduction included: when a gather issued after the pass can
    start on them, since one stream runs the group's collectives in issue order). ``rs_wait``:
    a unit's compute starts once the reduction two units before it has ended."""
    comm_free = compute_end = compute_start = 0.0
    reduced: list[float] = []  # each reduction's end
    for k, (g, c) in enumerate(zip(gather_s, compute_s)):
        gathered = max(comm_free, compute_start) + g  # issued when the previous unit starts
        comm_free = gathered
        if reduce_s and k:  # the previous unit's reduction, issued when its compute ended
            comm_free = max(comm_free, compute_end) + reduce_s[k - 1]
            reduced.append(comm_free)
        compute_start = max(compute_end, gathered,
                            reduced[k - 2] if rs_wait and k >= 2 and reduce_s else 0.0)
        compute_end = compute_start + c
    if reduce_s and compute_s:  # the last unit's, issued as the pass ends
        comm_free = max(comm_free, compute_end) + reduce_s[len(compute_s) - 1]
    return max(0.0, compute_end - sum(compute_s)), max(comm_free, compute_end)


_LABELS: dict[tuple[str, int], list[str]] = {}  # (kind, chunk) -> label by micro-batch


def pass_labels(kind: str, chunk: int, m: int) -> list[str]:
    """Task labels of a pass ('F mb3 c1') for micro-batches 0..m-1 of ``chunk``, made once per
    process: a graph builder indexes them instead of formatting one per pass."""
    out = _LABELS.get((kind, chunk))
    if out is None or len(out) < m:  # a new list, never one extended under a reader
        out = _LABELS[(kind, chunk)] = [f"{kind} mb{mb} c{chunk}" for mb in range(m)]
    return out
