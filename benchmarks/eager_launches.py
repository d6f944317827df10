"""Kernel launches of an eager layer: measured on the H100 against what trainsim counts.

    python benchmarks/eager_launches.py           # the H100 database's layers, then the modules

1. The 16 layer records of ``validation/kernel-db/h100-sxm-80gb.json`` (``trainsim profile``'s
   Llama layer, eager, ``torch.profiler`` kernel counts per forward + backward) by category,
   beside trainsim's count of the same layer (``workload.layers`` with the profiler's
   implementations: eager rotate-half RoPE, SwiGLU on ``chunk`` halves, torch's native norms).
2. The ATen ops that Hugging Face's Llama modules (if ``transformers`` is installed) and
   torchtitan's dispatch below autograd, counted under ``TorchDispatchMode`` on the CPU: what
   launches a kernel, views and allocations left out. On the layer the database measured,
   these counts equal its mul, add, neg, cat and silu kernels; a library op (cuDNN attention,
   a norm's backward, cuBLAS's memsets) launches more kernels than its one op.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation" / "kernel-db"
BUNDLED = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" / "kernels"
CATEGORIES = ("gemm", "attention", "norm", "elementwise", "memset")


def _measured_category(name: str) -> str:
    if name.startswith(("nvjet", "sm90_xmma", "cutlass")):
        return "gemm"
    if "sdpa" in name or "cudnn" in name or "flash" in name:
        return "attention"
    if name.startswith("Memset"):
        return "memset"
    if "layer_norm" in name or "GammaBeta" in name:
        return "norm"
    return "elementwise"  # pointwise, cat and copy kernels


def database_table(path: Path) -> None:
    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute.host import launches
    from trainsim.validate.kernel_db import _layer_config
    from trainsim.workload.elementwise import activation_op, rope_op
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    from trainsim.workload.shard import shard_of

    def profiled(op):  # the profiler's implementation, with the builders' kernel counts
        if isinstance(op, Elementwise) and op.kernel == "rope":
            return dataclasses.replace(rope_op(op.name, 1.0, eager=True), bytes=op.bytes)
        if isinstance(op, Elementwise) and op.kernel == "swiglu":
            return dataclasses.replace(activation_op(True, 1.0, True, True), bytes=op.bytes)
        return op

    def category(op) -> str | None:
        if isinstance(op, Gemm):
            return "gemm"
        if isinstance(op, Attention):
            return "attention"
        if not isinstance(op, Elementwise):
            return None  # the profiled layer runs no communication
        return "norm" if (op.kernel or "").split(".")[0] in ("rmsnorm", "layernorm") \
            else "elementwise"

    data = json.loads(path.read_text())
    spec = catalog_gpu(data["gpu"])
    print(f"{path.name}: measured / trainsim launches per layer forward + backward")
    print("record".ljust(24) + "".join(f"{c:>14s}" for c in CATEGORIES) + "       total")
    for rec in data["layers"]:
        if rec.get("compile"):
            continue
        got: collections.Counter = collections.Counter()
        for k in rec["kernels"]:
            got[_measured_category(k["name"])] += k["calls"]
        cfg = _layer_config(rec, spec, "cudnn")
        fwd = [profiled(op) for op in layer_forward(cfg, shard_of(cfg))]
        ours: collections.Counter = collections.Counter()
        for op in fwd + backward_of(fwd, shard_of(cfg)):
            if (cat := category(op)) is not None:
                ours[cat] += launches(op)
        rid = f"{rec['model']}-tp{rec['tp']}-s{rec['seq_length']}"
        print(rid.ljust(24) + "".join(f"{got[c]:>7.0f}/{ours[c]:<6d}" for c in CATEGORIES)
              + f"{sum(got.values()):>7.0f}/{sum(ours.values())}")


def dispatched(fn):
    """(kernel-launching ATen ops, views and allocations) that ``fn`` dispatches."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    no_kernel = {"empty", "empty_strided", "detach", "alias", "view", "_unsafe_view", "t",
                 "transpose", "expand", "unsqueeze", "slice", "split", "split_with_sizes",
                 "view_as_complex", "view_as_real", "_conj", "_reshape_alias"}

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.kernels: collections.Counter = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._schema.name.split("::")[-1]
            alias = func._schema.returns and func._schema.returns[0].alias_info
            if name not in no_kernel and not (alias and not alias.is_write):
                self.kernels[name] += 1
            return func(*args, **(kwargs or {}))

    with Count() as c:
        out = fn()
    return out, c.kernels, torch


