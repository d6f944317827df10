"""gpt-oss clamps its experts' gated inputs before the activation; Megatron-core does it eagerly
(chunk, two clamps, a concatenation) outside its fused quick-GEGLU."""

from __future__ import annotations

import json

from trainsim.catalog import gpu, model_dict, model_from_hf_config
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.layers import backward_of
from trainsim.workload.moe_block import moe_block
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.recompute import RECOMPUTED_OPS
from trainsim.workload.shard import shard_of

H, F, TOPK, SEQ = 1024, 512, 2, 1024


def _ops(clamp: float | None) -> list:
    model = ModelConfig(name="m", hidden_size=H, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=F, activation="swiglu", num_experts=8,
                        moe_router_topk=TOPK, moe_ffn_hidden_size=F, activation_clamp=clamp)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=1, gpus_per_node=1)
    training = TrainingConfig(global_batch_size=1, micro_batch_size=1, seq_length=SEQ)
    cfg = RunConfig(model=model, parallel=ParallelConfig(), training=training, cluster=cluster)
    sh = shard_of(cfg)
    ops: list = []
    moe_block(ops, cfg, sh)
    return ops + backward_of(ops, sh)


def test_clamp_runs_between_fc1_and_the_activation_with_its_bytes():
    ops = _ops(7.0)
    names = [op.name for op in ops]
    assert names.index("expert_fc1") < names.index("expert_act_clamp") < names.index("expert_act")
    fwd = ops[names.index("expert_act_clamp")]
    bwd = ops[names.index("expert_act_clamp.bwd")]
    elements = SEQ * TOPK * F  # every routed token copy, one half of fc1's output
    assert fwd.bytes == 8 * elements * ACT and fwd.kernels == 3
    assert bwd.bytes == 10 * elements * ACT and bwd.kernels == 3


def test_no_clamp_without_a_limit():
    assert not any(op.name.startswith("expert_act_clamp") for op in _ops(None))


def test_gpt_oss_presets_and_hf_configs_carry_the_limit(tmp_path):
    assert model_dict("gpt-oss-120b")["activation_clamp"] == 7.0
    assert model_dict("gpt-oss-20b")["activation_clamp"] == 7.0
    assert model_dict("qwen3-30b-a3b").get("activation_clamp") is None
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 2880, "num_hidden_layers": 2,
                                "num_attention_heads": 64, "vocab_size": 1000,
                                "hidden_act": "silu", "swiglu_limit": 7.0}))
    assert model_from_hf_config(path).activation_clamp == 7.0


def test_moe_act_recompute_reruns_the_clamp():
    assert "expert_act_clamp" in RECOMPUTED_OPS["moe_act"]
