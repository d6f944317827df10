"""Activation bytes of one layer measured with PyTorch autograd against the model.

Small transformer layers are written the way Megatron-LM computes them (sequence-first
``[s, b, h]`` tensors, fused QKV projection, ``megatron/core/transformer/dot_product_attention.py``
for unfused attention, ``bias_swiglu`` for SwiGLU, fused norms that keep their input and a
per-row statistic) and run forward once on CPU in bf16.  Every tensor autograd packs for
backward is recorded with ``torch.autograd.graph.saved_tensors_hooks``; tensors are
deduplicated by storage (a saved view keeps its whole storage alive, so the storage's size is
what counts), and storages of parameters and constant module buffers (causal mask, RoPE cos/sin,
the same for every layer and micro-batch) are left out.  The layer's own input is counted: the
first norm saves it, and the model counts it too.

Dropout uses ``torch.native_dropout``, which saves a bool mask (1 byte/element) as Megatron's
dropout does on GPU; ``F.dropout`` on CPU would save a 16-bit scaled mask instead.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import trainsim
from trainsim.memory.estimate import activation_bytes_per_layer

DT = torch.bfloat16
TOL = 0.05

H, HEADS, S, B = 256, 8, 128, 2
KV_HEADS = 2


# ---------------------------------------------------------------------- measuring saved bytes

_REGION = ["input"]


def region(name: str) -> None:
    """Label the tensors saved from here on (for the failure message)."""
    _REGION[0] = name


def saved_storages(layer: nn.Module, x: torch.Tensor):
    """Run ``layer(x)`` once; return (out, {storage ptr: (nbytes, description)}) of saved tensors."""
    excluded = {t.untyped_storage().data_ptr() for t in layer.parameters()}
    excluded |= {t.untyped_storage().data_ptr() for t in layer.buffers()}
    seen: dict[int, tuple[int, str]] = {}
    keep = []  # hold every packed tensor so that no storage is freed and its address reused

    def pack(t):
        keep.append(t)
        if isinstance(t, nn.Parameter):
            return t
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr in excluded:
            return t
        desc = f"{_REGION[0]:<14} {tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
        if ptr not in seen or storage.nbytes() > seen[ptr][0]:
            seen[ptr] = (storage.nbytes(), desc)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(x)
    return out, seen


def measure(layer: nn.Module, s: int = S, b: int = B) -> tuple[int, dict]:
    torch.manual_seed(0)
    x = torch.randn(s, b, layer.hidden_size, dtype=DT, requires_grad=True)
    out, seen = saved_storages(layer, x)
    out.float().sum().backward()  # the saved tensors are enough for a backward pass
    assert x.grad is not None and torch.isfinite(x.grad.float()).all()
    return sum(n for n, _ in seen.values()), seen


def table(seen: dict) -> str:
    rows = sorted(seen.values(), reverse=True)
    return "\n".join(f"  {n:>10d} B  {d}" for n, d in rows)


# ------------------------------------------------------------------ Megatron-style building blocks

class RMSNormFn(torch.autograd.Function):
    """Fused RMSNorm (Apex/TE): saves its input, weight and the fp32 per-row 1/rms."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return (xf * rstd * weight.float()).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight, rstd = ctx.saved_tensors
        xf, g = x.float(), grad.float()
        xhat = xf * rstd
        gw = g * weight.float()
        dx = rstd * (gw - xhat * (gw * xhat).mean(-1, keepdim=True))
        dweight = (g * xhat).reshape(-1, x.shape[-1]).sum(0)
        return dx.to(x.dtype), dweight.to(weight.dtype), None


class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h, dtype=DT))
        self.eps = eps

    def forward(self, x):
        return RMSNormFn.apply(x, self.weight, self.eps)


class SwiGLUFn(torch.autograd.Function):
    """Megatron's ``bias_swiglu`` without bias: saves only its input and recomputes in backward."""

    @staticmethod
    def forward(ctx, y):
        ctx.save_for_backward(y)
        y1, y2 = torch.chunk(y, 2, -1)
        return F.silu(y1) * y2

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        y1, y2 = torch.chunk(y.float(), 2, -1)
        sig = torch.sigmoid(y1)
        g = grad.float()
        d1 = g * y2 * sig * (1 + y1 * (1 - sig))
        d2 = g * y1 * sig
        return torch.cat([d1, d2], -1).to(y.dtype)


