"""The discrete-event loop: streams, dependencies, ordering, determinism, errors."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsim import TrainsimError
from trainsim.engine import Task, Timeline, run

A = (0, "compute")
B = (1, "compute")
C = (0, "comm")


def run_with_timeout(tasks, timeout_s=5.0):
    """Call run(tasks) in a thread; fail the test if it does not return within timeout_s."""
    box: dict = {}

    def target():
        try:
            box["result"] = run(tasks)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout_s)
    assert not t.is_alive(), "engine.run did not return (hang)"
    if "error" in box:
        raise box["error"]
    return box["result"]


def test_empty():
    """No tasks give an empty timeline with makespan 0."""
    tl = run([])
    assert isinstance(tl, Timeline)
    assert tl.start_s == [] and tl.end_s == []
    assert tl.makespan_s == 0.0


def test_chain_on_one_stream_runs_back_to_back():
    """Tasks on one stream with no deps run one after another with no gaps."""
    tl = run([Task(A, 1.0), Task(A, 2.0), Task(A, 0.5)])
    assert tl.start_s == [0.0, 1.0, 3.0]
    assert tl.end_s == [1.0, 3.0, 3.5]
    assert tl.makespan_s == 3.5


def test_independent_streams_overlap():
    """Tasks on two streams with no deps both start at 0."""
    tl = run([Task(A, 2.0), Task(B, 3.0), Task(C, 1.0)])
    assert tl.start_s == [0.0, 0.0, 0.0]
    assert tl.makespan_s == 3.0


def test_dependency_across_streams_waits():
    """A task on stream B that depends on a task on stream A starts when that one ends."""
    tl = run([Task(A, 2.0), Task(B, 1.0, deps=[0])])
    assert tl.start_s == [0.0, 2.0]
    assert tl.end_s == [2.0, 3.0]


def test_waits_for_latest_dependency():
    """A task with several deps starts when the last of them ends."""
    tl = run([Task(A, 1.0), Task(B, 4.0), Task(C, 2.0, deps=[0, 1])])
    assert tl.start_s[2] == 4.0
    assert tl.end_s[2] == 6.0


def test_stream_keeps_submission_order():
    """A later task on a stream that is ready first still waits for the earlier, blocked one."""
    tasks = [
        Task(B, 5.0, label="slow producer"),
        Task(A, 1.0, deps=[0], label="blocked head of A"),
        Task(A, 1.0, label="ready but queued behind"),
    ]
    tl = run(tasks)
    assert tl.start_s[1] == 5.0
    assert tl.start_s[2] == 6.0  # not 0.0: streams run in submission order
    assert tl.makespan_s == 7.0


def test_dep_on_later_task_on_other_stream():
    """A dependency may point to a later task id on another stream."""
    tl = run([Task(A, 1.0, deps=[1]), Task(B, 3.0)])
    assert tl.start_s == [3.0, 0.0]


def test_zero_duration_tasks():
    """Zero-duration tasks take no time but still order their dependents."""
    tl = run([Task(A, 0.0), Task(B, 0.0, deps=[0]), Task(A, 2.0, deps=[1])])
    assert tl.start_s == [0.0, 0.0, 0.0]
    assert tl.end_s == [0.0, 0.0, 2.0]


def test_duplicate_deps():
    """Listing the same dependency twice waits for it once and does not deadlock."""
    tl = run([Task(A, 1.0), Task(B, 1.0, deps=[0, 0])])
    assert tl.start_s[1] == 1.0


def test_segments_and_labels_are_kept():
    """The timeline returns the task objects, labels and segments untouched."""
    t = Task(A, 3.0, label="fwd", segments=(("compute", 2.0), ("tp_comm", 1.0)))
    tl = run([t])
    assert tl.tasks[0] is t
    assert tl.tasks[0].segments == (("compute", 2.0), ("tp_comm", 1.0))


@pytest.mark.parametrize("bad", [-1, 2, 100])
def test_invalid_dep_id(bad):
    """A dependency on a task id outside the list is a TrainsimError."""
    with pytest.raises(TrainsimError, match="invalid task"):
        run([Task(A, 1.0), Task(B, 1.0, deps=[bad])])


def test_self_dependency():
    """A task depending on itself is a TrainsimError."""
    with pytest.raises(TrainsimError):
        run_with_timeout([Task(A, 1.0, deps=[0])])


def test_deadlock_through_stream_order():
    """A cycle closed by stream order (0 on A needs 2, 2 is queued behind 1 on B, 1 needs 0) raises."""
    tasks = [
        Task(A, 1.0, deps=[2], label="a0"),
        Task(B, 1.0, deps=[0], label="b1"),
        Task(B, 1.0, label="b2"),  # could run, but sits behind b1 on stream B
    ]
    with pytest.raises(TrainsimError, match=r"deadlock: 3 tasks never ran \(first: a0\)"):
        run_with_timeout(tasks)


def test_deadlock_dependency_cycle():
    """Two tasks depending on each other raise a TrainsimError instead of hanging."""
    with pytest.raises(TrainsimError, match="deadlock"):
        run_with_timeout([Task(A, 1.0, deps=[1]), Task(B, 1.0, deps=[0])])


def test_deadlock_after_partial_progress():
    """A deadlock reached after some tasks ran is still reported."""
    tasks = [Task(C, 1.0), Task(A, 1.0, deps=[0]), Task(A, 1.0, deps=[3]), Task(B, 1.0, deps=[2])]
    with pytest.raises(TrainsimError, match="deadlock"):
        run_with_timeout(tasks)


def test_negative_duration_rejected():
    """A negative task duration is a TrainsimError."""
    with pytest.raises(TrainsimError):
        run([Task(A, -1.0)])


# ------------------------------------------------------------------ random DAGs

STREAMS = [(r, s) for r in range(3) for s in ("compute", "comm")]


@st.composite
def dags(draw):
    n = draw(st.integers(0, 30))
    tasks = []
    for i in range(n):
        stream = draw(st.sampled_from(STREAMS))
        duration = draw(st.one_of(st.just(0.0),
                                  st.floats(0.0, 10.0, allow_nan=False, allow_infinity=False)))
        deps = draw(st.lists(st.integers(0, i - 1), max_size=4)) if i else []
        tasks.append(Task(stream, duration, deps=deps, label=f"t{i}"))
    return tasks


def _copy(tasks):
    return [Task(t.stream, t.duration_s, list(t.deps), t.label, t.segments) for t in tasks]


@settings(max_examples=60, deadline=None)
@given(dags())
def test_time_never_runs_backwards(tasks):
    """On a random DAG every task ends after it starts, after its deps and after its stream predecessor."""
    tl = run(tasks)
    assert len(tl.start_s) == len(tl.end_s) == len(tasks)
    last_on_stream: dict = {}
    for i, t in enumerate(tasks):
        assert tl.start_s[i] >= 0.0
        assert tl.end_s[i] >= tl.start_s[i]
        assert tl.end_s[i] == tl.start_s[i] + t.duration_s
        for d in t.deps:
            assert tl.start_s[i] >= tl.end_s[d]
        if t.stream in last_on_stream:
            assert tl.start_s[i] >= tl.end_s[last_on_stream[t.stream]]
        last_on_stream[t.stream] = i
    assert tl.makespan_s == max(tl.end_s, default=0.0)


@settings(max_examples=60, deadline=None)
@given(dags())
def test_tasks_start_as_soon_as_possible(tasks):
    """Each task starts exactly when its last dep and its stream predecessor have both ended."""
    tl = run(tasks)
    prev: dict = {}
    for i, t in enumerate(tasks):
        ready = max([0.0] + [tl.end_s[d] for d in t.deps]
                    + ([tl.end_s[prev[t.stream]]] if t.stream in prev else []))
        assert tl.start_s[i] == ready
        prev[t.stream] = i


@settings(max_examples=50, deadline=None)
@given(dags())
def test_deterministic(tasks):
    """The same tasks always give identical start and end lists."""
    first = run(tasks)
    second = run(_copy(tasks))
    assert first.start_s == second.start_s
    assert first.end_s == second.end_s


@settings(max_examples=50, deadline=None)
@given(dags())
def test_run_does_not_mutate_tasks(tasks):
    """run() leaves the tasks' streams, durations and deps unchanged."""
    before = [(t.stream, t.duration_s, list(t.deps)) for t in tasks]
    run(tasks)
    assert [(t.stream, t.duration_s, list(t.deps)) for t in tasks] == before


