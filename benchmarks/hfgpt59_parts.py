"""Where Lambda's Hugging Face GPT-2 baseline rows spend their predicted micro-batch, and which
of the eager model's passes trainsim does not price (issue 17; a diagnostic: nothing here
feeds trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/hfgpt59_parts.py          # the two rows
    PYTHONPATH=src:benchmarks python benchmarks/hfgpt59_parts.py --json   # the figures

The rows (``benchmarks/training_flashattn.csv``, ``flashattn-lambda-hf-gpt3-2.7b-{a100,h100}-1``)
run transformers 4.25.1's GPT2LMHeadModel (LambdaLabsML/flash-attention @ 5bc2715
training/Dockerfile L81: ``transformers==4.25.1``, ``pytorch-lightning==1.8.6``, over
nvcr.io/nvidia/pytorch:22.12, L5) with ``scale_attn_by_inverse_layer_idx: true`` and
``reorder_and_upcast_attn: false`` (training/configs/model/gpt2-hf.yaml), fp16 autocast
(``trainer.precision: 16``), micro-batch 1 of 1024 tokens, 512 micro-batches a step.

1. The predicted micro-batch by part (one layer's forward and backward by kind of kernel,
   the head, the embedding, the per-micro-batch gradient accumulation), as ``trainsim
   validate`` prices the row.
2. What the eager model runs that the op lists do not carry, counted here on the meta device
   under a ``TorchDispatchMode`` (every ATen op that launches a kernel; bytes = its tensor
   inputs' and outputs' storage; forward and autograd backward) and priced as trainsim's
   ``Elementwise`` ops on the row's GPU:

   * ``gelu_new`` (GPT2Config's default ``activation_function``): the tanh formula of
     Hendrycks & Gimpel as eight PyTorch ops, transformers' ``NewGELUActivation`` (taken from
     the installed transformers where there is one), run under an emulation of CUDA autocast
     (``autocast_fp32``: ``pow`` cast to fp32 as ATen's CUDA fp32 list says, the fp32 output
     cast back for the next GEMM), against what the op list prices for it (the 59th session's
     one fused GeLU kernel; since gelu60 the eager chain of ``workload.hf_activations``);
   * GPT-2's score passes in ``GPT2Attention._attn`` (4.2x: matmul, ``/ torch.full([],
     sqrt(head_dim))``, ``/ float(layer_idx + 1)`` where ``scale_attn_by_inverse_layer_idx``,
     ``torch.where(causal_mask, w, mask_value)`` on the 16-bit scores with a bool mask,
     softmax on autocast's fp32 list (``dtype=float32``: 16-bit in, fp32 out), ``.type(fp16)``,
     ``attn_dropout``, matmul), written here as the same sequence of torch calls, against the
     passes the op list prices for the unfused core (softmax 4 + 6, dropout 5 + 5 bytes a
     score) and ``workload.hf_eager_attention`` (Llama's fp32 additive mask: 24 + 22).

The rest of the gap is named, not priced: see ``--json``'s ``unpriced`` and RESULTS.md
(59th session, hfgpt59).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 1)[0])

from layer_prices import chosen_config

from trainsim.compute.host import HOST_S_PER_KERNEL, launches
from trainsim.pricing import Pricer
from trainsim.workload.elementwise import backward_bytes
from trainsim.workload.grad_accumulation import fp32_grad_accumulation
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Elementwise, Gemm
from trainsim.workload.shard import shard_of

FILE = "benchmarks/training_flashattn.csv"
ROWS = ("flashattn-lambda-hf-gpt3-2.7b-a100-1", "flashattn-lambda-hf-gpt3-2.7b-h100-1")
MATMULS = {"mm", "bmm", "addmm", "matmul"}
NO_KERNEL = {"view", "_unsafe_view", "t", "transpose", "expand", "permute", "detach", "alias",
             "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
             "_reshape_alias", "as_strided", "unsqueeze", "squeeze", "slice", "select",
             "lift_fresh", "ones_like", "zeros_like", "_to_copy_noop"}
"""ATen ops that launch no kernel on their own (views and allocations); ``ones_like`` seeds the
backward here and is not the model's."""


def _storage_bytes(t: Any) -> int:
    import torch
    if not isinstance(t, torch.Tensor):
        return 0
    return t.untyped_storage().nbytes() if t.numel() else 0


