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
