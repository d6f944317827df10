"""Decomposition of collectives into point-to-point flows: bytes conserved, NCCL structure."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsim.collectives.flows import (
    FLOW_ALGORITHMS,
    Flow,
    FlowSchedule,
    decompose,
    double_tree_parents,
    pxn_relay,
    ring_orders,
)
from trainsim.errors import ConfigError

GPN = 8


@st.composite
def groups(draw, min_size=2, max_size=24):
    """A group of distinct GPU ranks on up to 4 nodes of 8, and a gpus_per_node (or None)."""
    n = draw(st.integers(min_size, max_size))
    ranks = draw(st.lists(st.integers(0, 4 * GPN - 1), min_size=n, max_size=n, unique=True))
    gpn = draw(st.sampled_from([None, 1, 2, 4, 8]))
    return ranks, gpn


sizes = st.floats(1.0, 1e10, allow_nan=False, allow_infinity=False)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def check_members(sched, ranks, gpn):
    members = set(ranks)
    for f in sched.expand():
        assert f.src in members and f.dst in members and f.src != f.dst
        if f.via is not None:  # the relay sits on src's node, on dst's rail
            assert f.via // gpn == f.src // gpn and f.via % gpn == f.dst % gpn


@settings(max_examples=60, deadline=None)
@given(g=groups(), size=sizes, channels=st.sampled_from([None, 1, 2, 3]),
       pxn=st.booleans())
def test_ring_all_reduce_sends_2_n_minus_1_over_n_per_rank(g, size, channels, pxn):
    """Every rank sends and receives exactly 2(n-1)/n * S in a ring all-reduce."""
    ranks, gpn = g
    n = len(ranks)
    sched = decompose("all_reduce", size, ranks, "ring", channels, gpn, pxn)
    sent, received = sched.sent_bytes(), sched.received_bytes()
    assert set(sent) == set(ranks) == set(received)
    for r in ranks:
        assert close(sent[r], 2 * (n - 1) / n * size)
        assert close(received[r], 2 * (n - 1) / n * size)
    check_members(sched, ranks, gpn)


@settings(max_examples=60, deadline=None)
@given(g=groups(), size=sizes, kind=st.sampled_from(["all_gather", "reduce_scatter"]),
       channels=st.sampled_from([None, 1, 4]))
def test_ring_all_gather_and_reduce_scatter_send_n_minus_1_over_n(g, size, kind, channels):
    """All-gather and reduce-scatter move (n-1)/n * S per rank in n-1 steps per channel."""
    ranks, gpn = g
    n = len(ranks)
    sched = decompose(kind, size, ranks, channels=channels, gpus_per_node=gpn)
    for r in ranks:
        assert close(sched.sent_bytes()[r], (n - 1) / n * size)
    steps = Counter((f.channel, f.step) for f in sched.expand())
    for c in {f.channel for f in sched.flows}:
        assert {s for ch, s in steps if ch == c} == set(range(n - 1))
    check_members(sched, ranks, gpn)


@settings(max_examples=40, deadline=None)
@given(g=groups(max_size=16), size=sizes)
def test_all_to_all_sends_s_over_n_to_every_peer(g, size):
    """Direct all-to-all: each ordered pair once, (n-1)/n * S per rank."""
    ranks, gpn = g
    n = len(ranks)
    sched = decompose("all_to_all", size, ranks, gpus_per_node=gpn)
    pairs = Counter((f.src, f.dst) for f in sched.flows)
    assert len(pairs) == n * (n - 1) and set(pairs.values()) == {1}
    for r in ranks:
        assert close(sched.sent_bytes()[r], (n - 1) / n * size)
    check_members(sched, ranks, gpn)


@settings(max_examples=40, deadline=None)
@given(g=groups(), size=sizes, channels=st.sampled_from([None, 1, 2, 5]))
def test_tree_all_reduce_moves_the_ring_total(g, size, channels):
    """Double binary tree: every non-root rank of each tree sends its share up once and
    receives it down once, 2(n-1) S bytes in all."""
    ranks, gpn = g
    n = len(ranks)
    sched = decompose("all_reduce", size, ranks, "tree", channels, gpn)
    assert close(sched.total_bytes, 2 * (n - 1) * size)
    for c in {f.channel for f in sched.flows}:
        moved = Counter((f.src, f.dst) for f in sched.flows if f.channel == c)
        edges = {frozenset(p) for p in moved}
        assert all(moved[(a, b)] == moved[(b, a)] for a, b in moved)  # up once, down once
        assert len(edges) == n - 1  # n-1 edges reaching every rank: a spanning tree
        reach, todo = {ranks[0]}, [ranks[0]]
        while todo:
            x = todo.pop()
            for e in edges:
                if x in e:
                    (y,) = e - {x}
                    if y not in reach:
                        reach.add(y)
                        todo.append(y)
        assert reach == set(ranks)
    check_members(sched, ranks, gpn)


@settings(max_examples=40, deadline=None)
@given(g=groups(), size=sizes, kind=st.sampled_from(["broadcast", "reduce"]),
       data=st.data())
def test_broadcast_and_reduce_move_s_to_or_from_every_other_rank(g, size, kind, data):
    """Broadcast delivers S to every non-root rank; reduce collects S from each."""
    ranks, gpn = g
    root = data.draw(st.sampled_from(ranks))
    sched = decompose(kind, size, ranks, gpus_per_node=gpn, root=root)
    per_rank = sched.received_bytes() if kind == "broadcast" else sched.sent_bytes()
    assert root not in per_rank
    for r in ranks:
        if r != root:
            assert close(per_rank[r], size)
    check_members(sched, ranks, gpn)


def test_send_recv_is_one_flow():
    """send_recv moves S from the first rank to the second, via a PXN relay off-rail."""
    assert decompose("send_recv", 10.0, [0, 1]).flows == (Flow(0, 1, 10.0),)
    (f,) = decompose("send_recv", 10.0, [1, 10], gpus_per_node=8).flows
    assert f.via == 2 and f.bytes == 10.0


def test_ring_all_reduce_has_2_n_minus_1_steps_per_channel():
    """A 16-rank ring all-reduce on 2 nodes: 8 channels (one per rail), 30 steps each."""
    sched = decompose("all_reduce", 1e6, list(range(16)), gpus_per_node=8)
    assert sched.repeat == 30 and len({f.channel for f in sched.flows}) == 8
    assert len(sched.expand()) == 30 * 8 * 16


def test_rail_aware_rings_cross_nodes_on_one_rail():
    """Channel c enters every node at local GPU c; with PXN every cross-node hop leaves
    from a GPU on the destination's rail (GPU i -> GPU i of the next node)."""
    ranks = list(range(32))
    orders = ring_orders(ranks, 8, GPN)
    for c, order in enumerate(orders):
        assert [order[i * 8] % 8 for i in range(4)] == [c] * 4
    sched = decompose("all_reduce", 1e6, ranks, gpus_per_node=GPN)
    crossing = [f for f in sched.flows if f.src // GPN != f.dst // GPN]
    assert len(crossing) == 8 * 4
    for f in crossing:
        sender = f.src if f.via is None else f.via
        assert sender % GPN == f.dst % GPN == f.channel
    no_pxn = decompose("all_reduce", 1e6, ranks, gpus_per_node=GPN, pxn=False)
    assert all(f.via is None for f in no_pxn.flows)
    assert any(f.src % GPN != f.dst % GPN for f in no_pxn.flows if f.src // GPN != f.dst // GPN)


def test_pxn_relay():
    """The relay is the source node's GPU on the destination's rail, only when needed."""
    assert pxn_relay(3, 13, 8) == 5
    assert pxn_relay(3, 11, 8) is None  # same rail
    assert pxn_relay(3, 5, 8) is None  # same node
    assert pxn_relay(3, 13, 8, pxn=False) is None
    assert pxn_relay(3, 13, None) is None


@pytest.mark.parametrize("n", [2, 3, 7, 8, 12, 13])
def test_double_tree_is_two_spanning_trees(n):
    """Both trees reach every rank from their root; inner ranks of one are leaves of the
    other for even counts (NCCL's mirrored double binary tree)."""
    for parents in double_tree_parents(n):
        assert parents.count(-1) == 1
        for r in range(n):
            seen = set()
            while parents[r] != -1:
                assert r not in seen
                seen.add(r)
                r = parents[r]
    if n % 2 == 0 and n > 2:
        first, second = double_tree_parents(n)
        inner = [{p for p in t if p >= 0} for t in (first, second)]
        assert not (inner[0] & inner[1])


def test_schedule_expand_matches_repeat():
    """A repeated template expands to every step, shifted by the period."""
    sched = FlowSchedule((Flow(0, 1, 1.0, 0), Flow(1, 0, 1.0, 1)), repeat=3)
    assert [f.step for f in sched.expand()] == [0, 1, 2, 3, 4, 5]
    assert sched.total_bytes == 6.0 and len(sched) == 6


def test_degenerate_inputs_give_empty_schedules():
    """Zero bytes or a single rank means nothing to move."""
    assert decompose("all_reduce", 0, [0, 1, 2]).flows == ()
    assert decompose("all_gather", 1e6, [4]).flows == ()
    assert decompose("broadcast", 1e6, [4]).flows == ()


@pytest.mark.parametrize("call, match", [
    (lambda: decompose("allreduce", 1, [0, 1]), "unknown collective"),
    (lambda: decompose("all_gather", 1, [0, 1], "tree"), "cannot run"),
    (lambda: decompose("all_reduce", 1, [0, 0]), "duplicates"),
    (lambda: decompose("all_reduce", -1, [0, 1]), "size_bytes"),
    (lambda: decompose("all_reduce", 1, [0, 1], channels=0), "channels"),
    (lambda: decompose("send_recv", 1, [0]), "at least two ranks"),
    (lambda: decompose("broadcast", 1, [0, 1], root=5), "root"),
    (lambda: FlowSchedule((), repeat=0), "repeat"),
])
def test_bad_input_is_a_config_error(call, match):
    """Unknown names and impossible groups raise ConfigError naming the problem."""
    with pytest.raises(ConfigError, match=match):
        call()


def test_every_collective_has_a_default_algorithm():
    """'auto' resolves for every collective the flow layer knows."""
    for kind in FLOW_ALGORITHMS:
        ranks = [0, 1] if kind == "send_recv" else [0, 1, 2, 9]
        assert decompose(kind, 64.0, ranks, gpus_per_node=8).flows
