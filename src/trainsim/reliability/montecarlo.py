"""A seeded Monte Carlo over a whole run: interruptions, recoveries, checkpoints, lost work.

Vectorized over trials with numpy: each pass of the loop advances every trial to its next
interruption, so a run with F interruptions costs ~F passes over arrays of ``trials``.

One trial alternates *segments* (training from the last durable checkpoint until the next
interruption) and *recoveries*. Interruptions form a Poisson process over wall-clock time, with
one rate per cause (the profile's rate per component times the component count). Within a
segment, training time advances in cycles of ``interval`` training seconds followed by a
``stall`` (the blocking part of a checkpoint); a checkpoint survives a failure only
``commit_latency`` after its stall ends (the asynchronous upload). An unplanned interruption
loses the training since the last durable checkpoint; a planned one writes a checkpoint first
and loses nothing. A failure during a recovery starts the recovery over (its own kind).
Interruption gaps and causes are drawn for every trial at every pass, so two plans that differ
only in the checkpoint interval see the same failures (common random numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainsim.errors import TrainsimError
from trainsim.reliability.plan import RECOVERY_CAUSES, RunPlan

CAUSES = ("straggler", "checkpoint", "lost_work") + RECOVERY_CAUSES
"""Where wall-clock time goes besides useful training, in the order they are reported."""
_MAX_PASSES = 200_000


@dataclass(frozen=True)
class Outcome:
    """Per-trial results of one Monte Carlo (arrays of length ``trials``)."""

    wall_s: np.ndarray
    """Wall-clock time of the run (or of the window)."""
    useful_s: np.ndarray
    """Failure-, checkpoint- and straggler-free training time contained in it."""
    lost_s: dict[str, np.ndarray]
    """Seconds per cause (CAUSES); useful_s plus all of them add up to wall_s."""
    unexpected: np.ndarray
    """Unplanned interruptions per trial."""
    planned: np.ndarray
    mode_lost_s: np.ndarray
    """Mean seconds (recovery and lost work) per failure cause, over trials."""
    mode_counts: np.ndarray
    """Mean interruptions per failure cause, over trials."""

    @property
    def trials(self) -> int:
        return int(self.wall_s.size)

    @property
    def ettr(self) -> np.ndarray:
        """Effective training time ratio (Meta's ETTR): training kept (slow steps included)
        over wall clock: neither checkpoint stalls, recoveries nor redone work count."""
        return (self.useful_s + self.lost_s["straggler"]) / self.wall_s

    @property
    def goodput(self) -> np.ndarray:
        """Failure-free, straggler-free training time over wall clock."""
        return self.useful_s / self.wall_s


def _segment(plan_cycle: float, interval: float, seg: np.ndarray) -> np.ndarray:
    """Training time in ``seg`` wall seconds from a (re)start: cycles of interval + stall."""
    if math.isinf(interval):
        return seg.copy()
    n = np.floor(seg / plan_cycle)
    return n * interval + np.minimum(seg - n * plan_cycle, interval)


def _wall_for(plan_cycle: float, interval: float, work: np.ndarray) -> np.ndarray:
    """Wall seconds from a (re)start to train ``work`` seconds (inverse of _segment)."""
    with np.errstate(invalid="ignore"):
        if math.isinf(interval):
            return work.copy()
        n = np.maximum(np.ceil(work / interval) - 1.0, 0.0)
        wall = n * plan_cycle + (work - n * interval)
    return np.where(np.isinf(work), np.inf, wall)


def expected_interruptions_lower_bound(plan: RunPlan, need_s: float) -> float:
    """At least how many unplanned interruptions one trial expects before ``need_s`` training
    seconds are kept: each stretch of training between two checkpoints must run free of them,
    which takes e^(rate x stretch) - 1 interruptions on average. A stretch whose work a
    checkpoint must keep (every one but the last) lasts its ``interval`` of training and the
    checkpoint's stall (``run`` counts an interval durable only once its checkpoint is written,
    ``cycle`` after the restart); the last, the work left. Commit latency and recoveries are
    left out, and each interruption's recovery counts once plus the restarts of the shortest
    one (any interruption restarts it: e^(all rates x its seconds) - 1 on average): the rest
    only adds. (The stall and the restarts were left out too: a checkpoint written at 0.5 B/s,
    a stall of months, ran 200,000 passes (33 s at 50 trials) before refusing: fuzz34.)"""
    rate = plan.unexpected_rate
    if rate == 0 or not math.isfinite(need_s):
        return 0.0
    interval = plan.effective_interval_s
    if need_s <= interval:
        stretches = math.expm1(min(rate * need_s, 700.0))
    else:
        kept = math.ceil(need_s / interval) - 1  # stretches a checkpoint keeps
        stretches = kept * math.expm1(min(rate * (interval + plan.stall_s), 700.0)) + \
            math.expm1(min(rate * (need_s - kept * interval), 700.0))
    total = float(sum(plan.mode_rates))
    shortest = min((sum(s) for r, s in zip(plan.mode_rates, plan.recovery_s) if r > 0),
                   default=0.0)
    return stretches * math.exp(min(total * shortest, 700.0))


def run(plan: RunPlan, *, work_s: float = math.inf, horizon_s: float = math.inf,
        trials: int = 1000, seed: int = 0) -> Outcome:
    """Simulate ``trials`` runs: until ``work_s`` seconds of failure-free training are done, or
    over a window of ``horizon_s`` wall-clock seconds, whichever comes first."""
    if math.isinf(work_s) and math.isinf(horizon_s):
        raise TrainsimError("give the run's work (tokens) or a wall-clock window (days)")
    if trials < 1:
        raise TrainsimError(f"trials={trials} must be at least 1")
    rates = np.asarray(plan.mode_rates, dtype=float)
    total_rate = float(rates.sum())
    n_modes = rates.size
    cum = np.cumsum(rates) / total_rate if total_rate > 0 else np.ones(n_modes)
    planned_of = np.asarray(plan.mode_planned, dtype=bool)
    steps = np.asarray(plan.recovery_s, dtype=float).reshape(n_modes, len(RECOVERY_CAUSES))
    step_end = np.cumsum(steps, axis=1)
    step_start = step_end - steps
    rec_total = step_end[:, -1]
    interval = plan.effective_interval_s
    cycle = interval + plan.stall_s
    latency = plan.commit_latency_s
    slow = plan.straggler_factor

    if math.isinf(horizon_s):  # a run that ends only when its work is done
        expected = expected_interruptions_lower_bound(plan, work_s * slow)
        if expected > _MAX_PASSES:  # refused now, not after _MAX_PASSES passes (seconds)
            raise TrainsimError(
                f"the run expects more than {_MAX_PASSES:,} interruptions on average "
                "(restarted recoveries included) before its work is done, more than the "
                "simulation follows (one every "
                f"{plan.mtbf_s / 3600:.3g} h on average, and "
                f"{min(interval, work_s * slow) / 3600:.3g} h of training to keep between "
                "checkpoints" + (f", each checkpoint stalling {plan.stall_s / 3600:.3g} h"
                                 if plan.stall_s > interval else "") +
                "); shorten reliability.checkpoint.interval_s (--interval)"
                + (" or speed up the checkpoint (reliability.checkpoint's bandwidths)"
                   if plan.stall_s > interval else ""))

    rng = np.random.default_rng(seed)
    rng_rec = np.random.default_rng([seed, 1])  # recoveries: keeps the failure stream aligned
    k = trials
    t = np.zeros(k)
    kept = np.zeros(k)  # training seconds (with slow steps) that count towards the run
    need = np.full(k, work_s * slow)
    acc = {c: np.zeros(k) for c in CAUSES if c != "straggler"}
    unexpected = np.zeros(k, dtype=np.int64)
    planned = np.zeros(k, dtype=np.int64)
    mode_lost = np.zeros(n_modes)
    mode_count = np.zeros(n_modes)
    active = np.ones(k, dtype=bool)

    def draw(gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        gap = gen.exponential(1.0 / total_rate, k) if total_rate > 0 else np.full(k, np.inf)
        mode = np.minimum(np.searchsorted(cum, gen.random(k), side="right"), n_modes - 1)
        return gap, mode

    passes = 0
    while active.any():
        passes += 1
        if passes > _MAX_PASSES:
            raise TrainsimError("the run does not finish: interruptions come faster than "
                                "recoveries end (check the failure rates and recovery times)")
        gap, mode = draw(rng)
        finish = np.maximum(_wall_for(cycle, interval, need - kept), 0.0)
        left = np.maximum(horizon_s - t, 0.0)
        by_finish = finish <= np.minimum(gap, left)
        by_horizon = ~by_finish & (left <= gap)
        seg = np.where(by_finish, finish, np.where(by_horizon, left, gap))
        seg = np.where(active, seg, 0.0)
        train = _segment(cycle, interval, seg)
        acc["checkpoint"] += seg - train
        t += seg
        ended = active & (by_finish | by_horizon)
        kept += np.where(ended, train, 0.0)
        failed = active & ~ended
        active &= ~ended
        if not failed.any():
            continue
        is_planned = planned_of[mode]
        # unplanned: only checkpoints whose upload finished survive
        if math.isinf(interval):
            durable = np.zeros(k)
        else:
            durable = np.maximum(np.floor((seg - latency) / cycle), 0.0) * interval
            durable = np.minimum(durable, train)
        fu, fp = failed & ~is_planned, failed & is_planned
        lost = np.where(fu, train - durable, 0.0)
        acc["lost_work"] += lost
        kept += np.where(fu, durable, 0.0) + np.where(fp, train, 0.0)
        stop = np.where(fp, np.minimum(plan.stop_checkpoint_s, horizon_s - t), 0.0)
        acc["checkpoint"] += stop
        t += stop
        unexpected += fu
        planned += fp
        np.add.at(mode_lost, mode[failed], lost[failed])
        np.add.at(mode_count, mode[failed], 1.0)
        # recoveries, restarted by any interruption that arrives during them
        pending, cur = failed & (t < horizon_s), mode
        active &= pending | ~failed
        while pending.any():
            passes += 1
            if passes > _MAX_PASSES:
                raise TrainsimError("the run does not finish: interruptions come faster than "
                                    "recoveries end (check the failure rates and recovery "
                                    "times, checkpoint sizes included)")
            x, new_mode = draw(rng_rec)
            need_s = rec_total[cur]
            hit = pending & (x < need_s)
            spent = np.where(hit, x, need_s)
            spent = np.where(pending, np.minimum(spent, np.maximum(horizon_s - t, 0.0)), 0.0)
            part = np.clip(spent[:, None] - step_start[cur], 0.0, steps[cur])
            for i, cause in enumerate(RECOVERY_CAUSES):
                acc[cause] += part[:, i]
            np.add.at(mode_lost, cur[pending], spent[pending])
            t += spent
            out = pending & (t >= horizon_s)
            active &= ~out
            hit &= ~out
            unexpected += hit & ~planned_of[new_mode]
            planned += hit & planned_of[new_mode]
            np.add.at(mode_count, new_mode[hit], 1.0)
            cur = np.where(hit, new_mode, cur)
            pending = hit

    useful = kept / slow
    lost_s = {"straggler": kept - useful, **acc}
    return Outcome(wall_s=t, useful_s=useful, lost_s=lost_s, unexpected=unexpected,
                   planned=planned, mode_lost_s=mode_lost / k, mode_counts=mode_count / k)


# ---------------------------------------------------------------------------- interval sweep

@dataclass(frozen=True)
class Sweep:
    """Mean wall-clock time of the run for a range of checkpoint intervals."""

    intervals_s: tuple[float, ...]
    mean_wall_s: tuple[float, ...]
    p90_wall_s: tuple[float, ...]
    mean_goodput: tuple[float, ...]
    optimum_s: float
    """The simulated optimum: vertex of a parabola fitted to mean wall time against
    log(interval) around the best swept point."""
    young_s: float
    daly_s: float
    trials: int
    seed: int
    cost_label: str = "wall-clock days (mean)"
    """What mean_wall_s measures: the run's wall clock, or for a fixed window the wall clock
    that the window's failure-free work would take."""

    def to_dict(self) -> dict[str, Any]:
        return {"intervals_s": list(self.intervals_s), "mean_wall_s": list(self.mean_wall_s),
                "p90_wall_s": list(self.p90_wall_s), "mean_goodput": list(self.mean_goodput),
                "optimum_s": self.optimum_s, "young_s": self.young_s, "daly_s": self.daly_s,
                "trials": self.trials, "seed": self.seed}


