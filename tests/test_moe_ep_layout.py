"""Where the expert-parallel group lies by Megatron-core release: core 0.9 carves it from the
data-parallel ranks of ``tp-cp-ep-dp-pp`` (stride TP x CP: with TP 4, CP 2 on 8-GPU nodes each
member in another node), core >= 0.10 gives the experts their own order (stride the expert TP:
4 nodes of 2). NeMo 24.09 ships core 0.9, 24.12 core 0.10 (profile ``moe_ep_stride_tp_cp``)."""

from __future__ import annotations

import pytest
from helpers import moe_layer_cfg

from trainsim.pricing import Pricer
from trainsim.workload.moe_dispatch import ep_stride


def _cfg(framework, version, cp=2):
    return moe_layer_cfg("alltoall", 8, framework, version, experts=8, topk=2, gpus=64,
                         tensor_model_parallel_size=4, context_parallel_size=cp,
                         expert_tensor_parallel_size=4, sequence_parallel=True)


@pytest.mark.parametrize(("framework", "version", "stride", "nodes"), [
    ("nemo", "24.09", 8, 8), ("nemo", "24.12", 4, 4), ("nemo", "25.04", 4, 4),
    ("megatron-core", "0.9", 8, 8), ("megatron-core", "0.10", 4, 4), (None, None, 4, 4)])
def test_the_expert_group_strides_by_release(framework, version, stride, nodes):
    cfg = _cfg(framework, version)
    assert ep_stride(cfg) == stride
    span = Pricer(cfg).spans["ep"]
    assert (span.size, span.nodes) == (8, nodes)


def test_core_09_layout_is_the_same_without_context_parallelism():
    """Without CP the two orders agree (stride TP = expert TP)."""
    assert ep_stride(_cfg("nemo", "24.09", cp=1)) == ep_stride(_cfg("nemo", "24.12", cp=1)) == 4


def test_one_rank_a_node_makes_the_exchange_slower():
    """Eight nodes of one rank each send 7/8 of the tokens over the network, one GPU a NIC
    (collectives.nccl ONE_RANK_PER_NODE_NET_SHARE): slower than four nodes of two."""
    old, new = Pricer(_cfg("nemo", "24.09")), Pricer(_cfg("nemo", "24.12"))
    size = 8 * 2**20
    assert old.net.collective("all_to_all", size, old.spans["ep"]).time_s > \
        new.net.collective("all_to_all", size, new.spans["ep"]).time_s