def count_ops(fn, *args) -> dict[str, dict[str, float]]:
    """ATen kernels and their bytes (each tensor input's storage once, plus each output's) of
    ``fn(*args)`` forward and of its backward, matmuls apart."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: list[tuple[str, int]] = []

        def __torch_dispatch__(self, func, types, a=(), kw=None):
            out = func(*a, **(kw or {}))
            name = func.overloadpacket.__name__
            if name not in NO_KERNEL:  # what it reads, then what it writes (an in-place
                # op's output is its input, read and written: gelu60)
                read = {id(t): t for t in tree_flatten((a, kw))[0] if isinstance(t, torch.Tensor)}
                wrote = {id(t): t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)}
                self.ops.append((name, sum(_storage_bytes(t) for t in (*read.values(),
                                                                       *wrote.values()))))
            return out

    def tally(ops):
        other = [(n, b) for n, b in ops if n not in MATMULS]
        return {"kernels": len(other), "bytes": float(sum(b for _, b in other)),
                "matmuls": sum(n in MATMULS for n, _ in ops), "ops": [n for n, _ in other]}

    with Counter() as fwd:
        out = fn(*args)
    grad = torch.ones_like(out)
    with Counter() as bwd:
        out.backward(grad)
    return {"forward": tally(fwd.ops), "backward": tally(bwd.ops)}


def gelu_new(x):
    """transformers' ``NewGELUActivation`` where installed, else the same formula (Hendrycks &
    Gimpel's tanh approximation) in the same order of PyTorch ops."""
    import torch
    try:
        from transformers.activations import NewGELUActivation
        return NewGELUActivation()(x)
    except ImportError:
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + torch.tanh(c * (x + 0.044715 * torch.pow(x, 3.0))))


def saved_bytes(fn, x) -> int:
    """Bytes of the tensors autograd saves running ``fn(x)`` (``saved_tensors_hooks``, each
    storage once), after a backward of the whole graph (the output summed in fp32)."""
    import torch
    kept: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = fn(x)
    y.float().sum().backward()
    return sum(kept.values())

def autocast_fp32_ops() -> frozenset[str]:
    """The ops CUDA autocast runs in fp32: ``AT_FORALL_FP32`` of the installed torch's
    ATen/autocast_mode.h (registered for CUDA by aten/src/ATen/autocast_mode.cpp,
    ``AT_FORALL_FP32(_KERNEL_CUDA_FP32)``); empty where torch or the header is not installed."""
    import re
    from pathlib import Path

    try:
        import torch
    except ImportError:  # the tests that ask skip: the core install has no torch
        return frozenset()
    path = Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"
    text = path.read_text() if path.exists() else ""
    head = "#define AT_FORALL_FP32(_)"
    if head not in text:
        return frozenset()
    return frozenset(re.findall(r"_\((\w+)", text.split(head, 1)[1].split("#define", 1)[0]))


def autocast_fp32(fn, fp32_ops: frozenset[str] | None = None):
    """``fn`` run as under CUDA ``torch.autocast`` with 16-bit activations, for the ops on the
    fp32 list (``autocast_fp32_ops``): each such call's 16-bit tensor arguments cast to fp32
    first (autocast's ``cached_cast(kFloat, ...)``), and an fp32 result cast back to the
    input's dtype as the next GEMM's autocast (``addmm`` on the lower-precision list) casts it.
    The meta device has no autocast of its own."""
    import torch
    from torch.overrides import TorchFunctionMode

    ops = autocast_fp32_ops() if fp32_ops is None else fp32_ops

    class Fp32List(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "").strip("_")
            if name.removeprefix("r") in ops and name not in ops:  # __rpow__: pow.Scalar
                name = name.removeprefix("r")
            if name in ops:
                args = tuple(a.float() if isinstance(a, torch.Tensor)
                             and a.dtype in (torch.float16, torch.bfloat16) else a for a in args)
            return func(*args, **(kwargs or {}))

    def run(x):
        with Fp32List():
            y = fn(x)
        return y.to(x.dtype) if y.dtype != x.dtype else y
    return run


def gpt2_score_passes(heads: int, seq: int, head_dim: int, layer_idx: int, p: float):
    """A function of (q, k, v) running GPT-2's eager ``_attn`` steps under fp16 autocast
    (module docstring), the fp32 softmax spelled out as autocast issues it."""
    import torch

    mask = torch.ones(1, 1, seq, seq, dtype=torch.bool, device="meta")

    def run(q, k, v):
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], head_dim ** 0.5, dtype=w.dtype, device=w.device)
        w = w / float(layer_idx + 1)
        w = torch.where(mask, w, torch.full([], -65504.0, dtype=w.dtype, device=w.device))
        # CUDA's dispatch, spelled out (the meta device would decompose both): softmax of a
        # half input with dtype float is one ``_softmax(half_to_float=True)`` kernel
        # (aten/src/ATen/native/SoftMax.cpp ``softmax``), dropout in training the fused
        # ``native_dropout`` (aten/src/ATen/native/Dropout.cpp ``is_fused_kernel_acceptable``)
        w = torch._softmax(w, -1, True).type(v.dtype)
        w = torch.native_dropout(w, p, True)[0]
        return torch.matmul(w, v)
    return run


