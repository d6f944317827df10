"""Pipeline schedules: the order in which one pipeline rank runs its forward/backward passes.

1F1B (PipeDream-Flush; Narayanan et al. 2021 §2.2.1) and interleaved 1F1B (ibid. §2.2.2),
with Megatron-LM's warm-up counts and micro-batch/chunk numbering
(``megatron/core/pipeline_parallel/schedules.py``), the defaults. The other schedules (GPipe,
zero-bubble, DualPipe) are in ``workload.pipeline_schedules``; ``schedule(..., name)`` picks.
"""

from __future__ import annotations

from typing import NamedTuple


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


def one_f_one_b(stage: int, pp: int, m: int) -> list[Pass]:
    warmup = min(pp - stage - 1, m)
    order = [Pass("F", i, 0) for i in range(warmup)]
    for i in range(m - warmup):
        order.append(Pass("F", warmup + i, 0))
        order.append(Pass("B", i, 0))
    order.extend(Pass("B", i, 0) for i in range(m - warmup, m))
    return order


def interleaved_one_f_one_b(stage: int, pp: int, vpp: int, m: int) -> list[Pass]:
    """Megatron's interleaved schedule; needs m % pp == 0 (checked by RunConfig)."""
    total = m * vpp
    if m == pp:
        warmup = total
    else:
        warmup = min((pp - stage - 1) * 2 + (vpp - 1) * pp, total)

    def fwd(k: int) -> Pass:
        group, within = divmod(k, pp * vpp)
        return Pass("F", group * pp + within % pp, (k // pp) % vpp)

    def bwd(k: int) -> Pass:
        group, within = divmod(k, pp * vpp)
        return Pass("B", group * pp + within % pp, vpp - 1 - (k // pp) % vpp)

    order = [fwd(k) for k in range(warmup)]
    for i in range(total - warmup):
        order.append(fwd(warmup + i))
        order.append(bwd(i))
    order.extend(bwd(k) for k in range(total - warmup, total))
    return order


def schedule(stage: int, pp: int, vpp: int, m: int,
             name: str | None = None) -> list[Pass | Overlapped]:
    """One rank's order; ``name``: a ``parallel.pipeline_schedule`` (None: Megatron's)."""
    if name is None or name in ("1f1b", "interleaved_1f1b"):
        if vpp > 1:
            return interleaved_one_f_one_b(stage, pp, vpp, m)
        return one_f_one_b(stage, pp, m)
    from trainsim.workload.pipeline_schedules import stage_order
    return list(stage_order(name, stage, pp, vpp, m))


def peak_in_flight(order: list[Pass | Overlapped],
                   weight: dict[int, float] | None = None) -> float:
    """Largest weighted number of forward passes whose backward has not run yet (a split
    backward frees ``1 - W_MEMORY_FRACTION`` of it at its I pass, the rest at its W pass).

    With ``weight`` (chunk -> activation bytes), this is the peak activation memory of a rank.
    """
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


def prefetch_exposed_s(gather_s: list[float], compute_s: list[float]) -> float:
    """Time a pass waits for its units' parameters when each unit's all-gather is issued as the
    unit before it starts computing (one unit ahead, on one communication stream): PyTorch
    FSDP's pre-forward/backward unshard with the CPU running ahead and ``limit_all_gathers``
    capping the gathers in flight at two (``torch/distributed/fsdp/_runtime_utils.py``), and
    FSDP2's one-block prefetch. The first unit's gather is exposed whole; a later one only where
    it outlasts the computation it hides behind."""
    comm_free = compute_end = compute_start = 0.0
    for g, c in zip(gather_s, compute_s):
        gathered = max(comm_free, compute_start) + g  # issued when the previous unit starts
        comm_free = gathered
        compute_start = max(compute_end, gathered)
        compute_end = compute_start + c
    return max(0.0, compute_end - sum(compute_s))
