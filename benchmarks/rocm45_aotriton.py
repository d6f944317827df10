"""torchtitan on MI300X (the two torchao rows, -31.6 / -44.6 % on main): SDPA on ROCm runs
AOTriton's kernels, priced by ``compute.attention_rocm`` (45th session, rocm45); this script
fits its constant and shows what it moves.

    PYTHONPATH=src python benchmarks/rocm45_aotriton.py [--no-rows]   # ~20 s on 2 idle cores

1. *Attention against HipKittens' published CDNA 4 table.* HazyResearch/HipKittens@f09e9685
   (arXiv 2511.08083, Oct-Nov 2025) measured on one MI355X, bf16, B=16, H=16, D=128, causal:
   AITER (AMD's assembly kernels: ``tflops_ref`` in
   analysis/attn/{fwd,bkwd}/benchmark/mi355x_mha_*causal*.json), Composable Kernel's ck_tile
   example and PyTorch SDPA (analysis/attn/fwd/plot.py L61-L83, analysis/attn/bkwd/plot.py
   L20-L42; the CK backward from its wall time, as plot.py's ``efficiency``). Printed beside
   trainsim's ``ck`` (the flash2 family at the GPU's GEMM ceiling) and ``sdpa`` (AOTriton).
2. *The fit*: ``AOTRITON_OF_FLASH2`` per direction, least squares of log time over the five
   lengths (``fit_aotriton``); the test checks the shipped pair is this fit.
3. *The torchao rows* priced with SDPA on AMD as the flash2 family (main; in a child process,
   prices being cached per process) and as AOTriton, and the MI300X bf16 -> fp8 saving.

Every priced figure is trainsim's analytic model (no kernel database), as ``torchao_parts.py``.
"""

from __future__ import annotations

import argparse
import csv
import math
import subprocess
import sys
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import attention_rocm, roofline
from trainsim.validate.training import predict_training_row
from trainsim.workload.ops import Attention

HERE = Path(__file__).parent
SEQS = (1024, 2048, 4096, 8192, 16384)

# HazyResearch/HipKittens@f09e9685, MI355X, bf16, B=16, H=16, D=128, causal (TFLOP/s, the
# repository's own FLOP count: 4 B S^2 H D / 2 forward, x2.5 backward)
HK_AITER_FWD = {1024: 554.6, 2048: 876.3, 4096: 1069.0, 8192: 1173.2, 16384: 1247.4}
HK_AITER_BWD = {1024: 388.7, 2048: 673.1, 4096: 876.8, 8192: 1034.1, 16384: 1108.7}
HK_CK_FWD = {1024: 494.69, 2048: 610.53, 4096: 754.87, 8192: 843.54, 16384: 902.62}
HK_CK_BWD_MS = {1024: 0.666, 2048: 1.833, 4096: 6.032, 8192: 22.922, 16384: 81.486}
HK_SDPA_FWD = {1024: 54.832384, 2048: 246.376588, 4096: 421.775249, 8192: 630.386987,
               16384: 761.564515}
HK_SDPA_BWD = {1024: 109.51, 2048: 156.71, 4096: 142.82, 8192: 224.01, 16384: 259.14}
"""bkwd/plot.py lists the same SDPA backward figures for MHA (B16 H16) and GQA (B16 H64/8): one
of the two is a copy, so this column is the weakest of the table."""


def hk_flops(seq: int, backward: bool, batch: int = 16, heads: int = 16, hd: int = 128) -> float:
    f = 4 * batch * seq * seq * heads * hd / 2
    return 2.5 * f if backward else f


def priced_rate(gpu_name: str, seq: int, backward: bool, impl: str = "sdpa",
                batch: int = 16, heads: int = 16) -> float:
    """trainsim's TFLOP/s (HipKittens' FLOP count) for one causal hd128 call."""
    op = Attention("attn", batch, heads, heads, seq, seq, 128, True, backward=backward,
                   impl=impl)
    t = roofline.RooflineModel(catalog_gpu(gpu_name))._time(op)
    return hk_flops(seq, backward, batch, heads) / t / 1e12


def attention_table() -> list[tuple[int, bool, float, float, float, float, float]]:
    """(seq, backward, priced ck, AITER, CK, priced sdpa, SDPA) on MI355X, TFLOP/s."""
    out = []
    for backward in (False, True):
        for s in SEQS:
            ck = (hk_flops(s, True) / (HK_CK_BWD_MS[s] / 1e3) / 1e12 if backward
                  else HK_CK_FWD[s])
            out.append((s, backward, priced_rate("mi355x", s, backward, "ck"),
                        (HK_AITER_BWD if backward else HK_AITER_FWD)[s], ck,
                        priced_rate("mi355x", s, backward, "sdpa"),
                        (HK_SDPA_BWD if backward else HK_SDPA_FWD)[s]))
    return out


