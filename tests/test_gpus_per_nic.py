"""GPUs sharing a NIC (``cluster.gpus_per_nic``): the config, the node presets and the row
column that state it, NCCL's channels per NIC in a ring broadcast's chain fill, and the flow
backend's shared NIC link.

No published nccl-tests run on nodes with fewer NICs than GPUs was found to test against; the
channel count is NCCL's code (src/graph/search.cc v2.14.3-1 L452-476, L730, L770-783: one ring
a NIC at the first speed under its rate; src/graph/connect.cc L294-299: each ring run twice),
stated as such in ``collectives.ring_channels``."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu, run_config_from_dict
from trainsim.collectives import Fabric, GroupSpan, LinkTier, collective_cost, scale_terms
from trainsim.collectives.nccl import group_nics
from trainsim.collectives.ring_channels import ring_channels
from trainsim.config import ClusterConfig
from trainsim.errors import ConfigError
from trainsim.network.analytical import AnalyticalNetwork
from trainsim.network.flow import FlowNetwork
from trainsim.network.topology import from_cluster
from trainsim.validate.training import row_config

A100 = gpu("a100-sxm-80gb")


def _cluster(**kw) -> ClusterConfig:
    """InternEvo's machines by default: 8 A100, 50 Gb/s a GPU (4 x 100 Gb RoCE a node)."""
    return ClusterConfig(gpu=A100, **{"num_gpus": 32, "nic_bw_Bps": 6.25e9, **kw})


def test_default_is_a_nic_a_gpu():
    c = _cluster()
    assert c.gpus_per_nic == 1 and c.nics_per_node == 8
    assert AnalyticalNetwork(c).fabric.nics_per_node is None


def test_two_gpus_a_nic_is_four_nics_a_node():
    c = _cluster(gpus_per_nic=2)
    assert c.nics_per_node == 4 and AnalyticalNetwork(c).fabric.nics_per_node == 4


@pytest.mark.parametrize("kw, match", [
    ({"gpus_per_nic": 3}, r"^cluster.gpus_per_nic=3 does not divide cluster.gpus_per_node=8"),
    ({"gpus_per_nic": 0}, r"^cluster.gpus_per_nic=0 must be a positive"),
    ({"gpus_per_nic": 2, "topology": "torus"}, r"^cluster.gpus_per_nic=2 is priced on a switched"),
])
def test_bad_sharing_is_refused_in_one_line(kw, match):
    with pytest.raises(ConfigError, match=match):
        _cluster(**kw)


def test_sharing_a_nic_and_several_nics_a_gpu_contradict():
    gb200 = gpu("gb200")
    with pytest.raises(ConfigError, match="contradict"):
        ClusterConfig(gpu=gb200, num_gpus=8, gpus_per_node=8, nics_per_gpu=2, gpus_per_nic=2)


def _raw(**cluster) -> dict:
    return {"model": "llama2-7b", "parallel": {"tp": 1, "pp": 1},
            "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                         "dtype": "fp16", "attention": "unfused"},
            "cluster": {"num_gpus": 16, **cluster}}


def test_node_presets_state_their_nics_and_the_user_overrides():
    """DGX-1 (4 EDR ports for 8 V100) and DGX-2 (8 for 16) share a NIC between two GPUs."""
    assert run_config_from_dict(_raw(node="dgx-1-v100")).cluster.gpus_per_nic == 2
    assert run_config_from_dict(_raw(node="dgx-2", num_gpus=32)).cluster.gpus_per_nic == 2
    assert run_config_from_dict(_raw(node="dgx-a100")).cluster.gpus_per_nic == 1
    assert run_config_from_dict(_raw(node="dgx-1-v100", gpus_per_nic=1)).cluster.gpus_per_nic == 1


def test_the_row_column_reaches_the_cluster():
    """InternEvo's check file states 2 GPUs a NIC (the doc's '4 * 100Gb RoCE', 8 GPUs)."""
    import csv
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "training_internevo.csv"
    row = next(csv.DictReader(path.open()))
    assert row["gpus_per_nic"] == "2" and row["nic_gbps_per_gpu"] == "50"
    assert row_config(row).cluster.gpus_per_nic == 2
    assert row_config({**row, "gpus_per_nic": ""}).cluster.gpus_per_nic == 1


