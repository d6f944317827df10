"""The one-run period proof (trainsim.engine.periodic.period_in_run_s) on small task graphs.

Each graph is a warm-up, copies of a period and a tail. The proof sees the run with two copies
(the first is the prefix the period's twins are taken from) and either refuses it or gives the
period ``P`` by which the run with ``k`` more copies is this one, the tail ``k P`` later. Each
graph that must be refused is one a check exists for (from an engine-level fuzz): without that
check the proof accepts it, and the extrapolation differs from the longer run's timeline.
"""

from __future__ import annotations

import pytest

from trainsim.engine import Task, run
from trainsim.engine.periodic import FIXED, period_in_run_s

K = 3  # copies added in the longer run


def _graph(warm, period, tail, copies: int):
    """``warm``: (stream, duration, deps, fixed, slows); ``period``: (stream, duration, deps of
    the first copy, deps of the later ones); ``tail``: (stream, duration, deps, slows). A dep
    names ``w<i>`` (warm-up task i), ``c<j>`` (task j of this copy; in the tail, of the last
    copy), ``p<j>`` (task j of the copy before; in the tail, of the one before the last),
    ``t<j>`` (tail task j). Streams are names on rank 0. Returns the tasks, each one's copy
    (-1 warm-up, ``copies`` tail) and position in its part."""
    tasks: list[Task] = []
    where: list[tuple[int, int]] = []
    start: list[int] = []  # each copy's first task

    def add(stream: str, d: float, deps: list[str], base: dict[str, int], slows, at) -> None:
        tasks.append(Task((0, stream), d, [base[x[0]] + int(x[1:]) for x in deps],
                          slows=((0, slows[0]), slows[1]) if slows else None))
        where.append(at)

    for i, (stream, d, deps, _, slows) in enumerate(warm):
        add(stream, d, deps, {"w": 0}, slows, (-1, i))
    for c in range(copies):
        start.append(len(tasks))
        base = {"w": 0, "c": start[c], "p": start[c - 1] if c else -1}
        for j, (stream, d, deps0, deps) in enumerate(period):
            add(stream, d, deps if c else deps0, base, None, (c, j))
    base = {"w": 0, "c": start[-1], "p": start[-2], "t": len(tasks)}
    for j, (stream, d, deps, slows) in enumerate(tail):
        add(stream, d, deps, base, slows, (copies, j))
    return tasks, where


def _prove(warm, period, tail):
    """The proof on the run with two copies, and the largest difference between the run with
    ``K`` more and the extrapolation from it with ``P`` (the proof's, else the first period
    task's shift from its twin: what a proof without the failing check would take)."""
    tasks, where = _graph(warm, period, tail, 2)
    tl = run(tasks)
    part = bytes(0 if c < 1 else 1 if c == 1 else 2 for c, _ in where)
    bounds = {}
    for stream, queue in tl.queues.items():
        ps = [part[i] for i in queue]
        assert ps == sorted(ps)
        bounds[stream] = (ps.count(0), ps.count(0) + ps.count(1))
    n_warm, n_per = len(warm), len(period)

    def twin(h: int) -> int:
        return (FIXED if warm[h][3] else -1) if h < n_warm else h + n_per

    proven = period_in_run_s(tl, part, bounds, twin)
    p = proven if proven is not None else tl.end_s[n_warm + n_per] - tl.end_s[n_warm]
    longer = run(_graph(warm, period, tail, 2 + K)[0])
    err = 0.0
    for i, (c, _) in enumerate(where):  # the warm-up, copy 0 the same; copy 1 as the last
        j = i if c < 1 else i + K * n_per
        err = max(err, abs(longer.end_s[j] - tl.end_s[i] - (K * p if c >= 1 else 0.0)))
    for c in range(2, 2 + K):  # the copies in between, one period apart
        for j in range(n_per):
            i = n_warm + n_per + j
            err = max(err, abs(longer.end_s[n_warm + c * n_per + j]
                               - tl.end_s[i] - (c - 1) * p))
    return proven, err


