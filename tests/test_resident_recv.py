"""Overlapped pipeline receives resident on their SMs from their post until their data arrives
(``engine.Task.until``, ``pipeline.resident_recv_shares``, the interleaved placement in
``simulator._TaskGraph.pipeline``); sources in ``pipeline.resident_recv_shares``."""

from __future__ import annotations

import pytest
from helpers import state_proof

from trainsim import TrainsimError, pipeline
from trainsim.catalog import run_config_from_dict
from trainsim.engine import Task, run
from trainsim.pipeline import resident_recv_shares
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph, simulate

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


def _cfg(tp: int = 1, pp: int = 8, vpp: int = 2, overlap: bool = True, m: int = 16):
    return run_config_from_dict({
        "model": {"name": "toy", "hidden_size": 1024, "num_layers": 32,
                  "num_attention_heads": 8, "vocab_size": 32000},
        "parallel": {"tp": tp, "pp": pp, "vpp": vpp, "overlap_p2p_comm": overlap},
        "training": {"global_batch_size": m, "micro_batch_size": 1, "seq_length": 1024,
                     "framework": "megatron-lm", "framework_version": "2023-11"},
        "cluster": {"node": "dgx-a100", "num_gpus": tp * pp},
    })


def test_a_receive_inside_an_nvlink_node_holds_sixteen_sms_one_across_nodes_two():
    """PP 8 in one DGX A100: a lone receive on a 2-rank communicator runs 16 of the 32 p2p
    channels, one block each, of 108 SMs; TP 8 puts every hop across nodes: a network peer's 2
    channels (stage 0 receives from the last stage, the last from stage 0: its later chunks).
    TP 4 puts stages 0-1 in one node, 2-3 in the next...: the hops 1 -> 2, 3 -> 4, 5 -> 6
    and 7 -> 0 cross nodes."""
    prev, nxt = resident_recv_shares(_cfg(), 2 * 1024 * 1024)
    assert prev == nxt == [16 / 108] * 8
    prev, nxt = resident_recv_shares(_cfg(tp=8), 2 * 1024 * 1024)
    assert prev == nxt == [2 / 108] * 8
    prev, nxt = resident_recv_shares(_cfg(tp=4), 2 * 1024 * 1024)
    assert nxt == [16 / 108, 2 / 108] * 4 and prev == [2 / 108, 16 / 108] * 4


def test_interleaved_overlapped_passes_wait_on_receives_held_until_the_sends():
    """Each pass that takes a neighbour's tensor waits on a receive task posted after the
    stage's previous pass of its direction (its first, after its previous pass) and held until
    the neighbour's send; blocking exchanges and 1F1B without interleaving have none."""
    cfg = _cfg()
    g = build_graph(cfg, Pricer(cfg))
    recvs = [i for i, t in enumerate(g.tasks) if t.stream[1].startswith("recv")]
    assert recvs
    for i in recvs:
        t = g.tasks[i]
        assert g.tasks[t.until].label.startswith("send ")
        assert t.slows == ((t.stream[0], "compute"), 16 / 108)
        kind = "F" if t.stream[1] == "recv_prev" else "B"
        assert t.label.startswith(f"recv {kind}")
        for d in t.deps:  # posted after a pass of its own stage
            assert g.tasks[d].stream == (t.stream[0], "compute")
    # the backward receives posted after a backward, but a stage's first after a forward
    by_stage = [[i for i in recvs if g.tasks[i].stream == (s, "recv_next")] for s in range(7)]
    for queue in by_stage:
        posts = [g.tasks[g.tasks[i].deps[0]].label[0] for i in queue]
        assert posts[0] == "F" and set(posts[1:]) == {"B"}
    for c in (_cfg(overlap=False), _cfg(vpp=1)):
        g = build_graph(c, Pricer(c))
        assert not any(t.until >= 0 for t in g.tasks)


def _compute_stretch_s(cfg) -> float:
    """Seconds the compute streams' tasks ran beyond their durations, slowed by others."""
    g = build_graph(cfg, Pricer(cfg))
    tl = run(g.tasks)
    return sum(tl.stretch_s(i) for i, t in enumerate(g.tasks) if t.stream[1] == "compute")


def test_resident_receives_slow_the_passes_and_the_shortcut_matches_the_full_run(monkeypatch):
    """The held receives slow the passes beside them (here the middle stages, whose slack
    absorbs it: the last stage paces this toy run), and the steady-state shortcut gives the
    full simulation's time."""
    cfg = _cfg(m=64)
    short, full = simulate(cfg), simulate(cfg, keep_timeline=True)
    assert short.simulation["method"] == "steady-state"
    assert short.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9)
    held = _compute_stretch_s(cfg)
    monkeypatch.setattr(pipeline, "resident_recv_shares", lambda c, b: ([0.0] * 8, [0.0] * 8))
    assert held > _compute_stretch_s(cfg) + 0.05
