"""Megatron-core fuses RoPE only for plain RoPE positions: a YaRN-scaled model (gpt-oss) runs
its unfused rotate-half function, twice (Q and K), in Megatron-Bridge."""

from __future__ import annotations

import json

import pytest

from trainsim.catalog import gpu, model_dict, model_from_hf_config
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.elementwise import IMPLEMENTATIONS, backward_bytes
from trainsim.workload.layers import layer_forward
from trainsim.workload.shard import shard_of


def _rope(scaling: str | None, framework: str | None = "megatron-bridge"):
    model = ModelConfig(name="m", hidden_size=1024, num_layers=1, num_attention_heads=16,
                        num_kv_heads=4, ffn_hidden_size=2048, activation="swiglu",
                        normalization="rmsnorm", position_embedding="rope", rope_scaling=scaling)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=1, gpus_per_node=1)
    training = TrainingConfig(global_batch_size=1, micro_batch_size=1, seq_length=1024,
                              framework=framework,
                              framework_version={"megatron-bridge": "26.04",
                                                 "torchtitan": "2025-06"}.get(framework))
    cfg = RunConfig(model=model, parallel=ParallelConfig(), training=training, cluster=cluster)
    return next(op for op in layer_forward(cfg, shard_of(cfg)) if op.name == "rope")


def test_yarn_rope_is_unfused_in_bridge():
    plain, yarn = _rope(None), _rope("yarn")
    assert plain.impl == "fused" and yarn.impl == "unfused"
    assert yarn.bytes == 6 * plain.bytes  # 12 element passes of 2 bytes against 2
    assert yarn.kernels == 26
    assert backward_bytes(yarn) == (yarn.bytes * 10 / 12, 10)


@pytest.mark.parametrize("framework", [None, "torchtitan"])
def test_frameworks_without_the_rule_keep_the_fused_kernel(framework):
    assert _rope("yarn", framework).impl == "fused"


def test_gpt_oss_is_yarn(tmp_path):
    assert model_dict("gpt-oss-120b")["rope_scaling"] == "yarn"
    path = tmp_path / "config.json"
    cfg = {"hidden_size": 2880, "num_hidden_layers": 2, "num_attention_heads": 64,
           "vocab_size": 1000, "hidden_act": "silu", "rope_scaling": {"rope_type": "yarn"}}
    path.write_text(json.dumps(cfg))
    assert model_from_hf_config(path).rope_scaling == "yarn"
    path.write_text(json.dumps({**cfg, "rope_scaling": None}))
    assert model_from_hf_config(path).rope_scaling is None
    assert IMPLEMENTATIONS[("rope", "unfused")][1] == 26
