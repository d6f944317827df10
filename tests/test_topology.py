"""Topology builders, presets and ECMP routing."""

from __future__ import annotations

import pytest

from trainsim.errors import CatalogError, ConfigError
from trainsim.network.topology import (
    Link,
    Node,
    NVLINK_GEN_BW_Bps,
    Router,
    Topology,
    from_cluster,
    load_topology,
    nvl_domain,
    nvswitch_node,
    pcie_node,
    rail_fat_tree,
    spine_leaf,
    topology_from_dict,
    topology_names,
    torus,
)


def names(topo, path):
    return [topo.nodes[topo.links[lk].dst].name for lk in path]


@pytest.mark.parametrize("gen, bw", [(3, 300e9), (4, 450e9), (5, 900e9)])
def test_nvswitch_node_gives_each_gpu_its_nvlink_generation(gen, bw):
    """An NVSwitch node links every GPU to the switch at its generation's bandwidth."""
    topo = nvswitch_node(8, nvlink_gen=gen)
    assert topo.num_gpus == 8 and topo.num_nodes == 1
    path = Router(topo).path(0, 5)
    assert len(path) == 2 and all(topo.links[lk].bw_Bps == bw for lk in path)
    assert NVLINK_GEN_BW_Bps[gen] == bw


def test_pcie_node_routes_through_the_root_complex_across_switches():
    """GPUs on one PCIe switch talk through it; others climb to the root complex."""
    topo = pcie_node(8, pcie_gen=4, gpus_per_switch=2)
    r = Router(topo)
    assert len(r.path(0, 1)) == 2
    assert names(topo, r.path(0, 7))[1] == "n0.root"


def test_rail_fat_tree_same_rail_stays_under_its_leaf():
    """Same-rail traffic between nodes under one leaf never reaches a spine; cross-rail
    traffic climbs to one; intra-node traffic uses NVLink only."""
    topo = rail_fat_tree(nodes=4, gpus_per_node=8, nodes_per_leaf=4)
    r = Router(topo)
    same_rail = names(topo, r.path(3, 8 + 3))
    assert not any("spine" in x for x in same_rail) and "pod0.leaf0.rail3" in same_rail
    assert any("spine" in x for x in names(topo, r.path(3, 8 + 4)))
    assert names(topo, r.path(3, 4)) == ["n0.nvswitch", "n0.gpu4"]


def test_rail_fat_tree_counts_and_oversubscription():
    """One leaf per rail and group of nodes; uplink capacity = downlink / ratio."""
    topo = rail_fat_tree(nodes=8, gpus_per_node=4, nodes_per_leaf=4, spines=2,
                         oversubscription=4, nic_bw_Bps=50e9)
    leaves = [i for i, n in enumerate(topo.nodes) if ".leaf" in n.name]
    spines = [i for i, n in enumerate(topo.nodes) if "spine" in n.name]
    assert len(leaves) == 2 * 4 and len(spines) == 2
    for leaf in leaves:
        down = sum(lk.bw_Bps for lk in topo.links if lk.src == leaf and topo.nodes[lk.dst].kind == "nic")
        up = sum(lk.bw_Bps for lk in topo.links if lk.src == leaf and lk.dst in spines)
        assert down == 4 * 50e9 and up == pytest.approx(down / 4)


def test_isolated_rail_planes_need_pxn_for_cross_rail_traffic():
    """With per-rail spine planes, cross-rail traffic has no route: a clear ConfigError."""
    topo = rail_fat_tree(nodes=8, gpus_per_node=2, nodes_per_leaf=4, planes="isolated")
    r = Router(topo)
    assert any("plane1.spine" in x for x in names(topo, r.path(1, 2 * 7 + 1)))
    with pytest.raises(ConfigError, match="PXN"):
        r.path(0, 2 * 7 + 1)


def test_three_tier_fat_tree_goes_through_a_core_between_pods():
    """3 tiers: pods of nodes under core switches; crossing pods climbs to a core."""
    topo = rail_fat_tree(nodes=8, gpus_per_node=2, tiers=3, nodes_per_leaf=2, nodes_per_pod=4)
    r = Router(topo)
    assert any("core" in x for x in names(topo, r.path(0, 2 * 6)))
    assert not any("core" in x for x in names(topo, r.path(0, 2 * 3)))


def test_spine_leaf_puts_a_node_on_one_leaf():
    """Top-of-rack: any rail of two nodes under one leaf meet in that leaf."""
    topo = spine_leaf(nodes=4, gpus_per_node=4, nodes_per_leaf=2)
    r = Router(topo)
    assert not any("spine" in x for x in names(topo, r.path(0, 4 + 3)))
    assert any("spine" in x for x in names(topo, r.path(0, 8)))