CHAIN = [("x", 1.0, [], ["p0"])]  # one task per copy on stream x, after the copy before


def test_a_locked_period_is_proven_and_extrapolates_exactly():
    """Two streams locked together (each copy's tasks wait on both of the copy before), a FIXED warm-up
    task the tail waits on but that ends early, a tail task slowing x after x's period:
    proven, and the longer run is the extrapolation to the bit's neighbourhood."""
    warm = [("z", 0.5, [], True, None)]
    period = [("x", 1.0, [], ["p0", "p1"]), ("y", 1.5, [], ["p0", "p1"])]
    tail = [("x", 1.0, ["c0", "w0"], None), ("y", 0.5, ["c1", "t0"], ("x", 0.5)),
            ("x", 2.0, ["t0", "p1"], None)]
    proven, err = _prove(warm, period, tail)
    assert proven == pytest.approx(1.5, rel=1e-12)
    assert err < 1e-12


def test_a_prefix_task_slowing_the_stream_while_it_runs_its_period_is_refused():
    """(slows) A warm-up task slowing x until 2.5 makes copy 0 end at 2 and copy 1 at 3.25: a
    shift of 1.25 that the longer run's copies, unslowed, do not keep (1 each)."""
    warm = [("z", 2.5, [], True, ("x", 0.5))]
    proven, err = _prove(warm, CHAIN, [("x", 1.0, ["c0"], None)])
    assert proven is None and err > 0.5


def test_a_stream_whose_state_at_the_cut_does_not_repeat_is_refused():
    """(cut) y's copies take 2 and x's 1: y's last prefix task ends 2 before its twin while the
    ends y's period waits on (x's) are 1 apart; the longer run goes at y's pace."""
    period = [("x", 1.0, [], ["p0"]), ("y", 2.0, [], ["p0"])]
    proven, err = _prove([], period, [("y", 1.0, ["c1"], None)])
    assert proven is None and err > 0.5


def test_a_twin_of_the_last_prefix_task_that_is_not_the_last_period_task_is_refused():
    """(cut, twin) From twin_cex: a stream of unit tasks, prefix p, period c0 c1, tail t, with
    p's twin c0: the ends compared are 1 apart, but the period is 2 (7 extrapolated, 10 run)."""
    x = (0, "x")
    tl = run([Task(x, 1.0, [i - 1] if i else []) for i in range(4)])
    assert period_in_run_s(tl, bytes([0, 1, 1, 2]), {x: (1, 3)}, {0: 1}.__getitem__) is None
    assert period_in_run_s(tl, bytes([0, 1, 1, 2]), {x: (1, 3)},
                           {0: 2}.__getitem__) == 2.0  # p's twin c1, the last: right
    assert run([Task(x, 1.0, [i - 1] if i else []) for i in range(4 + 2 * K)]).makespan_s \
        == tl.makespan_s + K * 2.0


def test_a_period_waiting_on_a_prefix_task_that_does_not_move_is_refused():
    """(period inputs) Copy 1 waits on a FIXED warm-up task (copy 0 does not): its end 5 after
    copy 0's is no period, the later copies follow each other 1 apart."""
    warm = [("z", 5.0, [], True, None)]
    period = [("x", 1.0, [], ["p0", "w0"])]
    proven, err = _prove(warm, period, [("x", 1.0, ["c0"], None)])
    assert proven is None and err > 0.5


def test_a_tail_started_by_what_does_not_move_is_refused():
    """(tail inputs, first task) The first tail task of a stream without a period starts when
    that stream's FIXED prefix task ends (5), not the period's (2): in the longer run too."""
    warm = [("y", 5.0, [], True, None)]
    proven, err = _prove(warm, CHAIN, [("y", 1.0, ["c0"], None)])
    assert proven is None and err > 0.5


