"""Device check for llmc62 (< 3 min on one GPU; an A100 is the target, an H100 / H200 the analog).

Times, with CUDA events over back-to-back calls after warm-up, what the llm.c A100 rows are priced on:

1. cuBLAS bf16 GEMMs at the 124M step's shapes (m = 65,536 tokens; k = 768, 2,304, 3,072 and the
   65,536-token wgrads) and the 50,304-wide logits, in TFLOP/s: the small-k rate the
   roofline's tile overhead prices at 173-177 TFLOP/s on the A100 (benchmarks/llmc62_evidence.py);
2. SDPA forward and backward at head dim 64, causal, llm.c's b64 h12 s1024 and b32 h12 s2048,
   with the cuDNN and flash backends, each direction apart: the cuDNN / flash ratio the
   ``attention_family`` change (cuDNN below Hopper as the flash2 family) sets to ~1 on sm80.

Prints one JSON line per measurement and writes them to $OUT/device_checks62.jsonl when OUT is
set. Compare with ``PYTHONPATH=src:benchmarks python benchmarks/llmc62_evidence.py`` on the
GPU's catalog entry.

    python benchmarks/device_checks62_a100.py
"""
from __future__ import annotations

import json
import os
import sys

GEMMS = ((65536, 2304, 768), (65536, 768, 768), (65536, 3072, 768), (65536, 768, 3072),
         (65536, 50304, 768), (768, 3072, 65536), (768, 50304, 65536))
ATTN = ((64, 12, 1024), (32, 12, 2048))


def _time(fn, iters: int) -> float:
    import torch
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def main() -> int:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    dev = torch.cuda.get_device_name()
    out = []
    for m, n, k in GEMMS:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        t = _time(lambda a=a, b=b: a @ b, 20)
        out.append({"gpu": dev, "kind": "gemm", "m": m, "n": n, "k": k, "s": t,
                    "tflops": 2 * m * n * k / t / 1e12})
        del a, b
    for b, h, s in ATTN:
        q, k_, v = (torch.randn(b, h, s, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                    for _ in range(3))
        fwd_flops = 4 * b * h * s * s * 64 / 2  # causal
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    o = sdpa(q, k_, v, is_causal=True)
                    g = torch.randn_like(o)
                    tf = _time(lambda q=q, k_=k_, v=v: sdpa(q, k_, v, is_causal=True), 20)
                    tfb = _time(lambda q=q, k_=k_, v=v, g=g: torch.autograd.grad(
                        sdpa(q, k_, v, is_causal=True), (q, k_, v), g), 10)
            except RuntimeError as exc:  # a backend this build or GPU lacks
                out.append({"gpu": dev, "kind": "attention", "impl": name, "b": b, "h": h, "s": s,
                            "error": str(exc)[:200]})
                continue
            tb = max(tfb - tf, 1e-9)
            out.append({"gpu": dev, "kind": "attention", "impl": name, "b": b, "h": h, "s": s, "d": 64,
                        "fwd_s": tf, "bwd_s": tb, "fwd_tflops": fwd_flops / tf / 1e12,
                        "bwd_tflops": 2.5 * fwd_flops / tb / 1e12})
    for rec in out:
        print(json.dumps(rec))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "device_checks62.jsonl"), "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
