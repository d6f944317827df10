"""What Megatron-core's ``--recompute-modules moe`` re-runs before an MoE layer's backward (issue 17).

``MoELayer.forward`` wraps its whole ``custom_forward`` (router, latent projection, dispatch with
its communication and host sync, experts, combine, shared experts and their sum) in
``te_checkpoint`` / ``tensor_parallel.checkpoint`` (NVIDIA/Megatron-LM core_r0.18.0 d0b3b775,
the Nemotron 3 rows' Megatron-Bridge v0.5.0 pin: moe_layer.py L642-703); only the pre-MLP norm
before it and the residual add after it lie outside. The time path's re-run must hold every op
the layer builder puts between the two, whatever the dispatcher, precision or model.
"""

from __future__ import annotations

import pytest

import trainsim
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Comm, Gemm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of


def _cfg(model, dispatcher="alltoall", tp=1, dtype="bf16", framework=None, modules=("moe",)):
    training = {"global_batch_size": 64, "seq_length": 4096, "dtype": dtype}
    if dtype == "fp8":
        training["fp8_recipe"] = "blockwise"
    if framework:
        training["framework"], training["framework_version"] = framework
    return trainsim.run_config_from_dict({
        "model": {"preset": model},
        "parallel": {"tensor_model_parallel_size": tp, "sequence_parallel": tp > 1,
                     "expert_model_parallel_size": 8, "recompute": "selective",
                     "recompute_modules": list(modules), "moe_token_dispatcher_type": dispatcher},
        "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def _moe_layer(cfg):
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe="E" if cfg.model.hybrid_layer_pattern else True)
    names = [op.name for op in fwd]
    start = max(i for i, n in enumerate(names) if n.split(".")[0] == "mlp_norm") + 1
    return fwd, fwd[start:names.index("mlp_bias_dropout_add")], sh


CASES = [
    ("qwen3-30b-a3b", "alltoall", 1, "bf16", None),
    ("deepseek-v3", "allgather", 2, "bf16", None),          # shared experts under TP + SP
    ("deepseek-v3", "deepep", 1, "fp8", ("megatron-core", None)),
    ("nemotron-3-nano-30b-a3b", "hybridep", 1, "fp8", ("megatron-bridge", "26.06")),
    ("nemotron-3-super-120b-a12b", "hybridep", 2, "fp8", ("megatron-bridge", "26.06")),  # latent
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-tp{c[2]}-{c[3]}")
def test_moe_reruns_every_op_between_the_pre_mlp_norm_and_the_residual_add(case):
    model, dispatcher, tp, dtype, framework = case
    cfg = _cfg(model, dispatcher, tp, dtype, framework)
    fwd, block, sh = _moe_layer(cfg)
    redo = [op.name.removeprefix("recompute.") for op in layer_recompute(cfg, sh, fwd)]
    assert redo == [op.name for op in block]


def test_the_nano_rerun_repeats_the_forced_balance_the_dispatch_and_its_sync():
    """Nemotron 3 Nano on H100 under its recipe's modules (moe, layernorm, core_attn, moe_act):
    the router's random logits (a forced-balance benchmark), HybridEP's routing-map gather,
    blocking token count and the dispatch / combine all-to-alls run again; the experts'
    activation three times in all (the outer re-run, then its own CheckpointWithoutOutput)."""
    cfg = _cfg("nemotron-3-nano-30b-a3b", "hybridep", dtype="fp8",
               framework=("megatron-bridge", "26.06"),
               modules=("moe", "layernorm", "core_attn", "moe_act"))
    fwd, block, sh = _moe_layer(cfg)
    redo = layer_recompute(cfg, sh, fwd)
    names = [op.name.removeprefix("recompute.") for op in redo]
    assert "router_random_logits" in names
    assert names.count("expert_act") == 2
    assert [op.name for op in redo if isinstance(op, Comm)] == \
        ["recompute." + op.name for op in block if isinstance(op, Comm)]
    assert any(getattr(op, "host_sync", False) for op in redo)
    assert names[0] == "mlp_norm"  # the layernorm module's pre-MLP norm, outside the MoE layer


def test_a_latent_moes_rerun_holds_its_two_projections():
    """A latent MoE (Nemotron 3 Super) re-runs ``fc1_latent_proj`` and ``fc2_latent_proj`` under
    ``moe`` (``preprocess`` / ``postprocess`` inside ``custom_forward``), the two GEMMs
    ``model.counts`` already adds to HFU (``2 h latent`` per token): time now re-runs them too."""
    cfg = _cfg("nemotron-3-super-120b-a12b", "hybridep", dtype="fp8",
               framework=("megatron-bridge", "26.06"))
    fwd, block, sh = _moe_layer(cfg)
    want = [op for op in block if isinstance(op, Gemm) and "latent" in op.name]
    got = [op for op in layer_recompute(cfg, sh, fwd) if isinstance(op, Gemm) and "latent" in op.name]
    assert len(want) == 2
    assert [op.flops for op in got] == [op.flops for op in want]
