"""The llm-c framework profile (karpathy/llm.c; 61st session, llmc61): the rows of
benchmarks/training_llmc.csv name ``llm.c``, which now reads as this profile and its mechanisms
(the fused classifier, fused LayerNorm, bias epilogues with separate bias-gradient kernels, no
dropout, ZeRO-1 reduce-scatter / all-gather, the per-layer asynchronous reduction from 8cba9ba),
each cited in src/trainsim/catalog/frameworks/llm-c.yaml."""

from __future__ import annotations

from pathlib import Path

from helpers import training_rows, validated

from trainsim.catalog.frameworks import canonical_framework, framework_profile
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "training_llmc.csv"


def _row(row_id: str) -> dict[str, str]:
    return next(r for r in training_rows(PATH) if r["id"] == row_id)


def test_the_rows_spelling_names_the_profile():
    """The rows write ``llm.c`` (the repository's name); the profile answers to it and to
    ``llmc`` (on main before llmc61 neither named a profile)."""
    assert {r["framework"] for r in training_rows(PATH)} == {"llm.c"}
    assert canonical_framework("llm.c") == canonical_framework("LLMC") == "llm-c"


def test_profile_selects_llmc_kernels():
    """train_gpt2.cu @ a0d5dbb: fused_classifier (one read-twice, write-once pass over the bf16
    logits), fused residual + LayerNorm, its own CUDA kernels (no eager PyTorch modules), no
    dropout, cuDNN attention, ZeRO-1 by reduce-scatter and all-gather of bf16 gradients and
    parameters, the bias in cuBLASLt's epilogue and its gradient in a kernel per linear."""
    p = framework_profile("llm.c", "2024-05-30")
    d, f = p.defaults, p.features
    assert (d["cross_entropy"], d["modules"], d["norm"], d["attention"]) == (
        "flash_attn", "fused", "fused", "cudnn")
    assert (d["attention_dropout"], d["hidden_dropout"]) == (0.0, 0.0)
    assert (d["zero1_grad_reduce"], d["zero1_param_sync"]) == ("reduce_scatter", "all_gather")
    assert d["grad_reduce_dtype"]["bf16"] == "bf16"
    assert list(f["linear_bias_kernels"]) == []
    assert sorted(f["linear_bias_grad_kernels"]) == ["fc1", "fc2", "proj", "qkv"]


def test_gradient_reduction_overlaps_from_8cba9ba():
    """Before 8cba9ba (2024-06-09) one reduce-scatter follows the whole backward on the compute
    stream; from it each layer's gradients go to the NCCL stream as its backward ends."""
    assert framework_profile("llm.c", "2024-05-30").defaults["overlap_grad_reduce"] is False
    late = framework_profile("llm.c", "2024-06-12")
    assert late.defaults["overlap_grad_reduce"] is True
    assert "dp_overlap" in late.defaults["run_options"]
    for row_id, overlaps in (("llmc-gpt2-124m-a100-8", False), ("llmc-gpt2-774m-a100-8", True)):
        row = _row(row_id)
        cfg = row_config(row, predict_training_row(row).chosen)
        assert cfg.parallel.overlap_grad_reduce is overlaps, row_id


def test_the_124m_rows_loss_and_biases_as_llmc_runs_them():
    """The 124M row's config runs the fused classifier's bytes (3 per logit over forward and
    backward, none fp32) and a bias-gradient kernel for every linear, where the no-profile
    reading ran Megatron's unfused fp32 cross-entropy and summed fc1's bias gradient only."""
    row = _row("llmc-gpt2-124m-a100-8")
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    assert cfg.training.framework == "llm-c"
    sh = shard_of(cfg)
    hf = head_forward(cfg, sh)
    loss = [op for op in hf + head_backward(cfg, sh, hf) if op.name.startswith("cross_entropy")]
    logits = sh.tokens * 50304
    assert sum(op.bytes for op in loss) == 3 * 2 * logits
    lb = backward_of(layer_forward(cfg, sh, moe=False), sh)
    assert {op.name for op in lb if op.name.endswith("bias_grad.bwd")} == {
        f"{n}.bias_grad.bwd" for n in ("qkv_proj", "out_proj", "fc1", "fc2")}


def test_named_rows_beat_the_no_profile_reading():
    """Every row is predicted closer to its measurement as llm-c than as the fallback (the
    same row with a framework name no profile answers to), and the file's MAPE is at most
    15 % (llmc61: 26.7 -> 14.4 %; the 124M row +43.6 -> +15.6 %)."""
    _, res = validated(PATH)
    named = {r.id: abs(r.predicted / r.measured - 1) for r in res}
    for row in training_rows(PATH):
        blind = predict_training_row({**row, "framework": "llmc61-unknown"})
        assert named[row["id"]] < blind.ape, row["id"]
    assert sum(named.values()) / len(named) < 0.15, named
