"""A communicator's NCCL channel cap (``ncclConfig_t.maxCTAs``) bounds its rings across nodes
(``collectives.nccl.NET_CHANNEL_Bps``, ``GroupSpan.max_channels``); MLPerf v5.x caps the
data-parallel communicators at 8 (``parallel.dp_max_ctas`` from the mlperf-nemo profile)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import PUBLIC_TRAINING, mirror_source, training_rows
from trainsim.collectives import Fabric, LinkTier, collective_cost, group_span
from trainsim.collectives.nccl import NET_CHANNEL_Bps, _ring_busbw

ROOT = Path(__file__).resolve().parents[1]


def fabric(nic_Bps: float) -> Fabric:
    return Fabric(LinkTier(900e9, 0.8, "nvlink"), LinkTier(nic_Bps, 0.96, "net"),
                  compute_capability=100)


def test_the_cap_binds_across_nodes_only_and_not_on_the_nic():
    """Eight channels carry 8 x 24 GB/s across nodes whether the NICs run 400 or 800 Gb/s;
    inside a node, or uncapped, the ring is as before."""
    one, two = group_span(8, 1, 8), group_span(16, 1, 8)
    for nic in (50e9, 100e9):
        f = fabric(nic)
        assert _ring_busbw(replace(one, max_channels=8), f) == _ring_busbw(one, f)
        assert _ring_busbw(replace(two, max_channels=8), f) == pytest.approx(8 * NET_CHANNEL_Bps)
        assert _ring_busbw(two, f) > 8 * NET_CHANNEL_Bps
    # a cap above what the NICs carry changes nothing
    f = fabric(50e9)
    assert _ring_busbw(replace(two, max_channels=64), f) == _ring_busbw(two, f)
    # one rank per node: its NIC rate, capped the same way
    lone = group_span(4, 8, 8)
    assert _ring_busbw(replace(lone, max_channels=1), f) == pytest.approx(
        min(_ring_busbw(lone, f), NET_CHANNEL_Bps))


def test_a_capped_reduce_scatter_takes_longer_by_the_bandwidth_ratio():
    f, two = fabric(50e9), group_span(16, 1, 8)
    size = 2 * 134_217_728  # one of MLPerf's 134M-parameter bf16 gradient buckets
    free = collective_cost("reduce_scatter", size, two, f)
    capped = collective_cost("reduce_scatter", size, replace(two, max_channels=8), f)
    assert capped.time_s > free.time_s
    assert capped.busbw_Bps <= 8 * NET_CHANNEL_Bps * 1.0001


def test_mlperf_5x_rows_cap_their_data_parallel_communicators():
    from trainsim.pricing import Pricer
    from trainsim.validate.training import _tuned_layout, counts_checked, normalized_training_row

    rows = {r["id"]: r for r in training_rows(ROOT / "benchmarks" / "training_mlperf5.csv")}
    row, _ = normalized_training_row(rows["mlperf51-uf-llama3.1-8b-b200-16"])
    cfg = _tuned_layout(counts_checked(row), None)[0]
    assert cfg.parallel.dp_max_ctas == 8
    spans = Pricer(cfg).spans
    assert spans["dp"].max_channels == spans["dp_cp"].max_channels == 8
    assert spans["tp"].max_channels is None and spans["pp"].max_channels is None


def test_earlier_mlperf_rounds_and_other_frameworks_leave_nccl_its_channels():
    from trainsim.validate.training import _tuned_layout, counts_checked, normalized_training_row

    public = {r["id"]: r for r in training_rows(PUBLIC_TRAINING)}
    older = [r for r in public.values() if r["framework"] == "mlperf-nemo"]
    for r in older[:2] + [next(r for r in public.values() if r["framework"] == "nemo")]:
        row, _ = normalized_training_row(r)
        assert _tuned_layout(counts_checked(row), None)[0].parallel.dp_max_ctas is None, r["id"]


def test_the_cited_nccl_lines_say_what_the_constant_reads_from_them():
    connect = mirror_source("NVIDIA+nccl", "v2.28.3-1", "src/graph/connect.cc")
    doubling = re.search(r"to reach peak BW.*?\n(.*?)\n", connect, re.DOTALL).group(1)
    assert "minCompCap >= 90" in doubling and "bwIntra > 45.0" in doubling
    assert "comm->config.maxCTAs" in connect
    search = mirror_source("NVIDIA+nccl", "v2.28.3-1", "src/graph/search.cc")
    inter = re.search(r"sm100SpeedArrayInter\[\] = \{ ([^}]*)\}", search).group(1)
    assert [float(x) for x in inter.split(",")[:2]] == [96.0, 48.0]
    assert NET_CHANNEL_Bps == 48e9 / 2


def test_a_cap_of_no_channels_is_refused():
    from trainsim.config import ParallelConfig
    from trainsim.errors import ConfigError

    with pytest.raises(ConfigError, match="dp_max_ctas"):
        ParallelConfig(dp_max_ctas=0)
    assert ParallelConfig(dp_max_ctas=8).dp_max_ctas == 8


def test_the_flow_backend_bounds_a_capped_group_as_the_analytical_one_does():
    """The flow backend prices a capped communicator's rings across nodes at no more than its
    channels' NET_CHANNEL_Bps, not at its links' rates; inside a node, uncapped, or a pipeline
    send, its cost is the bare flow model's."""
    from trainsim.network.flow import FlowNetwork
    from trainsim.network.topology import rail_fat_tree

    net = FlowNetwork(rail_fat_tree(nodes=2, gpus_per_node=8, nodes_per_leaf=2, nic_bw_Bps=50e9))
    size = 2 * 134_217_728
    two, one = net.span(16, 1), net.span(8, 1)
    free = net.collective("reduce_scatter", size, two)
    capped = net.collective("reduce_scatter", size, replace(two, max_channels=8))
    assert free.busbw_Bps > 8 * NET_CHANNEL_Bps
    assert capped.busbw_Bps == pytest.approx(8 * NET_CHANNEL_Bps)
    assert capped.time_s > free.time_s
    assert net.collective("all_reduce", size, replace(one, max_channels=1)) == \
        net.collective("all_reduce", size, one)
    pair = net.span(2, 8)
    assert net.collective("send_recv", size, replace(pair, max_channels=1)).time_s == \
        net.collective("send_recv", size, pair).time_s
