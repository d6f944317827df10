"""Alpha-beta collectives: conservation, monotonicity, and nccl-tests single-node figures."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsim.collectives import BUS_FACTOR, LinkTier, collective_cost, group_span
from trainsim.errors import ConfigError

NV = LinkTier(300e9, 5e-6, 0.8)
IB = LinkTier(25e9, 10e-6, 0.94)


def test_group_span_follows_megatron_rank_order():
    """TP (stride 1) stays in a node; DP with stride 8 puts one rank per node."""
    assert group_span(8, 1, 8).nodes == 1
    assert group_span(16, 8, 8).per_node == 1
    assert group_span(32, 2, 8).per_node == 4


@given(size=st.floats(1e3, 1e10), n=st.sampled_from([2, 4, 8, 16, 64]),
       kind=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter"]))
def test_more_bandwidth_is_never_slower(size, n, kind):
    """Doubling every link's bandwidth never increases a collective's time."""
    span = group_span(n, 1, 8)
    slow = collective_cost(kind, size, span, NV, IB).time_s
    fast = collective_cost(kind, size, span, LinkTier(600e9, 5e-6, 0.8),
                           LinkTier(50e9, 10e-6, 0.94)).time_s
    assert fast <= slow


@given(size=st.floats(1e3, 1e10))
def test_bigger_messages_take_longer(size):
    """Time grows with message size."""
    span = group_span(16, 1, 8)
    assert collective_cost("all_reduce", 2 * size, span, NV, IB).time_s > \
        collective_cost("all_reduce", size, span, NV, IB).time_s


def test_single_node_ring_busbw_matches_nccl_tests():
    """8 A100s reach ~230 GB/s all-reduce bus bandwidth (nccl-tests #149) within 10%."""
    size = 8 * 2**30
    t = collective_cost("all_reduce", size, group_span(8, 1, 8), NV, IB).time_s
    busbw = BUS_FACTOR["all_reduce"](8) * size / t
    assert busbw == pytest.approx(230e9, rel=0.10)


def test_zero_bytes_and_single_rank_cost_nothing():
    """A group of one or an empty message is free, never an error or a hang."""
    assert collective_cost("all_reduce", 0, group_span(8, 1, 8), NV, IB).time_s == 0
    assert collective_cost("all_reduce", 1e6, group_span(1, 1, 8), NV, IB).time_s == 0


def test_unknown_collective_or_algorithm_is_a_clear_error():
    """Bad names raise ConfigError naming the choices."""
    with pytest.raises(ConfigError, match="unknown collective"):
        collective_cost("allreduce", 1e6, group_span(8, 1, 8), NV, IB)
    with pytest.raises(ConfigError, match="unknown algorithm"):
        collective_cost("all_reduce", 1e6, group_span(8, 1, 8), NV, IB, "nvls2")
