"""Activation and model-state memory against Korthikanti et al. 2022 (arXiv:2205.05198).

Table 2 of the paper gives the activation bytes of one GPT transformer layer (GeLU MLP with
ffn = 4h, multi-head attention, dropout on, unfused attention, 16-bit activations and 1-byte
dropout masks) for one micro-batch of ``b`` sequences of ``s`` tokens, with ``a`` heads,
width ``h`` and tensor-parallel size ``t``.
"""

from __future__ import annotations

import itertools

import pytest

import trainsim
from trainsim.memory.estimate import activation_bytes_per_layer, estimate_stage_memory
from trainsim.memory.params import stage_params

GPT_PRESETS = ["gpt-22b", "gpt-175b", "gpt-530b", "gpt-1t"]  # Korthikanti et al. Table 3 shapes
SHAPES = [(1, 2048), (4, 2048), (2, 4096)]  # (micro batch b, sequence length s)


def make_cfg(model="gpt-22b", *, tp=1, pp=1, sp=False, recompute="none", b=1, s=2048,
             attention="unfused", num_gpus=None, global_batch=None, distributed_optimizer=False):
    """A RunConfig; ``model`` is a preset name or a dict of ModelConfig fields."""
    if isinstance(model, str):
        model = {"preset": model}
    num_gpus = num_gpus or tp * pp
    dp = num_gpus // (tp * pp)
    return trainsim.run_config_from_dict({
        "model": model,
        "parallel": {"tp": tp, "pp": pp, "sequence_parallel": sp, "recompute": recompute,
                     "distributed_optimizer": distributed_optimizer},
        "training": {"global_batch_size": global_batch or b * dp, "micro_batch_size": b,
                     "seq_length": s, "attention": attention},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": num_gpus, "gpus_per_node": 8},
    })


def shape_of(preset):
    m = make_cfg(preset).model
    return m.hidden_size, m.num_attention_heads


CASES = list(itertools.product(GPT_PRESETS, SHAPES))
IDS = [f"{p}-b{b}-s{s}" for p, (b, s) in CASES]


# ------------------------------------------------------------------- Table 2, exact equality

def test_presets_are_paper_gpt_layers():
    """The presets used below are GPT layers of Table 2: GeLU, ffn = 4h, MHA, dropout on."""
    for preset in GPT_PRESETS:
        m = make_cfg(preset).model
        assert m.activation == "gelu" and m.ffn_size == 4 * m.hidden_size
        assert m.kv_heads == m.num_attention_heads and m.kv_channels * m.num_attention_heads == m.hidden_size
        assert m.attention_dropout > 0 and m.hidden_dropout > 0


@pytest.mark.parametrize("preset,bs", CASES, ids=IDS)
def test_no_parallelism(preset, bs):
    """Without parallelism a layer keeps s*b*h*(34 + 5*a*s/h) bytes."""
    (b, s), (h, a) = bs, shape_of(preset)
    cfg = make_cfg(preset, b=b, s=s)
    assert activation_bytes_per_layer(cfg) == pytest.approx(s * b * h * (34 + 5 * a * s / h), rel=1e-9)


@pytest.mark.parametrize("t", [2, 4, 8])
@pytest.mark.parametrize("preset,bs", CASES, ids=IDS)
def test_tensor_parallel(preset, bs, t):
    """Tensor parallelism alone keeps s*b*h*(10 + 24/t + 5*a*s/(h*t)) bytes."""
    (b, s), (h, a) = bs, shape_of(preset)
    cfg = make_cfg(preset, tp=t, b=b, s=s)
    expected = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert activation_bytes_per_layer(cfg) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("t", [2, 4, 8])
@pytest.mark.parametrize("preset,bs", CASES, ids=IDS)
def test_tensor_and_sequence_parallel(preset, bs, t):
    """Tensor plus sequence parallelism keeps s*b*h/t*(34 + 5*a*s/h) bytes."""
    (b, s), (h, a) = bs, shape_of(preset)
    cfg = make_cfg(preset, tp=t, sp=True, b=b, s=s)
    expected = s * b * h / t * (34 + 5 * a * s / h)
    assert activation_bytes_per_layer(cfg) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("t", [2, 4, 8])
@pytest.mark.parametrize("preset,bs", CASES, ids=IDS)
def test_tensor_parallel_selective_recompute(preset, bs, t):
    """Tensor parallelism with selective recompute keeps s*b*h*(10 + 24/t) bytes."""
    (b, s), (h, _) = bs, shape_of(preset)
    cfg = make_cfg(preset, tp=t, recompute="selective", b=b, s=s)
    assert activation_bytes_per_layer(cfg) == pytest.approx(s * b * h * (10 + 24 / t), rel=1e-9)


