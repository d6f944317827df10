"""An expert exchange hidden behind compute (``moe_overlap_ep_comm``) slows that compute by the
SMs its kernels hold: DeepEP's normal kernels 20 (Megatron-core ``moe_deepep_num_sms``),
HybridEP's 16 (``moe_hybridep_num_sms``), an NCCL all-to-all its p2p channels' blocks
(``collectives.ep_kernels.ep_a2a_sms``: the whole 32-channel p2p pool inside an NVLink node, a few channels per
node across nodes), against a collective's ring (``pricing.COMM_SMS``); DualPipe's pairs run
their exchanges on SMs of their own."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg

from trainsim.collectives.p2p_channels import all_to_all_channels, net_count_by_bw
from trainsim.config import RunConfig
from trainsim.errors import ConfigError
from trainsim.pricing import COMM_SMS, EP, Pricer
from trainsim.workload.moe_dispatch import EXCHANGE_SMS
from trainsim.workload.ops import Comm, Gemm


def _cfg(dispatcher: str, **parallel) -> RunConfig:
    return moe_layer_cfg(dispatcher, ep=32, experts=32, topk=4, gpus=32,
                         moe_overlap_ep_comm=True, **parallel)


A2A_SMS_4_NODES = 8
"""EP 32 on four nodes of 8 H100 (``_cfg``): 8 channels, derived by hand in
``test_an_all_to_all_across_nodes_holds_its_nodes_channels``."""


# a long GEMM and a short exchange: the exchange hides whole, leaving only the SMs it held
OPS = [Gemm("expert_fc1", 65536, 8192, 8192, "bf16"),
       Comm("moe.dispatch_all_to_all", "all_to_all", 4e6, "ep")]


def _exposed(pricer: Pricer) -> tuple[float, float]:
    """(exposed exchange seconds, the exchange's own seconds)."""
    exposed = sum(t for cat, t, _ in pricer.price(OPS).segments if cat == EP)
    return exposed, pricer.comm_time(OPS[1])


def test_gemm_outlasts_the_exchange():
    pricer = Pricer(_cfg("alltoall"))
    gemm = next(t for cat, t, _ in pricer.price(OPS).segments if cat == "compute")
    assert gemm > 2 * pricer.comm_time(OPS[1]) > 0


@pytest.mark.parametrize("dispatcher,parallel,sms", [
    ("alltoall", {}, A2A_SMS_4_NODES),
    ("deepep", {}, EXCHANGE_SMS["deepep"]),
    ("hybridep", {}, EXCHANGE_SMS["hybridep"]),
    ("hybridep", {"moe_hybridep_num_sms": 32}, 32),  # Megatron-Bridge's perf recipes
    ("deepep", {"moe_deepep_num_sms": 24}, 24)])  # Megatron-core --moe-deepep-num-sms
def test_hidden_exchange_costs_the_sms_its_kernels_hold(dispatcher, parallel, sms):
    cfg = _cfg(dispatcher, **parallel)
    exposed, comm = _exposed(Pricer(cfg))
    assert exposed == pytest.approx(comm * sms / cfg.cluster.gpu.num_sms)


def test_a_fused_exchange_holding_other_sms_than_a_collective_costs_otherwise():
    """Where the dispatcher's SMs differ from an NCCL collective's, so does the cost: the
    parametrized case above cannot tell Megatron-Bridge's HybridEP 32 from the all-to-all's."""
    nccl, comm_nccl = _exposed(Pricer(_cfg("alltoall")))
    for dispatcher, parallel, sms in (("deepep", {}, EXCHANGE_SMS["deepep"]),
                                      ("hybridep", {"moe_hybridep_num_sms": 16}, 16)):
        assert sms != A2A_SMS_4_NODES
        fused, comm = _exposed(Pricer(_cfg(dispatcher, **parallel)))
        assert comm == comm_nccl  # the same op, priced the same on the wire
        assert fused == pytest.approx(nccl * sms / A2A_SMS_4_NODES)


def test_an_override_of_the_share_wins():
    """DualPipe's pair pricing (pipeline.py) gives its exchanges SMs of their own."""
    exposed, _ = _exposed(Pricer(_cfg("deepep"), sm_share={"dp": 0.0, "ep": 0.0}))
    assert exposed == 0.0


def test_the_share_is_part_of_the_shared_price_signature():
    from trainsim.pricing import shared

    with shared("test_moe_exchange_sms"):
        a, _ = _exposed(Pricer(_cfg("deepep")))
        cfg = _cfg("alltoall")
        b, _ = _exposed(Pricer(replace(cfg, cluster=_cfg("deepep").cluster)))
    assert a > b  # DeepEP's 20 SMs, the all-to-all's 8 on four nodes: not the first price reused


def _exposed_of(pricer: Pricer, comm: Comm) -> tuple[float, float]:
    """(exposed seconds of ``comm`` hidden behind the long GEMM, its own seconds)."""
    exposed = sum(t for cat, t, _ in pricer.price([OPS[0], comm]).segments if cat == EP)
    return exposed, pricer.comm_time(comm)


@pytest.mark.parametrize("dispatcher", ["deepep", "hybridep"])
def test_nccl_collectives_beside_a_fused_exchange_take_a_collectives_sms(dispatcher):
    """Only the dispatcher's own exchange runs on its kernels' SMs; the expert-TP all-gather
    and reduce-scatter (and the routing-map / token-count all-gathers) are NCCL collectives."""
    pricer = Pricer(_cfg(dispatcher))
    sms = pricer.cfg.cluster.gpu.num_sms
    for comm in (Comm("moe.etp_all_gather", "all_gather", 4e6, "etp"),
                 Comm("moe.routing_map_all_gather", "all_gather", 4e6, "ep")):
        exposed, t = _exposed_of(pricer, comm)
        assert exposed == pytest.approx(t * COMM_SMS / sms)
    exposed, t = _exposed_of(pricer, OPS[1])
    assert exposed == pytest.approx(t * EXCHANGE_SMS[dispatcher] / sms)


def test_hybridep_sms_follow_the_run_and_its_profile():
    """Megatron-Bridge's perf overrides set moe_hybridep_num_sms = 32 from v0.2.0 (25.11,
    scripts/performance/utils/helpers.py set_common_perf_overrides; utils/overrides.py from
    v0.3.0); 25.09 (v0.1.0rc3) has no HybridEP and leaves Megatron-core's default."""
    from trainsim.catalog import run_config_from_dict

    def bridge(version, gpu_name="h100-sxm-80gb"):
        return run_config_from_dict({
            "model": {"hidden_size": 1024, "num_layers": 1, "num_attention_heads": 8,
                      "vocab_size": 4096, "ffn_hidden_size": 512, "activation": "swiglu",
                      "num_experts": 32, "moe_router_topk": 4, "moe_ffn_hidden_size": 512},
            "parallel": {"ep": 8, "moe_token_dispatcher_type": "hybridep",
                         "moe_overlap_ep_comm": True},
            "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 1024,
                         "framework": "megatron-bridge", "framework_version": version},
            "cluster": {"gpu": gpu_name, "num_gpus": 8, "gpus_per_node": 8}})
    # v0.2.0 accepts HybridEP on GB200 / GB300 only (flex_dispatcher_backend.py)
    assert bridge("25.11", "gb200").parallel.moe_hybridep_num_sms == 32
    assert bridge("26.02").parallel.moe_hybridep_num_sms == 32
    cfg = _cfg("hybridep")
    assert Pricer(cfg).sm_share["ep"] == EXCHANGE_SMS["hybridep"] / cfg.cluster.gpu.num_sms


