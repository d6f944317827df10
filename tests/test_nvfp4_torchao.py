"""TorchAO's NVFP4 linears under torchtitan's per-op selective checkpointing (issue 17): no
``aten.mm`` runs and nothing the linear computes is on the policy's save list, so an NVFP4
block keeps only its input and the attention's output and log-sum-exp, and re-runs every
matmul before its backward (``workload.recompute.per_op_sac_saves_no_gemm``; pytorch/ao@cb76f29
nvfp4_linear.py, torchtitan@b5bcd76c6 distributed/activation_checkpoint.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import validated

from trainsim.catalog import run_config_from_dict
from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.model.counts import hardware_flops_per_iteration, model_flops_per_token
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Gemm
from trainsim.workload.recompute import (
    core_attn_rerun,
    layer_recompute,
    per_op_sac_layout,
    per_op_sac_saves_no_gemm,
)
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30


def _run(preset="llama3-8b", dtype="fp8", recipe="nvfp4", framework="torchtitan",
         micro=32, tail=5, compile_=True, recompute="selective"):
    """torchtitan's NVFP4 study shape: 4 GB200, FSDP 4, one micro-batch of ``micro`` x 2048."""
    training = {"global_batch_size": 4 * micro, "micro_batch_size": micro, "seq_length": 2048,
                "dtype": dtype, "compile": compile_, "framework": framework,
                "framework_version": "2026-08" if framework == "torchtitan" else None}
    if dtype == "fp8":
        training.update(fp8_recipe=recipe, num_layers_at_end_in_bf16=tail)
    return run_config_from_dict({
        "model": {"preset": preset},
        "parallel": {"recompute": recompute, "zero_stage": 3},
        "training": training,
        "cluster": {"gpu": "gb200", "num_gpus": 4, "gpus_per_node": 4}})


def _no_mm_bytes(cfg) -> float:
    """Per-op SAC bytes of a block that keeps no matmul output: its 16-bit input, the
    attention's 16-bit output and fp32 log-sum-exp per head (tp 1)."""
    m, t = cfg.model, cfg.training
    tokens = t.micro_batch_size * t.seq_length
    return tokens * (2 * m.hidden_size + 2 * m.q_size + 4 * m.num_attention_heads)


def test_only_torchtitan_s_nvfp4_under_per_op_checkpointing_saves_no_matmul():
    assert per_op_sac_saves_no_gemm(_run())
    assert not per_op_sac_saves_no_gemm(_run(recipe="mxfp8", tail=0))
    assert not per_op_sac_saves_no_gemm(_run(dtype="bf16"))
    assert not per_op_sac_saves_no_gemm(_run(recompute="full"))
    assert not per_op_sac_saves_no_gemm(_run(framework="megatron-core"))


@pytest.mark.parametrize("compile_", [True, False])
def test_an_nvfp4_block_keeps_its_input_and_the_attention_output_only(compile_):
    """No wq, wv, w1 output (nor, eager, w2's): what is left is the block input and the
    attention's output and log-sum-exp; a bf16 tail layer (the bf16 config) keeps them all."""
    cfg = _run(compile_=compile_)
    assert activation_bytes_per_layer(cfg) == pytest.approx(_no_mm_bytes(cfg))
    bf16 = replace(cfg, training=replace(cfg.training, dtype="bf16"))
    m, tokens = cfg.model, 32 * 2048
    mm_outs = 2 * (m.q_size + m.kv_size + m.ffn_size) + (0 if compile_ else 2 * m.hidden_size)
    assert activation_bytes_per_layer(bf16) == pytest.approx(_no_mm_bytes(cfg) + tokens * mm_outs)


def test_an_nvfp4_block_reruns_every_matmul_and_hfu_counts_them():
    """Nothing the NVFP4 linears compute is kept, so the recompute runs all seven GEMMs of the
    Llama block (bf16: wk, wo, w3); HFU's numerator counts the same re-runs, tail layers at the
    every-other rule."""
    cfg = _run()
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    gemms = [op.name for op in fwd if isinstance(op, Gemm)]
    redo = [op for op in layer_recompute(cfg, sh, fwd) if isinstance(op, Gemm)]
    assert len(gemms) == 7 and [op.name for op in redo] == ["recompute." + n for n in gemms]
    bf16 = replace(cfg, training=replace(cfg.training, dtype="bf16"))
    sh16 = shard_of(bf16)
    redo16 = [op for op in layer_recompute(bf16, sh16, layer_forward(bf16, sh16))
              if isinstance(op, Gemm)]
    assert len(redo16) == 3
    rerun = 27 * sum(op.flops for op in redo) + 5 * sum(op.flops for op in redo16)
    model = model_flops_per_token(cfg.model, 2048) * cfg.tokens_per_iteration
    hfu = hardware_flops_per_iteration(cfg, core_attn_rerun(cfg, fused=True),
                                       per_op_sac_layout(cfg)) - model
    assert hfu == pytest.approx(rerun * cfg.num_microbatches * 4, rel=1e-9)


def test_the_memory_nvfp4_saves_matches_torchtitan_s_qwen3_table():
    """torchtitan nvfp4.md @ b5bcd76c6 lines 105-107 (Qwen3 8B, local batch 16 x 2048, FSDP 4,
    SelectiveAC and compile: qwen3_8b_first_85_pct_layers_nvfp4 on sft_qwen3_8b_math; layers
    0-29 NVFP4): the BF16 run reserves 112.88 GiB, the NVFP4 run 78.63. A table left out of the
    check files (varlen attention); the difference cancels what the two runs share: 30 layers'
    matmul outputs, 31.9 GiB here against 34.25 published."""
    nvfp4 = _run("qwen3-8b", micro=16, tail=6)
    bf16 = replace(nvfp4, training=replace(nvfp4.training, dtype="bf16"))
    saved = 30 * (activation_bytes_per_layer(bf16) - activation_bytes_per_layer(nvfp4)) / GiB
    assert saved == pytest.approx(112.88 - 78.63, rel=0.10)


def test_torchtitan_s_llama_nvfp4_row_memory_within_five_percent():
    """training_torchtitan_gb200's NVFP4 row (110.95 GiB reserved): +59.6 % before TorchAO's
    saved tensors were read, +1.8 % after (2026-11-28, nvfp453)."""
    _, res = validated(ROOT / "benchmarks" / "training_torchtitan_gb200.csv")
    row = next(r for r in res if r.id.endswith("nvfp4"))
    assert abs(row.predicted_memory_gib / row.measured_memory_gib - 1) <= 0.05, row