def test_a_tail_root_is_refused():
    """(tail inputs, first task) From twin_cex: y's first tail task waits on nothing, so it
    does not move, and y's next task, waiting on it (5) and x's tail (3), starts with it
    (extrapolated 16 where the longer run gives 14 for 10 more periods)."""
    tail = [("x", 1.0, ["c0"], None), ("y", 5.0, [], None), ("y", 1.0, ["t0"], None)]
    proven, err = _prove([], CHAIN, tail)
    assert proven is None and err > 0.5


def test_a_tail_task_started_by_a_fixed_task_is_refused():
    """(tail inputs) A later tail task waits on a FIXED warm-up task ending at 10 and its
    stream's previous task ending at 3: it starts at 10 in every run."""
    warm = [("z", 10.0, [], True, None)]
    tail = [("x", 1.0, ["c0"], None), ("x", 1.0, ["t0", "w0"], None)]
    proven, err = _prove(warm, CHAIN, tail)
    assert proven is None and err > 0.5


def test_a_prefix_waiting_on_the_tail_is_refused():
    """(prefix inputs) y's only task, of the prefix, waits on x's tail: it runs later in a
    longer run, where the proof would keep the prefix as it is."""
    x, y = (0, "x"), (0, "y")

    def graph(copies: int):
        return [Task(x, 1.0, [i - 1] if i else []) for i in range(copies + 1)] + [
            Task(y, 1.0, [copies])]
    tl = run(graph(2))
    assert period_in_run_s(tl, bytes([0, 1, 2, 0]), {x: (1, 2), y: (1, 1)},
                           {0: 1, 3: -1}.__getitem__) is None
    assert run(graph(2 + K)).end_s[-1] == tl.end_s[-1] + K  # what the proof would miss


def test_a_tail_waiting_on_a_prefix_task_without_a_twin_is_refused():
    """(tail inputs) A tail task waiting on a warm-up task that is neither FIXED nor has a
    twin in the period is refused, even where that task ends early: which task it is in the
    longer run is not known. The same task FIXED is proven."""
    tail = [("x", 1.0, ["c0", "w0"], None)]
    assert _prove([("z", 0.5, [], False, None)], CHAIN, tail)[0] is None
    proven, err = _prove([("z", 0.5, [], True, None)], CHAIN, tail)
    assert proven == 1.0 and err < 1e-12


def test_a_twin_outside_the_period_does_not_move():
    """(period inputs) The period waits on y's task h, whose twin is given as x's tail task,
    of h's duration and 2 later like x's period: h is no task of a copy before, and its end binds the period
    only here (10 extrapolated where 3 more copies waiting on h take 7)."""
    x, y = (0, "x"), (0, "y")
    tasks = [Task(x, 1.0), Task(y, 1.0), Task(y, 1.0), Task(x, 1.0, [0, 2]), Task(x, 1.0, [3])]
    tl = run(tasks)  # p [0, 1]; g [0, 1], h [1, 2]; c [2, 3], t [3, 4]
    assert period_in_run_s(tl, bytes([0, 0, 0, 1, 2]), {x: (1, 2), y: (2, 2)},
                           {0: 3, 1: FIXED, 2: 4}.__getitem__) is None
    longer = run(tasks[:3] + [Task(x, 1.0, [2 + i if i else 0, 2]) for i in range(1 + K)]
                 + [Task(x, 1.0, [3 + K])])
    assert longer.makespan_s == 7.0 != tl.makespan_s + K * 2.0


def test_a_period_of_no_time_is_refused():
    """A period whose tasks take no time is no period (as for the two-run proof)."""
    x = (0, "x")
    tl = run([Task(x, d, [i - 1] if i else []) for i, d in enumerate([0.0, 0.0, 1.0])])
    assert period_in_run_s(tl, bytes([0, 1, 2]), {x: (1, 2)}, {0: 1}.__getitem__) is None