def eager_counts(h: int, ffn: int, heads: int, seq: int, p: float, autocast: bool = True
                 ) -> dict[str, Any]:
    """gelu_new on the fc1 output (under the autocast emulation, ``autocast_fp32``, unless
    ``autocast`` is False) and GPT-2's score passes, one layer, micro-batch 1."""
    import torch
    x = torch.empty(seq, ffn, dtype=torch.float16, device="meta", requires_grad=True)
    d = h // heads
    qkv = [torch.empty(1, heads, seq, d, dtype=torch.float16, device="meta",
                       requires_grad=True) for _ in range(3)]
    return {"gelu_new": count_ops(autocast_fp32(gelu_new) if autocast else gelu_new, x),
            "gpt2_scores": count_ops(gpt2_score_passes(heads, seq, d, 1, p), *qkv),
            "gelu_elements": seq * ffn, "scores": heads * seq * seq}


def _split(pricer: Pricer, ops) -> dict[str, float]:
    got = {"gemm": 0.0, "attention core": 0.0, "eager score passes": 0.0, "other": 0.0}
    for op in ops:
        t, _ = pricer.compute.explain(op)
        key = ("gemm" if isinstance(op, Gemm) else "attention core"
               if isinstance(op, Attention) else "eager score passes"
               if op.name.startswith("attn_eager") else "other")
        got[key] += t
    return got


def _priced(pricer: Pricer, name: str, nbytes: float, kernels: int) -> float:
    return pricer.compute.explain(Elementwise(name, bytes=max(nbytes, 0.0),
                                              kernels=max(kernels, 0)))[0] if nbytes else 0.0


