"""A Llama decoder layer in plain PyTorch at a tensor-parallel slice's shapes, and its timing.

The layer is Megatron's TP rank without the communication: fused QKV (``heads/tp`` query heads,
``max(kv_heads/tp, 1)`` KV heads, replicated when TP exceeds the KV heads), rotate-half RoPE,
FlashAttention (SDPA), the output projection, and a SwiGLU MLP of ``ffn/tp`` with fused
gate/up; RMSNorms and residual adds on all tokens (no sequence parallelism). At TP 1 it
computes exactly Hugging Face's ``LlamaDecoderLayer`` (:func:`check_against_hf`).

It is timed at three granularities: the layer (device timer around forward and around
backward), submodules (forward and backward hooks on the attention and MLP blocks, each block
including its norm), and kernels (``torch.profiler``'s ``key_averages``).
"""

from __future__ import annotations

import logging
import statistics
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from trainsim.config import ModelConfig
from trainsim.profile.device import Budget, Device, Timing, measure
from trainsim.profile.kernels import apply_rope, sdpa, sdpa_context
from trainsim.profile.schema import ProfileError

log = logging.getLogger(__name__)

ROPE_THETA = 500_000.0  # Llama 3 (Meta's params.json); the time does not depend on it
TOP_KERNELS = 64


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class AttentionBlock(nn.Module):
    """Norm, fused QKV projection, RoPE, causal GQA attention, output projection."""

    def __init__(self, hidden: int, heads: int, kv_heads: int, head_dim: int, seq: int,
                 theta: float = ROPE_THETA, eps: float = 1e-5) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.norm = RMSNorm(hidden, eps)
        self.qkv = nn.Linear(hidden, (heads + 2 * kv_heads) * head_dim, bias=False)
        self.out = nn.Linear(heads * head_dim, hidden, bias=False)
        inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim)
        freqs = torch.outer(torch.arange(seq, dtype=torch.float), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        d, hq, hk = self.head_dim, self.heads, self.kv_heads
        q, k, v = self.qkv(self.norm(x)).split([hq * d, hk * d, hk * d], dim=-1)
        q, k, v = (t.view(b, s, -1, d).transpose(1, 2) for t in (q, k, v))
        cos, sin = self.cos[:s].to(x.dtype), self.sin[:s].to(x.dtype)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        o = sdpa(q, k, v, causal=True)
        return self.out(o.transpose(1, 2).reshape(b, s, hq * d))


class MLPBlock(nn.Module):
    """Norm, fused gate/up projection, SwiGLU, down projection."""

    def __init__(self, hidden: int, ffn: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.norm = RMSNorm(hidden, eps)
        self.fc1 = nn.Linear(hidden, 2 * ffn, bias=False)
        self.fc2 = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.fc1(self.norm(x)).chunk(2, dim=-1)
        return self.fc2(F.silu(gate) * up)


class LlamaLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int, head_dim: int, ffn: int, seq: int,
                 theta: float = ROPE_THETA, eps: float = 1e-5) -> None:
        super().__init__()
        self.attention = AttentionBlock(hidden, heads, kv_heads, head_dim, seq, theta, eps)
        self.mlp = MLPBlock(hidden, ffn, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(x)
        return x + self.mlp(x)

    @classmethod
    def tp_slice(cls, m: ModelConfig, tp: int, seq: int) -> LlamaLayer:
        """One TP rank's layer of ``m`` (as trainsim.workload.layers sizes it)."""
        if m.activation != "swiglu" or m.normalization != "rmsnorm" or m.any_linear_bias:
            raise ProfileError(f"model {m.name}: the profiler's layer is Llama-style (SwiGLU, "
                               "RMSNorm, no biases)")
        return cls(m.hidden_size, m.num_attention_heads // tp, max(m.kv_heads // tp, 1),
                   m.kv_channels, m.ffn_size // tp, seq)


# ----------------------------------------------------------------- numerics against HF

def copy_from_hf(ours: LlamaLayer, hf: nn.Module) -> None:
    """Load a Hugging Face ``LlamaDecoderLayer``'s weights (fusing QKV and gate/up)."""
    a, m = hf.self_attn, hf.mlp
    with torch.no_grad():
        ours.attention.norm.weight.copy_(hf.input_layernorm.weight)
        ours.attention.qkv.weight.copy_(torch.cat([a.q_proj.weight, a.k_proj.weight,
                                                   a.v_proj.weight]))
        ours.attention.out.weight.copy_(a.o_proj.weight)
        ours.mlp.norm.weight.copy_(hf.post_attention_layernorm.weight)
        ours.mlp.fc1.weight.copy_(torch.cat([m.gate_proj.weight, m.up_proj.weight]))
        ours.mlp.fc2.weight.copy_(m.down_proj.weight)


def check_against_hf(device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
                     hidden: int = 64, heads: int = 4, kv_heads: int = 2, ffn: int = 128,
                     seq: int = 16, batch: int = 2, seed: int = 0) -> tuple[bool, float]:
    """(allclose, max |difference|) of our layer's output and Hugging Face's, same weights.

    Needs ``transformers`` (ImportError otherwise)."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    torch.manual_seed(seed)
    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=ffn, num_attention_heads=heads,
                      num_key_value_heads=kv_heads, rms_norm_eps=1e-5, rope_theta=ROPE_THETA,
                      max_position_embeddings=max(seq, 64), attention_dropout=0.0)
    cfg._attn_implementation = "sdpa"
    hf = LlamaDecoderLayer(cfg, layer_idx=0).to(device=device, dtype=dtype).eval()
    with torch.no_grad():  # O(1) branch outputs, so that a wrong weight shows above tolerance
        for p in hf.parameters():  # (HF initializes norms to 1: perturb them too)
            if p.dim() > 1:
                p.normal_(0.0, p.shape[1] ** -0.5)
            else:
                p.normal_(1.0, 0.1)
    params = getattr(cfg, "rope_parameters", None) or {}
    theta = float(params.get("rope_theta", getattr(cfg, "rope_theta", ROPE_THETA)))
    ours = LlamaLayer(hidden, heads, kv_heads, hidden // heads, ffn, seq, theta,
                      cfg.rms_norm_eps).to(device=device, dtype=dtype)
    copy_from_hf(ours, hf)
    x = torch.randn(batch, seq, hidden, device=device, dtype=dtype)
    pos = torch.arange(seq, device=device).unsqueeze(0).expand(batch, -1)
    cos_sin = LlamaRotaryEmbedding(cfg).to(device)(x, pos)
    mask = torch.full((seq, seq), torch.finfo(dtype).min, device=device, dtype=dtype).triu(1)
    with torch.no_grad():
        ref = hf(x, attention_mask=mask.expand(batch, 1, seq, seq), position_ids=pos,
                 position_embeddings=cos_sin)
        ref = ref[0] if isinstance(ref, tuple) else ref
        got = ours(x)
    tol = 1e-4 if dtype == torch.float32 else 2e-2  # fp32 GPU kernels differ in summation order
    return torch.allclose(got, ref, rtol=tol, atol=tol), float((got - ref).abs().max())


# ----------------------------------------------------------------------------- timing

class _Passes:
    """Forward-and-backward passes of a layer on rotating inputs, parameter grads included
    (``autograd.grad``: no accumulation kernels, as Megatron fuses wgrad into main_grad)."""

    def __init__(self, layer: nn.Module, dev: Device, b: int, s: int, h: int, sets: int) -> None:
        self.layer = layer
        self.params = [p for p in layer.parameters() if p.requires_grad]
        kw: dict[str, Any] = {"device": dev.torch_device, "dtype": torch.bfloat16}
        self.xs = [torch.randn(b, s, h, requires_grad=True, **kw) for _ in range(sets)]
        self.gs = [torch.randn(b, s, h, **kw) for _ in range(sets)]

    def forward(self, i: int) -> torch.Tensor:
        return self.layer(self.xs[i % len(self.xs)])

    def backward(self, out: torch.Tensor, i: int) -> None:
        x = self.xs[i % len(self.xs)]
        torch.autograd.grad(out, [x, *self.params], self.gs[i % len(self.gs)])

    def step(self, i: int) -> None:
        self.backward(self.forward(i), i)


def _submodule_times(layer: LlamaLayer, passes: _Passes, dev: Device, repeats: int
                     ) -> dict[str, dict[str, float]]:
    """Median forward/backward time of the attention and MLP blocks, from module hooks."""
    marks: dict[tuple[str, str], list[tuple[Any, Any]]] = {}
    handles = []

    def hook(name: str, phase: str, edge: int):
        def fn(*_: Any) -> None:
            t = dev.timer()
            t.record()
            if edge == 0:
                marks.setdefault((name, phase), []).append((t, None))
            else:
                start, _ = marks[(name, phase)][-1]
                marks[(name, phase)][-1] = (start, t)
        return fn

    for name in ("attention", "mlp"):
        mod = getattr(layer, name)
        handles += [mod.register_forward_pre_hook(hook(name, "fwd_s", 0)),
                    mod.register_forward_hook(hook(name, "fwd_s", 1)),
                    mod.register_full_backward_pre_hook(hook(name, "bwd_s", 0)),
                    mod.register_full_backward_hook(hook(name, "bwd_s", 1))]
    try:
        passes.step(0)  # warm-up
        marks.clear()
        for i in range(repeats):
            passes.step(i)
        dev.synchronize()
    finally:
        for handle in handles:
            handle.remove()
    out: dict[str, dict[str, float]] = {}
    for (name, phase), pairs in marks.items():
        times = [max(s.elapsed_s(e), 1e-9) for s, e in pairs if e is not None]
        out.setdefault(name, {})[phase] = statistics.median(times)
    return out


def _kernel_times(passes: _Passes, dev: Device, iters: int) -> list[dict[str, Any]]:
    """Per-iteration device time of each kernel (CPU: each op's self time) from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.kind == "cuda" else [])
    passes.step(0)
    dev.synchronize()
    with profile(activities=acts) as prof:
        for i in range(iters):
            passes.step(i)
        dev.synchronize()
    rows = []
    for e in prof.key_averages():
        if dev.kind == "cuda":
            if str(getattr(e, "device_type", "")).split(".")[-1] != "CUDA":
                continue
            us = getattr(e, "self_device_time_total", None)
            if us is None:
                us = getattr(e, "self_cuda_time_total", 0.0)
        else:
            us = e.self_cpu_time_total
        if us > 0:
            rows.append({"name": e.key, "time_s": us / 1e6 / iters, "calls": e.count / iters})
    rows.sort(key=lambda r: -r["time_s"])
    return rows[:TOP_KERNELS]


def _time_backward(passes: _Passes, dev: Device, budget: Budget, fwd_s: float) -> Timing:
    """Median backward time; each repeat's forward runs untimed before it (no retained
    graphs, which compiled backward functions do not replay)."""
    for i in range(budget.warmup):
        passes.step(i)
    repeats = int(min(budget.repeats, max(budget.min_repeats, budget.target_s // (3 * fwd_s))))
    marks = []
    for i in range(repeats):
        out = passes.forward(i)
        start, end = dev.timer(), dev.timer()
        start.record()
        passes.backward(out, i)
        end.record()
        marks.append((start, end))
    dev.synchronize()
    samples = tuple(max(s.elapsed_s(e), 1e-9) for s, e in marks)
    return Timing(statistics.median(samples), repeats, samples)


def time_layer(layer_case: Any, dev: Device, budget: Budget, compiled: bool = False
               ) -> dict[str, Any]:
    """The database record of one layer case (see :mod:`trainsim.profile.schema`)."""
    m, tp, s, b = layer_case.model, layer_case.tp, layer_case.seq_length, layer_case.micro_batch_size
    torch.manual_seed(0)
    base_mem = dev.memory_allocated()
    layer = LlamaLayer.tp_slice(m, tp, s).to(device=dev.torch_device, dtype=torch.bfloat16)
    module: nn.Module = torch.compile(layer) if compiled else layer
    with sdpa_context(dev):
        # Peak memory first, before the timing loops hold extra graphs.
        one = _Passes(module, dev, b, s, m.hidden_size, sets=1)
        one.step(0)
        dev.synchronize()
        dev.reset_peak()
        one.step(0)
        dev.synchronize()
        peak = max(0, dev.max_memory_allocated() - base_mem)
        del one
        passes = _Passes(module, dev, b, s, m.hidden_size, sets=2)
        fwd = measure(dev, passes.forward, budget)
        bwd = _time_backward(passes, dev, budget, fwd.median_s)
        subs = {} if compiled else _submodule_times(layer, passes, dev, max(3, bwd.repeats // 2))
        kernels = _kernel_times(passes, dev, 1 if budget.repeats <= 3 else 3)
    return {"model": m.name, "tp": tp, "seq_length": s, "micro_batch_size": b, "dtype": "bf16",
            "granularity": "layer", "fwd_s": fwd.median_s, "bwd_s": bwd.median_s,
            "peak_memory_bytes": int(peak), "compile": compiled, "repeats": fwd.repeats,
            "submodules": subs, "kernels": kernels}