def test_an_nccl_all_to_all_inside_one_node_holds_the_whole_p2p_pool():
    """EP 8 on one node of 8 H100 (NVIDIA/nccl v2.27.3-1). src/graph/paths.cc
    ncclTopoComputeP2pChannels L851-852: p2pnChannels 32, p2pnChannelsPerPeer 32 (an NVSwitch
    peer allows 2 channels per link, L800: the log's "32 p2p channels per peer"); src/enqueue.cc
    L1045: nChannelsMin = 32 halved while nChannelsMin*8 > 32: 4 parts per peer (megabytes
    each: L900-904 keep them); src/include/channel.h ncclP2pChannelBaseForRound: one node, base =
    round 0..7; src/include/device.h ncclP2pChannelForPart L269-273: channel = base +
    reverseBits(part, 5), parts 0..3 -> 0, 16, 8, 24: {0..7} + {0, 8, 16, 24} = all 32
    channels, 32 blocks, more than a collective's ring."""
    assert all_to_all_channels(1, 8) == all_to_all_channels(1, 8, 4e6) == 32 > COMM_SMS
    cfg = moe_layer_cfg("alltoall", ep=8, experts=32, topk=4, gpus=8, moe_overlap_ep_comm=True)
    pricer = Pricer(cfg)
    assert pricer.sm_share["ep"] == pytest.approx(32 / cfg.cluster.gpu.num_sms)
    assert pricer.sm_share["ep"] > pricer.sm_share["dp"]