def fit_aotriton() -> tuple[float, float]:
    """``attention_rocm.AOTRITON_OF_FLASH2`` refitted: per direction, the factor whose priced
    SDPA time on ``mi355x`` best matches HipKittens' SDPA column over all five lengths (least
    squares of log time, golden section over 0.02..1)."""
    shipped = attention_rocm.AOTRITON_OF_FLASH2
    out = []
    for backward, measured in ((False, HK_SDPA_FWD), (True, HK_SDPA_BWD)):
        def loss(f: float, backward: bool = backward,
                 measured: dict[int, float] = measured) -> float:
            pair = list(shipped)
            pair[backward] = f
            attention_rocm.AOTRITON_OF_FLASH2 = tuple(pair)
            return sum(math.log(measured[s] / priced_rate("mi355x", s, backward)) ** 2
                       for s in SEQS)
        lo, hi = 0.02, 1.0
        g = (math.sqrt(5) - 1) / 2
        for _ in range(60):
            a, b = hi - g * (hi - lo), lo + g * (hi - lo)
            if loss(a) < loss(b):
                hi = b
            else:
                lo = a
        out.append(round((lo + hi) / 2, 3))
    attention_rocm.AOTRITON_OF_FLASH2 = shipped
    return out[0], out[1]


def priced_rows(path: Path, share: tuple[float, float] | None = None
                ) -> list[tuple[str, str, float, float]]:
    """(id, gpu, measured, predicted) of every row; ``share`` replaces AOTRITON_OF_FLASH2
    ((1, 1): SDPA on AMD priced as the flash2 family, as before the 45th session)."""
    if share is not None:
        attention_rocm.AOTRITON_OF_FLASH2 = share
    out = []
    with path.open(newline="") as fh:
        for r in csv.DictReader(fh):
            res = predict_training_row(r, compute_db=None)
            out.append((r["id"], r["gpu"], res.measured, res.predicted))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-rows", action="store_true", help="the attention table and fit only")
    ap.add_argument("--file", type=Path, default=HERE / "training_torchao.csv")
    args = ap.parse_args(argv)

    print("1. MI355X, bf16 B16 H16 D128 causal, TFLOP/s: trainsim vs HipKittens@f09e9685")
    print(f"{'dir':3s} {'seq':>6s} | {'ck priced':>9s} {'AITER':>6s} {'CK':>6s} {'pr/AITER':>8s} | "
          f"{'sdpa priced':>11s} {'SDPA':>6s} {'pr/meas':>7s}")
    for s, bwd, pc, ai, ck, ps, sd in attention_table():
        print(f"{'bwd' if bwd else 'fwd'} {s:6d} | {pc:9.0f} {ai:6.0f} {ck:6.0f} {pc / ai:8.3f} | "
              f"{ps:11.0f} {sd:6.0f} {ps / sd:7.3f}")
    fit = fit_aotriton()
    print(f"AOTRITON_OF_FLASH2 fitted {fit}, shipped {attention_rocm.AOTRITON_OF_FLASH2}")
    mi = [priced_rate("mi300x", 8192, b, batch=1, heads=32) for b in (False, True)]
    print(f"MI300X Llama3-8B call (B1 H32 S8192 causal, MHA-priced) as SDPA: fwd {mi[0]:.0f}, "
          f"bwd {mi[1]:.0f} TFLOP/s")
    if args.no_rows:
        return 0

    base = priced_rows(args.file)
    old = subprocess.run([sys.executable, __file__, "--flash2", str(args.file)], check=True,
                         capture_output=True, text=True).stdout
    before = {line.split(",")[0]: float(line.split(",")[1]) for line in old.splitlines()}
    print("\n2. torchao rows: SDPA on AMD as the flash2 family (main) and as AOTriton (this branch)")
    print(f"{'row':44s} {'gpu':14s} {'meas_s':>7s} {'main':>7s} {'err%':>6s} {'aotriton':>8s} "
          f"{'err%':>6s}")
    for rid, g, m, p in base:
        b = before[rid]
        print(f"{rid[:44]:44s} {g[:14]:14s} {m:7.3f} {b:7.3f} {100 * (b / m - 1):+6.1f} "
              f"{p:8.3f} {100 * (p / m - 1):+6.1f}")
    by = {rid: (m, before[rid], p) for rid, _, m, p in base}
    b16, f8 = by["ao2508-llama3-8b-mi300x-8-bf16"], by["ao2508-llama3-8b-mi300x-8-fp8-tensorwise"]
    print(f"\n3. MI300X bf16 -> fp8: measured saving {b16[0] - f8[0]:.3f} s "
          f"(x{b16[0] / f8[0]:.3f}); main {b16[1] - f8[1]:.3f} s (x{b16[1] / f8[1]:.3f}); "
          f"this branch {b16[2] - f8[2]:.3f} s (x{b16[2] / f8[2]:.3f})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--flash2":
        for rid, _, _, p in priced_rows(Path(sys.argv[2]), (1.0, 1.0)):
            print(f"{rid},{p}")
        sys.exit(0)
    sys.exit(main())