def test_a_task_slows_the_stream_it_holds_a_share_of():
    """A 0.5 s side task holding 20 % of stream A, started with A's 1 s task: A advances 0.4 s
    of work in the first 0.5 s, then the remaining 0.6 s at full rate, ending at 1.1 s."""
    tl = run([Task(A, 1.0), Task(C, 0.5, slows=(A, 0.2))])
    assert tl.end_s[0] == pytest.approx(1.1)
    assert tl.stretch_s(0) == pytest.approx(0.1) and tl.stretch_s(1) == 0.0


def test_rounding_of_an_end_is_no_stretch():
    """chakra57: 0.2 s then 0.1 s on one stream end at 0.30000000000000004, ~2.8e-17 s past
    start + duration in exact arithmetic: that is the double's rounding, not a slowdown (the
    Chakra export wrote such differences as contention nodes); a real one still counts."""
    tl = run([Task(A, 0.2), Task(A, 0.1)])
    assert tl.end_s[1] - tl.start_s[1] - 0.1 > 0 and tl.stretch_s(1) == 0.0
    tl = run([Task(A, 0.2), Task(A, 0.1), Task(C, 1.0, slows=(A, 1e-9))])
    assert tl.stretch_s(1) == pytest.approx(1e-10, rel=1e-6)  # 1e-9 of its SMs held


