"""PyTorch implementations of the kernels in :mod:`trainsim.profile.shapes`, and their timing.

Each kernel kind builds one input set (tensors on the device) and a step that runs the kernel
on it; :func:`time_kernel` rotates among as many sets as it takes to overflow the L2 cache.
Backward kernels are timed alone: the forward runs once per set while building it, and each
repeat replays only ``torch.autograd.grad(..., retain_graph=True)``.

Implementations are what eager PyTorch runs in training:

* GEMM: ``x @ w.T`` (``F.linear``'s layout); fp8 with ``torch._scaled_mm`` (e4m3 operands,
  bf16 output) where the device has it, ``use_fast_accum`` as the op runs (forward GEMMs
  without the split accumulator: ``workload.shard.linear``).
* Attention: ``F.scaled_dot_product_attention`` (on CUDA with one fused backend at a time:
  cuDNN, flash or memory-efficient, as the record's ``impl`` names), GQA via ``enable_gqa``. A context-parallel rank
  (``ring`` > 1, load-balanced causal ring attention as in Transformer Engine) runs one causal
  block over its own keys and ``ring - 1`` full blocks over half-length key chunks, which is
  the work the simulator's attention op prices.
* Elementwise: ``F.rms_norm``/``F.layer_norm``, residual add (+ dropout), SwiGLU, tanh-GeLU,
  rotate-half RoPE, fp32 cross-entropy, fp8 cast + transpose with amax, embedding lookup,
  fused Adam on fp32 state (``compute.database.PROFILED_IMPL`` says which are one fused kernel
  and which eager multi-kernel code; records carry it).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from trainsim.profile.device import Budget, Device, Timing, measure, rotation
from trainsim.profile.shapes import Kernel
from trainsim.workload.token_ids import zipf_weights

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
          "tf32": torch.float32}
FP8 = torch.float8_e4m3fn
ACT = torch.bfloat16
EPS = 1e-5

log = logging.getLogger(__name__)


@dataclass
class Recipe:
    """How to build one input set and what to run on it."""

    set_bytes: float
    make: Callable[[], Any]
    step: Callable[[Any], Any]


def fp8_supported(dev: Device) -> tuple[bool, str]:
    """(supported, note): torch._scaled_mm works here (Hopper or newer on CUDA)."""
    if not hasattr(torch, "_scaled_mm"):
        return False, "fp8 GEMMs skipped: this PyTorch has no torch._scaled_mm"
    if dev.kind == "cuda" and torch.cuda.get_device_capability() < (8, 9):
        return False, "fp8 GEMMs skipped: the GPU has no fp8 tensor cores (needs sm_89+)"
    try:
        a = torch.ones(16, 16, device=dev.torch_device).to(FP8)
        one = torch.ones((), device=dev.torch_device)
        torch._scaled_mm(a, a.t(), scale_a=one, scale_b=one, out_dtype=ACT)
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        return False, f"fp8 GEMMs skipped: torch._scaled_mm fails here ({str(exc).splitlines()[0]})"
    return True, ""


SDPA_BACKENDS = {"cudnn": "CUDNN_ATTENTION", "sdpa": "FLASH_ATTENTION", "flash2": "FLASH_ATTENTION",
                 "mem_efficient": "EFFICIENT_ATTENTION"}
"""The simulator's attention implementation -> the SDPA backend that runs it: ``sdpa`` is SDPA's
FLASH_ATTENTION backend (its vendored FlashAttention-2; ``flash2``, the flash-attn package, is
not what runs here, and a record of it is read as ``sdpa``: ``compute.database.SDPA_RECORD_IMPL``)."""


def sdpa_context(dev: Device, impl: str | None = None) -> contextlib.AbstractContextManager[Any]:
    """Fused attention backends only on CUDA: a silent fallback to the math backend would
    time an unfused kernel under FlashAttention's name. With ``impl``, that backend alone, so
    a record names the kernel that ran (a backend that cannot run the shape raises)."""
    if dev.kind != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = [SDPA_BACKENDS[impl]] if impl else list(SDPA_BACKENDS.values())
    return sdpa_kernel([getattr(SDPBackend, n) for n in names])


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Causal or full attention; GQA natively, or by repeating KV heads (as Hugging Face does)
    where no fused backend takes ``enable_gqa``."""
    gqa = q.shape[-3] != k.shape[-3]
    try:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    except RuntimeError:
        if not gqa:
            raise
        log.warning("no fused SDPA backend takes enable_gqa here: repeating KV heads")
        r = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(r, dim=-3), v.repeat_interleave(r, dim=-3)
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE (Su et al. 2021; Hugging Face Llama's apply_rotary_pos_emb)."""
    return x * cos + rotate_half(x) * sin


# ------------------------------------------------------------------------- recipes by kind

def text_ids(tokens: int, rows: int, tp: int, device: Any) -> torch.Tensor:
    """``tokens`` ids as the simulator counts a rank's embedding scatter
    (``workload.token_ids.text_segments``): drawn by Zipf's law over the whole vocabulary
    (``rows`` x ``tp``), the frequent ids spread over it at random, those outside the rank's
    first ``rows`` masked to row 0 as Megatron-core's ``VocabParallelEmbedding`` does."""
    weights = torch.from_numpy(zipf_weights(rows * tp))
    ids = torch.randperm(rows * tp)[torch.multinomial(weights, tokens, replacement=True)]
    return torch.where(ids < rows, ids, torch.zeros_like(ids)).to(device)


def _randn(*shape: int, dev: Device, dtype: torch.dtype = ACT, grad: bool = False) -> torch.Tensor:
    return torch.randn(*shape, device=dev.torch_device, dtype=dtype, requires_grad=grad)


def _gemm(s: dict[str, Any], dev: Device) -> Recipe:
    m, n, k, b, dtype = s["m"], s["n"], s["k"], s["batch"], s["dtype"]
    if dtype == "fp8":
        one = torch.ones((), device=dev.torch_device)

        def make_fp8() -> Any:
            return _randn(m, k, dev=dev).to(FP8), _randn(n, k, dev=dev).to(FP8)

        fast = bool(s.get("fp8_fast_accum", False))  # the op's accumulation (Gemm.fp8_fast_accum)
        return Recipe(m * k + n * k + 2 * m * n, make_fp8, lambda ab: torch._scaled_mm(
            ab[0], ab[1].t(), scale_a=one, scale_b=one, out_dtype=ACT, use_fast_accum=fast))
    td = DTYPES[dtype]
    lead = (b,) if b > 1 else ()
    size = torch.tensor([], dtype=td).element_size()
    return Recipe(b * (m * k + n * k + m * n) * size,
                  lambda: (_randn(*lead, m, k, dev=dev, dtype=td), _randn(*lead, n, k, dev=dev, dtype=td)),
                  lambda ab: torch.matmul(ab[0], ab[1].transpose(-1, -2)))


def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ring: int) -> torch.Tensor:
    """The attention work of one load-balanced context-parallel rank (see module docstring);
    partial outputs are summed in place of the log-sum-exp merge."""
    s = q.shape[-2]
    out = sdpa(q, k[..., :s, :], v[..., :s, :], True)
    for r in range(1, ring):
        lo = r * s
        out = out + sdpa(q, k[..., lo:lo + s // 2, :], v[..., lo:lo + s // 2, :], False)
    return out


def _attention(s: dict[str, Any], dev: Device) -> Recipe:
    b, h, g, sq, skv, d = s["batch"], s["heads"], s["kv_heads"], s["q_len"], s["kv_len"], s["head_dim"]
    ring, causal, bwd = s["ring"], s["causal"], s["backward"]

    def fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        with sdpa_context(dev, s.get("impl")):
            return ring_attention(q, k, v, ring) if ring > 1 else sdpa(q, k, v, causal)

    def make() -> Any:
        q = _randn(b, h, sq, d, dev=dev, grad=bwd)
        k, v = (_randn(b, g, skv, d, dev=dev, grad=bwd) for _ in range(2))
        if not bwd:
            return q, k, v
        out = fwd(q, k, v)
        return out, (q, k, v), torch.randn_like(out)

    step = (lambda t: torch.autograd.grad(t[0], t[1], t[2], retain_graph=True)) if bwd else (
        lambda t: fwd(*t))
    return Recipe(2 * b * d * (2 * h * sq + 2 * g * skv) * (2 if bwd else 1), make, step)


def _elementwise_fn(base: str, s: dict[str, Any], dev: Device
                    ) -> tuple[Callable[[], tuple[list[torch.Tensor], list[torch.Tensor]]],
                               Callable[..., Any], float]:
    """(make inputs -> (differentiable, constant), forward fn, bytes of one input set)."""
    r, c = s.get("rows", 0), s.get("cols", 0)
    if base in ("rmsnorm", "layernorm"):
        if base == "rmsnorm":
            fn = lambda x, w: F.rms_norm(x, (c,), w, EPS)
        else:
            fn = lambda x, w: F.layer_norm(x, (c,), w, None, EPS)
        return lambda: ([_randn(r, c, dev=dev, grad=True), _randn(c, dev=dev, grad=True)], []), fn, 4 * r * c
    if base == "residual_add":
        p = float(s["dropout"])
        fn = (lambda x, y: x + F.dropout(y, p, training=True)) if p else (lambda x, y: x + y)
        return lambda: ([_randn(r, c, dev=dev, grad=True) for _ in range(2)], []), fn, 6 * r * c
    if base in ("swiglu", "gelu"):
        width = 2 * c if base == "swiglu" else c

        def act(x: torch.Tensor) -> torch.Tensor:
            if base == "gelu":
                return F.gelu(x, approximate="tanh")
            gate, up = x.chunk(2, dim=-1)
            return F.silu(gate) * up

        return lambda: ([_randn(r, width, dev=dev, grad=True)], []), act, 2 * r * (width + c)
    if base == "rope":
        t, hq, hk, d = s["tokens"], s["heads"], s["kv_heads"], s["d"]

        def make_rope() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
            ang = _randn(t, 1, d, dev=dev, dtype=torch.float32)
            return ([_randn(t, hq, d, dev=dev, grad=True), _randn(t, hk, d, dev=dev, grad=True)],
                    [ang.cos().to(ACT), ang.sin().to(ACT)])

        return make_rope, lambda q, k, cos, sin: (apply_rope(q, cos, sin), apply_rope(k, cos, sin)), \
            4 * t * (hq + hk) * d
    if base == "cross_entropy":
        def make_ce() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
            tgt = torch.randint(0, c, (r,), device=dev.torch_device)
            return [_randn(r, c, dev=dev, grad=True)], [tgt]

        return make_ce, lambda x, tgt: F.cross_entropy(x.float(), tgt), 10 * r * c
    if base == "embedding":
        t, vocab, tp = s["tokens"], s["vocab"], s.get("tp", 1)

        def make_emb() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
            return [_randn(vocab, c, dev=dev, grad=True)], [text_ids(t, vocab, tp, dev.torch_device)]

        return make_emb, lambda w, ids: F.embedding(ids, w), 2 * vocab * c + 4 * t * c
    if base == "fp8_cast_transpose":
        def cast_transpose(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            scale = 448.0 / x.abs().amax().float().clamp(min=1e-12)
            y = (x.float() * scale).to(FP8)
            return y, y.t().contiguous()

        return lambda: ([_randn(r, c, dev=dev)], []), cast_transpose, 4 * r * c
    raise KeyError(base)


def _elementwise(kind: str, s: dict[str, Any], dev: Device) -> Recipe:
    base, bwd = kind.removesuffix(".bwd"), kind.endswith(".bwd")
    make_inputs, fn, nbytes = _elementwise_fn(base, s, dev)
    if not bwd:
        def make_fwd() -> Any:
            diff, const = make_inputs()
            return [x.detach() for x in diff] + const

        return Recipe(nbytes, make_fwd, lambda xs: fn(*xs))

    def make_bwd() -> Any:
        diff, const = make_inputs()
        out = fn(*diff, *const)
        outs = out if isinstance(out, tuple) else (out,)
        return outs, diff, [torch.randn_like(o) for o in outs]

    return Recipe(2 * nbytes, make_bwd,
                  lambda t: torch.autograd.grad(t[0], t[1], t[2], retain_graph=True))


def _adam(s: dict[str, Any], dev: Device) -> Recipe:
    n = s["params"]

    def make() -> Any:
        p = torch.nn.Parameter(torch.randn(n, device=dev.torch_device))
        p.grad = torch.randn_like(p)
        try:
            opt = torch.optim.Adam([p], lr=1e-4, fused=True)
        except (RuntimeError, ValueError):
            opt = torch.optim.Adam([p], lr=1e-4, foreach=True)
        opt.step()  # creates the moments
        return opt

    return Recipe(16 * n, make, lambda opt: opt.step())


def recipe(kernel: Kernel, dev: Device) -> Recipe:
    s = kernel.size
    if kernel.kind == "gemm":
        return _gemm(s, dev)
    if kernel.kind == "attention":
        return _attention(s, dev)
    if kernel.kind == "adam":
        return _adam(s, dev)
    return _elementwise(kernel.kind, s, dev)


def time_kernel(kernel: Kernel, dev: Device, budget: Budget) -> Timing:
    """Median time of ``kernel`` on ``dev`` over rotated input sets."""
    rec = recipe(kernel, dev)
    n = rotation(rec.set_bytes, dev)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = kernel.size.get("dtype") == "tf32"
    try:
        with torch.no_grad() if not kernel.backward else contextlib.nullcontext():
            sets = [rec.make() for _ in range(n)]
        grad_ctx = contextlib.nullcontext() if kernel.backward else torch.no_grad()
        with grad_ctx:
            return measure(dev, lambda i: rec.step(sets[i % n]), budget)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
