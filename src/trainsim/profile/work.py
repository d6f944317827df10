"""What a profile run's measurements need, from their shapes alone (no torch), checked before
any runs (fuzz33: ``profile --device cpu --quick --mbs 100000`` failed kernel by kernel, "can't
allocate memory", for more than 5 minutes, and ``--mbs 1000`` ran 56 s in 940 MB, where
simulate, export and goodput refuse work over a limit in one line: ``trainsim.limits``).

- A CPU dry run: its work, the bytes one step of each measurement touches (a kernel's input
  set, :func:`set_bytes`; a layer's :func:`layer_bytes`) summed over the run, over
  ``TRAINSIM_MAX_PROFILE_BYTES`` (``trainsim.limits``: 256 MiB) is refused in one line.
- A GPU: each measurement whose memory (a kernel's rotated input sets, :func:`kernel_bytes`;
  a layer's) is over the GPU's is noted and not run, and the rest measured (the README's run
  with ``--mbs 2`` on a 40 GB A100: the 16,384-token cross-entropy backward); a run with none
  that fits is refused in one line.
"""

from __future__ import annotations

import math
from typing import Any

from trainsim.limits import WorkLimitError, check
from trainsim.profile.shapes import Kernel, LayerCase

CPU_LIMIT_ENV = "TRAINSIM_MAX_PROFILE_BYTES"

ROTATION_CAP = 16
"""Input sets rotated at most (``profile.device.rotation``'s ``cap``)."""


def set_bytes(kernel: Kernel) -> float:
    """Bytes of one input set of ``kernel``, as ``profile.kernels`` builds it (its recipes'
    ``set_bytes``; a test holds the two equal)."""
    s, kind = kernel.size, kernel.kind
    if kind == "gemm":
        m, n, k, b = s["m"], s["n"], s["k"], s["batch"]
        if s["dtype"] == "fp8":
            return float(m * k + n * k + 2 * m * n)
        size = 4 if s["dtype"] in ("fp32", "tf32") else 2
        return float(b * (m * k + n * k + m * n) * size)
    if kind == "attention":
        b, h, g, sq, skv, d = (s["batch"], s["heads"], s["kv_heads"], s["q_len"], s["kv_len"],
                               s["head_dim"])
        return float(2 * b * d * (2 * h * sq + 2 * g * skv) * (2 if s["backward"] else 1))
    if kind == "adam":
        return float(16 * s["params"])
    base, bwd = kind.removesuffix(".bwd"), kind.endswith(".bwd")
    return float(_elementwise_bytes(base, s) * (2 if bwd else 1))


def _elementwise_bytes(base: str, s: dict[str, Any]) -> int:
    r, c = s.get("rows", 0), s.get("cols", 0)
    if base in ("rmsnorm", "layernorm", "fp8_cast_transpose"):
        return 4 * r * c
    if base == "residual_add":
        return 6 * r * c
    if base in ("swiglu", "gelu"):
        return 2 * r * ((2 * c if base == "swiglu" else c) + c)
    if base == "rope":
        return 4 * s["tokens"] * (s["heads"] + s["kv_heads"]) * s["d"]
    if base == "cross_entropy":
        return 10 * r * c
    if base == "embedding":
        return 2 * s["vocab"] * c + 4 * s["tokens"] * c
    raise KeyError(base)


def kernel_bytes(kernel: Kernel, cache_bytes: float) -> float:
    """Bytes the rotated input sets of ``kernel`` hold at once."""
    one = set_bytes(kernel)
    sets = 1 if one <= 0 else max(1, min(ROTATION_CAP, math.ceil(2 * cache_bytes / one)))
    return sets * one


def layer_bytes(case: LayerCase) -> float:
    """Bytes of one layer case (``profile.layer``): its TP slice's weights and their gradients
    (16-bit) and one forward's saved activations per token (16-bit: the input, two norms'
    outputs, the fused QKV and its rotated q and k, the attention's output, the MLP's fused
    gate/up, its activation and the output projections' inputs), and the two rotated inputs
    and output gradients of :class:`profile.layer._Passes`."""
    m, tp = case.model, case.tp
    q = m.num_attention_heads // tp * m.kv_channels
    kv = max(m.kv_heads // tp, 1) * m.kv_channels
    f = m.ffn_hidden_size // tp
    h = m.hidden_size
    weights = h * (q + 2 * kv) + q * h + 3 * h * f + 2 * h
    per_token = 6 * h + 2 * (q + 2 * kv) + 2 * q + 4 * f
    tokens = case.seq_length * case.micro_batch_size
    return 2.0 * (2 * weights + tokens * per_token + 4 * tokens * h)


def _largest(cases: list[Any], layers: list[LayerCase], cache_bytes: float
             ) -> tuple[float, str]:
    need, what = 0.0, ""
    for case in cases:
        b = kernel_bytes(case.kernel, cache_bytes)
        if b > need:
            need, what = b, f"kernel {case.kernel.label()}"
    for lc in layers:
        b = layer_bytes(lc)
        if b > need:
            need, what = b, f"layer {lc.model.name} tp={lc.tp} seq={lc.seq_length}"
    return need, what


def check_cpu_work(cases: list[Any], layers: list[LayerCase], mbs: int) -> None:
    """Refuse a CPU dry run whose work (the bytes of a step of each measurement, summed) is
    over ``TRAINSIM_MAX_PROFILE_BYTES``."""
    total = sum(set_bytes(c.kernel) for c in cases) + sum(layer_bytes(lc) for lc in layers)
    need, what = _largest(cases, layers, 0.0)
    check(CPU_LIMIT_ENV, total,
          f"bytes a step of each of the CPU dry run's {len(cases) + len(layers):,} measurements "
          f"touches, summed (the largest: {what}, {need / 2**20:,.0f} MiB)", "",
          f"lower --mbs ({mbs:,}) or --seq, or give fewer --models, --tp, --seq or --cp")


def fitting(cases: list[Any], layers: list[LayerCase], cache_bytes: float,
            device_bytes: float, mbs: int) -> tuple[list[Any], list[LayerCase], list[str]]:
    """On a GPU: the kernels and layers whose memory fits its ``device_bytes``, and a
    ``failed:`` note for each other one, not run (before, each ran out of memory in turn,
    noted the same way). A run with none that fits is refused."""
    cap = float(device_bytes)
    notes: list[str] = []

    def fits(need: float, label: str) -> bool:
        if need <= cap:
            return True
        notes.append(f"failed: {label}: needs about {need / 1e9:.1f} GB, over the GPU's "
                     f"{cap / 1e9:.1f} GB; not run (lower --mbs ({mbs:,}) or --seq)")
        return False

    kept = [c for c in cases if fits(kernel_bytes(c.kernel, cache_bytes), c.kernel.label())]
    kept_layers = [lc for lc in layers if fits(layer_bytes(lc), f"layer {lc.model.name} "
                                               f"tp={lc.tp} seq={lc.seq_length}")]
    if (cases or layers) and not (kept or kept_layers):
        need, what = _largest(cases, layers, cache_bytes)
        raise WorkLimitError(f"no measurement fits the GPU's {cap / 1e9:.1f} GB (the smallest "
                             f"is over it; the largest, {what}, needs about {need / 1e9:.1f} "
                             f"GB); lower --mbs ({mbs:,}) or --seq, or raise --tp")
    return kept, kept_layers, notes
