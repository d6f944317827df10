"""NCCL's ceiling on the LL protocol's bus bandwidth (collectives.nccl.LL_MAX_BUSBW_GBPS)."""

from __future__ import annotations

import re

import pytest

from tests.helpers import mirror_source
from trainsim.collectives import BUS_FACTOR, Fabric, LinkTier, collective_cost, group_span
from trainsim.collectives.nccl import LL_MAX_BUSBW_GBPS, ll_max_busbw_Bps


def fabric(cc):
    return Fabric(LinkTier(450e9, 0.8, "nvlink"), LinkTier(50e9, 0.96, "net"),
                  compute_capability=cc)


def _busbw(kind, size, n, per_node, f, **kw):
    c = collective_cost(kind, size, group_span(n, 1, per_node), f, **kw)
    return BUS_FACTOR[kind](n) * size / c.time_s, c


def test_the_ceiling_follows_the_gpu_in_one_node_and_the_node_count_across():
    """Hopper 141 GB/s and Blackwell 282 inside a node; 39 on two nodes, 20.4 on more; no
    ceiling for a fabric without an NVIDIA GPU."""
    one, two, many = group_span(8, 1, 8), group_span(16, 1, 8), group_span(64, 1, 8)
    assert ll_max_busbw_Bps(one, fabric(90)) == 141e9
    assert ll_max_busbw_Bps(one, fabric(100)) == 282e9
    assert ll_max_busbw_Bps(one, fabric(80)) == 87.7e9
    assert ll_max_busbw_Bps(two, fabric(90)) == 39e9
    assert ll_max_busbw_Bps(many, fabric(100)) == 20.4e9
    assert ll_max_busbw_Bps(many, fabric(None)) == float("inf")


def test_a_forced_ll_ring_runs_at_most_at_the_ceiling():
    """NCCL_PROTO=LL on a large all_gather: inside one H100 node the ring's half of 360 GB/s
    (180) is capped at 141; across 8 nodes at 20.4 (hand: the bandwidth term is
    (n-1)/n x size / ceiling)."""
    size = 1 << 30
    bw, c = _busbw("all_gather", size, 8, 8, fabric(90), algorithm="ring", protocol="LL")
    assert c.protocol == "LL" and bw < 141e9 and bw > 0.95 * 141e9
    bw, c = _busbw("all_gather", size, 64, 8, fabric(90), algorithm="ring", protocol="LL")
    t_bw = 63 / 64 * size / 20.4e9
    assert c.time_s == pytest.approx(t_bw, rel=0.02) and c.time_s > t_bw


def test_large_multi_node_collectives_leave_ll(monkeypatch):
    """A 134 MB all_gather over 256 Blackwell ranks in 4 NVLink domains of 64: the domains'
    900 GB/s give LL's ring half of it, and without the ceiling LL's short hops would win;
    with it (70 GB/s busbw at most, 4 nodes) NCCL's choice is LL128, as its tuner makes it.
    A small message keeps LL: its latency still wins."""
    from trainsim.collectives import nccl

    f = Fabric(LinkTier(900e9, 0.8, "nvlink"), LinkTier(50e9, 0.96, "net"),
               compute_capability=100)
    span = group_span(256, 1, 64)
    capped = collective_cost("all_gather", 134e6, span, f)
    small = collective_cost("all_gather", 64e3, span, f)
    monkeypatch.setattr(nccl, "ll_max_busbw_Bps", lambda s, fab: float("inf"))
    free = collective_cost("all_gather", 134e6, span, f)
    assert free.protocol == "LL"
    assert capped.protocol == "LL128"
    assert capped.time_s > free.time_s
    assert small.protocol == "LL"


def test_the_table_is_the_one_in_nccl():
    """Where the NCCL mirror is at hand, the figures are tuning.cc's (skipped without it)."""
    src = mirror_source("NVIDIA+nccl", "v2.27.3-1", "src/graph/tuning.cc")
    rows = re.search(r"llMaxBws\[\]\[3\] = \{(.*?)\};", src, re.DOTALL)[1]
    def value(cell: str) -> float:  # "141.0", "2*141.0", "45.0 /*avg of ring & tree*/"
        cell = re.sub(r"/\*.*?\*/", "", cell).strip()
        factor, _, rest = cell.rpartition("*")
        return float(rest) * (float(factor) if factor else 1.0)

    nums = [[value(x) for x in re.findall(r"\{([^}]*)\}", line)[0].split(",")]
            for line in rows.strip().splitlines()]
    volta, ampere, hopper, blackwell = nums
    assert (volta[1], volta[2]) == (LL_MAX_BUSBW_GBPS["two_nodes"],
                                    LL_MAX_BUSBW_GBPS["more_nodes"])
    one = dict(LL_MAX_BUSBW_GBPS["one_node"])
    assert (volta[0], ampere[0], hopper[0], blackwell[0]) == (one[0], one[80], one[90], one[100])
    assert "busBw = std::min(llMaxBw, busBw * .5)" in src
