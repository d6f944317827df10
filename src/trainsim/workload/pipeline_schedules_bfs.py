"""Breadth-first ("looped BFS") pipeline schedule: torch.distributed.pipelining's
``ScheduleLoopedBFS`` (Lamy-Poirier 2022, "Breadth-First Pipeline Parallelism",
arXiv:2211.05953), which torchtitan runs as ``--parallelism.pipeline_parallel_schedule LoopedBFS``.

The model is cut into ``pp x vpp`` stages placed as a loop: rank r holds stages r, r + pp,
r + 2 pp, ... (``_calculate_single_rank_operations``'s ``stage_indices = range(rank, pp *
n_local_stages, pp)``), Megatron's interleaved placement (``pipeline_schedules.virtual_stage``:
chunk c of rank r is stage ``c pp + r``). Where micro-batches are ready for several local stages
it runs the earliest stage first, all of its micro-batches at once (the class docstring): every
forward of chunk 0 in micro-batch order, then every forward of chunk 1, and so on; then the
backwards chunk by chunk from the last, each chunk's micro-batches from the last to the first.

Read in torch v2.13.0 ``torch/distributed/pipelining/schedules.py`` lines 2706-2732
(``ScheduleLoopedBFS._calculate_single_rank_operations``: forwards ``for stage_index in
stage_indices`` x ``range(n_microbatches)``; backwards ``for stage_index in
reversed(stage_indices)`` x ``reversed(range(n_microbatches))``, FULL_BACKWARD); the ``None``
padding there only aligns the ranks' lists, and the runtime's lowering skips it. The backward
runs last to first since pytorch/pytorch#127796 (2024-06-03, "[pipelining] fix LoopedBFS": "for
loopedBFS we want to pop from starting at num_microbatches - 1"); the prototype before it ran
them first to last.

What the order implies, each checked in tests/test_looped_bfs.py:

- Memory: no backward runs before every forward of every chunk, so a rank holds all ``m``
  micro-batches' activations of all its chunks at the turn (:func:`looped_bfs_peak`).
- Data-parallel overlap: torch's runtime inserts a REDUCE_GRAD action right after a stage's
  ``n_microbatches``-th backward (schedules.py ``_add_reduce_grad``, v2.13.0 L1251-L1282; the
  runtime's ``backward_counter``, L2561-L2562, counts backwards, not micro-batch indices), which
  runs the stage's gradient reduction (``stage.py`` ``perform_reduce_grad``: FSDP's
  post_backward reduce-scatter and reshard). In this order a chunk's last backward is
  micro-batch 0's, and the higher chunks finish theirs while the lower ones still compute: the
  reduction of chunk c hides behind the backwards of chunks c - 1, ..., 0 (the paper's
  abstract: the schedule "optimizes the combination of pipeline and data parallelism").

The engine places it as it places Megatron's 1F1B and torch's interleaved 1F1B
(``pipeline_passes``: the framework's FSDP gathers and reduce-scatters, torch's runtime window
of gathered stages, ``workload.unshard_window``, which lowers this order as torch lowers it),
only the order and the micro-batch of each chunk's last backward (:func:`last_backward_microbatch`,
where its gradients are reduced) and first backward differing.
"""

from __future__ import annotations

import functools

from trainsim.workload.schedule import Pass


def looped_bfs(stage: int, pp: int, vpp: int, m: int) -> list[Pass]:
    """One rank's order (module docstring): ``F`` of every micro-batch on chunk 0, 1, ...,
    ``vpp - 1``, then ``B`` on chunk ``vpp - 1``, ..., 0, each chunk's micro-batches from
    ``m - 1`` down to 0. The same on every rank (only the stages differ): built once for all
    of them (:func:`_bfs_order`)."""
    return list(_bfs_order(vpp, m))


@functools.lru_cache(maxsize=64)
def _bfs_order(vpp: int, m: int) -> tuple[Pass, ...]:
    """Every rank's :func:`looped_bfs` order (graph61: built per rank, it was ~a tenth of a
    PP64 vpp 2 graph's build)."""
    fwd = [Pass("F", mb, c) for c in range(vpp) for mb in range(m)]
    return (*fwd, *(Pass("B", mb, c) for c in reversed(range(vpp)) for mb in reversed(range(m))))


FB_SCHEDULES = (None, "1f1b", "interleaved_1f1b", "looped_bfs", "gpipe")
"""Schedules of whole forwards and backwards on Megatron's placement (chunk c of rank r is
virtual stage ``c pp + r``) that ``pipeline_passes`` places with the framework's own passes
(FSDP gathers and reductions, torch's runtime window); the others go through ``pipeline``.
GPipe is torch's ``ScheduleGPipe``, a ``PipelineScheduleSingle`` as ``Schedule1F1B`` is (torch
v2.13.0 schedules.py L872-L960: every forward, then every backward with ``last_backward`` on
micro-batch m - 1, then ``perform_reduce_grad``): the same passes as 1F1B in another order."""


def last_backward_microbatch(name: str | None, m: int) -> int:
    """The micro-batch whose backward is a chunk's last in ``name``'s order (the one after
    which torch's runtime reduces the stage's gradients, and Megatron's DDP syncs them):
    micro-batch 0 in the looped BFS order, ``m - 1`` in the F/B schedules that run backwards in
    micro-batch order (``FB_SCHEDULES``)."""
    return 0 if name == "looped_bfs" else m - 1


def first_backward_microbatch(name: str | None, m: int) -> int:
    """The micro-batch whose backward is a chunk's first in ``name``'s order (where Transformer
    Engine's first-backward work goes): ``m - 1`` in the looped BFS order, else 0."""
    return m - 1 if name == "looped_bfs" else 0


def looped_bfs_peak(m: int, weight: dict[int, float] | None, vpp: int) -> float:
    """The in-flight peak of the looped BFS order, in O(vpp) steps whatever ``m``: the largest
    running sum of its walk (``workload.schedule.peak_in_flight``). Within a run of one chunk's
    ``m`` passes the sum moves by the same weight each pass, so it peaks at a run's end (or its
    start): the largest of the sums after each chunk's forwards and after each chunk's
    backwards, and 0. With weights of at least 0 that is all of them: ``m`` times the sum of
    the rank's chunk weights."""
    w = [1.0 if weight is None else weight[c] for c in range(vpp)]
    live = peak = 0.0
    for c in range(vpp):
        live += m * w[c]
        peak = max(peak, live)
    for c in reversed(range(vpp)):
        live -= m * w[c]
        peak = max(peak, live)
    return peak
