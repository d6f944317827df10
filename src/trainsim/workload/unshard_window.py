"""Which FSDP units torch's pipeline runtime holds gathered, pass by pass (profile
``pp_unshard_window``).

From torch 2.10.0 the multi-stage schedules (``ScheduleInterleaved1F1B``, ``ScheduleLoopedBFS``,
the zero-bubble ones) are ``_PipelineScheduleRuntime`` schedules: their compute-only order is
lowered once (``_prepare_schedule_with_comms``, format ``compute_only``), and the lowering
starts with ``_add_unshard_reshard(actions, max_active_stages=3)``. That pass walks one rank's
compute actions; before each it looks ahead for the next ``max_active_stages`` distinct stages
that compute, RESHARDs every held stage not among them and UNSHARDs those of them not held (in
look-ahead order), then the action; at the end it reshards what is left. The runtime runs an
UNSHARD as ``unshard(async_op=True)`` on every FSDP module of the stage (each unit's all-gather
issued from the current stream, so behind the compute enqueued before it and ahead of any
receive wait) and waits for it, with FSDP2's copy-out, only before the stage's next compute
action (``_assert_unsharded``); a RESHARD frees the stage's unsharded parameters whatever
``reshard_after_forward`` says. Read in torch 2.10.0 and 2.13.0
``torch/distributed/pipelining/schedules.py`` (``_add_unshard_reshard``,
``_PipelineScheduleRuntime._step_microbatches``); torch 2.9.0's ``ScheduleInterleaved1F1B`` is
still a ``PipelineScheduleMulti``, whose step issues no UNSHARD (benchmarks/RESULTS.md, 56th
session, ppwindow56). The single-stage schedules (``Schedule1F1B``, ``ScheduleGPipe``) are
``PipelineScheduleSingle`` at every release read: no window there.

This module is the lowering alone, on trainsim's pass orders (``workload.schedule.schedule``,
which give the same compute order as torch's for interleaved 1F1B): pure, no pricing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import framework_feature, profile_supports
from trainsim.workload.schedule import Overlapped, Pass
from trainsim.workload.sharding import fsdp_pp_mode

if TYPE_CHECKING:
    from trainsim.config import RunConfig


def unshard_window(cfg: RunConfig) -> int | None:
    """How many local pipeline stages (model chunks) torch's runtime keeps gathered for the
    run: the profile's ``pp_unshard_window`` where it shards with FSDP under the pipeline's
    no-sync (``fsdp_pp_mode`` ``"unsharded"``) and runs a multi-stage schedule (interleaved:
    vpp > 1); None otherwise (each chunk gathered before its first forward, after its
    receive, and kept through the step: ``pipeline_passes.pass_specs``)."""
    if cfg.parallel.vpp <= 1 or fsdp_pp_mode(cfg) != "unsharded":
        return None
    if not profile_supports(cfg, "pp_unshard_window"):
        return None
    t = cfg.training
    return int(framework_feature(t.framework, t.framework_version, "pp_unshard_window"))


def lowered(order: Sequence[Pass | Overlapped], window: int
            ) -> tuple[list[tuple[tuple[int, ...], tuple[int, ...]]], tuple[int, ...]]:
    """The window's events around one rank's pass ``order``: for each step, the chunks released
    (RESHARD) and then gathered (UNSHARD) just before it, each in order; and the chunks released
    after the last step. A chunk is held from its UNSHARD to its next RESHARD. An overlapped
    pair (DualPipeV's OVERLAP_F_B) looks ahead at both its passes' chunks, forward first, and
    torch's look-ahead (``next_stage_indices``) stops only after both, so a pair can hold one
    chunk more than the window."""
    if window < 1:
        raise ValueError(f"pp_unshard_window must be at least 1, not {window}")
    steps = [(p.f.chunk, p.b.chunk) if isinstance(p, Overlapped) else (p.chunk,) for p in order]
    # ahead[k]: the first ``window`` distinct chunks of steps[k:], found walking backwards
    ahead: list[tuple[int, ...]] = [()] * len(steps)
    nxt: tuple[int, ...] = ()
    for k in range(len(steps) - 1, -1, -1):
        own = tuple(dict.fromkeys(steps[k]))
        nxt = (own + tuple(x for x in nxt if x not in own))[:max(window, len(own))]
        ahead[k] = nxt
    held: list[int] = []  # in the order gathered
    events: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for k in range(len(steps)):
        out = tuple(c for c in held if c not in ahead[k])
        new = tuple(c for c in ahead[k] if c not in held)
        held = [c for c in held if c not in out] + list(new)
        events.append((out, new))
    return events, tuple(held)
