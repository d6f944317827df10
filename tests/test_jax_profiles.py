"""The JAX stacks' profiles (55th session, jax55): MaxText and Paxml select mechanisms, XLA's SPMD
FSDP (fsdp2 state layout, a layer's weights gathered per scan step, collectives overlapped by the
latency-hiding scheduler), XLA's fusions, Transformer Engine's cuDNN attention, and JAX's
``jax.checkpoint``, whose backward re-runs only what its gradients read (``remat_dce``: never a
dense layer's fc2, AI-Hypercomputer/maxtext@8e55ab1a models.py nn.remat, jax-ml/jax@2ff90382
ad_checkpoint.py remat_partial_eval's dce_jaxpr). Checked against NVIDIA/dgxc-benchmarking's
published MaxText and Paxml step times (benchmarks/training_dgxc_{maxtext,paxml}.csv)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import validated

from trainsim import simulate
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import framework_profile
from trainsim.model.counts import hardware_flops_per_iteration
from trainsim.workload.head import embedding_backward, embedding_forward
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Gemm
from trainsim.workload.recompute import core_attn_rerun, layer_recompute, remat_dce
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]


def _cfg(framework: str, recompute: str, modules: list[str] | None = None, dtype: str = "bf16"):
    """A small Llama-like model (GQA, SwiGLU) on one GPU, cuDNN attention."""
    parallel = {"recompute": recompute} | ({"recompute_modules": modules} if modules else {})
    return run_config_from_dict({
        "model": {"hidden_size": 512, "num_layers": 3, "num_attention_heads": 8,
                  "num_kv_heads": 2, "vocab_size": 4096, "ffn_hidden_size": 1536,
                  "activation": "swiglu", "normalization": "rmsnorm"},
        "parallel": parallel,
        "training": {"global_batch_size": 4, "micro_batch_size": 2, "seq_length": 1024,
                     "attention": "cudnn", "dtype": dtype, "framework": framework}
        | ({"fp8_recipe": "delayed"} if dtype == "fp8" else {}),
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1}})


def _rerun(cfg) -> set[str]:
    sh = shard_of(cfg)
    return {op.name for op in layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=False))}


def test_the_profiles_select_xla_mechanisms_and_no_speed_knob():
    for name in ("maxtext", "paxml"):
        p = framework_profile(name, None)
        assert p.defaults["data_parallel_impl"] == "fsdp2" and p.defaults["zero_stage"] == 3
        assert p.defaults["zero3_gather"] == "per_block" and p.defaults["cuda_graphs"] is False
        assert p.supports("overlap_grad_reduce") and p.supports("remat_dce")
        assert p.supports("cudnn") and p.supports("unfused") and not p.supports("flash2")
    assert framework_profile("maxtext", None).defaults["norm"] == "two_pass"
    assert framework_profile("paxml", None).defaults["norm"] == "fused"  # TE's layernorm
    assert not framework_profile("megatron-core", None).supports("remat_dce")


def test_jax_remat_reruns_no_fc2_where_megatron_reruns_the_module():
    """Full recompute: jax.checkpoint re-runs the layer but its last projection and residual
    add; Megatron's checkpointed layer re-runs all of it."""
    jax = _rerun(_cfg("maxtext", "full"))
    mcore = _rerun(_cfg("megatron-core", "full"))
    assert "recompute.fc2" in mcore and "recompute.mlp_bias_dropout_add" in mcore
    assert not {"recompute.fc2", "recompute.mlp_bias_dropout_add"} & jax
    assert {"recompute.gate_proj", "recompute.up_proj", "recompute.out_proj"} <= jax
    assert remat_dce(_cfg("maxtext", "full")) and not remat_dce(_cfg("maxtext", "none"))


def test_fp8_remat_still_recasts_fc2s_input():
    """fc2's weight gradient reads its fp8 input: the cast runs again, the GEMM does not."""
    names = _rerun(_cfg("maxtext", "selective", ["core_attn", "mlp"], dtype="fp8"))
    assert "recompute.fc2.cast_transpose" in names and "recompute.fc2" not in names
    assert {"recompute.gate_proj", "recompute.up_proj", "recompute.attn_core"} <= names


def test_mlp_module_reruns_separate_gate_and_up_projections():
    """A gated MLP built as separate gate and up projections (MaxText's wi_0 / wi_1) re-runs
    both under the ``mlp`` module, as a fused fc1 is re-run."""
    names = _rerun(_cfg("maxtext", "selective", ["core_attn", "mlp"]))
    assert {"recompute.gate_proj", "recompute.up_proj", "recompute.swiglu"} <= names


