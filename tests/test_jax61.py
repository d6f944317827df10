"""Praxis's own layers under XLA (``training.xla_layers``, a Paxml run with ENABLE_TE=0;
``workload.xla_layers``): the fp32 softmax as XLA's reduction fusions and LayerNorm as XLA's
fusions, where the profile has them; refused elsewhere.

google/praxis@fc68027 praxis/layers/attentions.py L1528-1536 (logits cast to fp32, masked by
``jnp.where``, ``jax.nn.softmax``, cast back), praxis/layers/normalizations.py L368-382;
google/paxml@04516ac paxml/contrib/gpu/scripts_gpu/run_pile_multinode.sh L29-33
(``--xla_gpu_enable_triton_softmax_fusion=false``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.memory.scores import score_bytes
from trainsim.validate.training import row_config
from trainsim.workload.layers import layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of
from trainsim.workload.xla_layers import XLA_SOFTMAX_EXTRA, xla_softmax_ops

ROOT = Path(__file__).resolve().parents[1]
JAXTOOLBOX = ROOT / "benchmarks" / "training_jaxtoolbox.csv"


def _cfg(xla=True, framework="paxml", attention="unfused", recompute="none", policy=None,
         preset="gpt3-125m"):
    training = {"global_batch_size": 256, "seq_length": 2048, "micro_batch_size": 4,
                "dtype": "bf16", "attention": attention, "xla_layers": xla}
    if framework:
        training |= {"framework": framework, "framework_version": "2023-10"}
    parallel = {"recompute": recompute, "zero_stage": 0}
    if policy:
        parallel |= {"remat_policy": policy, "zero_stage": 3}
    return trainsim.run_config_from_dict({
        "model": {"preset": preset}, "parallel": parallel, "training": training,
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8}})


def _names(cfg):
    return [op.name for op in layer_forward(cfg, shard_of(cfg), moe=False)]


def test_softmax_passes_only_with_xla_layers():
    te, xla = _cfg(xla=False), _cfg(xla=True)
    assert "xla_softmax_fp32" in _names(xla) and "xla_softmax_fp32" not in _names(te)
    op = next(o for o in layer_forward(xla, shard_of(xla), moe=False)
              if o.name == "xla_softmax_fp32")
    scores = 4 * 12 * 2048 * 2048  # micro-batch x heads x s x s (materialized: every score)
    (fwd, fwd_k), (bwd, bwd_k) = XLA_SOFTMAX_EXTRA
    assert (op.bytes, op.kernels, op.bwd_bytes, op.bwd_kernels) == \
        (fwd * scores, fwd_k, bwd * scores, bwd_k)


def test_fused_attention_has_no_xla_softmax():
    cfg = _cfg(attention="cudnn")
    core = next(o for o in layer_forward(cfg, shard_of(cfg), moe=False) if o.name == "attn_core")
    assert xla_softmax_ops(cfg, core) == []
    assert "xla_softmax_fp32" not in _names(cfg)


def test_norms_are_xla_fusions():
    def norms(cfg):
        return {o.name: (o.impl, o.kernels) for o in layer_forward(cfg, shard_of(cfg), moe=False)
                if o.name in ("attn_norm", "mlp_norm")}
    assert set(norms(_cfg(xla=False)).values()) == {("fused", 1)}
    assert set(norms(_cfg(xla=True)).values()) == {("xla", 3)}


def test_xla_layers_keep_the_fp32_exp_unless_recomputed():
    te, xla = _cfg(xla=False), _cfg(xla=True)
    args = (4, 12, 2048, 2048)
    assert score_bytes(xla, *args, core_recomputed=False) == \
        score_bytes(te, *args, core_recomputed=False) + 4.0 * 4 * 12 * 2048 * 2048
    assert score_bytes(xla, *args, core_recomputed=True) == 0.0


def test_policy_reruns_the_xla_softmax():
    cfg = _cfg(recompute="selective", policy="save_dot_with_no_batch_dims", preset="gpt3-5b")
    sh = shard_of(cfg)
    redo = [op.name for op in layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=False))]
    assert "recompute.xla_softmax_fp32" in redo and "recompute.attn_core" in redo


@pytest.mark.parametrize("framework", ["maxtext", "megatron-core", None])
def test_refused_without_the_profile_feature(framework):
    with pytest.raises(ConfigError, match="xla_layers"):
        _cfg(framework=framework)


def test_plain_xla_rows_state_the_option_and_run_slower():
    """The JAX-Toolbox rows without 'te' in their id state ``xla_layers`` (and only they), and
    each such row prices slower than the same row with Transformer Engine's layers."""
    rows = list(csv.DictReader(JAXTOOLBOX.open()))
    pax = [r for r in rows if r["framework"] == "paxml"]
    for r in pax:
        assert ("xla_layers" in r["options"].split(";")) == ("-te-" not in r["id"]), r["id"]
    plain = [r for r in pax if "-te-" not in r["id"]]
    assert len(plain) == 5
    for r in plain:
        cfg = row_config(r)
        twin = row_config({**r, "options": ""})
        assert cfg.training.xla_layers and not twin.training.xla_layers
        assert trainsim.simulate(cfg).iteration_time_s > trainsim.simulate(twin).iteration_time_s


def test_a3_rows_state_maxtext_minimal_flash():
    """Google's A3 MaxText rows state their scripts' ``remat_policy=minimal_flash`` as the
    policy (as training_jaxtoolbox's MaxText row), not a module set: the cuDNN attention re-runs
    (TE's fused attention keeps no named residual), the projections do not."""
    rows = list(csv.DictReader((ROOT / "benchmarks" / "training_maxtext_a3.csv").open()))
    assert len(rows) == 5
    for r in rows:
        assert (r["remat_policy"], r["recompute_modules"]) == ("minimal_flash", ""), r["id"]
        cfg = row_config(r)
        sh = shard_of(cfg)
        redo = {op.name.removeprefix("recompute.")
                for op in layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=False))}
        assert "attn_core" in redo and not redo & {"q_proj", "k_proj", "v_proj", "out_proj"}
