"""What a result needs from an iteration's timeline: per stage, when it ends, the work on its
compute stream and the additive parts of its breakdown; the critical stage; the breakdown;
the exposed data loading. Split from ``simulator`` so that the steady-state shortcut and the
full simulation summarize a timeline the same way."""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainsim.config import RunConfig
from trainsim.engine import Timeline
from trainsim.errors import ConfigError
from trainsim.pricing import COMPUTE, CP, DP, DP_STREAMS, EP, OPT, PP, TP


@dataclass
class Summary:
    """What the result needs from an iteration's timeline, per stage: when its last task ends,
    when its iteration starts, the work on its compute stream, and (for the stages listed)
    the additive parts of its breakdown (:func:`stage_sums`)."""

    end_s: list[float]
    origin_s: list[float]
    busy_s: list[float]
    sums: dict[int, dict[str, float]]


def stage_sums(tl: Timeline, ends: list[int], origin: list[float],
               stages: list[int]) -> dict[int, dict[str, float]]:
    """Additive parts of the breakdown of each of ``stages``, from its compute tasks: busy
    categories on its compute stream, gaps by the reason it waited (data-parallel
    communication, else '_bubble'), '_tail' (its last task's end past its last compute task)
    and '_end' (that end less the stage's origin)."""
    streams = tl.queues or _queues(tl.tasks)
    dp_side = {stage for stage, kind in streams if kind in DP_STREAMS}
    out = {s: {COMPUTE: 0.0, TP: 0.0, CP: 0.0, EP: 0.0, PP: 0.0, DP: 0.0, OPT: 0.0,
               "_bubble": 0.0} for s in stages}
    prev_end = {s: add_compute(tl, streams.get((s, "compute"), ()), origin[s], out[s],
                               s in dp_side) for s in stages}
    end = tl.end_s
    for s in stages:
        out[s]["_tail"] = end[ends[s]] - prev_end[s]  # exposed parameter all-gather after the step
        out[s]["_end"] = end[ends[s]] - origin[s]
    return out


def add_compute(tl: Timeline, queue: list[int] | tuple, prev_end: float,
                cats: dict[str, float], dp_side: bool) -> float:
    """Add to ``cats`` the breakdown parts of ``queue`` (one stage's compute tasks, in order,
    the first after ``prev_end``); returns the last one's end."""
    tasks, start, end = tl.tasks, tl.start_s, tl.end_s
    side = DP if dp_side else PP
    for i in queue:
        t = tasks[i]
        gap = start[i] - prev_end
        if gap > 0:
            # the dependency that ended last (the first of equal ends: ``max``'s choice),
            # without a key call per dependency
            waited_on, last = None, 0.0
            for d in t.deps:
                e = end[d]
                if waited_on is None or e > last:
                    waited_on, last = d, e
            if waited_on is not None and tasks[waited_on].stream[0] == t.stream[0] and \
                    tasks[waited_on].stream[1] in DP_STREAMS:
                cats[DP] += gap
            else:
                cats["_bubble"] += gap
        for cat, dur in t.segments:
            cats[cat] = cats.get(cat, 0.0) + dur
        # slowed by collectives running beside it on the data-parallel (or, with overlapped
        # p2p, the pipeline) stream: their SMs' share of its time is exposed communication
        slowed = end[i] - start[i] - t.duration_s
        cats[side] += slowed if slowed > 0.0 else 0.0  # noqa: FURB136 - no call per task
        prev_end = end[i]
    return prev_end


def totals(cfg: RunConfig, tl: Timeline, ends: list[int]
           ) -> tuple[list[float], list[float], list[float]]:
    """Per stage: when its last task ends, when its iteration starts, the work on its compute
    stream (what picks the critical stage)."""
    pp = len(ends)
    origin = [0.0] * pp
    if cfg.parallel.optimizer_post_validation:  # stages overlap consecutive iterations
        from trainsim.pipeline import stage_starts
        origin = stage_starts(tl, pp)
    busy = [0.0] * pp
    tasks = tl.tasks
    for (stage, kind), queue in (tl.queues or _queues(tasks)).items():
        if kind == "compute":
            b = busy[stage]
            for i in queue:  # in task order, as a pass over all tasks adds them
                b += tasks[i].duration_s
            busy[stage] = b
    return [tl.end_s[e] for e in ends], origin, busy