def test_an_all_to_all_across_nodes_holds_its_nodes_channels():
    """Across nodes NCCL's channel base moves with the peer's node, not with the peer
    (NVIDIA/nccl v2.27.3-1 src/include/channel.h ncclP2pChannelBaseForRound: base =
    nodeDelta*divUp(8, 8) + localDelta/8 = nodeDelta for 8 GPUs a node), and a network peer caps
    every peer at 2 channels (src/graph/paths.cc ncclTopoGetNchannels L809-818: 2, halved while
    2*nRanks > 4*32; the two-node log's "2 p2p channels per peer"); parts 0, 1 -> reverseBits
    0, 16 (device.h L269-273). EP 16 on 2 x 8: bases {0, 1} -> {0, 16, 1, 17}: 4 channels.
    v2.21.5-1 counts the same: channel.h ncclChannelComputeBase ``nNodes > 1 ? delta +
    step/p2pGroupSize : step`` (p2pGroupSize 8), then p2pChannels[base] (bit mirror: 0, 16)
    + chunk % 2 (enqueue.cc L523): {0, 1, 16, 17}. Four nodes: bases 0..3 -> 8; eight: 16;
    sixteen (128 ranks: 2*128 > 4*32 halves the per-peer count to 1): bases 0..15 -> 16."""
    assert all_to_all_channels(2, 8) == all_to_all_channels(2, 8, 8e6) == 4
    assert all_to_all_channels(4, 8) == A2A_SMS_4_NODES == 8
    assert all_to_all_channels(8, 8) == 16
    assert all_to_all_channels(16, 8) == 16
    cfg = _cfg("alltoall")
    assert Pricer(cfg).sm_share["ep"] == pytest.approx(8 / cfg.cluster.gpu.num_sms)


def test_small_sends_take_fewer_channels():
    """A part is at least step/8 in one node (512 KiB NVLink step: 64 KiB) and step/2 across
    nodes (128 KiB network step: 64 KiB), enqueue.cc v2.27.3-1 L898-900: 10 kB per peer is one
    part, so one node of 8 runs on bases 0..7 alone, two nodes on bases 0 and 1."""
    assert all_to_all_channels(1, 8, 1e4) == 8
    assert all_to_all_channels(2, 8, 1e4) == 2


def test_a_pcie_node_runs_few_p2p_channels():
    """PCIe peers allow 2 channels each (ncclTopoGetNchannels L801-803) out of a pool of 4
    (``p2p_channels.P2P_CHANNELS_PCIE``): eight PCIe GPUs' all-to-all holds 4 SMs, not 32."""
    assert all_to_all_channels(1, 8, link="pcie") == 4
    cfg = moe_layer_cfg("alltoall", ep=8, experts=32, topk=4, gpus=8, moe_overlap_ep_comm=True)
    pcie = replace(cfg, cluster=replace(cfg.cluster, gpu=replace(cfg.cluster.gpu,
                                                                  nvlink_bw_Bps=64e9)))
    assert Pricer(pcie).sm_share["ep"] == pytest.approx(4 / cfg.cluster.gpu.num_sms)


def test_an_all_to_all_across_nodes_of_more_than_8_ranks_follows_nccl_2_27():
    """2 nodes of 16 (32 ranks): a network peer allows 2 channels (paths.cc v2.27.3-1
    ncclTopoGetNchannels L809-818: 2*32 <= 4*32 keeps 2), so 2 parts a peer -> reverseBits 0, 16
    (device.h L269-273). v2.27.3-1 channel.h ncclP2pChannelBaseForRound L19-29: base =
    nodeDelta*divUp(16, 8) + localDelta/8 -> {0, 1} on node 0 and {2, 3} on node 1: {0..3} +
    {0, 16} = 8 channels. (v2.21.5-1 channel.h L31 ``delta + step/8`` gives bases {0, 1, 2},
    p2pChannels[] {0, 16, 8} + chunk {0, 1}: 6 channels; the function follows v2.27.)"""
    assert all_to_all_channels(2, 16) == 8
    # 2 NVL72 domains (144 ranks): 2*144 > 4*32 halves to 1 part a peer; bases nodeDelta*9 +
    # localDelta/8 = 0..8 and 9..17: 18 channels (v2.21.5-1: delta + step/8 = 0..9, 10).
    assert all_to_all_channels(2, 72) == 18


