"""JAX remat by policy (``parallel.remat_policy``, issue 20 item 3): what a layer re-runs and
keeps is what the policy saves, DCE'd to what the backward reads (``workload.remat_policy``).

MaxText AI-Hypercomputer/maxtext@8e55ab1a MaxText/layers/models.py L302-366 (the policies),
layers/attentions.py L1279-1281 (``query_proj`` / ``key_proj`` / ``value_proj`` named after
RoPE), L1315 (``out_proj``), layers/linears.py L263 / L288 (``mlpwi_0`` / ``mlpwi_1``,
``mlpwo``), layers/llama2.py L70-153 (norm, attention, residual add, norm, MLP, residual add);
Praxis google/praxis@2b59deaa praxis/layers/checkpoint_policy.py L44-62 (``save_dot_only``:
``checkpoint_dots``; ``save_qkv_out_proj``: ``combined_qkv_proj``, ``out_proj``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.model.counts import hardware_flops_per_iteration
from trainsim.validate.training import row_config
from trainsim.workload.layers import layer_forward
from trainsim.workload.recompute import layer_recompute, reruns_nothing
from trainsim.workload.remat_policy import remat_kept_params
from trainsim.workload.shard import shard_of

SEQ, MBS = 4096, 2
MAXTEXT = ("maxtext", "2024-12-09", "llama2-70b")
PAXML = ("paxml", "2024-03-04", "gpt3-175b")


def _cfg(policy, recompute="selective", dtype="bf16", where=MAXTEXT, **parallel):
    fw, version, preset = where
    return trainsim.run_config_from_dict({
        "model": {"preset": preset},
        "parallel": {"recompute": recompute, "remat_policy": policy, "zero_stage": 3,
                     **parallel},
        "training": {"global_batch_size": 128, "seq_length": 2048 if fw == "paxml" else SEQ,
                     "micro_batch_size": MBS, "dtype": dtype, "framework": fw,
                     "framework_version": version, "attention": "cudnn"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def _redo(cfg):
    """The re-run ops' names, less the bias-gradient sums (backward-only kernels after an XLA
    GEMM, no forward work: they go with their projection)."""
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=False)
    return [op.name.removeprefix("recompute.") for op in layer_recompute(cfg, sh, fwd)
            if not op.name.endswith(".bias_grad")]


ALWAYS = ["attn_norm", "attn_core", "attn_bias_dropout_add", "mlp_norm"]


@pytest.mark.parametrize("policy,recompute,redo", [
    # q, k, v (after RoPE), out_proj and mlpwo kept: the norms, the attention, the residual add
    # between them, the MLP's input projections and SwiGLU
    ("save_dot_except_mlpwi", "selective", ["gate_proj", "up_proj", "swiglu"]),
    ("custom:query_proj;value_proj;key_proj;qkv_proj;out_proj;mlpwo", "selective",
     ["gate_proj", "up_proj", "swiglu"]),
    # mlpwo not kept, but no gradient reads it: the same
    ("save_dot_except_mlp", "selective", ["gate_proj", "up_proj", "swiglu"]),
    ("save_qkv_proj", "full", ["out_proj", "gate_proj", "up_proj", "swiglu"]),
    ("full", "full", ["q_proj", "k_proj", "v_proj", "rope", "out_proj", "gate_proj", "up_proj",
                      "swiglu"]),
    # the dots' outputs are kept before RoPE: RoPE runs again
    ("minimal", "selective", ["rope", "swiglu"]),
])
def test_maxtext_policy_reruns(policy, recompute, redo):
    got = _redo(_cfg(policy, recompute))
    assert sorted(got) == sorted(ALWAYS + redo)
    assert "fc2" not in got and "mlp_bias_dropout_add" not in got


def test_fp8_reruns_every_projection_input_cast():
    got = _redo(_cfg("save_dot_except_mlp", dtype="fp8"))
    casts = {n for n in got if n.endswith(".cast_transpose")}
    assert casts == {f"{p}.cast_transpose" for p in
                     ("q_proj", "k_proj", "v_proj", "out_proj", "gate_proj", "up_proj", "fc2")}
    assert not {"q_proj", "k_proj", "v_proj", "out_proj", "fc2"} & set(got)


@pytest.mark.parametrize("policy,redo", [
    ("save_qkv_out_proj", ["fc1", "gelu"]),
    ("save_dot_only", ["gelu"]),
    ("save_nothing", ["qkv_proj", "out_proj", "fc1", "gelu"]),
])
def test_paxml_policy_reruns(policy, redo):
    got = _redo(_cfg(policy, where=PAXML))
    assert sorted(got) == sorted(ALWAYS + redo)


def test_save_everything_reruns_nothing():
    cfg = _cfg("save_everything")
    assert _redo(cfg) == [] and reruns_nothing(cfg)
    assert activation_bytes_per_layer(cfg) == activation_bytes_per_layer(cfg, "none")


def test_kept_bytes_are_the_input_and_the_kept_outputs():
    m = _cfg("full", "full").model
    T, h, q, kv, f = MBS * SEQ, m.hidden_size, m.q_size, m.kv_size, m.ffn_size
    per = {"full": 2 * h, "save_qkv_proj": 2 * h + 2 * (q + 2 * kv),
           "save_dot_except_mlp": 2 * h + 2 * (q + 2 * kv) + 2 * h,
           "save_dot_except_mlpwi": 2 * h + 2 * (q + 2 * kv) + 2 * h + 2 * h,
           "minimal": 2 * h + 2 * (q + 2 * kv) + 2 * h + 2 * 2 * f + 2 * h}
    for policy, want in per.items():
        cfg = _cfg(policy, "full" if policy in ("full", "save_qkv_proj") else "selective")
        assert activation_bytes_per_layer(cfg) == pytest.approx(T * want), policy


def test_hardware_flops_follow_the_policy():
    full, qkv = _cfg("full", "full"), _cfg("save_qkv_proj", "full")
    m = full.model
    flops = [hardware_flops_per_iteration(c, remat_dce=True, remat_kept=remat_kept_params(c))
             for c in (full, qkv)]
    qkv_params = m.hidden_size * (m.q_size + 2 * m.kv_size)
    assert flops[0] - flops[1] == pytest.approx(
        2 * qkv_params * m.num_layers * full.tokens_per_iteration)
    # nothing kept but mlpwo's output, which no gradient reads: as JAX's full remat before
    assert flops[0] == pytest.approx(hardware_flops_per_iteration(
        trainsim.run_config_from_dict({**_raw(full), "parallel": {"recompute": "full",
                                                                  "zero_stage": 3}}),
        remat_dce=True))


def _raw(cfg):
    return {"model": {"preset": "llama2-70b"},
            "training": {"global_batch_size": 128, "seq_length": SEQ, "micro_batch_size": MBS,
                         "dtype": "bf16", "framework": "maxtext",
                         "framework_version": "2024-12-09", "attention": "cudnn"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}}


@pytest.mark.parametrize("kwargs,words", [
    ({"policy": "bogus"}, "unknown remat policy 'bogus'"),
    ({"policy": "qkv_proj_offloaded"}, "offloads to host memory"),
    ({"policy": "custom:query_proj;mlp_out"}, "unknown checkpoint name 'mlp_out'"),
    ({"policy": "full", "recompute": "none"}, "needs recompute=selective or full"),
    ({"policy": "full", "recompute_modules": ["mlp"]}, "drop recompute_modules"),
])
def test_bad_policies_refused_in_one_line(kwargs, words):
    with pytest.raises(ConfigError) as e:
        _cfg(**kwargs)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_policy_names_read_case_free():
    assert _cfg("SAVE_QKV_OUT_PROJ", where=PAXML).parallel.remat_policy == "save_qkv_out_proj"


ROOT = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("name,policies", [
    ("training_dgxc_maxtext.csv", {"save_qkv_proj",
                                   "custom:query_proj;value_proj;key_proj;qkv_proj;out_proj",
                                   "custom:query_proj;value_proj;key_proj;qkv_proj;out_proj;mlpwo"}),
    ("training_dgxc_paxml.csv", {"save_qkv_out_proj", "save_dot_only"}),
])
def test_jax_rows_state_their_recipes_policy(name, policies):
    rows = list(csv.DictReader((ROOT / name).open()))
    assert {r["remat_policy"] for r in rows} == policies
    assert not any(r["recompute_modules"] for r in rows)
    cfg = row_config(rows[0])
    assert cfg.parallel.remat_policy == rows[0]["remat_policy"]


def test_a_policy_under_a_framework_without_jax_remat_is_ignored_with_a_warning():
    with pytest.warns(UserWarning, match="remat_policy=save_qkv_proj is ignored"):
        cfg = _cfg("save_qkv_proj", "full", where=("megatron-core", "0.16", "llama2-70b"))
    raw = _raw(cfg)
    raw["training"] |= {"framework": "megatron-core", "framework_version": "0.16"}
    plain = trainsim.run_config_from_dict({**raw, "parallel": {"recompute": "full",
                                                               "zero_stage": 3}})
    assert _redo(cfg) == _redo(plain)
    assert activation_bytes_per_layer(cfg) == activation_bytes_per_layer(plain)