def fit_minimum(xs: np.ndarray, ys: np.ndarray) -> float:
    """x at the vertex of a parabola through the lowest point and its neighbours (log x)."""
    lx = np.log(np.asarray(xs, dtype=float))
    ys = np.asarray(ys, dtype=float)
    i = int(np.argmin(ys))
    lo, hi = max(0, i - 2), min(len(xs), i + 3)
    if hi - lo < 3:
        return float(xs[i])
    a, b, _ = np.polyfit(lx[lo:hi], ys[lo:hi], 2)
    if a <= 0:
        return float(xs[i])
    return float(np.exp(np.clip(-b / (2 * a), lx[lo], lx[hi - 1])))


def sweep_interval(plan: RunPlan, *, work_s: float = math.inf, horizon_s: float = math.inf,
                   trials: int = 500, seed: int = 0, intervals_s: Any = None,
                   points: int = 13) -> Sweep:
    """Simulate the run at several checkpoint intervals around Young's (same failures at each)."""
    from trainsim.reliability.plan import daly_interval, young_interval

    young = young_interval(plan.stall_s, plan.mtbf_s)
    daly = daly_interval(plan.stall_s, plan.mtbf_s)
    if intervals_s is None:
        if math.isinf(young) or young <= 0:
            raise TrainsimError("no interval sweep: the run has no unplanned failures or "
                                "checkpoints cost nothing")
        intervals_s = young * np.geomspace(0.25, 4.0, points)
    xs = np.asarray(sorted(float(x) for x in intervals_s))
    label = ("wall-clock days (mean)" if not math.isinf(work_s) else
             f"days to train {horizon_s / 86400:g} failure-free days")
    means, p90s, goods = [], [], []
    for x in xs:
        o = run(plan.with_interval(float(x)), work_s=work_s, horizon_s=horizon_s,
                trials=trials, seed=seed)
        if math.isinf(work_s):  # a fixed window: less useful work is the cost
            means.append(float(np.mean(horizon_s / o.goodput)))
            p90s.append(float(np.percentile(horizon_s / o.goodput, 90)))
        else:
            means.append(float(o.wall_s.mean()))
            p90s.append(float(np.percentile(o.wall_s, 90)))
        goods.append(float(o.goodput.mean()))
    return Sweep(intervals_s=tuple(xs.tolist()), mean_wall_s=tuple(means),
                 p90_wall_s=tuple(p90s), mean_goodput=tuple(goods),
                 optimum_s=fit_minimum(xs, np.asarray(means)), young_s=young, daly_s=daly,
                 trials=trials, seed=seed, cost_label=label)


