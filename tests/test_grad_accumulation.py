"""DeepSpeed's BF16 optimizer copies every micro-batch's 16-bit gradients into fp32; with 16-bit
gradients autograd adds each micro-batch's into ``.grad``."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict, simulate
from trainsim.model.counts import layer_params
from trainsim.workload.grad_accumulation import fp32_grad_accumulation
from trainsim.workload.vocab import padded_vocab


def cfg(dtype="bf16", framework=("megatron-deepspeed", "2022-03"), mbs=1, dist_opt=True):
    training = {"framework": framework[0], "framework_version": framework[1]} if framework else {}
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b", "num_layers": 8},
        "parallel": {"tp": 8, "pp": 2, "distributed_optimizer": dist_opt},
        "training": {"global_batch_size": 64, "micro_batch_size": mbs, "seq_length": 2048,
                     "dtype": dtype, **training},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def test_bf16_deepspeed_adds_an_fp32_pass_per_micro_batch():
    """18 bytes per parameter (cast 2+4, add 4+4+4), two kernels per tensor, for the
    parameters of the virtual stage's layers; Megatron (accumulation fused into the
    weight-gradient GEMM) has none."""
    c = cfg()
    ops = fp32_grad_accumulation(c, range(4), False, False)
    assert len(ops) == 1
    assert ops[0].bytes == pytest.approx(18 * 4 * layer_params(c.model, 0) / 8)
    megatron = cfg(framework=None)
    assert fp32_grad_accumulation(megatron, range(4), False, False) == []


def test_fp16_deepspeed_adds_each_micro_batch_into_the_16bit_grads():
    """fp16 under DeepSpeed ZeRO-1: autograd's AccumulateGrad adds the fresh weight gradient
    into ``.grad`` in place, 6 bytes per parameter (read 2 + 2, write 2), one kernel per
    tensor; the word embedding's on the first stage counts too, and a learned position table
    (whole on every TP rank: torcheager60)."""
    c = cfg("fp16")
    ops = fp32_grad_accumulation(c, range(4), False, False)
    assert [op.name for op in ops] == ["grads_accumulate_16bit"]
    assert ops[0].bytes == pytest.approx(6 * 4 * layer_params(c.model, 0) / 8)
    first = fp32_grad_accumulation(c, range(4), True, False)[0]
    m = c.model
    pos = m.max_position_embeddings * m.hidden_size if m.position_embedding == "learned" else 0
    assert first.bytes - ops[0].bytes == pytest.approx(  # the table Megatron padded
        6 * padded_vocab(c) * m.hidden_size / 8 + 6 * pos)
    assert first.kernels == ops[0].kernels + 1 + (pos > 0)


def test_the_pass_costs_more_with_more_micro_batches():
    """The same global batch in smaller micro-batches pays the pass more often (4x the passes):
    the fp32 pass's compute over the 16-bit one's grows with the micro-batch count (the
    gradient reductions, which differ by dtype, are left out by comparing compute only)."""
    extra = {}
    for mbs in (1, 4):
        with_pass = simulate(cfg(mbs=mbs)).breakdown["compute_s"]
        without = simulate(cfg("fp16", mbs=mbs)).breakdown["compute_s"]
        extra[mbs] = with_pass - without
    assert extra[1] > 2 * extra[4] > 0


def nanotron(**training):
    return run_config_from_dict({
        "model": {"preset": "gpt3-175b", "num_layers": 8},
        "parallel": {"tp": 8, "pp": 2},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": "nanotron", "framework_version": "2024-12",
                     **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def test_nanotron_adds_each_bf16_gradient_into_fp32_per_micro_batch():
    """nanotron's FP32GradientAccumulator (accumulate_grad_in_fp32, profile feature
    ``fp32_grad_add``): ``fp32_grad.add_(half_param.grad)`` a tensor after every backward,
    read 2 + 4 and write 4 bytes per parameter, one kernel a tensor (DeepSpeed's pass: a cast
    and an add, two); none with bf16 gradient reduction (no fp32 buffers then)."""
    c = nanotron()
    ops = fp32_grad_accumulation(c, range(4), False, False)
    assert [op.name for op in ops] == ["grads_add_into_fp32"]
    assert ops[0].bytes == pytest.approx(10 * 4 * layer_params(c.model, 0) / 8)
    deepspeed = fp32_grad_accumulation(cfg(), range(4), False, False)[0]
    assert ops[0].kernels * 2 == deepspeed.kernels
    assert fp32_grad_accumulation(nanotron(grad_reduce_in_fp32=False), range(4), False,
                                  False) == []


def test_nanotron_zero1_clips_the_whole_fp32_gradients():
    """nanotron's ZeRO-1 clip_grad_norm runs over every whole fp32 gradient buffer (norm read
    4, mul_ in place 8 bytes a parameter) beyond the shard the step's frame clips; stage 0
    has nothing beyond it, and Megatron-core (distributed optimizer) clips its shard only."""
    from trainsim.workload.sharding import unsharded_clip
    op = unsharded_clip(nanotron(), 8e9, 1e9)
    assert op is not None and op.bytes == pytest.approx(12 * 7e9)
    assert unsharded_clip(nanotron(), 1e9, 1e9) is None
    assert unsharded_clip(cfg(framework=None), 8e9, 1e9) is None


def test_nanotron_zero1_step_pays_the_clip(monkeypatch):
    """Wired into the step: ZeRO-1 on DP 8 takes longer with the clip beyond the shard than
    with the feature switched off, by at most 12 bytes of 7/8 of the model's parameters at
    1 TB/s (a floor under any H100's HBM rate)."""
    from trainsim.model.counts import total_params
    from trainsim.workload import sharding
    c = run_config_from_dict({
        "model": {"preset": "llama2-7b", "num_layers": 4},
        "parallel": {"tp": 1, "pp": 1, "zero_stage": 1},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 1024,
                     "dtype": "bf16", "framework": "nanotron", "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    with_clip = simulate(c).iteration_time_s
    real = sharding.profile_supports
    monkeypatch.setattr(sharding, "profile_supports",
                        lambda cfg, f: False if f == "clip_unsharded_grads" else real(cfg, f))
    without = simulate(c).iteration_time_s
    assert 0 < with_clip - without < 12 * total_params(c.model) * 7 / 8 / 1e12


@pytest.mark.parametrize(("version", "dtype", "name", "per_param"), [
    ("2021-04", "fp16", "grads_accumulate_16bit", 6),   # autograd's AccumulateGrad, fp16 .grad
    ("2021-04", "bf16", "grads_add_into_fp32", 10),     # the local DDP hook into fp32 main_grad
    ("2022-05", "fp16", "grads_accumulate_16bit", 6),   # the fusion needs fp32 main_grad
    ("2022-05", "bf16", None, 0),                       # gradient_accumulation_fusion
    ("2022-10", "fp16", None, 0),                       # fused in fp16 too
])
def test_megatron_lm_adds_gradients_apart_until_the_wgrad_gemm_accumulates(
        version, dtype, name, per_param):
    """Megatron-LM before ``gradient_accumulation_fusion`` (2022-02-13; fp16 gradients until
    2022-09-27) adds each micro-batch's weight gradients a tensor after the backward
    (megatron/model/distributed.py ``_make_param_hook`` @a8d172b3); from then the wgrad GEMM
    accumulates and nothing is added."""
    c = cfg(dtype, framework=("megatron-lm", version), dist_opt=False)
    ops = fp32_grad_accumulation(c, range(4), False, False)
    assert [op.name for op in ops] == ([name] if name else [])
    if name:
        assert ops[0].bytes == pytest.approx(per_param * 4 * layer_params(c.model, 0) / 8)
