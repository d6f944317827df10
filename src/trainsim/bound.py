"""A lower bound on the simulated iteration time, from the priced passes alone (no event loop).

A tuner comparing settings asks "is this one faster than the best so far?"; where the bound
already says no, the simulation can be skipped without changing the answer (branch and
bound; ``validate.training.tune``). The bound follows the simulator's own task graph: every
task lasts at least its duration (contention only stretches it) and tasks on one stream run one
at a time, so stage ``s`` of a Megatron pipeline cannot start before its first pass's
micro-batch has gone forward through the virtual stages before it, then runs the forward and
backward of every micro-batch of its chunks, and the backward of its last pass still has to go
back through the virtual stages before that one, after which the first stage runs its
optimizer step (and stage ``s`` its own after its last pass):

    T >= sum_{u < v_first} (F_u + S_u) + m * sum_{v on s} (F_v + B_v)
         + max(S_{v_last} + sum_{u < v_last} (B_u + S_u) + O_0, O_s)

(Narayanan et al. 2021 §2.2: the pipeline fill and drain of 1F1B and its interleaved form),
with F and B a pass's task on the compute stream (a blocking send folded in, as the simulator
places it), S a send on its own stream (overlap_p2p_comm; else 0) and O the optimizer step.
Collectives, contention and data loading only add to it.
"""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.ep_pairs import own_segments
from trainsim.pricing import Priced, Pricer
from trainsim.workload.schedule import combined_1f1b

SAFETY = 1 - 1e-9
"""The same durations summed in another order differ in their last bits: the bound is scaled
by this so that it never exceeds the simulation it bounds."""


def lower_bound_s(cfg: RunConfig, pricer: Pricer | None = None) -> float:
    """A lower bound on ``simulate(cfg).iteration_time_s``; 0.0 where none is derived (other
    pipeline schedules, stages that overlap consecutive iterations)."""
    p = cfg.parallel
    if p.pipeline_schedule not in (None, "1f1b", "interleaved_1f1b") or \
            p.optimizer_post_validation:
        return 0.0
    from trainsim.simulator import _TaskGraph

    graph = _TaskGraph(cfg, pricer or Pricer(cfg), None)
    pp, vpp, m = p.pp, p.vpp, cfg.num_microbatches
    nv = pp * vpp
    # each virtual stage's forward and backward pass as the simulator places them: a task on
    # the compute stream, with a blocking send folded in, or a send of its own on the
    # pipeline stream under overlap_p2p_comm (which the send's receiver waits for too)
    send = graph.send.duration_s
    folded, own = (0.0, send) if graph.sends_overlap else (send, 0.0)
    f_on = [graph.work[v][0].duration_s + (folded if v < nv - 1 else 0.0) for v in range(nv)]
    # under the combined 1F1B a backward's exposed exchanges depend on the forward beside it
    # (``combined_1f1b.beside_forward``): only its own work is certain
    # (summed once per distinct pass object: the virtual stages of one chunk shape share it)
    # Elsewhere no pass holds a pair's exposed segment (``ep_pairs.with_exposed`` is called
    # only under it), so its own work is all of it: the pass's duration, the same left-to-right
    # sum of the same segments (cached on the pass, which the simulation reads too)
    if combined_1f1b(cfg):
        own_s: dict[int, float] = {}
        for v in range(nv):
            b = graph.work[v][1]
            if id(b) not in own_s:
                own_s[id(b)] = sum(seg[1] for seg in own_segments(b))
        b_own = [own_s[id(graph.work[v][1])] for v in range(nv)]
    else:
        b_own = [graph.work[v][1].duration_s for v in range(nv)]
    b_on = [b_own[v] + (folded if v > 0 else 0.0) for v in range(nv)]
    f_sent = [own if v < nv - 1 else 0.0 for v in range(nv)]
    b_sent = [own if v > 0 else 0.0 for v in range(nv)]
    # after its last pass, each stage's compute stream runs its optimizer step
    step = [x.duration_s if isinstance(x, Priced) else x
            for x in (graph.optimizer_step(s) for s in range(pp))]
    # every stage's order starts with the first forward and ends with the last backward
    # (Megatron's warm-up, steady pairs, cool-down: workload.schedule ``_passes``): the first
    # group's micro-batch 0 through chunk 0, and the last group's micro-batch m - 1 back
    # through chunk 0, which its backwards reach last (the chunks in reverse), whatever the
    # stage count, chunk count or group size; both run on virtual stage s (chunk 0 * pp + s).
    # (in closed form: the whole order holds 2 m vpp passes, 56 M tuples for a row with a
    # global batch of 1e7 sequences, ~2 minutes a bound)
    best = 0.0
    for s in range(pp):
        v_first = v_last = s
        fill = sum(f_on[u] + f_sent[u] for u in range(v_first))
        busy = m * sum(f_on[v] + b_on[v] for v in range(s, nv, pp))
        # the last backward's gradient goes back to the first stage, whose step follows
        drain = b_sent[v_last] + sum(b_on[u] + b_sent[u] for u in range(v_last)) + step[0]
        best = max(best, fill + busy + max(drain, step[s]))
    return SAFETY * best


__all__ = ["SAFETY", "lower_bound_s"]
