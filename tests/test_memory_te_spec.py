"""Megatron-core's Transformer Engine layer spec (profile ``te_layer_spec``, memory.te_spec):
the attention keeps contiguous Q, K and V copies and no fused QKV output, and the ``layernorm``
recompute module frees nothing where the norms are fused into the linears they feed.

The torch test writes the layer as the spec runs it on CPU in bf16 (fused norm + QKV GEMM
saving the norm's input and output as TE's ``_LayerNormLinear`` does, Megatron's QKV split,
RoPE into new tensors, a fused-attention function saving q, k, v, its output and an fp32
log-sum-exp as ``FusedAttnFunc`` does) and records what autograd saves with
``saved_tensors_hooks`` (tests/test_memory_torch.py's helpers: storages deduplicated, a view
counts its whole storage)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from test_memory_torch import (
    DT,
    KV_HEADS,
    TOL,
    SwiGLUFn,
    apply_rope,
    measure,
    region,
    rope_tables,
    table,
)

import trainsim
from trainsim.memory.estimate import activation_bytes_per_layer

nn = torch.nn
H, HEADS, S, B = 256, 8, 128, 2


class LayerNormLinearFn(torch.autograd.Function):
    """TE's ``_LayerNormLinear`` with RMSNorm, no bias: saves the norm's input, its output
    (the GEMM input, ``ln_out``) and the fp32 1/rms (TE v2.3 module/layernorm_linear.py
    L390-400)."""

    @staticmethod
    def forward(ctx, x, ln_weight, weight, eps):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        ln_out = (xf * rstd * ln_weight.float()).to(x.dtype)
        ctx.save_for_backward(x, ln_out, rstd, ln_weight, weight)
        return ln_out @ weight.t()

    @staticmethod
    def backward(ctx, grad):
        x, ln_out, rstd, ln_weight, weight = ctx.saved_tensors
        g2 = grad.reshape(-1, grad.shape[-1])
        dweight = (g2.t() @ ln_out.reshape(-1, ln_out.shape[-1])).to(weight.dtype)
        dln = (grad @ weight).float()
        xhat = x.float() * rstd
        gw = dln * ln_weight.float()
        dx = rstd * (gw - xhat * (gw * xhat).mean(-1, keepdim=True))
        dlnw = (dln * xhat).reshape(-1, x.shape[-1]).sum(0).to(ln_weight.dtype)
        return dx.to(x.dtype), dlnw, dweight, None


class FusedAttnFn(torch.autograd.Function):
    """A fused causal attention kernel: saves q, k, v, its output and the fp32 log-sum-exp per
    query row (TE v2.3 dot_product_attention/backends.py FusedAttnFunc ``(q, k, v, out_save)``
    and its aux tensors). q [s, b, np, hn], k/v [s, b, ng, hn]."""

    @staticmethod
    def _scores(q, k, v):
        s, _, np_, hn = q.shape
        rep = np_ // k.shape[2]
        kk = k.float().repeat_interleave(rep, 2).permute(1, 2, 3, 0)
        vv = v.float().repeat_interleave(rep, 2).permute(1, 2, 0, 3)
        sc = q.float().permute(1, 2, 0, 3) @ kk / math.sqrt(hn)
        sc = sc + torch.full((s, s), float("-inf")).triu(1)
        return sc, vv

    @staticmethod
    def forward(ctx, q, k, v):
        sc, vv = FusedAttnFn._scores(q, k, v)
        lse = torch.logsumexp(sc, -1)
        out = (torch.softmax(sc, -1) @ vv).permute(2, 0, 1, 3).to(q.dtype).contiguous()
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, _out, _lse = ctx.saved_tensors
        with torch.enable_grad():
            qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
            sc, vexp = FusedAttnFn._scores(qq, kk, vv)
            out = (torch.softmax(sc, -1) @ vexp).permute(2, 0, 1, 3)
            return torch.autograd.grad(out, (qq, kk, vv), grad.float())


class TELlamaLayer(nn.Module):
    """A Llama layer as Megatron-core's TE spec runs it (``copies``: TE's get_qkv_layout found
    no layout for the rotated Q, K and V's view and made all three contiguous; without, the
    kernel is handed the views as they are)."""

    def __init__(self, h, heads, kv_heads, ffn, s, copies):
        super().__init__()
        self.hidden_size, self.heads, self.kv_heads, self.copies = h, heads, kv_heads, copies
        hn = h // heads
        self.ln1 = nn.Parameter(torch.ones(h, dtype=DT))
        self.qkv = nn.Parameter(torch.randn((heads + 2 * kv_heads) * hn, h, dtype=DT) / h**0.5)
        self.proj = nn.Linear(heads * hn, h, bias=False, dtype=DT)
        self.ln2 = nn.Parameter(torch.ones(h, dtype=DT))
        self.fc1 = nn.Parameter(torch.randn(2 * ffn, h, dtype=DT) / h**0.5)
        self.fc2 = nn.Linear(ffn, h, bias=False, dtype=DT)
        cos, sin = rope_tables(s, hn)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x):  # [s, b, h]
        s, b, h = x.shape
        ng, hn = self.kv_heads, h // self.heads
        rep = self.heads // ng
        region("ln+qkv")
        mixed = LayerNormLinearFn.apply(x, self.ln1, self.qkv, 1e-5).view(s, b, ng, (rep + 2) * hn)
        q, k, v = torch.split(mixed, [rep * hn, hn, hn], dim=3)
        q = q.reshape(s, b, self.heads, hn)
        region("rope")
        q, k = apply_rope(q, self.cos, self.sin), apply_rope(k, self.cos, self.sin)
        if self.copies:
            region("qkv copies")
            q, k, v = (t.contiguous() for t in (q, k, v))
        region("attention")
        ctx = FusedAttnFn.apply(q, k, v).view(s, b, self.heads * hn)
        region("proj")
        x = x + self.proj(ctx)
        region("ln+fc1")
        y = LayerNormLinearFn.apply(x, self.ln2, self.fc1, 1e-5)
        region("swiglu")
        y = SwiGLUFn.apply(y)
        region("fc2")
        return x + self.fc2(y)


def _cfg(framework="megatron-core", version="0.13", *, recompute="none", modules=None,
         model=None, tp=1, s=S, b=B, attention="cudnn"):
    model = model or {
        "hidden_size": H, "num_attention_heads": HEADS, "num_kv_heads": KV_HEADS,
        "ffn_hidden_size": 512, "activation": "swiglu", "normalization": "rmsnorm",
        "position_embedding": "rope", "add_bias_linear": False, "tied_embeddings": False,
        "attention_dropout": 0.0, "hidden_dropout": 0.0, "num_layers": 2, "vocab_size": 1024,
        "max_position_embeddings": s}
    return trainsim.run_config_from_dict({
        "model": model,
        "parallel": {"tp": tp, "pp": 1, "cp": 1, "recompute": recompute,
                     "sequence_parallel": tp > 1,
                     **({"recompute_modules": list(modules)} if modules else {})},
        "training": {"global_batch_size": b, "micro_batch_size": b, "seq_length": s,
                     "attention": attention, "dtype": "bf16", "framework": framework,
                     "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": tp, "gpus_per_node": 8},
    })


def test_profiles_name_the_te_spec_from_megatron_core_gpt_models():
    """Megatron-core GPT models on TE: megatron-core from 0.8, Megatron-LM from 2024-06 (the
    mcore default), NeMo, Megatron-Bridge, MLPerf NeMo from 4.0; not before, not elsewhere."""
    from trainsim.catalog.frameworks import framework_profile
    on = [("megatron-core", "0.8"), ("megatron-core", "0.13"), ("megatron-lm", "2024-06"),
          ("nemo", "24.07"), ("megatron-bridge", "25.09"), ("mlperf-nemo", "4.0")]
    off = [("megatron-core", "0.5"), ("megatron-lm", "2023-10"), ("mlperf-nemo", "3.1"),
           ("torchtitan", "2024-12"), ("meta-llama3", "2024-07")]
    assert all(framework_profile(f, v).supports("te_layer_spec") for f, v in on)
    assert not any(framework_profile(f, v).supports("te_layer_spec") for f, v in off)


@pytest.mark.parametrize("copies,version", [(True, "0.13"), (False, "0.5")],
                         ids=["te-copies", "views"])
def test_te_layer_saved_bytes_match_model(copies, version):
    """The TE-spec Llama layer (fused norm+QKV, RoPE, contiguous Q/K/V copies, fused attention,
    fused norm+FC1, SwiGLU) saves what the model counts for a te_layer_spec profile, within 5 %;
    handed the views, the fused QKV output stays alive too, as the model counts without it."""
    cfg = _cfg(version=version)
    layer = TELlamaLayer(H, HEADS, KV_HEADS, 512, S, copies)
    measured, seen = measure(layer, S, B)
    model = activation_bytes_per_layer(cfg)
    msg = f"torch saved {measured} B, model {model:.0f} B:\n{table(seen)}"
    assert measured == pytest.approx(model, rel=TOL), msg


def test_copies_free_the_unrotated_q_and_k_in_torch_and_model():
    """Copying Q, K and V drops exactly the fused QKV buffer's unrotated Q and K
    (T * 2 (q + kv) bytes) in torch and in the model."""
    torch.manual_seed(0)
    got = [measure(TELlamaLayer(H, HEADS, KV_HEADS, 512, S, c), S, B)[0] for c in (False, True)]
    model = [activation_bytes_per_layer(_cfg(version=v)) for v in ("0.5", "0.13")]
    hn = H // HEADS
    expected = S * B * 2 * (HEADS * hn + KV_HEADS * hn)
    assert got[0] - got[1] == expected
    assert model[0] - model[1] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("tp", [1, 8])
def test_checkpointed_core_attention_keeps_the_fused_buffer(tp):
    """Under selective recompute of ``core_attn`` the checkpoint keeps the Q, K and V it was
    handed (V a view of the fused output): the TE spec keeps the same bytes as before, while
    recompute 'none' keeps T * 2 (q + kv) / t fewer for the same layer."""
    model = {"preset": "llama3-70b"}
    te = _cfg(model=model, tp=tp, s=8192, b=1, recompute="selective", modules=("core_attn",))
    local = _cfg("megatron-core", "0.5", model=model, tp=tp, s=8192, b=1,
                 recompute="selective", modules=("core_attn",))
    assert activation_bytes_per_layer(te) == activation_bytes_per_layer(local)
    m = te.model
    none_te = _cfg(model=model, tp=tp, s=8192, b=1)
    none_local = _cfg("megatron-core", "0.5", model=model, tp=tp, s=8192, b=1)
    diff = activation_bytes_per_layer(none_local) - activation_bytes_per_layer(none_te)
    assert diff == pytest.approx(8192 * 2 * (m.q_size / tp + max(m.kv_size / tp, m.kv_channels)))


def test_layernorm_recompute_frees_nothing_in_a_dense_te_layer():
    """The TE spec's norms are IdentityOp (fused into linear_qkv and linear_fc1), so adding
    ``layernorm`` to the recompute modules of a dense layer frees nothing (MLA's input norm, a
    TENorm, still frees the down-projections' input: tests/test_memory_mla.py)."""
    model = {"preset": "llama3-70b"}
    kw = {"model": model, "tp": 8, "s": 8192, "b": 1, "recompute": "selective"}
    te = [activation_bytes_per_layer(_cfg(modules=m, **kw))
          for m in (("core_attn",), ("core_attn", "layernorm"))]
    assert te[0] == te[1]


def test_layernorm_recompute_in_a_te_moe_layer_frees_only_the_pre_mlp_norm_output():
    """An MoE layer's pre-MLP norm is a TENorm: ``layernorm`` frees the router's 16-bit input
    (its output) and no longer the QKV input, T h 2 / t bytes less than before per layer."""
    from trainsim.memory.graph_outputs import pre_mlp_norm_recomputed
    from trainsim.memory.layer_activations import _selective_savings
    cfg = _cfg(model={"preset": "mixtral-8x7b"}, tp=2, s=4096, b=1, recompute="selective",
               modules=("core_attn", "layernorm"))
    assert cfg.model.is_moe and pre_mlp_norm_recomputed(cfg)
    T, h = 4096, cfg.model.hidden_size
    assert _selective_savings(cfg, True, T, 2) == pytest.approx(T * h * 2 / 2)


def _reruns(model, modules, framework="megatron-core", version="0.13"):
    from trainsim.workload.layers import layer_forward
    from trainsim.workload.recompute import layer_recompute
    from trainsim.workload.shard import shard_of
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": model},
        "parallel": {"tp": 2, "sequence_parallel": True, "recompute": "selective",
                     "recompute_modules": list(modules)},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096,
                     "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=cfg.model.is_moe)
    return {op.name.split(".")[1] for op in layer_recompute(cfg, sh, fwd)}


def test_layernorm_recompute_reruns_only_the_norms_the_te_spec_checkpoints():
    """The time path re-runs what the memory path frees: no norm in a dense TE layer, the
    pre-MLP norm (a TENorm) in an MoE one, both norms where the spec has separate ones (MLA's
    input norm: ``q_norm``/``kv_norm`` and ``attn_norm`` stay)."""
    assert not {"attn_norm", "mlp_norm"} & _reruns("llama3-8b", ("layernorm",))
    moe = _reruns("mixtral-8x7b", ("layernorm",))
    assert "mlp_norm" in moe and "attn_norm" not in moe
    assert "attn_norm" in _reruns("deepseek-v3", ("layernorm",), "megatron-core", "0.13")
