"""Pipeline sends: a pipeline whose stages sit closer than a node apart but spans nodes has hops
over the NIC, and the slowest hop paces every send (``pipeline.pipeline_send_s``)."""

from __future__ import annotations

from trainsim.catalog import run_config_from_dict
from trainsim.collectives.p2p_channels import P2P_CHANNEL_Bps, batched_p2p_channels, batched_p2p_s
from trainsim.pipeline import pipeline_send_s
from trainsim.pricing import Pricer

MB = 10.5e6  # one 1,024 x 5,120 fp16 activation
NIC = 200e9 / 8  # DGX A100: 200 Gb/s per GPU
NVLINK = 300e9


def cfg(gpus: int, tp: int = 1, pp: int | None = None, framework: str | None = None,
        overlap_p2p_comm: bool = False, version: str = "2023-11", vpp: int = 1):
    fw = {"framework": framework, "framework_version": version} if framework else {}
    return run_config_from_dict({
        "model": {"name": "toy", "hidden_size": 1024, "num_layers": 32,
                  "num_attention_heads": 8, "vocab_size": 32000},
        "parallel": {"tp": tp, "pp": pp or gpus, "vpp": vpp,
                     "overlap_p2p_comm": overlap_p2p_comm},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 1024, **fw},
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


def test_nccl_spreads_a_grouped_send_over_its_share_of_channels():
    """NCCL gives one send of a group p2pnChannels / nranks channels (32 / 8 = 4), more only for
    chunks above 16 MiB a channel, at most 4 x 32 / nranks; a two-rank communicator gets 16."""
    assert batched_p2p_channels(28e6, 8) == 4
    assert batched_p2p_channels(28e6, 2) == 16
    assert batched_p2p_channels(100e6, 8) == 8
    assert batched_p2p_channels(1e9, 8) == 16
    assert batched_p2p_channels(1e6, 32) == 1
    assert batched_p2p_s(28e6, 8) == 28e6 / (4 * P2P_CHANNEL_Bps)


def test_megatron_batched_exchange_in_one_node_runs_on_few_channels():
    """Megatron-LM's batch_isend_irecv on an 8-stage group in one node: 4 channels, so a send
    takes at least its bytes over 4 channel rates, about 4x the NVLink price; a lone isend
    (overlap_p2p_comm) or a framework that does not batch keeps the NVLink price."""
    batched = send_s(cfg(8, framework="megatron-lm"))
    assert batched >= MB / (4 * P2P_CHANNEL_Bps)
    assert batched < MB / (4 * P2P_CHANNEL_Bps) * 1.05
    nvlink = send_s(cfg(8))
    assert nvlink < batched / 3
    # Megatron overlaps sends only when interleaved: vpp 2, each tensor sent alone
    assert send_s(cfg(8, framework="megatron-lm", overlap_p2p_comm=True, vpp=2)) == nvlink
    # without interleaving Megatron-LM turns the overlap off: the batched exchange again
    assert send_s(cfg(8, framework="megatron-lm", overlap_p2p_comm=True)) == batched


def test_batched_exchange_across_nodes_keeps_the_nic_price():
    """16 stages over two nodes: the NIC hop paces the pipeline as before."""
    assert send_s(cfg(16, framework="megatron-lm")) == send_s(cfg(16))


def test_megatron_2021_batches_on_two_rank_communicators():
    """Before PyTorch 1.12 (pytorch/pytorch#74701) batch_isend_irecv ran each pair on its own
    two-rank communicator, so a Megatron-LM run of 2021 gets no p2pnChannels / pp cap; from the
    2022-07 entry (torch 1.12.0, 2022-06-28) it does."""
    def at(version):
        return cfg(8, framework="megatron-lm", version=version)
    nvlink = send_s(cfg(8))
    assert send_s(at("2021-04")) == nvlink
    assert send_s(at("2022-06")) == nvlink
    assert send_s(at("2022-07")) >= MB / (4 * P2P_CHANNEL_Bps)


def cp_cfg(cp: int, gpus: int = 8, framework: str | None = None):
    training = {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 8192}
    if framework:  # one whose CP is Transformer Engine's ring
        training |= {"framework": framework, "framework_version": "0.12"}
    return run_config_from_dict({
        "model": {"name": "toy", "hidden_size": 1024, "num_layers": 32,
                  "num_attention_heads": 8, "vocab_size": 32000},
        "parallel": {"cp": cp},
        "training": training,
        "cluster": {"node": "dgx-a100", "num_gpus": gpus},
    })


def test_cp_ring_send_in_a_node_runs_on_its_share_of_channels():
    """A 1 GB send on an 8-rank CP communicator in one node (torch's ring attention passing
    fp32 dK/dV on) gets 16 NCCL channels: its bytes over 16 channel rates, slower than the
    NVLink price; on a 2-rank communicator 32 channels outrun the links, so the links bind."""
    from trainsim.workload.ops import Comm
    size = 1.07e9
    eight = Pricer(cp_cfg(8))
    t8 = eight.comm_time(Comm("ring.dkv_send", "send_recv", size, "cp"))
    assert abs(t8 - size / (16 * P2P_CHANNEL_Bps)) < 1e-9
    two = Pricer(cp_cfg(2))
    t2 = two.comm_time(Comm("ring.dkv_send", "send_recv", size, "cp"))
    assert t2 == two.net.collective("send_recv", size, two.spans["cp"]).time_s
    assert t2 < t8


def test_transformer_engine_batches_its_cp_sends_only_at_cp_2():
    """Transformer Engine's p2p CP groups each step's send and receive on cp_group at CP 2;
    above, a lone isend/irecv runs on a two-rank communicator of its own (forward and
    backward alike)."""
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Comm
    from trainsim.workload.shard import shard_of
    for cp, ranks in ((2, 0), (4, 2), (8, 2)):
        c = cp_cfg(cp, framework="megatron-core")
        sh = shard_of(c)
        fwd = layer_forward(c, sh)
        sends = [op for op in fwd + backward_of(fwd, sh)
                 if isinstance(op, Comm) and op.name.startswith("attn_core.te_ring")]
        # cp-1 hops forward, cp backward (context_parallel.te_ring_*)
        assert len(sends) == 2 * cp - 1 and all(op.p2p_ranks == ranks for op in sends), (cp, sends)


def test_a_lone_cp_send_gets_a_two_rank_communicators_channels():
    """A 1 GB send on its own two-rank communicator gets 32 channels, not the 16 a send on the
    8-rank CP communicator gets: the links bind, as at CP 2."""
    from trainsim.workload.ops import Comm
    size = 1.07e9
    eight = Pricer(cp_cfg(8))
    lone = eight.comm_time(Comm("cp_kv_exchange", "send_recv", size, "cp", p2p_ranks=2))
    grouped = eight.comm_time(Comm("cp_kv_exchange", "send_recv", size, "cp"))
    assert lone == eight.net.collective("send_recv", size, eight.spans["cp"]).time_s
    assert lone < grouped
