"""fp8 against bf16 on the same layout, measured and predicted (a diagnostic: nothing here feeds
trainsim; issue 17 items 1 and 4, 55th session).

    PYTHONPATH=src:benchmarks python benchmarks/fp8moe55_pairs.py [FILE ...] [--rows] [--epilogue]

For every fp8 row of each training file that has a bf16 row on the same model, GPUs, layout
(TP, PP, EP), batch and framework release, the measured and predicted fp8 / bf16 step ratios,
their difference (``gap``: < 0 where the prediction gives fp8 more than it gained) and the part
of the fp8 row's miss that the bf16 row does not share (``own``: (measured - predicted) of the
fp8 row minus that of the bf16 row, seconds): a miss that both dtypes share (a dtype-blind
cost the model lacks) makes ``gap`` negative with ``own`` near 0; a miss in what fp8 changes
makes ``own`` large. Default files: the dgxc check files that hold such pairs.

``--epilogue`` is a what-if, not trainsim: every GEMM that adds its output into an existing
buffer (a weight gradient into Megatron's ``main_grad``, ``Gemm.accumulate_bytes``) also pays
the epilogue bytes beyond the 16-bit store the fitted per-tile cost holds
(``roofline.GEMM_TILE_OVERHEAD_K``), at the HBM rate, after its main loop: ``m x n x (2 x
accumulate_bytes - 2)`` bytes (RESULTS.md, 55th session, fp8moe55).

``--kernels``: the kernel-level check of that epilogue: SimuMax's B200 weight-gradient GEMMs
(``benchmarks/kernels_simumax_b200.csv``, TE ``general_gemm`` with ``accumulate=True``) timed
into an fp32 and a bf16 ``main_grad`` at the same shape; the fp32 one's extra time over its 4
extra bytes an element at the HBM rate (0.85 of 8 TB/s): 0 if the epilogue hid under the main
loops, 1 if it ran after them.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = [str(HERE / f"training_{n}.csv") for n in (
    "dgxc", "dgxc2502", "dgxc2505", "dgxc_grok1", "dgxc_grok1_2505", "dgxc_llama4",
    "dgxc_llama31_2505")]
KEYS = ("model", "gpu", "num_gpus", "tp", "pp", "ep", "global_batch_size", "framework",
        "framework_version")


def epilogue_what_if() -> None:
    """Price every accumulating GEMM's extra epilogue bytes after its main loop (module doc)."""
    from trainsim.compute import roofline
    from trainsim.workload.ops import Gemm

    if hasattr(roofline, "accumulate_epilogue_s"):  # landed (compute.epilogue): nothing to add
        print("(the epilogue is priced by trainsim itself here: --epilogue adds nothing)")
        return
    plain = roofline.RooflineModel._time

    def _time(self, op):  # type: ignore[no-untyped-def]
        if not (isinstance(op, Gemm) and op.accumulate_bytes):
            return plain(self, op)
        # RooflineModel._time's GEMM branch with the extra epilogue bytes after the main loop
        bw = self.gpu.hbm_bw_Bps * roofline.HBM_EFFICIENCY
        compute = op.flops / (roofline.gemm_rate(self.gpu, op) * self.gemm_efficiency(op))
        if self.loop_toward is not None:
            compute *= roofline.loop_clock_factor(compute, self.loop_toward)
        compute += op.batch * op.m * op.n * (2 * op.accumulate_bytes - 2) / bw
        return max(compute, op.bytes / bw) + roofline.LAUNCH_S * roofline.grouped_launches(op)

    roofline.RooflineModel._time = _time  # type: ignore[method-assign]


def pairs(path: str) -> tuple[list[dict[str, object]], float]:
    """The file's fp8 / bf16 pairs and its MAPE."""
    from trainsim.validate import validate_file

    _, results = validate_file(path)
    pred = {r.id: r for r in results}
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for r in rows:
        if r["dtype"] != "fp8":
            continue
        twin = next((b for b in rows if b["dtype"] == "bf16"
                     and all(b.get(k) == r.get(k) for k in KEYS)), None)
        if twin is None:
            continue
        p8, p16 = pred.get(r["id"]), pred.get(twin["id"])
        if not (p8 and p16 and p8.predicted and p16.predicted and p8.measured and p16.measured):
            continue
        out.append({"id": r["id"], "gpu": r["gpu"], "moe": bool(r.get("num_experts"))
                    or "grok" in r["id"] or "llama4" in r["id"],
                    "measured": p8.measured / p16.measured,
                    "predicted": p8.predicted / p16.predicted,
                    "own": (p8.measured - p8.predicted) - (p16.measured - p16.predicted),
                    "step": p8.measured})
    done = [r for r in results if r.predicted and r.measured]
    mape = statistics.mean(abs(r.predicted / r.measured - 1.0) for r in done) if done else 0.0
    return out, mape


