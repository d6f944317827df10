"""An expert exchange hidden behind compute (``moe_overlap_ep_comm``) slows that compute by the
SMs its kernels hold: DeepEP's normal kernels 20 (Megatron-core ``moe_deepep_num_sms``),
HybridEP's 16 (``moe_hybridep_num_sms``), an NCCL all-to-all its p2p channels' blocks
(``pricing.EP_A2A_SMS``, NCCL's 32-channel p2p pool), more than a collective's ring
(``pricing.COMM_SMS``); DualPipe's pairs run their exchanges on SMs of their own."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg

from trainsim.config import RunConfig
from trainsim.pricing import COMM_SMS, EP, EP_A2A_SMS, Pricer
from trainsim.workload.moe_dispatch import EXCHANGE_SMS
from trainsim.workload.ops import Comm, Gemm


def _cfg(dispatcher: str, **parallel) -> RunConfig:
    return moe_layer_cfg(dispatcher, ep=32, experts=32, topk=4, gpus=32,
                         moe_overlap_ep_comm=True, **parallel)


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
    ("alltoall", {}, EP_A2A_SMS),
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
        assert sms != EP_A2A_SMS
        fused, comm = _exposed(Pricer(_cfg(dispatcher, **parallel)))
        assert comm == comm_nccl  # the same op, priced the same on the wire
        assert fused == pytest.approx(nccl * sms / EP_A2A_SMS)


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
    assert a < b  # DeepEP's 20 SMs, the all-to-all's 32: not the first price reused


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

    def bridge(version):
        return run_config_from_dict({
            "model": {"hidden_size": 1024, "num_layers": 1, "num_attention_heads": 8,
                      "vocab_size": 4096, "ffn_hidden_size": 512, "activation": "swiglu",
                      "num_experts": 32, "moe_router_topk": 4, "moe_ffn_hidden_size": 512},
            "parallel": {"ep": 8, "moe_token_dispatcher_type": "hybridep",
                         "moe_overlap_ep_comm": True},
            "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 1024,
                         "framework": "megatron-bridge", "framework_version": version},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    assert bridge("25.11").parallel.moe_hybridep_num_sms == 32
    assert bridge("26.02").parallel.moe_hybridep_num_sms == 32
    cfg = _cfg("hybridep")
    assert Pricer(cfg).sm_share["ep"] == EXCHANGE_SMS["hybridep"] / cfg.cluster.gpu.num_sms


def test_an_nccl_all_to_all_holds_more_sms_than_a_collective_ring():
    """NCCL runs the all-to-all's sends and receives on its p2p channel pool (32 on H100), a
    block per channel: more SMs than a ring collective's channels beside compute."""
    cfg = _cfg("alltoall")
    pricer = Pricer(cfg)
    assert EP_A2A_SMS == 32 > COMM_SMS
    assert pricer.sm_share["ep"] == pytest.approx(EP_A2A_SMS / cfg.cluster.gpu.num_sms)
    assert pricer.sm_share["ep"] > pricer.sm_share["dp"]