def test_shares_add_up_and_later_tasks_start_slowed():
    """Two side tasks hold 25 % of stream A each, over [0.2, 0.6] and [0.2, 0.8]. A's first task
    (0.5 s of work) runs 0.2 at full rate, 0.2 at 50 % and the last 0.1 at 75 %: it ends at
    0.7333. The next starts slowed (75 % until 0.8), then runs at full rate: it ends at 1.15."""
    tasks = [Task(A, 0.5), Task(A, 0.4), Task(C, 0.2),
             Task(C, 0.4, [2], slows=(A, 0.25)), Task((0, "x"), 0.6, [2], slows=(A, 0.25))]
    tl = run(tasks)
    assert tl.end_s[0] == pytest.approx(0.2 + 0.4 + 0.1 / 0.75)
    assert tl.start_s[1] == pytest.approx(tl.end_s[0])
    assert tl.end_s[1] == pytest.approx(0.8 + (0.4 - (0.8 - tl.end_s[0]) * 0.75))


def test_a_share_on_a_stream_with_no_tasks_changes_nothing():
    """Holding a share of a stream nobody uses leaves every time as it was."""
    tl = run([Task(A, 1.0), Task(C, 0.5, slows=((7, "compute"), 0.5))])
    assert tl.end_s == [1.0, 0.5]


def _random_graph(rng, n: int, slow_p: float) -> list[Task]:
    streams = [(r, k) for r in range(3) for k in ("compute", "dp", "pp")]
    tasks = []
    for i in range(n):
        deps = rng.sample(range(i), rng.randint(0, min(i, 3))) if i else []
        slows = (rng.choice(streams), rng.choice([0.1, 0.5, 0.99])) \
            if rng.random() < slow_p else None
        tasks.append(Task(rng.choice(streams), rng.choice([0.0, 0.5, 1.0, rng.random()]), deps,
                          f"t{i}", (), None, slows))
    return tasks


