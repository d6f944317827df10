"""Memory-bound kernels beside a kernel that holds whole SMs: the bytes one SM streams per clock.

    PYTHONPATH=src python benchmarks/memheld48_fit.py             # the fit and every case
    PYTHONPATH=src python benchmarks/memheld48_fit.py --markdown  # the same for RESULTS.md

Data: the 47th session's ``norm_cast`` section of ``benchmarks/device_checks47.py`` on an H200
(``benchmarks/h200_2026-11-28_s47/device_checks47.json``) and an H100 80GB HBM3
(``benchmarks/h100_2026-11-28_s47/dc47/device_checks47.json``): a fused RMSNorm (one program a
row; a persistent grid of 2 CTAs an SM) and a 1x128 fp8 cast at 4,096 / 16,384 x 7,168 and
8,192 x 2,048, alone and beside a Triton spin kernel of 20 or 32 programs that each fill an SM's
register file (so no CTA of the measured kernel shares their SMs), launched first on a second
stream.

Two models, each with one global constant ``b``, the bytes one SM moves per SM clock:

* *hard* (the brief's): a streaming kernel on ``n`` SMs moves ``min(B, n b f)`` bytes a second
  (``B`` = ``roofline.HBM_EFFICIENCY`` x HBM, ``f`` the max SM clock): beside ``h`` held SMs it
  slows by ``min(B, N b f) / min(B, (N - h) b f)``, not at all while the free SMs saturate the
  HBM, at most ``N / (N - h)``.
* *series* (the candidate ``benchmarks/candidates/memheld48_streaming_held.patch``'s
  ``roofline.STREAM_BYTES_PER_SM_CLOCK``): the SMs' time per byte and the
  HBM's add, ``1 / (n b f) + 1 / B`` (Little's law with a latency that grows with the HBM's
  load): the slowdown is ``1 + k h / (N - h)``, ``k = B / (B + N b f)``.

``b`` is fitted (grid of 0.01 B/clock, least squares of the slowdown) on the two fused kernels'
cases on both GPUs; the H100's ``cast_1x128-8192x2048`` is left out (its "alone" time was
disturbed: 220 us against 25 us on the H200, slowdowns of 0.36-1.23, the README says so), and
the eager multi-kernel RMSNorm is shown, not fitted (its bytes are several fp32 passes).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute.roofline import HBM_EFFICIENCY

HERE = Path(__file__).resolve().parent
RUNS = {"h200-sxm-141gb": HERE / "h200_2026-11-28_s47" / "device_checks47.json",
        "h100-sxm-80gb": HERE / "h100_2026-11-28_s47" / "dc47" / "device_checks47.json"}
HOLDS = (20, 32)
FITTED = ("rmsnorm_rows", "rmsnorm_persistent", "cast_1x128")
SERIES_B = 12.97
"""The series model's fit (bytes per SM per clock), as the candidate patch
``benchmarks/candidates/memheld48_streaming_held.patch`` carries it
(``roofline.STREAM_BYTES_PER_SM_CLOCK``; not in src: RESULTS.md, 48th session, memheld48)."""
DISTURBED = {("h100-sxm-80gb", "cast_1x128-8192x2048"), ("h100-sxm-80gb", "eager_rmsnorm-8192x2048")}
"""Cases whose "alone" time the H100 run disturbed (benchmarks/h100_2026-11-28_s47/README.md)."""


def cases() -> list[tuple[str, str, int, float, float]]:
    """(gpu, case, SMs held, measured slowdown, alone GB/s) of every measured case."""
    out = []
    for gpu, path in RUNS.items():
        sec = json.loads(path.read_text())["sections"]["norm_cast"]
        for name, c in sec["cases"].items():
            for h in HOLDS:
                out.append((gpu, name, h, c[f"beside{h}_slowdown"], c["GBps_alone"]))
    return out


def slowdown(gpu_name: str, held: float, b: float, model: str = "series") -> float:
    """A model's slowdown of a streaming kernel beside ``held`` SMs, ``b`` bytes/SM/clock."""
    g = catalog_gpu(gpu_name)
    hbm = g.hbm_bw_Bps * HBM_EFFICIENCY
    per_sm = b * g.max_sm_clock_mhz * 1e6
    n = g.num_sms
    if model == "hard":
        return min(hbm, n * per_sm) / min(hbm, (n - held) * per_sm)
    k = hbm / (hbm + n * per_sm)
    return 1.0 + k * held / (n - held)


