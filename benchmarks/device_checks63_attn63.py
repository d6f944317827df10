"""The 63rd session's prepared GPU run for attn63: do the bundled H200 database's SDPA-flash
forward records (``trainsim profile``, 2026-11-27) still read 7-12 % below the same backend's
CUDA-graph timings (the s63 attention grid), and is it their GQA heads, their timing method
or the board?

    python3 benchmarks/device_checks63_attn63.py --out $OUT --budget-s 60   # the run tool
    python benchmarks/device_checks63_attn63.py --dry-run                   # the plan; no GPU

One section, ``sdpa_records``: SDPA's FLASH_ATTENTION and CUDNN_ATTENTION backends, causal,
head dim 128, batch 1, 32 query heads with 32, 8 and 4 KV heads, 4,096 and 8,192 tokens,
forward and backward, each timed two ways:

* as a kernel database record is timed: ``trainsim.profile.kernels.time_kernel`` on the
  profiler's own ``Kernel`` (its recipe: rotated input sets past the L2, up to 50 calls queued
  behind one sleep kernel, the median of the per-call events; the forward under ``no_grad``,
  the backward ``autograd.grad`` alone), so its 32-KV-head-8 and -4 rows repeat records of the
  bundled file (``src/trainsim/data/kernels/h200-sxm-141gb.json``) on today's board;
* as the s63 grid was (``device_checks54.attn_grid_graph``): one CUDA graph of 5 calls on one
  operand set between two events, median of 3, the backward as forward + backward less
  forward.

Writes ``kernels.csv`` (rows ``implementation`` ``sdpa_flash`` / ``cudnn``, the grid's method
only; validation/README.md's kernels format) and ``device_checks63_attn63.json`` (both methods,
microseconds, with the clocks ``nvidia-smi`` reads before and after).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from device_checks import sectioned_main
from device_checks59 import clocks

SEQS = (4096, 8192)
HEADS = 32
KV_HEADS = (32, 8, 4)
HEAD_DIM = 128
BACKENDS = {"flash2": ("FLASH_ATTENTION", "sdpa_flash"), "cudnn": ("CUDNN_ATTENTION", "cudnn")}
"""The profiler's impl -> (SDPA backend, this file's kernels-row implementation)."""
START_S = 20
SECTIONS = {"sdpa_records": (45, (f"SDPA flash / cuDNN, hd{HEAD_DIM} causal, kv {KV_HEADS} of "
                                  f"{HEADS} heads, {SEQS} tokens, fwd / bwd: profiler's method "
                                  "vs graph replay"))}


def causal_flops(seq: int, heads: int, backward: bool) -> float:
    """The grid's FLOP count of a causal call: 4 s^2 h d / 2, the backward 2.5x."""
    return 4.0 * seq * seq * heads * HEAD_DIM / 2 * (2.5 if backward else 1.0)


def _profiler_time(kernel_mod, device_mod, dev, impl, seq, kv, backward):
    """Seconds of one call as ``trainsim profile`` times a database record."""
    from trainsim.profile.shapes import Kernel
    dims = {"batch": 1, "heads": HEADS, "kv_heads": kv, "q_len": seq, "kv_len": seq,
            "head_dim": HEAD_DIM, "causal": True, "backward": backward, "ring": 1, "impl": impl}
    k = Kernel("attention", tuple(sorted(dims.items())))
    return kernel_mod.time_kernel(k, dev, device_mod.Budget()).median_s


def _graph_times(torch, tm, backend, seq, kv):
    """(forward, forward + backward) seconds of one call, as the s63 grid timed them."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q = torch.randn(1, HEADS, seq, HEAD_DIM, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(1, kv, seq, HEAD_DIM, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            for _ in range(2))

    def fwd():
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            return sdpa(q, k, v, is_causal=True, enable_gqa=kv != HEADS)
    go = torch.randn_like(fwd())
    return (tm.warm(lambda: fwd().detach(), reps=5, graph=True),
            tm.warm(lambda: torch.autograd.grad(fwd(), (q, k, v), go), reps=5, graph=True))


def sdpa_records(torch, ctx, res):
    from trainsim.profile import device as device_mod
    from trainsim.profile import kernels as kernel_mod
    dev = device_mod.CudaDevice()
    res.update(cases={}, failed=[], clocks_before=clocks())
    for impl, (backend, label) in BACKENDS.items():
        for seq in SEQS:
            for kv in KV_HEADS:
                case = f"{impl}-s{seq}-h{HEADS}-kv{kv}"
                if ctx["over"]():
                    res["failed"].append(f"{case}: budget spent")
                    continue
                try:
                    prof = [_profiler_time(kernel_mod, device_mod, dev, impl, seq, kv, b)
                            for b in (False, True)]
                    tf, tfb = _graph_times(torch, ctx["timer"], backend, seq, kv)
                except Exception as exc:  # noqa: BLE001 - the next case runs
                    res["failed"].append(f"{case}: {exc!r}"[:300])
                    continue
                res["cases"][case] = {"profile_fwd_us": round(prof[0] * 1e6, 2),
                                      "profile_bwd_us": round(prof[1] * 1e6, 2),
                                      "graph_fwd_us": round(tf * 1e6, 2),
                                      "graph_bwd_us": round((tfb - tf) * 1e6, 2)}
                cells = {"implementation": label, "dtype": "bf16", "batch": 1, "seq_len": seq,
                         "heads": HEADS, "kv_heads": kv, "head_dim": HEAD_DIM, "causal": 1,
                         "measured_unit": "TFLOP/s"}
                how = (f"SDPA {backend}, causal, one CUDA graph of 5 calls between two events, "
                       f"median of 3; the profiler's method (trainsim.profile time_kernel) "
                       f"{prof[0] * 1e6:.1f} us forward, {prof[1] * 1e6:.1f} us backward")
                ctx["add"](id=f"{ctx['tag']}-{case}-fwd", kind="attention_fwd",
                           measured_value=f"{causal_flops(seq, HEADS, False) / tf / 1e12:.5g}",
                           note=f"{how}; graph {tf * 1e6:.1f} us", **cells)
                if tfb > tf:
                    ctx["add"](id=f"{ctx['tag']}-{case}-bwd", kind="attention_bwd",
                               measured_value=f"{causal_flops(seq, HEADS, True) / (tfb - tf) / 1e12:.5g}",
                               note=f"{how}; graph forward + backward less forward "
                                    f"{(tfb - tf) * 1e6:.1f} us", **cells)
    res["clocks_after"] = clocks()


FUNCS = {"sdpa_records": sdpa_records}


def _digest(report: dict) -> dict:
    return {"cases": report["sections"].get("sdpa_records", {}).get("cases", {})}


def main(argv: list[str] | None = None) -> int:
    return sectioned_main(__doc__, "device_checks63_attn63", "dc63a", SECTIONS, FUNCS, START_S,
                          60.0, argv, _digest)


if __name__ == "__main__":
    sys.exit(main())
