"""cluster.topology (issue 18): a config picks rail-optimized, spine-leaf, nvl72 or torus; the
flow backend builds that network, the analytical one sees its tiers, and the default predicts
what it did before the field existed."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from trainsim.catalog import run_config_from_dict
from trainsim.cli import main
from trainsim.errors import ConfigError
from trainsim.network import network_for
from trainsim.simulator import simulate

GiB = 2**30


def raw(gpus: int = 32, gpu: str = "h100-sxm-80gb", **cluster) -> dict:
    """A small dense model, pure data parallel, so gradients cross every node."""
    return {"model": {"hidden_size": 2048, "num_layers": 4, "num_attention_heads": 16,
                      "vocab_size": 32000},
            "parallel": {"overlap_grad_reduce": False},
            "training": {"global_batch_size": gpus, "seq_length": 1024},
            "cluster": {"gpu": gpu, "num_gpus": gpus, "compute_db": None, **cluster}}


def cluster_of(**kw):
    return run_config_from_dict(raw(**kw)).cluster


def iteration_s(**kw) -> float:
    return simulate(run_config_from_dict(raw(**kw))).iteration_time_s


def all_to_all_s(cluster, size=256 * 2**20) -> float:
    net = network_for(cluster)
    return net.collective("all_to_all", size, net.span(cluster.num_gpus, 1)).time_s


def flow_topology(**kw):
    return network_for(cluster_of(network_backend="flow", **kw)).topology


def test_default_is_rail_optimized_and_unchanged():
    """No topology field: the rail-optimized fat-tree (NIC i of each node on the rail-i leaf),
    and the same prediction as naming it."""
    c = cluster_of()
    assert c.topology == "rail-optimized"
    topo = flow_topology()
    leaves = {topo.nodes[lk.dst].name for lk in topo.links
              if topo.nodes[lk.src].name == "n1.nic3" and topo.nodes[lk.dst].kind == "switch"}
    assert leaves == {"pod0.leaf0.rail3"}
    assert iteration_s() == iteration_s(topology="rail-optimized")


def test_spine_leaf_puts_a_node_on_one_leaf_and_oversubscription_slows_it():
    """spine-leaf: all NICs of a node on one top-of-rack leaf. Oversubscribed leaves (4:1, two
    nodes per leaf) slow a cross-leaf all-to-all and the iteration, in both backends; a
    non-blocking spine-leaf prices like the rail-optimized default analytically."""
    topo = flow_topology(topology="spine-leaf")
    leaves = {topo.nodes[lk.dst].name for lk in topo.links
              if topo.nodes[lk.src].name.startswith("n1.nic")
              and topo.nodes[lk.dst].kind == "switch"}
    assert len(leaves) == 1
    assert iteration_s(topology="spine-leaf") == iteration_s()
    oversub = {"topology": "spine-leaf", "oversubscription": 4, "nodes_per_leaf": 2}
    for backend in ("analytical", "flow"):
        fast = cluster_of(topology="spine-leaf", nodes_per_leaf=2, network_backend=backend)
        slow = cluster_of(network_backend=backend, **oversub)
        assert all_to_all_s(slow) > 1.5 * all_to_all_s(fast), backend
        assert iteration_s(network_backend=backend, **oversub) > \
            iteration_s(network_backend=backend, topology="spine-leaf", nodes_per_leaf=2)


def test_nvl72_is_a_72_gpu_nvlink_domain():
    """nvl72 makes the NVLink domain 72 GPUs (trays of 4 with a NIC each); on 144 GB200s a
    data-parallel iteration is faster than on 8-GPU NVLink nodes, and an all-to-all over the
    domain never leaves NVLink."""
    c = cluster_of(gpus=144, gpu="gb200", topology="nvl72")
    assert c.gpus_per_node == 72 and c.num_nodes == 2
    topo = flow_topology(gpus=144, gpu="gb200", topology="nvl72")
    assert topo.num_gpus == 144 and topo.gpus_per_node == 72
    assert sum(n.kind == "nic" for n in topo.nodes) == 144
    assert len({n.host for n in topo.nodes if n.kind == "gpu"}) == 36  # trays
    assert iteration_s(gpus=144, gpu="gb200", topology="nvl72") < \
        iteration_s(gpus=144, gpu="gb200", gpus_per_node=8)
    rack = cluster_of(gpus=72, gpu="gb200", topology="nvl72")
    eight = cluster_of(gpus=72, gpu="gb200", gpus_per_node=8)
    assert all_to_all_s(rack) < all_to_all_s(eight) / 2
    with pytest.raises(ConfigError, match="gpus_per_node must be 72, not 8"):
        cluster_of(gpus=144, gpu="gb200", topology="nvl72", gpus_per_node=8)


def test_torus_links_each_gpu_to_its_counterparts_in_neighbouring_nodes():
    """torus: no NICs or leaves; GPU i of a node has ring links to GPU i of its neighbours
    along each dimension (8 nodes: a 2x4 grid). Multi-hop routes and shared ring links make a
    flow all-to-all slower than on the non-blocking fat-tree; the analytical backend, which
    only sees the per-GPU rate, prices it like the fat-tree."""
    c = cluster_of(gpus=64, topology="torus", network_backend="flow")
    assert c.torus_shape == (2, 4)
    topo = network_for(c).topology
    assert not any(n.kind == "nic" for n in topo.nodes)
    router = {n.name: i for i, n in enumerate(topo.nodes)}
    peers = {topo.nodes[lk.dst].name for lk in topo.links if lk.src == router["router3"]
             and topo.nodes[lk.dst].kind == "switch" and topo.nodes[lk.dst].host >= 0}
    assert peers == {"router11", "router19", "router51"}  # GPU 3 of nodes 1, 2 and 6
    rail = cluster_of(gpus=64, network_backend="flow")
    assert all_to_all_s(c) > 1.1 * all_to_all_s(rail)
    assert iteration_s(gpus=64, topology="torus", network_backend="flow") != \
        iteration_s(gpus=64, network_backend="flow")
    assert iteration_s(gpus=64, topology="torus") == iteration_s(gpus=64)
    assert cluster_of(topology="torus", torus_dims=[4]).torus_shape == (4,)
    with pytest.raises(ConfigError, match="multiply to the number of nodes"):
        cluster_of(topology="torus", torus_dims=[2, 3])
    with pytest.raises(ConfigError, match="needs cluster.topology=torus"):
        cluster_of(torus_dims=[4])


@pytest.mark.parametrize("name, canonical", [("Spine_Leaf", "spine-leaf"),
                                             ("leaf-spine", "spine-leaf"),
                                             ("rail-optimised", "rail-optimized"),
                                             ("NVL72", "nvl72"), ("torus", "torus")])
def test_names_users_write_are_accepted(name, canonical):
    gpus = 72 if canonical == "nvl72" else 32
    assert cluster_of(gpus=gpus, topology=name).topology == canonical


def test_a_bad_name_is_one_line_naming_the_choices():
    with pytest.raises(ConfigError) as exc:
        cluster_of(topology="spine")
    assert str(exc.value) == ("cluster.topology='spine' is unknown (did you mean 'spine-leaf'?); "
                              "known: rail-optimized, spine-leaf, nvl72, torus")
    result = CliRunner().invoke(main, ["collective", "--topology", "dragonfly"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [  # robust62: named as the option typed
        ("error: --topology='dragonfly' is unknown; known: rail-optimized, spine-leaf, "
         "nvl72, torus")]


def test_oversubscription_is_checked():
    with pytest.raises(ConfigError, match="oversubscription=0.5 must be >= 1"):
        cluster_of(oversubscription=0.5)
    with pytest.raises(ConfigError, match="a torus"):
        cluster_of(topology="torus", oversubscription=2)
