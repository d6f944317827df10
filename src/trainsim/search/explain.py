"""Why a configuration loses to the best one, and the Pareto front of a search.

A loss is told from the two iteration-time breakdowns (compute, pipeline bubble, exposed
communication by group, optimizer): the parts that grew most, each with the setting that
differs and explains it (more recompute, a deeper pipeline, no gradient-reduce overlap, ...).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from trainsim.search.evaluation import Evaluation
from trainsim.search.space import ZERO_LABELS, Candidate

MIN_SHARE = 0.005
"""Differences below this fraction of the best iteration time are not worth a reason."""
MAX_REASONS = 3


def _parts(e: Evaluation) -> dict[str, float]:
    b, x = e.breakdown, e.exposed_comm
    return {"compute": b.get("compute_s", 0.0), "bubble": b.get("pipeline_bubble_s", 0.0),
            "tp": x.get("tp", 0.0), "cp": x.get("cp", 0.0), "ep": x.get("ep", 0.0),
            "pp": x.get("pp", 0.0),
            "dp": x.get("dp", 0.0), "optimizer": b.get("optimizer_s", 0.0),
            "data loading": b.get("data_loading_s", 0.0), "other": b.get("other_s", 0.0)}


def _diff(a: Candidate, b: Candidate, fields: Sequence[str]) -> str:
    """'recompute full vs none, mb 1 vs 2' for the fields where a and b differ."""
    names = {"recompute": "recompute", "micro_batch": "mb", "tp": "TP", "cp": "CP", "pp": "PP",
             "vpp": "VPP", "dp": "DP", "zero": "sharding", "sequence_parallel": "SP"}
    out = []
    for f in fields:
        if f in ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
                 "overlap_p2p_comm"):
            va, vb = getattr(a, f), getattr(b, f)
            if va != vb:
                out.append(f"{f} {'on' if va else 'off'}")
            continue
        va, vb = getattr(a.mem, f), getattr(b.mem, f)
        if va == vb:
            continue
        if f == "zero":
            va, vb = ZERO_LABELS[va], ZERO_LABELS[vb]
        if isinstance(va, bool):
            va, vb = ("on" if va else "off"), ("on" if vb else "off")
        out.append(f"{names[f]} {va} vs {vb}")
    return ", ".join(out)


_CAUSES = {
    "compute": ("recompute", "micro_batch", "tp", "cp", "sequence_parallel", "pp"),
    "bubble": ("pp", "vpp", "micro_batch", "dp"),
    "tp": ("tp", "sequence_parallel", "tp_comm_overlap", "micro_batch"),
    "cp": ("cp",),
    "ep": (),
    "pp": ("pp", "vpp", "overlap_p2p_comm"),
    "dp": ("dp", "zero", "overlap_grad_reduce", "overlap_param_gather", "cp", "pp", "tp"),
    "optimizer": ("zero", "dp", "pp", "tp"),
    "other": (),
}
_TITLES = {"compute": "compute", "bubble": "pipeline bubble", "tp": "exposed TP comm",
           "cp": "exposed CP comm", "ep": "exposed EP comm", "pp": "exposed PP comm", "dp": "exposed DP comm",
           "optimizer": "optimizer step", "other": "other"}


def why_slower(best: Evaluation, other: Evaluation) -> tuple[str, ...]:
    """Short reasons why ``other`` is slower than ``best`` (largest first)."""
    gap = other.iteration_time_s - best.iteration_time_s
    if gap <= MIN_SHARE * best.iteration_time_s:
        return ("within 0.5% of the best",)
    pb, po = _parts(best), _parts(other)
    deltas = sorted(((po[k] - pb[k], k) for k in pb), reverse=True)
    out = []
    for d, k in deltas[:MAX_REASONS]:
        if d <= MIN_SHARE * best.iteration_time_s:
            break
        cause = _diff(other.candidate, best.candidate, _CAUSES[k])
        if k == "bubble" and other.num_microbatches != best.num_microbatches:
            micro = f"{other.num_microbatches} vs {best.num_microbatches} micro-batches"
            cause = ", ".join(filter(None, [cause, micro]))
        out.append(f"+{d:.3g} s {_TITLES[k]}" + (f" ({cause})" if cause else ""))
    return tuple(out) or (f"+{gap:.3g} s spread over several parts",)


def _r(x: float) -> float:
    """Nine significant digits: variants whose simulated times differ only by float rounding
    (summation order) tie."""
    return float(f"{x:.9g}")


def rank_key(e: Evaluation) -> tuple:
    """Ranking order: faster first; of equal times the one with more overlap switches on
    (the search evaluates those first), then candidate order. Deterministic."""
    c = e.candidate
    on = c.overlap_grad_reduce + c.overlap_param_gather + c.tp_comm_overlap + c.overlap_p2p_comm
    return (_r(e.iteration_time_s), -on, c)


def dominates(a: Evaluation, b: Evaluation) -> bool:
    """a is at least as good as b on throughput, memory headroom and GPU count, and better on one."""
    ta, tb = _r(a.tokens_per_s), _r(b.tokens_per_s)
    ge = ta >= tb and a.memory_headroom_bytes >= b.memory_headroom_bytes and a.num_gpus <= b.num_gpus
    gt = ta > tb or a.memory_headroom_bytes > b.memory_headroom_bytes or a.num_gpus < b.num_gpus
    return ge and gt


def pareto_front(evals: Sequence[Evaluation]) -> list[Evaluation]:
    """Evaluations no other one dominates (throughput up, memory headroom up, GPUs down),
    fastest first; of ties the first in :func:`rank_key` order is kept."""
    order = sorted(evals, key=lambda e: (-_r(e.tokens_per_s), -e.memory_headroom_bytes,
                                         e.num_gpus, rank_key(e)))
    front: list[Evaluation] = []
    for e in order:
        if any(dominates(f, e) or _same(f, e) for f in front):
            continue
        front.append(e)
    return front


class FrontIndex:
    """Dominance queries against the evaluations so far, in O(log n) per GPU count.

    Per GPU count it keeps the 2-D front (tokens/s down, headroom up); an evaluation dominates
    a query point exactly when the front of some GPU count <= the query's does.
    """

    def __init__(self) -> None:
        self._fronts: dict[int, list[tuple[float, float]]] = {}  # (-tokens/s, headroom) sorted

    def add(self, e: Evaluation) -> None:
        front = self._fronts.setdefault(e.num_gpus, [])
        key = (-e.tokens_per_s, e.memory_headroom_bytes)
        i = bisect.bisect_left(front, key)
        if i > 0 and front[i - 1][1] >= key[1]:
            return  # a faster point with at least as much headroom exists
        if i < len(front) and front[i][0] == key[0] and front[i][1] >= key[1]:
            return
        j = i
        while j < len(front) and front[j][1] <= key[1]:
            j += 1  # slower points with no more headroom are dominated now
        front[i:j] = [key]

    def dominated(self, tokens_per_s: float, headroom: float, num_gpus: int) -> bool:
        """True if an evaluation is at least as fast, with as much headroom, on no more GPUs."""
        for n, front in self._fronts.items():
            if n > num_gpus:
                continue
            k = bisect.bisect_right(front, (-tokens_per_s, float("inf")))
            if k and front[k - 1][1] >= headroom:
                return True
        return False

    def most_headroom(self, tokens_per_s: float, num_gpus: int) -> float | None:
        """The most headroom of an evaluation at least as fast on no more GPUs (None: there is
        none): ``dominated(tokens_per_s, h, num_gpus)`` is exactly ``h <= this``, so a caller
        can ask it before working out ``h`` (``search.waves``)."""
        most = None
        for n, front in self._fronts.items():
            if n > num_gpus:
                continue
            k = bisect.bisect_right(front, (-tokens_per_s, float("inf")))
            if k and (most is None or front[k - 1][1] > most):
                most = front[k - 1][1]
        return most


def _same(a: Evaluation, b: Evaluation) -> bool:
    return (_r(a.tokens_per_s) == _r(b.tokens_per_s)
            and a.memory_headroom_bytes == b.memory_headroom_bytes and a.num_gpus == b.num_gpus)


__all__ = ["FrontIndex", "dominates", "pareto_front", "rank_key", "why_slower"]
