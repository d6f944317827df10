"""How far would Blackwell's bf16 rates have to move to close the bf16 gpt-oss gap? (issue 17
items 1, 2, 4; a diagnostic: nothing here feeds trainsim.)

    python benchmarks/blackwell_bf16_rates.py

1. cuDNN's sliding-window attention at head dim 64 on GB200, priced as trainsim prices it
   (``RooflineModel`` on an ``Attention`` op, ``impl="cudnn"``, window 128, causal). Source:
   NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/gpt_oss/gb200/
   gpt_oss_20260424_100011.csv @ fb682ce761a2 (configs/gpt_oss.py: 128 query and 128 KV heads,
   head dim 64, ``top_left`` mask with ``sliding_window_size`` 128, batch 2, 10 iterations;
   cuDNN backend 9.22.0, frontend 1.21.1; bf16, non-deterministic backward). Times in ms, the
   GPU at its burst clock as ``trainsim validate`` prices a kernel row. The kernel file has no
   window column, so these rows live here; the full-attention head-dim-64 rows of the same
   model are in ``benchmarks/kernels_blackwell.csv`` (``cudnnfe-*-gptoss-full-*``).
2. The four gpt-oss-120b Bridge points (public H100 and B200 rows, the GB200 bf16 26.04.01 table
   point of ``benchmarks/gptoss_points.py``, the held-out GB200 MXFP8 26.06 row) predicted with
   one rate scaled at a time: Blackwell bf16 GEMMs (``compute.roofline.gemm_rate``), every GPU's
   memory-bound kernels (``HBM_EFFICIENCY``), the host's cost per launch (``HOST_S_PER_KERNEL``).
3. Blackwell Ultra against Blackwell on the same bf16 recipe (the 26.04.01 table: B300 15,232 and
   GB300 19,200 tokens/s/GPU beside B200 13,568 and GB200 16,640; same bf16 and fp8 tensor peaks,
   more board power, twice the exponential rate): measured and predicted speed-ups.
"""

from __future__ import annotations

import csv
import dataclasses
import subprocess
import sys
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import host, roofline
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row
from trainsim.workload.ops import Attention

# (tokens per sequence, pass, measured ms), bf16, batch 2, non-deterministic backward
CUDNN_GB200_SWA_HD64 = [
    (2048, "fwd", 0.109), (2048, "bwd", 0.237),
    (4096, "fwd", 0.210), (4096, "bwd", 0.465),
    (8192, "fwd", 0.414), (8192, "bwd", 0.911),
    (16384, "fwd", 0.822), (16384, "bwd", 1.818),
    (32768, "fwd", 2.634), (32768, "bwd", 3.692),
]

HERE = Path(__file__).parent


def window_attention() -> None:
    # a kernel benchmark runs one GPU alone at its burst clock (as ``validate.kernels`` prices)
    model = roofline.RooflineModel(dataclasses.replace(catalog_gpu("gb200"), sustained_of_burst=1.0))
    print("cuDNN window-128 attention, head dim 64, GB200 (ms)")
    print(f"{'tokens':>7s} {'pass':>4s} {'measured':>9s} {'predicted':>9s} {'error':>7s}")
    for tokens, kind, ms in CUDNN_GB200_SWA_HD64:
        op = Attention("swa", 2, 128, 128, tokens, tokens, 64, causal=True, window=128,
                       backward=kind == "bwd", impl="cudnn")
        t = model.time(op) * 1e3
        print(f"{tokens:7d} {kind:>4s} {ms:9.3f} {t:9.3f} {100 * (t / ms - 1):+6.1f}%")