def _fabric(nics_per_node: int | None) -> Fabric:
    """8 A100 a node at 50 Gb/s a GPU: 8 NICs of 50 Gb/s (None) or ``nics_per_node`` shared."""
    return Fabric(LinkTier(300e9, 0.80, "nvlink"), LinkTier(6.25e9, 0.96, "net"),
                  compute_capability=80, nics_per_node=nics_per_node,
                  gpus_per_nic=8 // (nics_per_node or 8))


def test_nics_a_group_reaches():
    """Eight ranks a node reach the node's 4 NICs; four spaced ranks (TP 2) one each; one rank
    one."""
    four = _fabric(4)
    assert group_nics(GroupSpan(1024, 8), four) == 4
    assert group_nics(GroupSpan(512, 4), four) == 4
    assert group_nics(GroupSpan(128, 1), four) == 1
    assert group_nics(GroupSpan(1024, 8), _fabric(None)) == 8


@pytest.mark.parametrize("nics, gbit, cc, channels", [
    (8, 200, 80, 16),  # DGX A100, 8 HDR: 24 GB/s rings, not duplicated, run twice
    (4, 100, 80, 8),   # InternEvo: 4 x 100 Gb RoCE, 12 GB/s rings
    (4, 200, 80, 8),   # A100 with 4 HDR NICs (nccl-tests #112's nodes, 4 x 200 Gb RoCE)
    (8, 400, 90, 16),  # DGX H100: 48 GB/s rings, not duplicated (>4 rings under 50 GB/s)
    (4, 400, 90, 16),  # H100 with 4 NDR NICs: 4 rings duplicated at 48 GB/s, run twice
    (1, 400, 90, 4),   # one NIC, Hopper: 48 -> 2 rings of 24, run twice, no more doubling
    (1, 200, 80, 2),   # one HDR NIC (NVIDIA/nccl #412's A800 nodes): one ring, run twice
])
def test_ring_channels_as_nccl_lays_them(nics, gbit, cc, channels):
    """NCCL's ring channels a node across nodes (search.cc, connect.cc; module docstring)."""
    assert ring_channels(nics, gbit * 1e9 / 8, cc) == channels


def test_ring_channels_never_exceed_maxchannels():
    assert ring_channels(64, 50e9, 90) == 32 and ring_channels(64, 12.5e9, 80) == 32


def _fill(span: GroupSpan, f: Fabric, proto: str, monkeypatch) -> float:
    size = 50e6
    with_fill = collective_cost("broadcast", size, span, f, "ring", proto).time_s
    with monkeypatch.context() as m:
        m.setattr(scale_terms, "chain_fill_s", lambda *a, **k: 0.0)
        return with_fill - collective_cost("broadcast", size, span, f, "ring", proto).time_s


@pytest.mark.parametrize("proto", ["LL", "LL128", "Simple"])
def test_half_the_nics_half_the_channels_half_the_fill(proto, monkeypatch):
    """8 channels a node, not 16: each channel's step crosses its hop at twice the rate, so a
    1,024-rank broadcast's fill halves (the bytes at the NIC rate stay: ``inter`` is per GPU)."""
    span = GroupSpan(1024, 8)
    one, shared = _fill(span, _fabric(None), proto, monkeypatch), \
        _fill(span, _fabric(4), proto, monkeypatch)
    assert one > 0 and shared == pytest.approx(one / 2, rel=1e-9)


def test_groups_within_the_nic_count_and_other_collectives_are_unchanged(monkeypatch):
    """A group of one or four ranks a node reaches as many NICs as ranks either way; ring
    all-reduce / all-gather pay no fill, and their bytes are the node's NIC rate either way."""
    for span in (GroupSpan(512, 4), GroupSpan(128, 1)):
        assert _fill(span, _fabric(4), "LL", monkeypatch) == \
            _fill(span, _fabric(None), "LL", monkeypatch)
    for kind in ("all_reduce", "all_gather", "reduce_scatter"):
        for size in (1e5, 1e9):
            a = collective_cost(kind, size, GroupSpan(1024, 8), _fabric(None))
            b = collective_cost(kind, size, GroupSpan(1024, 8), _fabric(4))
            assert a == b


def test_one_node_keeps_nvlink_channels(monkeypatch):
    assert _fill(GroupSpan(8, 8), _fabric(4), "Simple", monkeypatch) == \
        _fill(GroupSpan(8, 8), _fabric(None), "Simple", monkeypatch)


def test_flow_fabric_builds_one_nic_for_two_gpus():
    """16 GPUs on 2 nodes: 8 NICs, each linked to its leaf at twice a GPU's share."""
    t = from_cluster(_cluster(num_gpus=16, gpus_per_nic=2))
    nics = {i for i, n in enumerate(t.nodes) if n.kind == "nic"}
    assert len(nics) == 8
    up = {link.bw_Bps for link in t.links if link.src in nics and
          t.nodes[link.dst].kind == "switch"}
    assert up == {2 * 6.25e9}


def test_flow_a_lone_rail_group_has_the_whole_nic():
    """One rank a node on rail 0 with the neighbouring GPU idle: the shared NIC carries it at
    twice a GPU's share; a whole-node ring, where both GPUs send, keeps each GPU's share."""
    times = {}
    for g in (1, 2):
        net = FlowNetwork.from_cluster(_cluster(gpus_per_nic=g, network_backend="flow"))
        times[g] = (net.collective_time("all_reduce", 1e9, [0, 8, 16, 24]),
                    net.collective_time("all_reduce", 1e9, list(range(32))))
    assert times[2][0] == pytest.approx(times[1][0] / 2, rel=0.01)
    assert times[2][1] == pytest.approx(times[1][1], rel=1e-9)