def dropout(x, p):
    """Megatron's dropout as on GPU: ``native_dropout`` keeps a 1-byte bool mask."""
    return torch.native_dropout(x, p, True)[0] if p > 0 else x


def causal_bias(s):
    return torch.full((s, s), float("-inf"), dtype=DT).triu(1)


def core_attention(q, k, v, bias, p):
    """Megatron's unfused DotProductAttention; q [sq, b, np, hn], k/v [sk, b, ng, hn] -> [sq, b, np*hn].

    The causal mask is added before the softmax, which keeps only its output (as Megatron's
    fused scaled-upper-triangular masked softmax does).
    """
    sq, b, np_, hn = q.shape
    sk, ng = k.size(0), k.size(2)
    region("attn.kv-repeat")
    if np_ // ng > 1:  # GQA: Megatron repeats K and V to one head per query head
        k = k.repeat_interleave(np_ // ng, dim=2)
        v = v.repeat_interleave(np_ // ng, dim=2)
    query = q.reshape(sq, b * np_, hn)
    key = k.view(sk, b * np_, hn)
    buf = torch.empty(b * np_, sq, sk, dtype=q.dtype)
    region("attn.q@k")
    scores = torch.baddbmm(buf, query.transpose(0, 1), key.transpose(0, 1).transpose(1, 2),
                           beta=0.0, alpha=1.0 / math.sqrt(hn))
    region("attn.softmax")
    probs = torch.softmax(scores.view(b, np_, sq, sk) + bias, dim=-1)
    region("attn.dropout")
    probs = dropout(probs, p)
    region("attn.probs@v")
    value = v.view(sk, b * np_, hn)
    ctx = torch.bmm(probs.view(b * np_, sq, sk), value.transpose(0, 1))
    ctx = ctx.view(b, np_, sq, hn).permute(2, 0, 1, 3).contiguous()
    return ctx.view(sq, b, np_ * hn)


class GPTLayer(nn.Module):
    """Megatron GPT layer: LN, fused QKV, unfused attention + dropout, proj, dropout, residual, LN, GeLU MLP."""

    def __init__(self, h, heads, ffn, p_attn, p_hidden, s):
        super().__init__()
        self.hidden_size, self.heads, self.p_attn, self.p_hidden = h, heads, p_attn, p_hidden
        self.ln1 = nn.LayerNorm(h, dtype=DT)
        self.qkv = nn.Linear(h, 3 * h, dtype=DT)
        self.proj = nn.Linear(h, h, dtype=DT)
        self.ln2 = nn.LayerNorm(h, dtype=DT)
        self.fc1 = nn.Linear(h, ffn, dtype=DT)
        self.fc2 = nn.Linear(ffn, h, dtype=DT)
        self.register_buffer("bias", causal_bias(s))

    def forward(self, x):  # [s, b, h]
        s, b, h = x.shape
        hn = h // self.heads
        region("ln1")
        y = self.ln1(x)
        region("qkv")
        mixed = self.qkv(y).view(s, b, self.heads, 3 * hn)
        q, k, v = torch.split(mixed, hn, dim=3)
        ctx = core_attention(q, k, v, self.bias, self.p_attn)
        region("proj")
        y = self.proj(ctx)
        region("dropout1")
        x = x + dropout(y, self.p_hidden)
        region("ln2")
        y = self.ln2(x)
        region("fc1")
        y = self.fc1(y)
        region("gelu")
        y = F.gelu(y)
        region("fc2")
        y = self.fc2(y)
        region("dropout2")
        return x + dropout(y, self.p_hidden)


def rope_tables(s, hn, base=10000.0):
    inv = 1.0 / base ** (torch.arange(0, hn, 2, dtype=torch.float32) / hn)
    emb = torch.outer(torch.arange(s, dtype=torch.float32), inv)
    emb = torch.cat([emb, emb], -1)[:, None, None, :]  # [s, 1, 1, hn]
    return emb.cos().to(DT), emb.sin().to(DT)


def apply_rope(t, cos, sin):
    """Megatron's unfused ``_apply_rotary_pos_emb_bshd`` (rotate-half form)."""
    t1, t2 = torch.chunk(t, 2, dim=-1)
    return t * cos + torch.cat([-t2, t1], dim=-1) * sin


class LlamaLayer(nn.Module):
    """Llama layer: RMSNorm, no biases, GQA with RoPE, unfused attention without dropout, SwiGLU MLP."""

    def __init__(self, h, heads, kv_heads, ffn, s):
        super().__init__()
        self.hidden_size, self.heads, self.kv_heads = h, heads, kv_heads
        hn = h // heads
        self.norm1 = RMSNorm(h)
        self.qkv = nn.Linear(h, (heads + 2 * kv_heads) * hn, bias=False, dtype=DT)
        self.proj = nn.Linear(heads * hn, h, bias=False, dtype=DT)
        self.norm2 = RMSNorm(h)
        self.fc1 = nn.Linear(h, 2 * ffn, bias=False, dtype=DT)  # gate and up, concatenated
        self.fc2 = nn.Linear(ffn, h, bias=False, dtype=DT)
        cos, sin = rope_tables(s, hn)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        self.register_buffer("bias", causal_bias(s))

    def forward(self, x):  # [s, b, h]
        s, b, h = x.shape
        ng, hn = self.kv_heads, h // self.heads
        rep = self.heads // ng
        # Megatron's get_query_key_value_tensors: [s, b, ng, (rep + 2) * hn] split per group
        region("norm1")
        y = self.norm1(x)
        region("qkv")
        mixed = self.qkv(y).view(s, b, ng, (rep + 2) * hn)
        q, k, v = torch.split(mixed, [rep * hn, hn, hn], dim=3)
        q = q.reshape(s, b, self.heads, hn)
        region("rope")
        q, k = apply_rope(q, self.cos, self.sin), apply_rope(k, self.cos, self.sin)
        ctx = core_attention(q, k, v, self.bias, 0.0)
        region("proj")
        x = x + self.proj(ctx)
        region("norm2")
        y = self.norm2(x)
        region("fc1")
        y = self.fc1(y)
        region("swiglu")
        y = SwiGLUFn.apply(y)
        region("fc2")
        return x + self.fc2(y)


# ---------------------------------------------------------------------------- model configs

def model_cfg(model: dict, s=S, b=B):
    return trainsim.run_config_from_dict({
        "model": {"num_layers": 2, "vocab_size": 1024, "max_position_embeddings": s, **model},
        "parallel": {"tp": 1, "pp": 1, "cp": 1, "recompute": "none"},
        "training": {"global_batch_size": b, "micro_batch_size": b, "seq_length": s,
                     "attention": "unfused"},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 1, "gpus_per_node": 8},
    })


GPT = {"hidden_size": H, "num_attention_heads": HEADS, "ffn_hidden_size": 4 * H,
       "activation": "gelu", "normalization": "layernorm", "position_embedding": "learned",
       "add_bias_linear": True, "attention_dropout": 0.1, "hidden_dropout": 0.1}


def llama(kv_heads):
    return {"hidden_size": H, "num_attention_heads": HEADS, "num_kv_heads": kv_heads,
            "activation": "swiglu", "normalization": "rmsnorm", "position_embedding": "rope",
            "add_bias_linear": False, "tied_embeddings": False,
            "attention_dropout": 0.0, "hidden_dropout": 0.0}


def gpt_layer(cfg):
    m = cfg.model
    return GPTLayer(m.hidden_size, m.num_attention_heads, m.ffn_size, m.attention_dropout,
                    m.hidden_dropout, cfg.training.seq_length)


def llama_layer(cfg):
    m = cfg.model
    return LlamaLayer(m.hidden_size, m.num_attention_heads, m.kv_heads, m.ffn_size,
                      cfg.training.seq_length)


def compare(layer, cfg):
    measured, seen = measure(layer, cfg.training.seq_length, cfg.training.micro_batch_size)
    model = activation_bytes_per_layer(cfg)
    msg = (f"torch saved {measured} B, model {model:.0f} B "
           f"({measured / model - 1:+.2%}); saved storages (labelled by the op that saved them):\n"
           f"{table(seen)}")
    return measured, model, msg


# ----------------------------------------------------------------------------------- tests

def test_building_blocks_backward_match_autograd():
    """The hand-written RMSNorm and SwiGLU backward passes match autograd of the plain formulas."""
    torch.manual_seed(0)
    x = torch.randn(4, 3, 16, dtype=DT, requires_grad=True)
    w = torch.randn(16, dtype=DT, requires_grad=True)
    g = torch.randn(4, 3, 16, dtype=DT)
    dx, dw = torch.autograd.grad(RMSNormFn.apply(x, w, 1e-5), (x, w), g)
    xf, wf = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * wf
    rdx, rdw = torch.autograd.grad(ref, (xf, wf), g.float())
    torch.testing.assert_close(dx.float(), rdx, atol=0.05, rtol=0.05)
    torch.testing.assert_close(dw.float(), rdw, atol=0.1, rtol=0.05)

    y = torch.randn(4, 3, 32, dtype=DT, requires_grad=True)
    g = torch.randn(4, 3, 16, dtype=DT)
    (dy,) = torch.autograd.grad(SwiGLUFn.apply(y), (y,), g)
    yf = y.detach().float().requires_grad_()
    a, c = torch.chunk(yf, 2, -1)
    (rdy,) = torch.autograd.grad(F.silu(a) * c, (yf,), g.float())
    torch.testing.assert_close(dy.float(), rdy, atol=0.05, rtol=0.05)


def test_gpt_layer_saved_bytes_match_model():
    """One GPT layer (dropout, unfused MHA attention) saves what the model counts, within 5%."""
    cfg = model_cfg(GPT)
    measured, model, msg = compare(gpt_layer(cfg), cfg)
    assert measured == pytest.approx(model, rel=TOL), msg


@pytest.mark.parametrize("kv_heads", [KV_HEADS, HEADS], ids=["gqa", "mha"])
def test_llama_layer_saved_bytes_match_model(kv_heads):
    """One Llama layer (RMSNorm, RoPE, GQA or MHA, unfused attention, SwiGLU) saves what the model counts, within 5%."""
    cfg = model_cfg(llama(kv_heads))
    assert cfg.model.kv_heads == kv_heads
    measured, model, msg = compare(llama_layer(cfg), cfg)
    assert measured == pytest.approx(model, rel=TOL), msg


LAYERS = {"gpt": (GPT, gpt_layer), "llama-gqa": (llama(KV_HEADS), llama_layer)}


@pytest.mark.parametrize("kind", LAYERS)
def test_score_bytes_grow_quadratically_in_torch_and_model(kind):
    """Doubling the sequence length adds the same s*s bytes (softmax, dropout) in the torch layer and the model."""
    fields, make = LAYERS[kind]
    cfgs = [model_cfg(fields, s=s, b=1) for s in (64, 128)]
    measured = [measure(make(c), c.training.seq_length, 1)[0] for c in cfgs]
    model = [activation_bytes_per_layer(c) for c in cfgs]
    assert measured[1] - 2 * measured[0] == pytest.approx(model[1] - 2 * model[0], rel=TOL)


@pytest.mark.parametrize("kind", LAYERS)
def test_mlp_bytes_per_ffn_width_match_model(kind):
    """Widening the MLP adds the same bytes (GeLU: 4 per ffn unit and token, SwiGLU: 6) in torch and the model."""
    fields, make = LAYERS[kind]
    cfgs = [model_cfg({**fields, "ffn_hidden_size": f}) for f in (512, 1024)]
    measured = [measure(make(c))[0] for c in cfgs]
    model = [activation_bytes_per_layer(c) for c in cfgs]
    assert model[1] > model[0]
    assert measured[1] - measured[0] == pytest.approx(model[1] - model[0], rel=TOL)
