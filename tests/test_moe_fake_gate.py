"""NeMo Automodel's FakeBalancedGate (its published MoE benchmarks): token t's experts are
t*k ... t*k+k-1 modulo E, so DeepEP sends a token to the few ranks those contiguous experts
live on, not to the ~N(1-(1-1/N)^k) ranks of a learned router."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.validate import row_settings
from trainsim.workload.moe_block import moe_wire_copies
from trainsim.workload.moe_dispatch import fake_balanced_destinations


def _cfg(experts, k, ep, gpus_per_node=8, etp=1):
    return SimpleNamespace(model=SimpleNamespace(num_experts=experts, moe_router_topk=k),
                           parallel=SimpleNamespace(ep=ep, etp=etp),
                           cluster=SimpleNamespace(gpus_per_node=gpus_per_node,
                                                   gpus_per_domain=gpus_per_node))


def test_contiguous_experts_meet_the_ranks_they_span():
    assert fake_balanced_destinations(_cfg(128, 8, 8)) == 1.0  # Qwen3-30B-A3B, EP 8: one rank
    assert fake_balanced_destinations(_cfg(16, 4, 8)) == 2.0  # 2 experts per rank: always 2
    # 4 experts per rank, k = 3: starts 0, 3, 6, ... mod 16 span one or two blocks, half each
    assert fake_balanced_destinations(_cfg(16, 3, 4)) == pytest.approx(1.5)
    # DeepSeek-V3, EP 64 over 8-GPU nodes: 32 experts a node, 8 contiguous ones: one node
    assert fake_balanced_destinations(_cfg(256, 8, 64)) == 1.0


def _qwen3(options, dispatcher="deepep"):
    row = {"id": "x", "model": "qwen3-30b-a3b", "gpu": "h100-sxm-80gb", "num_gpus": "8",
           "gpus_per_node": "8", "tp": "1", "pp": "1", "ep": "8", "zero_stage": "3",
           "global_batch_size": "64", "micro_batch_size": "1", "seq_length": "4096",
           "vpp": "1", "recompute": "full", "sequence_parallel": "0",
           "moe_dispatcher": dispatcher, "options": options,
           "framework": "automodel", "framework_version": "0.1", "measured_iteration_s": "1"}
    raw, _ = row_settings.training_base(row)
    return run_config_from_dict(raw)


def test_the_row_option_switches_the_router_and_only_deepep_dispatch_shrinks():
    learned, fake = _qwen3(""), _qwen3("fake_balanced_gate")
    assert learned.model.moe_router == "learned"
    assert fake.model.moe_router == "fake_balanced"
    # one copy per destination rank inside the domain (DeepEP is_token_in_rank): the 8 experts
    # of a learned top-8 meet 8 (1 - (7/8)^8) of the 8 ranks on average
    assert moe_wire_copies(learned) == pytest.approx(8 * (1 - (7 / 8) ** 8))
    assert moe_wire_copies(fake) == 1.0
    # Megatron's all-to-all sends a copy per routed expert whatever the gate
    assert moe_wire_copies(_qwen3("fake_balanced_gate", "alltoall")) == 8


def test_node_limited_routing_only_shrinks_a_dispatch_that_dedups_per_node():
    """DeepSeek-V3's node-limited routing (at most 4 nodes per token) lets a per-node dispatch
    (DeepEP) send a token once per node; Megatron's all-to-all dispatcher permutes one copy per
    routed expert (token_dispatcher.py MoEAlltoAllTokenDispatcher), so it still sends k."""
    from trainsim.catalog import load_run_config

    path = Path(__file__).resolve().parents[1] / "examples" / "deepseek-v3-h800.yaml"
    deepep = load_run_config(path)
    assert deepep.model.moe_router_group_topk == 4 and deepep.parallel.ep == 64
    assert moe_wire_copies(deepep) == 4
    a2a = load_run_config(path, ["parallel.moe_token_dispatcher_type=alltoall"])
    assert moe_wire_copies(a2a) == 8


def _gate_cfg(router):
    return run_config_from_dict({
        "model": {"preset": "qwen3-30b-a3b", "num_layers": 2, "moe_router": router},
        "parallel": {"tp": 1, "pp": 1, "ep": 8, "moe_token_dispatcher_type": "deepep"},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096,
                     "dtype": "bf16", "framework": "automodel", "framework_version": "0.1"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


def test_the_fake_gate_runs_no_gating_gemm_top_k_or_backward():
    """FakeBalancedGate.forward (nemo_automodel/components/moe/layers.py @ 89e3a9fd): ones / k,
    arange % E and a cast, from constants: 5 kernels, nothing in the backward; a learned
    router keeps its GEMM and Megatron-core's top-k and loss kernels."""
    from trainsim.workload.moe_block import MOE_KERNELS
    from trainsim.workload.moe_router import FAKE_GATE_KERNELS, router_ops
    from trainsim.workload.ops import Gemm

    tokens = 4096
    (op,) = router_ops(_gate_cfg("fake_balanced"), tokens, MOE_KERNELS["router"])
    assert not isinstance(op, Gemm)
    assert (op.kernels, op.bwd_kernels, op.bwd_bytes) == (FAKE_GATE_KERNELS, 0, 0.0)
    assert FAKE_GATE_KERNELS == 5
    # fp32 ones (write, read, write), int64 indices (write, read, write), cast (read 4, write 2)
    assert op.bytes == tokens * 8 * (3 * 4 + 3 * 8 + 4 + 2)
    learned = router_ops(_gate_cfg("learned"), tokens, MOE_KERNELS["router"])
    assert any(isinstance(o, Gemm) and o.name == "router" for o in learned)
    assert sum(o.kernels for o in learned if not isinstance(o, Gemm)) >= MOE_KERNELS["router"][0]