@pytest.mark.parametrize("t", [2, 4, 8])
@pytest.mark.parametrize("preset,bs", CASES, ids=IDS)
def test_tensor_sequence_parallel_selective_recompute(preset, bs, t):
    """Tensor plus sequence parallelism with selective recompute keeps s*b*h*34/t bytes."""
    (b, s), (h, _) = bs, shape_of(preset)
    cfg = make_cfg(preset, tp=t, sp=True, recompute="selective", b=b, s=s)
    assert activation_bytes_per_layer(cfg) == pytest.approx(s * b * h * 34 / t, rel=1e-9)


@pytest.mark.parametrize("t,sp", [(1, False), (8, False), (8, True), (4, True)])
@pytest.mark.parametrize("preset,bs", CASES, ids=IDS)
def test_full_recompute(preset, bs, t, sp):
    """Full recompute keeps only the layer input, 2*s*b*h bytes, divided by t with sequence parallelism."""
    (b, s), (h, _) = bs, shape_of(preset)
    cfg = make_cfg(preset, tp=t, sp=sp, recompute="full", b=b, s=s)
    expected = 2 * s * b * h / (t if sp else 1)
    assert activation_bytes_per_layer(cfg) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("preset", GPT_PRESETS)
def test_recompute_argument_overrides_config(preset):
    """The ``recompute`` argument overrides parallel.recompute of the config."""
    h, a = shape_of(preset)
    s, b, t = 2048, 1, 8
    cfg = make_cfg(preset, tp=t, sp=True, recompute="full", b=b, s=s)
    assert activation_bytes_per_layer(cfg, recompute="none") == pytest.approx(
        s * b * h / t * (34 + 5 * a * s / h), rel=1e-9)
    assert activation_bytes_per_layer(cfg, recompute="selective") == pytest.approx(
        s * b * h * 34 / t, rel=1e-9)


# ------------------------------------------------------------------------------ properties

LLAMA_GQA = {"hidden_size": 4096, "num_layers": 32, "num_attention_heads": 32, "num_kv_heads": 8,
             "ffn_hidden_size": 14336, "vocab_size": 128256, "activation": "swiglu",
             "normalization": "rmsnorm", "position_embedding": "rope", "tied_embeddings": False,
             "add_bias_linear": False}
PROPERTY_MODELS = ["gpt-22b", "gpt-175b", LLAMA_GQA]
PROPERTY_IDS = ["gpt-22b", "gpt-175b", "llama-gqa"]