def _hw(cfg) -> float:
    return hardware_flops_per_iteration(cfg, core_attn_rerun(cfg, fused=True), None, False,
                                        remat_dce(cfg))


@pytest.mark.parametrize("recompute,modules", [("full", None), ("selective", ["core_attn", "mlp"])])
def test_hfu_leaves_out_the_fc2_jax_remat_does_not_rerun(recompute, modules):
    """HFU counts the re-runs the time path prices: under jax.checkpoint, Megatron-core's
    re-runs less each layer's fc2 (its GEMM FLOPs as the time path prices them)."""
    jax, mcore = _cfg("maxtext", recompute, modules), _cfg("megatron-core", recompute, modules)
    sh = shard_of(mcore)
    fc2 = sum(op.flops for op in layer_recompute(mcore, sh, layer_forward(mcore, sh, moe=False))
              if isinstance(op, Gemm) and op.name == "recompute.fc2")
    assert fc2 > 0
    dropped = fc2 * mcore.num_microbatches * mcore.model.num_layers
    assert _hw(mcore) - _hw(jax) == pytest.approx(dropped, rel=1e-9)
    assert simulate(jax).hardware_flops == pytest.approx(_hw(jax), rel=1e-12)


@pytest.mark.parametrize("name,rows", [("maxtext", 22), ("paxml", 13)])
def test_the_dgxc_rows_read_their_own_profile(name, rows):
    _, res = validated(ROOT / "benchmarks" / f"training_dgxc_{name}.csv")
    assert len(res) == rows and all(r.error is None for r in res)
    assert all(r.chosen.get("framework", name) == name for r in res), \
        {r.chosen.get("framework") for r in res}


def _gpt(framework: str, onehot: bool = False):
    """A small GPT (learned positions, GELU) on one GPU."""
    return run_config_from_dict({
        "model": {"hidden_size": 512, "num_layers": 2, "num_attention_heads": 8,
                  "vocab_size": 4096, "ffn_hidden_size": 2048, "activation": "gelu",
                  "position_embedding": "learned", "max_position_embeddings": 1024},
        "training": {"global_batch_size": 4, "micro_batch_size": 2, "seq_length": 1024,
                     "attention": "cudnn", "framework": framework,
                     "onehot_embedding": onehot},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1}})


def test_praxis_looks_tokens_and_positions_up_as_onehot_gemms():
    """Paxml's lookup_style 'matmul': [tokens x vocab] one-hot times the table forward, the
    table's gradient a GEMM backward; the same for the learned positions. Megatron gathers."""
    cfg = _gpt("paxml")
    sh = shard_of(cfg)
    fwd = {op.name: op for op in embedding_forward(cfg, sh) if isinstance(op, Gemm)}
    bwd = {op.name: op for op in embedding_backward(cfg, sh) if isinstance(op, Gemm)}
    tokens = cfg.training.micro_batch_size * cfg.training.seq_length
    assert (fwd["embedding_onehot"].m, fwd["embedding_onehot"].k) == (tokens, 4096)
    assert (fwd["position_onehot"].m, fwd["position_onehot"].k) == (tokens, 1024)
    assert (bwd["embedding_onehot.wgrad"].m, bwd["embedding_onehot.wgrad"].k) == (4096, tokens)
    assert "embedding_grad" not in {op.name for op in embedding_backward(cfg, sh)}
    mcore = _gpt("megatron-core")
    assert not any(isinstance(op, Gemm) for op in embedding_forward(mcore, shard_of(mcore)))


def test_the_onehot_option_turns_it_on_where_the_profile_does_not():
    """MaxText's lookup is a gather unless the run sets use_iota_embed (option
    onehot_embedding, as the dgxc recipes do)."""
    names = {op.name for op in embedding_forward(_gpt("maxtext"), shard_of(_gpt("maxtext")))}
    assert "embedding_lookup" in names
    cfg = _gpt("maxtext", onehot=True)
    assert "embedding_onehot" in {op.name for op in embedding_forward(cfg, shard_of(cfg))}
    bwd = {op.name for op in embedding_backward(cfg, shard_of(cfg))}
    assert "embedding_onehot.wgrad" in bwd and "embedding_grad" not in bwd