def points() -> list[tuple[str, dict[str, str]]]:
    public = {r["id"]: r for r in csv.DictReader((BUNDLED_DIR / "training_public.csv").open())}
    held = {r["id"]: r for r in csv.DictReader((HERE / "training_heldout.csv").open())}
    b200 = public["bridge2604p1-gpt-oss-120b-b200-64"]
    # Megatron-Bridge docs/performance-summary-archive.md @ 067f987df03b, '26.04.01', DGX-GB200
    # BF16: 16,640 tokens/s/GPU at GBS 1280 (as benchmarks/gptoss_points.py)
    gb200 = dict(b200) | {"gpu": "gb200", "gpus_per_node": "64", "ep": "64",
                          "measured_iteration_s": str(1280 * 4096 / (16640 * 64))}
    return [("h100 bf16 (public)", public["bridge2604p1-gpt-oss-120b-h100-64"]),
            ("b200 bf16 (public)", b200), ("gb200 bf16 26.04.01", gb200),
            ("gb200 mxfp8 26.06 (held-out)", held["bridge2606-gpt-oss-120b-gb200-64-mxfp8"])]


def _blackwell(gpu_name: str) -> bool:
    return gpu_name.startswith(("b200", "gb200", "b300", "gb300"))


CASES = [("as priced", {})]
CASES += [(f"Blackwell bf16 GEMMs x{s}", {"gemm": s}) for s in (0.8, 0.65, 0.55)]
CASES += [(f"HBM efficiency {e}", {"hbm": e}) for e in (0.6, 0.45)]
CASES += [(f"host {us} us/launch", {"host": us * 1e-6}) for us in (45, 60)]


def one_case(index: int) -> None:
    """Print one case's signed errors (a fresh process each: priced ops are cached)."""
    label, change = CASES[index]
    rate, scale = roofline.gemm_rate, change.get("gemm", 1.0)

    def scaled(gpu, op):
        base = rate(gpu, op)
        return base * scale if _blackwell(gpu.name) and op.dtype == "bf16" else base

    roofline.gemm_rate = scaled
    roofline.HBM_EFFICIENCY = change.get("hbm", roofline.HBM_EFFICIENCY)
    host.HOST_S_PER_KERNEL = change.get("host", host.HOST_S_PER_KERNEL)
    errs = []
    for _, row in points():
        res = predict_training_row(dict(row))
        errs.append(100 * (res.predicted / res.measured - 1))
    print(f"{label:28s}" + "".join(f"{e:+21.1f}%" for e in errs), flush=True)


def sensitivity() -> None:
    rows = points()
    print("\ngpt-oss-120b points, signed error % (measured s in the header)")
    print(f"{'':28s}" + "".join(f"{label[:20]:>22s}" for label, _ in rows))
    print(f"{'':28s}" + "".join(f"{float(r['measured_iteration_s']):22.3f}" for _, r in rows),
          flush=True)
    for i in range(len(CASES)):
        subprocess.run([sys.executable, __file__, str(i)], check=True)


ULTRA = [("b200 ep8", {}, 13568), ("b300 ep8", {"gpu": "b300-sxm-288gb"}, 15232),
         ("gb200 ep64", {"gpu": "gb200", "gpus_per_node": "64", "ep": "64"}, 16640),
         ("gb300 ep64", {"gpu": "gb300", "gpus_per_node": "64", "ep": "64"}, 19200)]


def ultra() -> None:
    b200 = dict(points()[1][1])
    print("\nBlackwell Ultra vs Blackwell, bf16 gpt-oss-120b 26.04.01 (s per iteration)")
    res = {}
    for label, cells, tokens in ULTRA:
        row = b200 | cells | {"measured_iteration_s": str(1280 * 4096 / (tokens * 64))}
        r = predict_training_row(row)
        res[label] = (r.measured, r.predicted)
        print(f"{label:12s} measured {r.measured:6.3f} predicted {r.predicted:6.3f} "
              f"{100 * (r.predicted / r.measured - 1):+6.1f}%")
    for old, new in (("b200 ep8", "b300 ep8"), ("gb200 ep64", "gb300 ep64")):
        (mo, po), (mn, pn) = res[old], res[new]
        print(f"{new} over {old}: measured x{mo / mn:.3f}, predicted x{po / pn:.3f}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        one_case(int(sys.argv[1]))
    else:
        window_attention()
        sensitivity()
        ultra()
