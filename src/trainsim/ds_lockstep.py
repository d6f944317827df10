"""DeepSpeed's PipelineEngine, step by step: the passes of ``TrainSchedule`` and, between them,
each step's transfers as a rendezvous of the two stages that make them.

What the engine does (microsoft/DeepSpeed v0.5.10, 3293cf72; ``workload.pipe_engine``):
``_exec_schedule`` runs every step's instructions in order, its transfers before its pass.
``p2p.send`` / ``p2p.recv`` (deepspeed/runtime/pipe/p2p.py L48-87) refuse ``async_op`` and
call ``torch.distributed.send`` / ``recv`` (torch >= 1.8, ``can_send_recv``), whose work is
waited for before the next instruction: the stage's compute stream goes on only once the
transfer is done. NCCL's point-to-point transfer moves data only while both ends run it (the
sender's kernel writes into the receiver's buffers as the receiver frees them), and a pair of
stages makes its step's transfers in the same order on one communicator. So a step's
exchange starts when both stages reach it (the later of the two), its transfers follow one
another, and both stages go on when the last one ends; a stage with no pass in a step still
makes the step's transfers, so it reaches its next step only once its neighbour met it.

The task graph: each stage's passes in step order on its compute stream, and for each step
where two stages exchange, one task on each stage's compute stream lasting the step's transfers
(``Exchange``), each depending on the task before the other's: both start together, at the
later of the two ends. Compared with the folded passes (a pass, its send and the step's
receive; simulator.py), this is the same wherever a step moves both an activation and a
gradient (the steady state); it differs where only one moves (warm-up and cool-down: the pass
no longer pays the transfer that is not made) and where a stage is held by its neighbour on a
step without a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainsim.combined_1f1b import pairs_passes
from trainsim.engine import Task
from trainsim.optimizer_tasks import BEFORE
from trainsim.pricing import PP
from trainsim.workload.pipe_engine import (
    deepspeed_lockstep,
    deepspeed_pipe_exchange,
    train_schedule,
)
from trainsim.workload.schedule import pass_labels

if TYPE_CHECKING:
    from trainsim.simulator import _TaskGraph

SENDS = frozenset({"SendActivation", "SendGrad"})


@dataclass(frozen=True)
class Exchange:
    """``Task.detail`` of one stage's side of a step's transfers: its ``segments`` (as a
    ``Priced``'s, for reports) and its ``messages`` in order, each (whether it sends, the peer
    stage, bytes); ``tag`` names the step's exchange, the same on both sides."""

    segments: tuple[tuple[str, float, str], ...]
    messages: tuple[tuple[bool, int, float], ...]
    tag: int


def lockstep_applies(tg: _TaskGraph) -> bool:
    """Whether ``tg``'s passes are placed by :func:`lockstep_tasks`: a run of DeepSpeed's
    PipelineEngine (``workload.pipe_engine.deepspeed_lockstep``) without what only Megatron's
    or torch's runtimes add to a pass (ZeRO-3 / FSDP units, a deferred output-layer weight
    gradient, combined 1F1B, sends on a stream of their own, reductions every micro-batch),
    which keep the folded passes."""
    return deepspeed_lockstep(tg.cfg) and not (
        tg.fsdp or tg.gather_once or tg.deferral is not None or tg.sends_overlap
        or tg.reduce_every_mb or tg.sync_every_mb or pairs_passes(tg.cfg))


def transfer(tg: _TaskGraph) -> tuple[float, float]:
    """(seconds, bytes) of one of a step's transfers: an activation or a gradient, with its
    partition's meta tensor under TP (``deepspeed_pipe_exchange``)."""
    comms = deepspeed_pipe_exchange(tg.cfg, tg.act_bytes)[0]
    return sum(tg.pricer.comm_time(c) for c in comms), sum(c.bytes for c in comms)


def lockstep_tasks(tg: _TaskGraph) -> None:
    """Place ``tg``'s pipeline passes as DeepSpeed's PipelineEngine runs them (see the module
    docstring); the graph's other tasks (reductions, the optimizer step) follow as for
    Megatron's schedule, after each stage's last task on its compute stream."""
    pp, m = tg.pp, tg.m
    first_fwd_deps, fwd_spec, first_spec, bwd_spec, slow_bwd = tg.pass_specs(sends=False)
    seconds, nbytes = transfer(tg)
    steps = [train_schedule(s, pp, m) for s in range(pp)]
    tasks, tags = tg.tasks, tg.tags
    label_f, label_b = pass_labels("F", 0, m), pass_labels("B", 0, m)
    last = [-1] * pp  # each stage's last task on its compute stream
    placed = [0] * pp  # passes placed on each stage: the next one's schedule position

    def exchange(s: int, peer: int, transfers: tuple[str, ...], deps: list[int], tag: int,
                 at: int) -> int:
        segs = tuple((PP, seconds, "p2p send" if name in SENDS else "p2p receive")
                     for name in transfers)
        messages = tuple((name in SENDS, peer, nbytes) for name in transfers)
        tags.append(placed[s] - 1 if placed[s] else BEFORE)
        total = seconds * len(transfers)
        tasks.append(Task((s, "compute"), total, deps, f"step {at} {' + '.join(transfers)}",
                          ((PP, total),), Exchange(segs, messages, tag)))
        return len(tasks) - 1

    for t in range(len(steps[0])):
        for s in range(pp - 1):  # stage s on a backward step exchanges with the next one
            mine, theirs = steps[s][t][0], steps[s + 1][t][0]
            if t % 2 == s % 2 or not mine:
                continue
            before = last[s], last[s + 1]
            tag = len(tasks)
            last[s] = exchange(s, s + 1, mine, [before[1]] if before[1] >= 0 else [], tag, t)
            last[s + 1] = exchange(s + 1, s, theirs, [before[0]] if before[0] >= 0 else [],
                                   tag, t)
        for s in range(pp):
            step = steps[s][t][1]
            if step is None:
                continue
            kind, mb = step
            deps: list[int] = []
            if s in tg.link_tail:
                deps.append(tg.link_tail[s])
            k = placed[s]
            placed[s] += 1
            if kind == "F":
                if mb == 0:
                    deps += first_fwd_deps.get((s, 0), [])
                spec = first_spec.get(s, fwd_spec[s]) if mb == 0 else fwd_spec[s]
                label = label_f[mb]
            else:
                if mb == 0 and s in tg.first_bwd:  # on the compute stream first
                    lead = tg.first_bwd[s]
                    tags.append(k)
                    tasks.append(Task(lead[0], lead[1], deps, "te weight transpose chunk 0",
                                      lead[2], lead[3], lead[5]))
                    deps = [len(tasks) - 1]
                if slow_bwd[s] and mb == m - 1:  # split where its buckets become ready
                    tg.tag = k
                    last[s] = tg.split_last_backward(s, s, 0, deps, mb)
                    continue
                spec, label = bwd_spec[s], label_b[mb]
            tags.append(k)
            tasks.append(Task(spec[0], spec[1], deps, label, spec[2], spec[3], spec[5]))
            last[s] = len(tasks) - 1