def module_counts() -> None:
    import torch
    import torch.nn.functional as F

    def fwd_bwd(label, fn, inputs):
        out, k_fwd, _ = dispatched(fn)
        outs = out if isinstance(out, tuple) else (out,)
        grads = [torch.ones_like(t) for t in outs]
        _, k_bwd, _ = dispatched(lambda: torch.autograd.grad(outs, inputs, grads))
        print(f"  {label:44s} forward {sum(k_fwd.values()):3d}  backward {sum(k_bwd.values()):3d}"
              f"   {dict(k_bwd)}")

    dt, s = torch.bfloat16, 64
    x = torch.randn(1, s, 256, dtype=dt, requires_grad=True)
    q = torch.randn(1, 8, s, 32, dtype=dt, requires_grad=True)
    k = torch.randn(1, 2, s, 32, dtype=dt, requires_grad=True)
    print("ATen ops that launch a kernel, dispatched on the CPU (backward by op):")
    try:
        from transformers import LlamaConfig
        from transformers.models.llama import modeling_llama as hf
        cfg = LlamaConfig(hidden_size=256, intermediate_size=512, num_attention_heads=8,
                          num_key_value_heads=2, max_position_embeddings=128)
        norm = hf.LlamaRMSNorm(256).to(dt)
        fwd_bwd("transformers LlamaRMSNorm", lambda: norm(x), [x, norm.weight])
        cos, sin = (t.to(dt) for t in hf.LlamaRotaryEmbedding(cfg)(x, torch.arange(s)[None]))
        fwd_bwd("transformers apply_rotary_pos_emb (Q and K)",
                lambda: hf.apply_rotary_pos_emb(q, k, cos, sin), [q, k])
        mlp = hf.LlamaMLP(cfg).to(dt)
        fwd_bwd("transformers LlamaMLP (3 GEMMs, SwiGLU)", lambda: mlp(x), [x])
    except ImportError:
        print("  (transformers not installed: Hugging Face's modules skipped)")

    # torchtitan@e846b6946 torchtitan/models/llama/model.py apply_rotary_emb, norms.py RMSNorm
    freqs = 1.0 / (10000.0 ** (torch.arange(0, 32, 2)[:16].float() / 32))
    cis = torch.polar(torch.ones(s, 16), torch.outer(torch.arange(s).float(), freqs))
    qt = torch.randn(1, s, 8, 32, dtype=dt, requires_grad=True)  # wq(x).view(...): contiguous
    kt = torch.randn(1, s, 2, 32, dtype=dt, requires_grad=True)

    def titan_rope():
        xq_ = torch.view_as_complex(qt.float().reshape(*qt.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(kt.float().reshape(*kt.shape[:-1], -1, 2))
        f = cis.view(1, s, 1, 16)
        return (torch.view_as_real(xq_ * f).flatten(3).type_as(qt),
                torch.view_as_real(xk_ * f).flatten(3).type_as(kt))

    w = torch.ones(256, dtype=dt, requires_grad=True)

    def titan_norm():
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x) * w

    fwd_bwd("torchtitan RMSNorm", titan_norm, [x, w])
    fwd_bwd("torchtitan apply_rotary_emb (Q and K)", titan_rope, [qt, kt])
    gate = torch.randn(s, 512, dtype=dt, requires_grad=True)

    def chunked_swiglu():
        g, u = gate.chunk(2, -1)
        return F.silu(g) * u

    fwd_bwd("SwiGLU silu(gate) * up on chunk halves", chunked_swiglu, [gate])


def main() -> int:
    for folder in (SHARED, BUNDLED):
        path = folder / "h100-sxm-80gb.json"
        if path.exists():
            database_table(path)
            break
    module_counts()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