def test_the_uncontended_prefix_is_the_event_loops_own_timeline():
    """Up to the first task that slows a stream, run() times tasks in one pass and hands the
    rest to the event loop: every start and end is the loop's alone, to the bit, whether
    contention starts late, early, never or at once."""
    import random

    rng = random.Random(21)
    late = 0
    for trial in range(400):
        tasks = _random_graph(rng, rng.randint(1, 80), rng.choice([0.0, 0.02, 0.1, 0.5]))
        if trial % 4 == 0:  # contention only at the end, as a gradient reduction's
            for t in tasks[: len(tasks) * 3 // 4]:
                t.slows = None
        fast, plain = run(tasks), run(tasks, prefix=False)
        assert fast.start_s == plain.start_s and fast.end_s == plain.end_s
        late += any(t.slows for t in tasks) and min(
            s for s, t in zip(plain.start_s, tasks) if t.slows) > 0
    assert late > 50


def test_at_the_cut_a_task_waits_only_for_its_dependencies_still_running():
    """The loop taking over at the uncontended prefix's cut (the first task that slows a
    stream starts at 2.0) counts, for each task not yet started, only its dependencies that
    have not ended by then: task 4 waits for task 1 (running across the cut), not for task 0
    (ended at 1.0), and starts when task 1 ends, as the loop from the start has it."""
    from trainsim.engine.loop import _cut, _first_pass

    c = (0, "compute")
    tasks = [
        Task((0, "x"), 1.0),
        Task((0, "y"), 3.0),
        Task((0, "z"), 2.0),
        Task((0, "dp"), 1.5, [2], slows=(c, 0.5)),
        Task(c, 2.0, [0, 1]),
        Task(c, 1.0, [3, 0]),
    ]
    pass_ = _first_pass(tasks, [t.duration_s for t in tasks])
    assert _cut(pass_[3], pass_[5], len(tasks)) == 2.0
    fast, plain = run(tasks), run(tasks, prefix=False)
    assert fast.start_s == plain.start_s and fast.end_s == plain.end_s
    # half rate beside the holder until 3.5 (0.25 of its work), then full rate
    assert fast.start_s[4] == 3.0 and fast.end_s[4] == 3.5 + (2.0 - 0.5 * 0.5)
    assert fast.start_s[5] == fast.end_s[4]


def test_heads_released_together_start_in_task_order():
    """Two heads waiting for one task start, when it ends, in task order (not in the order they
    began to wait), so the shares they take of a stream add up in that order: held 0.1, then
    + 0.2 (task 4) + 0.15 (task 6) = 0.45000000000000007, not (0.1 + 0.15) + 0.2 = 0.45."""
    a, q, p, x = (0, "compute"), (0, "q"), (0, "p"), (0, "x")
    tasks = [
        Task(a, 1.0),
        Task(q, 0.1),  # stream q's head waits for x from 0.1 on ...
        Task(x, 0.5),
        Task(p, 0.3),  # ... stream p's from 0.3 on
        Task(p, 10.0, [2], slows=(a, 0.2)),
        Task((0, "c"), 10.0, slows=(a, 0.1)),
        Task(q, 10.0, [2], slows=(a, 0.15)),
    ]
    held = (0.1 + 0.2) + 0.15
    assert held != (0.1 + 0.15) + 0.2
    left = 1.0 - 0.5 * (1.0 - 0.1)  # a's work left when x ends
    tl = run(tasks)
    assert tl.end_s[0] == 0.5 + left / (1.0 - held)
    assert tl.end_s[0] != 0.5 + left / (1.0 - ((0.1 + 0.15) + 0.2))


def test_runs_shared_reuses_a_timeline_only_for_the_same_graph():
    """Inside runs_shared, a graph equal in stream, duration, dependencies and slows to one
    run before gets that run's times (labels and payloads may differ; the returned timeline
    holds the new tasks); a graph that differs in any of them, even with the same total
    duration (the memo's first key), is run anew, with the times run() gives it alone: a
    difference in its first task too (the graphs are compared from the last task back)."""
    from trainsim.engine import loop

    def graph(label="x", d=0.5, deps=(0,), share=0.2, stream=C, head=A):
        return [Task(head, 1.0, label=label), Task(stream, d, list(deps), slows=(A, share)),
                Task(A, 1.5 - d, [1])]

    variants = [graph(d=0.4), graph(deps=()), graph(share=0.3), graph(stream=(0, "pp")),
                graph(head=(0, "pp"))]
    alone = [run(g) for g in [graph()] + variants]
    calls = []
    inner = loop._run
    try:
        loop._run = lambda tasks, prefix: calls.append(len(tasks)) or inner(tasks, prefix)
        with loop.runs_shared():
            first, again = run(graph()), run(graph(label="other"))
            others = [run(g) for g in variants]
        outside = run(graph())
    finally:
        loop._run = inner
    assert len(calls) == 2 + len(variants)  # the relabelled graph did not run the loop
    assert (again.start_s, again.end_s, again.queues) == (first.start_s, first.end_s,
                                                           first.queues)
    assert again.tasks[0].label == "other" and again.start_s is not first.start_s
    for tl, ref in zip([first, *others], alone):
        assert (tl.start_s, tl.end_s) == (ref.start_s, ref.end_s)
    assert outside.end_s == alone[0].end_s and not loop._SHARED


def test_runs_shared_leaves_the_collector_as_it_found_it():
    """runs_shared freezes the kept graphs out of the collector's scans only where nothing was
    frozen before, and unfreezes on exit; where something was frozen (the service freezes its
    imports), it freezes nothing and leaves that frozen."""
    import gc

    from trainsim.engine import loop

    tasks = [Task(A, 1.0), Task(C, 0.5, [0], slows=(A, 0.2))]
    assert gc.get_freeze_count() == 0
    with loop.runs_shared():
        run(tasks)
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    loop.freeze_collector()
    try:
        frozen = gc.get_freeze_count()
        with loop.runs_shared():
            run([Task(A, 2.0)])
        assert gc.get_freeze_count() == frozen
    finally:
        loop.thaw_collector()
    assert gc.get_freeze_count() == 0 and loop._FROZEN == [0]


def test_runs_shared_never_counts_the_frozen_objects(monkeypatch):
    """``gc.get_freeze_count`` walks every frozen object in CPython 3.11 (O(n): 3-50 ms a call
    after a service app's startup freeze): runs_shared knows what was frozen from
    ``freeze_collector``'s count instead, with nothing frozen and with a holder alike."""
    import gc

    from trainsim.engine import loop

    def walked() -> int:
        raise AssertionError("runs_shared called gc.get_freeze_count (O(frozen objects))")

    monkeypatch.setattr(gc, "get_freeze_count", walked)
    for held in (False, True):
        if held:
            loop.freeze_collector()
        try:
            with loop.runs_shared():
                run([Task(A, 1.0), Task(C, 0.5, [0], slows=(A, 0.2))])
                with loop.runs_shared():
                    run([Task(A, 3.0)])
        finally:
            if held:
                loop.thaw_collector()
    assert loop._FROZEN == [0]


def test_runs_shared_keeps_no_more_tasks_than_its_cap(monkeypatch):
    """Past SHARED_TASKS kept tasks, a new graph is run but not kept (run again if repeated)."""
    from trainsim.engine import loop

    monkeypatch.setattr(loop, "SHARED_TASKS", 3)
    small, large = [Task(A, 1.0), Task(C, 0.5, [0])], [Task(A, 2.0), Task(C, 1.0), Task(A, 1.0)]
    with loop.runs_shared():
        run(small)
        run(large)  # 2 + 3 > 3: not kept
        kept = loop._SHARED[-1][1]
        assert [len(t) for t, _ in kept.values()] == [2]
        assert run(large).end_s == run([Task(A, 2.0), Task(C, 1.0), Task(A, 1.0)]).end_s