def test_nvl72_domain_is_one_nvlink_hop_and_racks_meet_on_rails():
    """Any two GPUs of a rack talk over its NVLink switch; racks meet through NICs."""
    topo = nvl_domain(domains=2, gpus_per_domain=72, gpus_per_host=4)
    assert topo.num_gpus == 144 and topo.gpus_per_node == 72
    r = Router(topo)
    assert names(topo, r.path(0, 71)) == ["d0.nvswitch", "d0.t17.gpu3"]
    assert len(r.path(1, 72 + 1)) == 4  # gpu-nic-leaf-nic-gpu on rail 1


def test_torus_routes_minimal_hops_with_wraparound():
    """4x4x4 torus: hop count is the wrap-around Manhattan distance (+2 router hops)."""
    topo = torus((4, 4, 4), (100e9, 50e9, 25e9))
    assert topo.num_gpus == 64
    r = Router(topo)
    assert len(r.path(0, 3)) == 2 + 1  # x: 0 -> 3 wraps in one hop
    assert len(r.path(0, 2 + 4 * 2 + 16 * 2)) == 2 + 6
    link = r.path(0, 4)[1]
    assert topo.links[link].bw_Bps == 50e9  # the y dimension's bandwidth


def test_torus_switch_and_fully_connected_dimensions():
    """ASTRA-sim dimension kinds: a switch per line, or all-to-all links."""
    topo = torus((4, 2), (100e9, 40e9), kinds=("fully_connected", "switch"))
    r = Router(topo)
    assert len(r.path(0, 3)) == 3 and topo.links[r.path(0, 3)[1]].bw_Bps == pytest.approx(100e9 / 3)
    assert len(r.path(0, 4)) == 4


def test_ecmp_is_seed_reproducible_and_spreads_connections():
    """The same (src, dst, key, seed) always picks the same spine; different connections
    spread over several spines."""
    topo = rail_fat_tree(nodes=8, gpus_per_node=1, nodes_per_leaf=4, spines=4)
    a, b = Router(topo, seed=7), Router(topo, seed=7)
    assert all(a.path(0, 5, k) == b.path(0, 5, k) for k in range(20))
    spines = {names(topo, a.path(0, 5, k))[2] for k in range(20)}
    assert len(spines) > 1


def test_bad_topologies_and_ranks_are_config_errors():
    """Non-positive bandwidth, unknown generations, GPUs outside the topology."""
    with pytest.raises(ConfigError, match="bandwidth"):
        Topology("t", (Node("a", "gpu"), Node("b", "gpu")), (Link(0, 1, 0.0),), (0, 1))
    with pytest.raises(ConfigError, match="nvlink_gen"):
        nvswitch_node(nvlink_gen=9)
    with pytest.raises(ConfigError, match="not in topology"):
        Router(nvswitch_node(4)).path(0, 4)
    with pytest.raises(ConfigError, match="tiers"):
        rail_fat_tree(tiers=4)
    with pytest.raises(ConfigError, match="kind"):
        torus((2, 2), (1e9, 1e9), kinds=("ring", "hypercube"))


def test_presets_load_with_si_units_and_overrides():
    """The three presets load; GB/s and Gbit/s keys become B/s; keys can be overridden."""
    assert {"dgx-a100-superpod", "dgx-h100-superpod", "rail-optimized"} <= set(topology_names())
    h100 = load_topology("dgx-h100-superpod", nodes=4)
    assert h100.num_gpus == 32 and h100.gpus_per_node == 8
    nic = [lk for lk in h100.links if h100.nodes[lk.src].kind == "nic"
           and h100.nodes[lk.dst].kind == "switch"]
    assert {lk.bw_Bps for lk in nic} == {50e9}
    a100 = load_topology("dgx-a100-superpod")
    assert a100.num_gpus == 1120


def test_from_cluster_builds_the_implied_fat_tree():
    """A ClusterConfig becomes a rail-optimized fat-tree with its NIC and NVLink rates,
    scaled by the given efficiencies."""
    from trainsim.catalog import gpu
    from trainsim.config import ClusterConfig

    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=32, gpus_per_node=8,
                            nic_bw_Bps=50e9)
    topo = from_cluster(cluster, nic_efficiency=0.5)
    assert topo.num_gpus == 32 and topo.gpus_per_node == 8
    nic = {lk.bw_Bps for lk in topo.links if topo.nodes[lk.src].kind == "nic"
           and topo.nodes[lk.dst].kind == "switch"}
    assert nic == {25e9}


def test_unknown_presets_and_keys_are_errors():
    """Unknown preset names and builder keys name the choices."""
    with pytest.raises(CatalogError, match="known"):
        load_topology("dgx-z900")
    with pytest.raises(ConfigError, match="unknown keys"):
        topology_from_dict({"builder": "rail_fat_tree", "nodez": 3})
    with pytest.raises(ConfigError, match="builder"):
        topology_from_dict({"builder": "hypercube"})