@dataclass(frozen=True)
class Summary:
    """Means and percentiles of an Outcome, in the units a report shows."""

    trials: int
    seed: int
    mean_days: float
    p50_days: float
    p90_days: float
    ettr: float
    goodput: float
    interruptions: float
    unexpected: float
    planned: float
    lost_s: dict[str, float] = field(default_factory=dict)
    """Mean seconds per cause, plus 'training' (useful time)."""
    by_mode: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per failure cause: mean interruptions and mean seconds lost."""


def summarize(o: Outcome, plan: RunPlan, seed: int) -> Summary:
    days = o.wall_s / 86400.0
    lost = {"training": float(o.useful_s.mean())}
    lost.update({c: float(v.mean()) for c, v in o.lost_s.items()})
    by_mode = {n: {"interruptions": float(o.mode_counts[i]), "lost_s": float(o.mode_lost_s[i]),
                   "category": plan.mode_categories[i] if plan.mode_categories else ""}
               for i, n in enumerate(plan.mode_names)}
    return Summary(trials=o.trials, seed=seed, mean_days=float(days.mean()),
                   p50_days=float(np.percentile(days, 50)),
                   p90_days=float(np.percentile(days, 90)), ettr=float(o.ettr.mean()),
                   goodput=float(o.goodput.mean()),
                   interruptions=float((o.unexpected + o.planned).mean()),
                   unexpected=float(o.unexpected.mean()), planned=float(o.planned.mean()),
                   lost_s=lost, by_mode=by_mode)
