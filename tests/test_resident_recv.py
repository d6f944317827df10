"""``engine.Task.until``: a task held (its stream busy, its SM share held) from its post until an
earlier task ends, as an NCCL receive posted early spins on its SMs until its peer's data arrives.
The simulator does not place such receives today: priced for overlapped interleaving they moved
the scored files by at most 0.02 points for 1.6-3.3x the CPU (RESULTS.md, 20th session,
p2pwait); the engine keeps the capability for sends that wait on their receive."""

from __future__ import annotations

import pytest
from helpers import state_proof

from trainsim import TrainsimError
from trainsim.engine import Task, run

X = (0, "compute")
RECV = (0, "recv")
PEER = (1, "pp")


def test_a_held_task_slows_its_stream_until_the_task_it_waits_for_ends():
    """A receive posted at 0 (no work of its own) holds half the compute stream's SMs until the
    peer's 6 s send ends: the 10 s pass does 3 s of work in those 6 s, the other 7 at full
    rate, and ends at 13 (by hand)."""
    tl = run([Task(PEER, 6.0), Task(X, 10.0),
              Task(RECV, 0.0, [], "recv", slows=(X, 0.5), until=0)])
    assert tl.end_s[2] == pytest.approx(6.0)
    assert tl.end_s[1] == pytest.approx(13.0)


def test_a_held_task_posted_after_its_data_arrived_ends_after_its_own_duration():
    """A receive posted (after a 4 s pass) when the 1 s send has long ended runs its own
    duration only, and slows nothing beyond it."""
    tl = run([Task(PEER, 1.0), Task(X, 4.0), Task(X, 2.0),
              Task(RECV, 0.5, [1], "recv", slows=(X, 0.5), until=0)])
    assert (tl.start_s[3], tl.end_s[3]) == pytest.approx((4.0, 4.5))
    # 0.25 s of the 2 s pass done in its first 0.5 s (half rate), 1.75 s after: ends 6.25
    assert tl.end_s[2] == pytest.approx(6.25)


def test_a_held_task_keeps_its_stream_busy_and_releases_what_waits_on_it():
    """The next task on the receive's stream, and a pass that waits on the receive, start
    only when the held receive ends (with the send, at 5)."""
    tl = run([Task(PEER, 5.0), Task(RECV, 0.0, until=0), Task(RECV, 1.0),
              Task(X, 1.0, [1])])
    assert tl.start_s[2] == pytest.approx(5.0) and tl.start_s[3] == pytest.approx(5.0)


def test_the_uncontended_prefix_stops_at_a_held_task():
    """The one-pass prefix gives the event loop's times, to the bit, with held tasks after
    plain ones."""
    tasks = [Task(X, 2.0), Task(PEER, 3.0, [0]), Task(X, 1.0, [0]),
             Task(RECV, 0.0, [2], until=1, slows=(X, 0.25)), Task(X, 4.0, [3]),
             Task(X, 2.0), Task(X, 1.0), Task(X, 1.0)]
    a, b = run(tasks, prefix=True), run(tasks, prefix=False)
    assert a.start_s == b.start_s and a.end_s == b.end_s


def test_a_task_held_until_a_later_task_is_an_error():
    """``until`` must name an earlier task (as the graph builder places them)."""
    with pytest.raises(TrainsimError, match="held until invalid task"):
        run([Task(RECV, 0.0, until=1), Task(PEER, 1.0)])


def _copies(n: int) -> tuple[list[Task], list[int]]:
    """Copies of a pass x (1 s), its send y (0.6 s after it) and the receive r the next pass
    waits on, posted after the previous pass and held until this copy's send, slowing x by
    half: each pass runs entirely beside the receive, so a copy takes 2 + 0.6 s."""
    tasks, copy = [Task((0, "z"), 0.25)], [-1]
    prev = 0
    for c in range(n):
        x = len(tasks)
        tasks += [Task(X, 1.0, [prev] if c == 0 else [prev, prev + 2]),
                  Task(PEER, 0.6, [x]),
                  Task(RECV, 0.0, [prev], slows=(X, 0.5), until=x + 1)]
        copy += [c, c, c]
        prev = x
    tasks.append(Task(X, 1.0, [prev, prev + 2]))
    copy.append(n)
    return tasks, copy


def test_the_state_proof_reads_a_held_tasks_until_as_an_input():
    """The loop's state repeats with held receives: the proof gives 2.6 s, and the run with 4
    copies more is the extrapolation."""
    tasks, copy = _copies(3)
    tl = run(tasks)
    p = state_proof(tl, [3 if c == 3 else c for c in copy], 3)
    assert p == pytest.approx(2.6, rel=1e-12)
    longer = run(_copies(7)[0])
    assert longer.makespan_s == pytest.approx(tl.makespan_s + 4 * 2.6, rel=1e-12)