def fitted(rows: list[tuple[str, str, int, float, float]]) -> list[tuple[str, str, int, float, float]]:
    return [r for r in rows if r[1].split("-")[0] in FITTED and (r[0], r[1]) not in DISTURBED]


def sse(rows: list[tuple[str, str, int, float, float]], b: float, model: str) -> float:
    return sum((slowdown(g, h, b, model) - m) ** 2 for g, _, h, m, _ in rows)


def fit(rows: list[tuple[str, str, int, float, float]], model: str = "series") -> float:
    """The least-squares b on a 0.01 B/clock grid from 4 to 40 (the hard model's loss is
    piecewise in b); rounded to the grid's 0.01."""
    grid = [4 + 0.01 * i for i in range(3601)]
    return round(min(grid, key=lambda b: sse(rows, b, model)), 2)


def mape(rows: list[tuple[str, str, int, float, float]], pred) -> float:
    return 100 * sum(abs(pred(g, h) - m) / m for g, _, h, m, _ in rows) / len(rows)


def report(markdown: bool) -> str:
    rows = cases()
    fit_rows = fitted(rows)
    b = {m: fit(fit_rows, m) for m in ("hard", "series")}
    share = lambda g, h: catalog_gpu(g).num_sms / (catalog_gpu(g).num_sms - h)
    summary = []
    for m in ("series", "hard"):
        summary.append(f"{m}: b = {b[m]:.2f} bytes per SM per clock; fitted cases "
                       f"{mape(fit_rows, lambda g, h, m=m: slowdown(g, h, b[m], m)):.2f} % MAPE")
        for gpu in RUNS:
            sel = [r for r in fit_rows if r[0] == gpu]
            g = catalog_gpu(gpu)
            hbm = g.hbm_bw_Bps * HBM_EFFICIENCY
            per_sm = b[m] * g.max_sm_clock_mhz * 1e6
            extra = (f"k = {hbm / (hbm + g.num_sms * per_sm):.3f}, alone rate "
                     f"{1e-9 / (1 / (g.num_sms * per_sm) + 1 / hbm):.0f} GB/s" if m == "series"
                     else f"n_sat = {hbm / per_sm:.1f} of {g.num_sms} SMs")
            summary.append(f"  {gpu}: {len(sel)} cases, "
                           f"{mape(sel, lambda g, h, m=m: slowdown(g, h, b[m], m)):.2f} % ({extra})")
    summary.append(f"1/(1-s) (the engine before): fitted cases {mape(fit_rows, share):.2f} %")
    for gpu in RUNS:
        summary.append(f"  {gpu}: {mape([r for r in fit_rows if r[0] == gpu], share):.2f} %")
    head = ["gpu", "case", "held", "alone GB/s", "measured", "1/(1-s)", "series", "hard"]
    table = []
    for gpu, name, h, m, gbps in rows:
        used = (gpu, name, h, m, gbps) in fit_rows
        tag = "" if used else (" (disturbed)" if (gpu, name) in DISTURBED else " (not fitted)")
        table.append([gpu, name + tag, str(h), f"{gbps:.0f}", f"{m:.3f}", f"{share(gpu, h):.3f}",
                      f"{slowdown(gpu, h, b['series']):.3f}",
                      f"{slowdown(gpu, h, b['hard'], 'hard'):.3f}"])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in table]
        return "\n".join(summary) + "\n\n" + "\n".join(out)
    widths = [max(len(r[i]) for r in [head, *table]) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in [head, *table]]
    return "\n".join(summary) + "\n\n" + "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true")
    print(report(ap.parse_args().markdown))


if __name__ == "__main__":
    main()
