"""Megatron's unfused vocab-parallel cross-entropy runs op by op on logits cast to fp32."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.shard import shard_of
from trainsim.workload.vocab import padded_vocab


def cfg(framework=None):
    training = {"framework": framework, "framework_version": "2022-02"} if framework else {}
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b", "num_layers": 8},
        "parallel": {"tp": 8, "pp": 2},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "fp16", **training},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def _ce(c):
    sh = shard_of(c)
    fwd = head_forward(c, sh)
    f = next(op for op in fwd if op.name == "cross_entropy")
    b = next(op for op in head_backward(c, sh, fwd) if op.name == "cross_entropy.bwd")
    return f, b, sh.tokens * padded_vocab(c) // 8  # Megatron pads 50,304 to 51,200 at TP 8


def test_megatron_deepspeed_runs_the_unfused_cross_entropy():
    """Its profile selects ``unfused``: 38 bytes per logit forward (upcast 2 + 4, max 4, sub 8,
    exp 8, sum 4, div 8) and 14 backward (mul 8, down-cast 4 + 2), against the fused pass's
    10 and 6."""
    c = cfg("megatron-deepspeed")
    assert c.training.cross_entropy == "unfused"
    f, b, logits = _ce(c)
    assert f.bytes == pytest.approx(38 * logits) and b.bytes == pytest.approx(14 * logits)
    plain = cfg()
    assert plain.training.cross_entropy == "fused"
    f0, b0, logits0 = _ce(plain)
    assert f0.bytes == pytest.approx(10 * logits0) and b0.bytes == pytest.approx(6 * logits0)
    assert f.kernels > f0.kernels


def test_transformer_engines_cross_entropy_works_in_place_on_the_16_bit_logits():
    """``te`` (Megatron-Bridge's default): two passes reading the 16-bit logits, the second
    writing their gradient over them, then one in-place scaling in the backward: 6 and 4
    bytes per fp16 logit, and no fp32 softmax kept."""
    import dataclasses

    c = cfg()
    te = dataclasses.replace(c, training=dataclasses.replace(c.training, cross_entropy="te"))
    f, b, logits = _ce(te)
    assert f.bytes == pytest.approx(6 * logits) and b.bytes == pytest.approx(4 * logits)
    assert f.kernels == 2 and b.kernels == 1


def test_eager_modules_run_pytorchs_loss_whatever_the_profile_fills_in():
    """Megatron-Bridge fills in cross_entropy te; with eager modules the loss is still PyTorch's
    F.cross_entropy on upcast logits, in time (the ops) and in memory (no 16-bit in-place
    gradient): the two read one rule."""
    from trainsim.memory.estimate import estimate_stage_memory
    from trainsim.workload.head import cross_entropy_impl

    def run(modules):
        return run_config_from_dict({
            "model": {"preset": "llama3-8b", "num_layers": 2},
            "parallel": {"tp": 1},
            "training": {"global_batch_size": 32, "micro_batch_size": 4, "seq_length": 8192,
                         "framework": "megatron-bridge", "framework_version": "25.11",
                         "modules": modules},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})

    fused, eager = run("fused"), run("eager")
    assert fused.training.cross_entropy == eager.training.cross_entropy == "te"
    assert cross_entropy_impl(fused) == "te" and cross_entropy_impl(eager) == "eager"
    f, _, _ = _ce(eager)
    assert f.impl == "eager"
    logits = 4 * 8192 * 128256  # the loss outweighs the other temporaries here

    def loss_bytes(c):
        return dict(estimate_stage_memory(c, 0).temporaries)["logits and fp32 softmax"]
    assert loss_bytes(fused) == pytest.approx(2 * logits)
    assert loss_bytes(eager) == pytest.approx(12 * logits)
