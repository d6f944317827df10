"""The chain fill of NCCL's ring broadcast and reduce (collectives.scale_terms.chain_fill_s):
its sizes from NCCL's buffers, the hops that hold a whole chunk, and the collectives it must
leave alone."""

from __future__ import annotations

import math

import pytest

from trainsim.collectives import Fabric, GroupSpan, LinkTier, collective_cost, scale_terms
from trainsim.collectives.nccl import PROTOCOL_EFFICIENCY, _ring_busbw, ll_max_busbw_Bps
from trainsim.collectives.scale_terms import NCCL_STEP_WIRE_BYTES, chain_fill_s

KiB = 1024


def _fabric(nic_Bps: float = 6.25e9) -> Fabric:
    """Eight A100 a node on NVLink, one NIC of ``nic_Bps`` a GPU (InternEvo's cluster: 4 x 100 Gb
    RoCE a machine, 50 Gb/s a GPU)."""
    return Fabric(LinkTier(300e9, 0.80, "nvlink"), LinkTier(nic_Bps, 0.96, "net"),
                  compute_capability=80)


def test_step_sizes_are_nccl_buffers_over_eight_steps():
    """LL: 8 lines x 512 threads x 16 B; LL128: 120 x 640 x 8 B; Simple: 4 MiB / 8."""
    assert NCCL_STEP_WIRE_BYTES == {"LL": 64 * KiB, "LL128": 600 * KiB, "Simple": 512 * KiB}


def test_no_fill_without_two_forwarding_hops():
    assert chain_fill_s(1e9, "LL128", 120 / 128, 0, 16, 1e11) == 0.0
    assert chain_fill_s(1e9, "Simple", 1.0, 1, 16, 1e11) == 0.0


def test_a_small_message_is_stored_and_forwarded_whole():
    """Below one step a channel, every forwarding hop after the first costs the whole message."""
    size, bw = 100 * KiB, 50e9
    assert chain_fill_s(size, "LL128", 120 / 128, 5, 16, bw) == pytest.approx(4 * size / bw)


def test_a_large_message_pays_one_step_a_channel_per_hop():
    """16 channels (2 a NIC, 8 GPUs) of 600 KiB x 120/128 payload: 9.0 MiB a hop at the rate."""
    bw = 45e9
    step_all = 600 * KiB * 120 / 128 * 16
    assert chain_fill_s(1e9, "LL128", 120 / 128, 129, 16, bw) == pytest.approx(128 * step_all / bw)


def _fill(kind, size, span, f, proto, monkeypatch):
    """What the chain fill adds to a ring collective's time: priced with it, then without."""
    with_fill = collective_cost(kind, size, span, f, "ring", proto).time_s
    with monkeypatch.context() as m:
        m.setattr(scale_terms, "chain_fill_s", lambda *a, **k: 0.0)
        return with_fill - collective_cost(kind, size, span, f, "ring", proto).time_s


def _bw(span, f, proto):
    bw = _ring_busbw(span, f) * PROTOCOL_EFFICIENCY[proto]
    return min(bw, ll_max_busbw_Bps(span, f)) if proto == "LL" else bw


@pytest.mark.parametrize("proto", ["LL", "LL128", "Simple"])
def test_broadcast_across_nodes_pays_one_chunk_per_forwarding_hop(proto, monkeypatch):
    """1,024 ranks on 128 nodes: LL and LL128 hold a chunk at each of the 128 network hops only;
    Simple at every one of the 1,023 hops."""
    f, span, size = _fabric(), GroupSpan(1024, 8), 90e6
    hops = 1023 if proto == "Simple" else 128
    chunk_all = min(NCCL_STEP_WIRE_BYTES[proto] * PROTOCOL_EFFICIENCY[proto] * 16, size)
    assert _fill("broadcast", size, span, f, proto, monkeypatch) == pytest.approx(
        (hops - 1) * chunk_all / _bw(span, f, proto))


def test_inside_one_node_only_simple_fills(monkeypatch):
    """Eight ranks, 100 MB: LL and LL128 pass lines on over NVLink (no fill); Simple holds a
    512 KiB slice a channel at 6 of its 7 hops."""
    f, span = _fabric(), GroupSpan(8, 8)
    for proto in ("LL", "LL128"):
        assert _fill("broadcast", 1e8, span, f, proto, monkeypatch) == 0.0
    assert _fill("broadcast", 1e8, span, f, "Simple", monkeypatch) == pytest.approx(
        6 * 512 * KiB * 16 / _bw(span, f, "Simple"))


@pytest.mark.parametrize("kind", ["all_reduce", "all_gather", "reduce_scatter"])
def test_rings_of_every_rank_pay_no_fill(kind, monkeypatch):
    """Every rank of a ring all-reduce / all-gather / reduce-scatter sends its own chunk from
    the first step: the chain fill is never asked for."""
    def boom(*a, **k):
        raise AssertionError("chain fill priced for a ring collective")
    monkeypatch.setattr(scale_terms, "chain_fill_s", boom)
    for span in (GroupSpan(8, 8), GroupSpan(1024, 8), GroupSpan(64, 1)):
        assert math.isfinite(collective_cost(kind, 1e9, span, _fabric()).time_s)


def test_reduce_is_the_broadcast_reversed():
    f, span = _fabric(), GroupSpan(256, 8)
    for size in (8e3, 3e7, 1e9):
        assert collective_cost("reduce", size, span, f).time_s == pytest.approx(
            collective_cost("broadcast", size, span, f).time_s)


def test_the_fill_grows_with_the_chain_and_picks_the_small_step():
    """Across 32 -> 128 nodes the fill of a 90 MB broadcast grows with the network hops, and the
    cheapest protocol becomes LL (64 KiB steps) over LL128 (600 KiB)."""
    f = _fabric()
    times = [collective_cost("broadcast", 90e6, GroupSpan(n, 8), f).time_s
             for n in (256, 512, 1024)]
    assert times[0] < times[1] < times[2]
    assert collective_cost("broadcast", 90e6, GroupSpan(1024, 8), f).protocol == "LL"