def kernel_epilogue_shares(path: Path = HERE / "kernels_simumax_b200.csv",
                           ) -> dict[str, list[float]]:
    """Per shape timed into both buffers, dense (``gemm``) and per-expert grouped
    (``gemm_grouped``, each group's ``N x K`` weight gradient): (t_fp32 - t_bf16) over the 4
    extra bytes an output element at the HBM rate."""
    import re

    from trainsim.catalog import gpu as catalog_gpu
    from trainsim.compute.roofline import HBM_EFFICIENCY

    times: dict[tuple[str, str, int, tuple[int, ...]], dict[str, float]] = {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            dense = re.search(r"accumulate=True, out_dtype=(\w+)", r["source"])
            grouped = re.search(r"-g(\d+)-m(\d+)-n(\d+)-k(\d+)-bwd-grad-w-(fp32|bf16)$", r["id"])
            rate = float(r["measured_value"]) * 1e12
            if r["kind"] == "gemm" and dense:
                m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
                key, buf, flops = (r["gpu"], "gemm", m * n, (m, n, k)), dense.group(1), 2.0 * m * n * k
            elif r["kind"] == "gemm_grouped" and grouped:
                g, rows, n, k = (int(x) for x in grouped.groups()[:4])
                key, buf = (r["gpu"], "gemm_grouped", g * n * k, (g, rows, n, k)), grouped.group(5)
                flops = 2.0 * g * rows * n * k
            else:
                continue
            times.setdefault(key, {})[buf] = flops / rate
    out: dict[str, list[float]] = {"gemm": [], "gemm_grouped": []}
    for (gpu, kind, elements, _), t in sorted(times.items()):
        if {"fp32", "bf16"} <= set(t):
            bw = catalog_gpu(gpu).hbm_bw_Bps * HBM_EFFICIENCY
            out[kind].append((t["fp32"] - t["bf16"]) / (4.0 * elements / bw))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="training CSVs (default: the dgxc pairs)")
    ap.add_argument("--rows", action="store_true", help="every pair, not only each file's mean")
    ap.add_argument("--epilogue", action="store_true", help="the accumulate-epilogue what-if")
    ap.add_argument("--kernels", action="store_true", help="the epilogue's kernel-level check")
    args = ap.parse_args()
    if args.kernels:
        for kind, shares in kernel_epilogue_shares().items():
            shares.sort()
            q = [shares[len(shares) * i // 4] for i in (1, 3)]
            print(f"{kind}: {len(shares)} shapes; the fp32 buffer's extra time over its extra "
                  f"bytes at the HBM rate: median {statistics.median(shares):.2f}, quartiles "
                  f"{q[0]:.2f} / {q[1]:.2f}")
        return 0
    if args.epilogue:
        epilogue_what_if()
    print(f"{'file / row':46s} {'n':>3s} {'MAPE':>6s} {'meas':>6s} {'pred':>6s} {'gap':>7s} "
          f"{'own s':>7s} {'own %':>6s}")
    for path in args.files or FILES:
        got, mape = pairs(path)
        if args.rows:
            for g in got:
                print(f"  {str(g['id'])[:44]:44s} {'':3s} {'':6s} {g['measured']:6.3f} "
                      f"{g['predicted']:6.3f} {g['predicted'] - g['measured']:+7.3f} "  # type: ignore[operator]
                      f"{g['own']:+7.2f} {100 * g['own'] / g['step']:+6.1f}")  # type: ignore[operator]
        if got:
            mean = {k: statistics.mean(float(g[k]) for g in got)  # type: ignore[arg-type]
                    for k in ("measured", "predicted", "own")}
            own_pct = statistics.mean(100 * float(g["own"]) / float(g["step"]) for g in got)  # type: ignore[arg-type]
            print(f"{Path(path).stem:46s} {len(got):3d} {100 * mape:5.1f}% {mean['measured']:6.3f} "
                  f"{mean['predicted']:6.3f} {mean['predicted'] - mean['measured']:+7.3f} "
                  f"{mean['own']:+7.2f} {own_pct:+6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