def test_a_gpu_needing_several_nics_keeps_a_channel_per_nic_for_each_network_peer():
    """getLocalNetCountByBw (src/graph/topo.cc v2.27.3-1 L1464-1485) adds the GPU's nearest
    NICs until they carry its CPU link: 4 NICs of 12.5 GB/s (100 Gbit/s) behind a 48 GB/s link
    -> 4 (50 >= 48); 2 of 25 GB/s -> 2 (both, 50 >= 48); 1 of 50 GB/s -> 1; an unstated link: 1.
    ncclTopoGetNchannels (paths.cc L809-818) keeps max(netCountByBw, nChannelsMax): 16 nodes
    of 8 (128 ranks) halve nChannelsMax to 1 (2*128 > 4*32), but a GPU needing 2 NICs keeps 2
    a peer: bases 0..15 + reverseBits {0, 16} = 32 channels, where one NIC gives 16."""
    assert net_count_by_bw(4, 12.5e9, 48e9) == 4
    assert net_count_by_bw(2, 25e9, 48e9) == 2
    assert net_count_by_bw(1, 50e9, 48e9) == 1
    assert net_count_by_bw(4, 12.5e9, None) == 1
    assert all_to_all_channels(16, 8) == 16
    assert all_to_all_channels(16, 8, net_count=2) == 32
    # 3 NICs round up to a power of 2 (paths.cc L851 pow2Up): 4 parts a peer on 2 x 8
    assert all_to_all_channels(2, 8, net_count=3) == 2 * 4
    assert all_to_all_channels(1, 8, net_count=4) == 32  # one node: no network peer


def test_the_pricer_reads_the_nics_a_gpu_needs_from_the_cluster():
    """EP 32 on 4 nodes of 8 (``_cfg``): 2 channels a network peer (2*32 <= 4*32), 8 in all;
    4 NICs of 100 Gbit/s behind a PCIe Gen5 link (64 GB/s; all 4 needed, 50 < 64): 4 parts a
    peer, bases 0..3 + reverseBits {0, 16, 8, 24} = 16 channels."""
    cfg = _cfg("alltoall")
    gpu = replace(cfg.cluster.gpu, host_link_bw_Bps=64e9)
    four = replace(cfg, cluster=replace(cfg.cluster, gpu=gpu, nics_per_gpu=4))
    assert Pricer(replace(cfg, cluster=replace(cfg.cluster, gpu=gpu))).sm_share["ep"] == \
        pytest.approx(A2A_SMS_4_NODES / gpu.num_sms)
    assert Pricer(four).sm_share["ep"] == pytest.approx(16 / gpu.num_sms)
    with pytest.raises(ConfigError, match="nics_per_gpu=0 must be a positive"):
        replace(cfg.cluster, nics_per_gpu=0)


def _net_count_loop(nics, nic_bw, link):
    """getLocalNetCountByBw's loop as written (topo.cc v2.27.3-1 L1479-1481)."""
    count, total = 0, 0.0
    while count < nics and total < link:
        total += nic_bw
        count += 1
    return count


def test_the_nics_a_gpu_needs_are_counted_in_closed_form_as_nccls_loop_counts_them():
    """min(nics, ceil(link / nic_bw)) is the loop's count (at least 1) on whole-GB/s rates,
    and a billion NICs take no time (the loop took 87 s); beyond 64 NICs a GPU is refused."""
    import time
    for nics in (1, 2, 3, 4, 8):
        for nic_gbs in (6.25, 12.5, 25, 50, 100):
            for link_gbs in (16, 32, 48, 50, 64, 100, 450):
                assert net_count_by_bw(nics, nic_gbs * 1e9, link_gbs * 1e9) == \
                    max(1, _net_count_loop(nics, nic_gbs * 1e9, link_gbs * 1e9))
    start = time.perf_counter()
    assert net_count_by_bw(10**9, 1.0, 450e9) == 10**9
    assert time.perf_counter() - start < 0.1
    cfg = _cfg("alltoall")
    gpu = replace(cfg.cluster.gpu, host_link_bw_Bps=450e9)
    assert replace(cfg.cluster, gpu=gpu, nics_per_gpu=64).nics_per_gpu == 64
    with pytest.raises(ConfigError, match=r"^cluster.nics_per_gpu=1000000000 is out of range"):
        replace(cfg.cluster, nics_per_gpu=10**9)


def test_several_nics_on_a_gpu_without_a_host_link_are_a_warning():
    """NCCL reads a GPU's bandwidth only from its direct link to a CPU node (topo.cc
    v2.27.3-1 L1470-1475); a GPU behind a PCIe switch (H100 SXM: no host link stated) counts
    one NIC, so nics_per_gpu=4 there changes nothing and says so; with a link it is quiet."""
    import warnings

    from trainsim.errors import TrainsimWarning

    cfg = _cfg("alltoall")
    assert cfg.cluster.gpu.host_link_bw_Bps is None
    with pytest.warns(TrainsimWarning, match=r"^cluster.nics_per_gpu=4 changes nothing"):
        four = replace(cfg.cluster, nics_per_gpu=4)
    assert Pricer(replace(cfg, cluster=four)).sm_share["ep"] == \
        Pricer(cfg).sm_share["ep"]
    gpu = replace(cfg.cluster.gpu, host_link_bw_Bps=64e9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replace(cfg.cluster, gpu=gpu, nics_per_gpu=4)
        replace(cfg.cluster, nics_per_gpu=1)
