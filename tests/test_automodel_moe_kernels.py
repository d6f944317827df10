"""NeMo Automodel's own MoE models (DeepSeek-V3, Qwen3-MoE, gpt-oss at 89e3a9fd, the commit of
its published MoE rows) as plain PyTorch modules: their profile lines and what each changes."""

from __future__ import annotations

import pytest

from tests.helpers import mirror_source
from trainsim.catalog import gpu
from trainsim.catalog.frameworks import framework_profile
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.schedule import torch_warmup
from trainsim.workload.shard import separate_projections, shard_of

VERSIONS = {"automodel": "0.1", "megatron-bridge": "26.04"}
LINES = ("torch_interleaved_warmup", "separate_qkv", "moe_act_compiled", "moe_bias_loop",
         "mla_eager_rope")


def _cfg(framework: str, mla: bool = False, clamp: float | None = None, pp: int = 1,
         tokens: int = 1024, dispatcher: str = "deepep") -> RunConfig:
    shape = {"q_lora_rank": 256, "kv_lora_rank": 128, "qk_head_dim": 64,
             "qk_pos_emb_head_dim": 32, "v_head_dim": 64} if mla else {}
    model = ModelConfig(name="m", hidden_size=1024, num_layers=4, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=8,
                        moe_router_topk=2, moe_ffn_hidden_size=512, activation_clamp=clamp,
                        add_bias_linear=clamp is not None, normalization="rmsnorm",
                        position_embedding="rope", **shape)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=pp, gpus_per_node=max(pp, 1))
    training = TrainingConfig(global_batch_size=8, micro_batch_size=1, seq_length=tokens,
                              framework=framework, framework_version=VERSIONS[framework])
    parallel = ParallelConfig(pipeline_model_parallel_size=pp,
                              virtual_pipeline_model_parallel_size=2 if pp > 1 else None,
                              moe_token_dispatcher_type=dispatcher)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def _ops(cfg: RunConfig) -> list:
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=True)
    return fwd + backward_of(fwd, sh)


def _named(ops: list, name: str):
    return next((op for op in ops if op.name == name), None)


@pytest.mark.parametrize("line", LINES)
def test_the_profile_carries_each_line(line):
    assert framework_profile("automodel", "0.1").features[line] is True


def test_mla_rope_and_its_copies_run_eagerly():
    """MLA.forward: complex RoPE on q_pe, torch.cat for Q and for K, V copied contiguous by
    TE: per token and head 20 r + 8 (n + r) + 4 v bytes in 9 kernels (Megatron's fused MLA
    RoPE: one kernel)."""
    rope = _named(_ops(_cfg("automodel", mla=True)), "rope")
    # 1024 tokens x 8 heads = 8192; rope r = 32, nope n = 64, v = 64:
    # forward 20*32 + 8*(64+32) + 4*64 = 640 + 768 + 256 = 1664 B -> 8192 * 1664 = 13 631 488;
    # backward 20*32 + 4*(64+32) + 4*(64+64) + 2*32 = 640 + 384 + 512 + 64 = 1600 B
    # -> 8192 * 1600 = 13 107 200.
    assert rope.impl == "eager" and rope.kernels == 9
    assert rope.bytes == 13_631_488
    assert rope.bwd_bytes == 13_107_200
    fused = _named(_ops(_cfg("megatron-bridge", mla=True)), "rope")
    assert fused.kernels == 1 and fused.bytes < rope.bytes / 4


def test_gpt_oss_experts_compile_the_clamp_and_loop_over_both_biases():
    """quick_geglu_deepep is @torch.compile'd (no eager clamp); gmm adds no bias, so
    _apply_bias adds fc1's (4 passes forward, 3 backward, a kernel per expert and a cat) and
    fc2's (Megatron's loop) expert by expert. Megatron-Bridge: the eager clamp, fc2's loop only."""
    cfg = _cfg("automodel", clamp=7.0)
    ops = _ops(cfg)
    assert _named(ops, "expert_act_clamp") is None
    fc1 = _named(ops, "expert_fc1_bias")
    # 1024 tokens x top-2 = 2048 rows on one rank (all 8 experts local), fc1 output 2 x 512
    # wide: 2048 * 1024 = 2 097 152 elements of 2 bytes; forward 4 passes (8 B per element)
    # = 16 777 216 B, backward 3 (6 B) = 12 582 912 B.
    assert fc1.bytes == 16_777_216
    assert fc1.bwd_bytes == 12_582_912
    assert fc1.kernels == 8 + 1
    assert _named(ops, "expert_fc1_bias.bwd") is not None
    assert _named(ops, "expert_fc2_bias") is not None
    names = [op.name for op in ops]
    assert names.index("expert_fc1") < names.index("expert_fc1_bias") < names.index("expert_act")
    bridge = _ops(_cfg("megatron-bridge", clamp=7.0))
    assert _named(bridge, "expert_act_clamp") is not None
    assert _named(bridge, "expert_fc1_bias") is None
    assert _named(bridge, "expert_fc2_bias") is not None


def test_the_all_gather_experts_add_their_biases_inside_the_compiled_activation():
    """GroupedExperts (the all-gather path) adds both biases inside its @torch.compile'd
    quick_geglu with the matmuls: no per-expert bias loop, and no eager clamp either."""
    ops = _ops(_cfg("automodel", clamp=7.0, dispatcher="allgather"))
    assert _named(ops, "expert_fc1_bias") is None
    assert _named(ops, "expert_fc2_bias") is None
    assert _named(ops, "expert_act_clamp") is None


def test_attention_projects_q_k_and_v_separately():
    cfg = _cfg("automodel")
    assert separate_projections(cfg)
    names = [op.name for op in _ops(cfg)]
    assert {"q_proj", "k_proj", "v_proj"} <= set(names) and "qkv_proj" not in names


def test_pipelines_interleave_with_torch_warmup():
    assert torch_warmup(_cfg("automodel", pp=2))


@pytest.mark.parametrize("path,needles", [
    ("nemo_automodel/components/moe/layers.py",
     ("@torch.compile\ndef quick_geglu_deepep", "self._apply_bias(output1, gate_and_up_bias",
      "self._apply_bias(output2, down_bias, tokens_per_expert, permuted_probs)",
      "ops.gmm(", "@torch.compile\ndef quick_geglu(", "@torch.compile\ndef swiglu(",
      "gate_and_up_out = gate_and_up_out + gate_up_proj_bias")),
    ("nemo_automodel/components/models/deepseek_v3/layers.py",
     ("q_pe = apply_rotary_emb(q_pe, freqs_cis)", "q = torch.cat([q_nope, q_pe], dim=-1)",
      "k = torch.cat([k_nope, k_pe], dim=-1)")),
    ("nemo_automodel/components/models/qwen3_moe/layers.py",
     ("self.q_proj = ", "self.k_proj = ", "self.v_proj = ")),
    ("nemo_automodel/components/distributed/pipelining/functional.py",
     ("get_schedule_class",)),
])
def test_the_lines_are_the_ones_in_its_source(path, needles):
    """Where the Automodel mirror is at hand, the code each line cites is read at 89e3a9fd
    (skipped without the mirror)."""
    text = mirror_source("NVIDIA-NeMo+Automodel", "89e3a9fd", path)
    for needle in needles:
        assert needle in text, needle