def row_parts(row_id: str) -> dict[str, Any]:
    chosen = chosen_config([row_id, FILE])
    if chosen is None:
        raise SystemExit(f"{row_id}: no prediction")
    res, cfg = chosen
    pricer, sh, m = Pricer(cfg), shard_of(cfg), cfg.model
    lf = layer_forward(cfg, sh, moe=False)
    lb = backward_of(lf, sh)
    hf = head_forward(cfg, sh)
    n_mb = cfg.num_microbatches
    layers = range(m.num_layers)
    acc = fp32_grad_accumulation(cfg, layers, True, True)
    parts = {
        "layer forward": _split(pricer, lf), "layer backward": _split(pricer, lb),
        "head": sum(pricer.compute.explain(op)[0] for op in hf + head_backward(cfg, sh, hf)),
        "embedding": sum(pricer.compute.explain(op)[0] for op in
                         embedding_forward(cfg, sh) + embedding_backward(cfg, sh)),
        "grad accumulation": sum(pricer.compute.explain(op)[0] for op in acc),
    }
    per_mb = (m.num_layers * (sum(parts["layer forward"].values())
                              + sum(parts["layer backward"].values()))
              + parts["head"] + parts["embedding"] + parts["grad accumulation"])
    c = eager_counts(m.hidden_size, m.ffn_size, m.num_attention_heads, cfg.training.seq_length,
                     m.attention_dropout)
    e, s = c["gelu_elements"], c["scores"]
    g, a = c["gelu_new"], c["gpt2_scores"]
    # what the op list prices for the same: its activation op (one fused GeLU before gelu60,
    # 4 + 6 bytes an element; now the eager chain); the unfused core's softmax (4 + 6) and
    # dropout (5 + 5) and hf_eager_score_ops (24 + 22)
    priced_scores = {"forward": (4 + 5 + 24) * s, "backward": (6 + 5 + 22) * s}
    priced_kernels = {"forward": 2 + 3, "backward": 2 + 3}
    act = next(op for op in lf if isinstance(op, Elementwise) and op.name == "gelu")
    act_bwd = backward_bytes(act)
    gelu_priced = {"forward": act.bytes, "backward": act_bwd[0]}
    gelu_kernels = {"forward": act.kernels, "backward": act_bwd[1]}
    extra = {}
    for d in ("forward", "backward"):
        extra[f"gelu_new {d}"] = _priced(pricer, "gelu_new", g[d]["bytes"] - gelu_priced[d],
                                         g[d]["kernels"] - gelu_kernels[d])
        extra[f"gpt2 scores {d}"] = (
            _priced(pricer, "gpt2_scores", a[d]["bytes"] - priced_scores[d],
                    a[d]["kernels"] - priced_kernels[d])
            if a[d]["bytes"] >= priced_scores[d] else
            -_priced(pricer, "gpt2_scores", priced_scores[d] - a[d]["bytes"], 0))
    extra_mb = m.num_layers * sum(extra.values())
    # the host: launches per micro-batch as the op lists count them, and with the kernels the
    # counts above add (gelu_new's, GPT-2's score passes beyond the priced ones), each at an
    # eager op's host cost
    ends = hf + head_backward(cfg, sh, hf) + embedding_forward(cfg, sh) \
        + embedding_backward(cfg, sh) + acc
    listed = m.num_layers * sum(launches(op) for op in lf + lb) + sum(launches(op) for op in ends)
    more = m.num_layers * sum(g[d]["kernels"] - gelu_kernels[d] + a[d]["kernels"]
                              - priced_kernels[d]
                              for d in ("forward", "backward"))
    measured_mb = res.measured / n_mb
    return {
        "row": row_id, "measured_s": res.measured, "predicted_s": res.predicted,
        "error_pct": 100 * (res.predicted / res.measured - 1),
        "micro_batches": n_mb, "measured_ms_per_micro_batch": 1e3 * measured_mb,
        "predicted_ms_per_micro_batch": 1e3 * per_mb,
        "parts_ms": {k: ({kk: 1e3 * vv for kk, vv in v.items()} if isinstance(v, dict)
                         else 1e3 * v) for k, v in parts.items()},
        "counted": {"gelu_new": {d: {k: g[d][k] / (e if k == "bytes" else 1)
                                     for k in ("kernels", "bytes")} for d in g},
                    "gelu_priced": {d: {"kernels": gelu_kernels[d],
                                        "bytes": gelu_priced[d] / e} for d in gelu_priced},
                    "gpt2_scores": {d: {k: a[d][k] / (s if k == "bytes" else 1)
                                        for k in ("kernels", "bytes", "matmuls")} for d in a},
                    "gelu_ops": g["forward"]["ops"], "score_ops": a["forward"]["ops"],
                    "score_backward_ops": a["backward"]["ops"]},
        "unpriced_per_layer_ms": {k: 1e3 * v for k, v in extra.items()},
        "unpriced_ms_per_micro_batch": 1e3 * extra_mb,
        "what_if_error_pct": 100 * ((per_mb + extra_mb) / measured_mb - 1),
        "launches_per_micro_batch": {"op lists": listed, "with the counted ones": listed + more},
        "host_ms_per_micro_batch_at_host_s_per_kernel": 1e3 * (listed + more) * HOST_S_PER_KERNEL,
        "host_us_per_launch_for_the_measured_time": 1e6 * measured_mb / (listed + more),
        "unpriced": [
            ("per-op host time of the eager stack at micro-batch 1 (Lightning 1.8 loop, torch "
             "1.14 autograd): not measured"),
            ("GPT-2's mask_value copied from the CPU with .to(device) (a host wait a layer) in "
             "the 4.2x-era _attn copies read; 4.25.1's own line not read"),
            "the 2022-12 stack's GEMM rates at m = 1024 (CUDA 11.8; priced by the roofline)"],
    }


def main(argv: list[str]) -> int:
    out = [row_parts(r) for r in ROWS]
    if "--json" in argv:
        print(json.dumps(out, indent=1))
        return 0
    for r in out:
        print(f"{r['row']}: measured {r['measured_ms_per_micro_batch']:.1f} ms a micro-batch, "
              f"predicted {r['predicted_ms_per_micro_batch']:.1f} ({r['error_pct']:+.1f} %)")
        for k, v in r["parts_ms"].items():
            print(f"  {k:20s} " + (", ".join(f"{kk} {vv:.3f}" for kk, vv in v.items())
                                   if isinstance(v, dict) else f"{v:.3f}") + " ms")
        for k, v in r["counted"].items():
            print(f"  counted {k}: {v}")
        for k, v in r["unpriced_per_layer_ms"].items():
            print(f"  not priced, per layer: {k:20s} {v:+.3f} ms")
        print(f"  not priced per micro-batch {r['unpriced_ms_per_micro_batch']:+.1f} ms: "
              f"error with them {r['what_if_error_pct']:+.1f} %")
        print(f"  launches per micro-batch {r['launches_per_micro_batch']}: host at "
              f"{HOST_S_PER_KERNEL * 1e6:.0f} us each "
              f"{r['host_ms_per_micro_batch_at_host_s_per_kernel']:.1f} ms; the measured "
              f"micro-batch is {r['host_us_per_launch_for_the_measured_time']:.1f} us a launch")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