def _queues(tasks: list) -> dict[tuple[int, str], list[int]]:
    """Per stream, its tasks' indices in order (``Timeline.queues`` of a timeline made
    elsewhere)."""
    out: dict[tuple[int, str], list[int]] = {}
    for i, t in enumerate(tasks):
        out.setdefault(t.stream, []).append(i)
    return out


def summarize(cfg: RunConfig, tl: Timeline, ends: list[int], all_stages: bool = False
              ) -> Summary:
    """The summary of a timeline (the breakdown parts of the critical stage, or of all)."""
    end, origin, busy = totals(cfg, tl, ends)
    stages = list(range(len(ends))) if all_stages else [critical_stage(busy, end)]
    return Summary(end, origin, busy, stage_sums(tl, ends, origin, stages))


TIE = 1e-9
"""Relative difference under which two stages' work (or end times) count as equal: sums of
the same durations in another order differ in their last bits."""


def critical_stage(busy: list[float], end: list[float]) -> int:
    """The stage that bounds throughput: the most work on its compute stream (ties: the one
    that finishes last, then the lowest index). Work or an end past what a float holds (a
    kernel database record of 1e308 s summed twice) is an error naming it, not a stage
    (fuzz43: ``max`` of no stage)."""
    if not all(math.isfinite(v) for v in (*busy, *end)):
        raise ConfigError("the simulated iteration's length is not a finite number of seconds: "
                          "an input time or size is past what a float holds (a kernel database "
                          "record's time_s, a rate or a count)")
    top = max(busy)
    tied = [s for s, b in enumerate(busy) if b >= top - TIE * abs(top)]
    last = max(end[s] for s in tied)
    return next(s for s in tied if end[s] >= last - TIE * abs(last))


def breakdown_of(sums: dict[str, float], iteration_s: float) -> tuple[dict, dict]:
    """The breakdown of the critical stage from its :func:`stage_sums`: the wait for slower
    stages after it finished is bubble too."""
    cats = {k: v for k, v in sums.items() if not k.startswith("_")}
    cats[DP] += max(0.0, sums["_tail"])
    bubble = sums["_bubble"] + (iteration_s - sums["_end"])
    total = iteration_s
    exposed = {"tp": cats[TP], "cp": cats[CP], "ep": cats[EP], "pp": cats[PP], "dp": cats[DP]}
    breakdown = {"compute_s": cats[COMPUTE], "exposed_comm_s": sum(exposed.values()),
                 "pipeline_bubble_s": bubble, "optimizer_s": cats[OPT]}
    breakdown["other_s"] = max(0.0, total - sum(breakdown.values()))
    return breakdown, exposed


def data_loading_s(cfg: RunConfig, step_s: float) -> float:
    """Exposed time to load one step's data on the busiest node.

    Each rank needs global_batch / dp sequences of seq + 1 tokens (2-byte ids below a 65,536
    vocabulary, else 4, as Megatron's indexed datasets store them). Without a shared loader
    every GPU of a node reads its own copy; with one (MegaScale §3.5) the node reads each of its
    data-parallel replicas' samples once. Workers collate in parallel. Asynchronous loaders
    prefetch during the previous step, so only the excess over a step is exposed.
    """
    t, c, p = cfg.training, cfg.cluster, cfg.parallel
    samples = t.global_batch_size // cfg.dp
    prep = samples * t.data_prep_s_per_sample / t.num_workers
    read = 0.0
    if t.data_read_bw_Bps:
        token_bytes = 2 if cfg.model.vocab_size <= 65536 else 4
        per_node = c.gpus_per_node
        if t.data_loader_per_node:  # distinct replicas in a node: its GPUs over tp * cp
            per_node = max(1, c.gpus_per_node // min(c.gpus_per_node, p.tp * p.cp))
        read = per_node * samples * (t.seq_length + 1) * token_bytes / t.data_read_bw_Bps
    load = prep + read
    return max(0.0, load - step_s) if t.data_loader_async else load


__all__ = ["TIE", "Summary", "add_compute", "breakdown_of", "critical_stage", "data_loading_s",
           "stage_sums", "summarize", "totals"]
