"""Pipeline sends: a pipeline whose stages sit closer than a node apart but spans nodes has hops
over the NIC, and the slowest hop paces every send (``pipeline.pipeline_send_s``)."""

from __future__ import annotations

from trainsim.catalog import run_config_from_dict
from trainsim.pipeline import pipeline_send_s
from trainsim.pricing import Pricer

MB = 10.5e6  # one 1,024 x 5,120 fp16 activation
NIC = 200e9 / 8  # DGX A100: 200 Gb/s per GPU
NVLINK = 300e9


def cfg(gpus: int, tp: int = 1, pp: int | None = None):
    return run_config_from_dict({
        "model": {"name": "toy", "hidden_size": 1024, "num_layers": 32,
                  "num_attention_heads": 8, "vocab_size": 32000},
        "parallel": {"tp": tp, "pp": pp or gpus},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 1024},
        "cluster": {"node": "dgx-a100", "num_gpus": gpus},
    })


def send_s(c) -> float:
    return pipeline_send_s(c, Pricer(c), MB)


def test_pipeline_across_nodes_sends_at_the_nic_rate():
    """16 stages on two DGX A100 (stride 1): the hop 7 -> 8 crosses the nodes over a 200 Gb/s
    NIC, so every send takes at least the NIC's time; inside one node all hops are NVLink."""
    assert send_s(cfg(16)) >= MB / NIC
    assert send_s(cfg(8)) < MB / NVLINK * 2


def test_hops_all_on_the_network_keep_their_pricing():
    """tp 8: every stage is its own node, so each hop was already a network transfer."""
    c = cfg(32, tp=8, pp=4)
    assert send_s(c) >= MB / NIC
    assert send_s(c) < MB / NIC * 1.2
