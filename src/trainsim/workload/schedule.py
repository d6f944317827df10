"""Pipeline schedules: the order in which one pipeline rank runs its forward/backward passes.

1F1B (PipeDream-Flush; Narayanan et al. 2021 §2.2.1) and interleaved 1F1B (ibid. §2.2.2),
with Megatron-LM's warm-up counts and micro-batch/chunk numbering
(``megatron/core/pipeline_parallel/schedules.py``). GPipe is 1F1B's order with all warm-up.
"""

from __future__ import annotations

from typing import NamedTuple


class Pass(NamedTuple):
    kind: str  # "F" or "B"
    microbatch: int
    chunk: int  # model chunk (virtual stage) on this rank


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


def schedule(stage: int, pp: int, vpp: int, m: int) -> list[Pass]:
    if vpp > 1:
        return interleaved_one_f_one_b(stage, pp, vpp, m)
    return one_f_one_b(stage, pp, m)


def peak_in_flight(order: list[Pass], weight: dict[int, float] | None = None) -> float:
    """Largest weighted number of forward passes whose backward has not run yet.

    With ``weight`` (chunk -> activation bytes), this is the peak activation memory of a rank.
    """
    live = peak = 0.0
    for p in order:
        w = 1.0 if weight is None else weight[p.chunk]
        live += w if p.kind == "F" else -w
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
