"""torchtitan's tensor parallelism is DTensor's: PrepareModuleInput redistributes the
sequence-sharded input Shard(1) -> Replicate (an all-gather) and the matmul saves the gathered
tensor it read, so the backward reduce-scatters the input gradient and gathers nothing again
(parallelize_llama.py apply_tp @ 258f6082 .. 820504e2). Megatron-LM saves only its shard and
re-gathers it under the dgrad (megatron/core/tensor_parallel/layers.py @ core_v0.12.0
``LinearWithGradAccumulationAndAsyncCommunication.backward``, all_gather_buffer)."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

H, T, TP = 4096, 8192, 8


def _bwd(framework: str, dtype: str) -> list[str]:
    model = ModelConfig(name="m", hidden_size=H, num_layers=8, num_attention_heads=32,
                        num_kv_heads=8, ffn_hidden_size=14336, activation="swiglu",
                        normalization="rmsnorm", position_embedding="rope", vocab_size=32768)
    training = TrainingConfig(global_batch_size=8, micro_batch_size=1, seq_length=T,
                              dtype=dtype, fp8_recipe="current", framework=framework,
                              framework_version="2025-06" if framework == "torchtitan" else None)
    cfg = RunConfig(model=model, training=training,
                    parallel=ParallelConfig(tensor_model_parallel_size=TP, sequence_parallel=True),
                    cluster=ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=8, gpus_per_node=8))
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    ops = backward_of(fwd, sh) + head_backward(cfg, sh, head_forward(cfg, sh))
    return [op.name for op in ops]


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_torchtitan_backward_reduce_scatters_without_re_gathering(dtype):
    names = _bwd("torchtitan", dtype)
    assert not [n for n in names if "regather" in n]
    assert {"attn.all_gather.bwd", "mlp.all_gather.bwd"} <= set(names)  # the reduce-scatters


def test_megatron_re_gathers_its_saved_shard():
    names = _bwd("megatron-lm", "bf16")
    assert {"attn.all_gather.bwd_regather", "mlp.all_gather.bwd_regather",
            "head.all_gather.bwd_regather"} <= set(names)