@pytest.mark.parametrize("attention", ["unfused", "flash"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("t", [2, 4, 8])
@pytest.mark.parametrize("model", PROPERTY_MODELS, ids=PROPERTY_IDS)
def test_sequence_parallel_never_increases_activations(model, t, recompute, attention):
    """Turning sequence parallelism on never increases a layer's activation bytes."""
    off = make_cfg(model, tp=t, recompute=recompute, attention=attention)
    on = make_cfg(model, tp=t, sp=True, recompute=recompute, attention=attention)
    assert activation_bytes_per_layer(on) <= activation_bytes_per_layer(off)


@pytest.mark.parametrize("attention", ["unfused", "flash"])
@pytest.mark.parametrize("t,sp", [(1, False), (8, False), (8, True)])
@pytest.mark.parametrize("model", PROPERTY_MODELS, ids=PROPERTY_IDS)
def test_recompute_orders_activations(model, t, sp, attention):
    """Full recompute keeps no more than selective, and selective no more than none."""
    cfg = make_cfg(model, tp=t, sp=sp, attention=attention)
    none = activation_bytes_per_layer(cfg, recompute="none")
    selective = activation_bytes_per_layer(cfg, recompute="selective")
    full = activation_bytes_per_layer(cfg, recompute="full")
    assert full <= selective <= none
    if attention == "unfused":  # selective recompute drops the s*s tensors
        assert selective < none


@pytest.mark.parametrize("t,sp", [(1, False), (8, False), (8, True)])
@pytest.mark.parametrize("model", PROPERTY_MODELS, ids=PROPERTY_IDS)
def test_flash_attention_has_no_quadratic_term(model, t, sp):
    """With flash attention doubling the sequence length exactly doubles the bytes; unfused more than doubles."""
    flash = [activation_bytes_per_layer(make_cfg(model, tp=t, sp=sp, s=s, attention="flash"))
             for s in (2048, 4096)]
    unfused = [activation_bytes_per_layer(make_cfg(model, tp=t, sp=sp, s=s, attention="unfused"))
               for s in (2048, 4096)]
    assert flash[1] == pytest.approx(2 * flash[0], rel=1e-9)
    assert unfused[1] > 2.1 * unfused[0]
    assert flash[0] < unfused[0]


# ----------------------------------------------------------------------- stage memory, 1F1B

PP = 4


def pipeline_cfg(m, *, recompute="none"):
    # gpt-22b: 48 layers -> 12 per stage; tp=8, pp=4 on 32 GPUs -> dp=1, m micro-batches of 1
    return make_cfg("gpt-22b", tp=8, pp=PP, sp=True, recompute=recompute, b=1, s=2048,
                    num_gpus=32, global_batch=m)


def embedding_mask(cfg):
    """Stage 0 also keeps, per micro-batch in flight, the embedding output's 1-byte dropout
    mask (sequence-parallel: a 1/t slice), which no layer's saved tensors include."""
    t = cfg.training
    return t.micro_batch_size * t.seq_length * cfg.model.hidden_size / cfg.parallel.tp


@pytest.mark.parametrize("m", [PP, 2 * PP, 8 * PP])
def test_first_stage_holds_pp_microbatches(m):
    """Under 1F1B with m >= pp, stage 0 holds pp micro-batches of its layers' activations."""
    cfg = pipeline_cfg(m)
    assert cfg.num_microbatches == m and cfg.stage_layer_counts[0] == 12
    per_layer = activation_bytes_per_layer(cfg)
    mem = estimate_stage_memory(cfg, 0)
    assert mem.activations == pytest.approx(PP * (12 * per_layer + embedding_mask(cfg)), rel=1e-9)


@pytest.mark.parametrize("stage", range(PP))
def test_stage_k_holds_pp_minus_k_microbatches(stage):
    """Under 1F1B with m >= pp, stage k holds pp - k micro-batches in flight; the last stage's
    also keeps the head's inputs (final norm and output GEMM, 16-bit each)."""
    cfg = pipeline_cfg(4 * PP)
    per_layer = activation_bytes_per_layer(cfg)
    mem = estimate_stage_memory(cfg, stage)
    extra = embedding_mask(cfg) if stage == 0 else 0.0
    if stage == PP - 1:
        t = cfg.training
        extra += 4 * t.micro_batch_size * t.seq_length * cfg.model.hidden_size / (
            cfg.parallel.tp if cfg.parallel.sequence_parallel else 1)
    assert mem.activations == pytest.approx((PP - stage) * (12 * per_layer + extra), rel=1e-9)


def test_fewer_microbatches_than_stages():
    """With m < pp, stage 0 holds only the m micro-batches there are."""
    cfg = pipeline_cfg(2)
    per_layer = activation_bytes_per_layer(cfg)
    assert estimate_stage_memory(cfg, 0).activations == pytest.approx(
        2 * (12 * per_layer + embedding_mask(cfg)), rel=1e-9)


# ---------------------------------------------------------------------------- model state

@pytest.mark.parametrize("dp", [2, 8, 16])
def test_distributed_optimizer_divides_optimizer_state_by_dp(dp):
    """The distributed optimizer divides the 12 bytes/param of fp32 optimizer state by dp, nothing else."""
    tp = 8
    plain = make_cfg("gpt-22b", tp=tp, sp=True, num_gpus=tp * dp)
    dist = make_cfg("gpt-22b", tp=tp, sp=True, num_gpus=tp * dp, distributed_optimizer=True)
    assert plain.dp == dp == dist.dp
    params = stage_params(plain, 0)
    a, d = estimate_stage_memory(plain, 0), estimate_stage_memory(dist, 0)
    assert a.optimizer == pytest.approx(12 * params, rel=1e-9)
    assert d.optimizer == pytest.approx(12 * params / dp, rel=1e-9)
    assert (d.weights, d.gradients, d.activations) == (a.weights, a.gradients, a.activations)


def test_learned_position_table_is_whole_on_every_tp_rank():
    """Only the vocab-parallel word embedding is split over TP: the learned position table is a
    plain ``torch.nn.Embedding`` on every rank of the first stage (Megatron-LM language_model.py)."""
    one, eight = make_cfg("gpt-1t", pp=2), make_cfg("gpt-1t", tp=8, pp=2)
    m = one.model
    pos = m.max_position_embeddings * m.hidden_size
    assert pos > 0
    split = stage_params(eight, 0) - stage_params(one, 0) / 8
    assert split == pytest.approx(pos * 7 / 8, rel=1e-9)
    assert stage_params(eight, 1) == pytest.approx(stage_params(one, 1) / 8, rel=1e-12)
