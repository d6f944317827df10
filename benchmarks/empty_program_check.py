"""The empty-program probe's runs read back: their slopes, and part (2) checked against them.

    PYTHONPATH=src python benchmarks/empty_program_check.py            # tables
    PYTHONPATH=src python benchmarks/empty_program_check.py --markdown

``benchmarks/h200_2026-11-27/empty_program_probe.json`` and
``benchmarks/h100_2026-11-27/empty_program_probe.json`` (``empty_program_probe.py`` run on one
H200 and one H100 SXM by the device tool, 36th session) each hold (1) six launches of a VeOmni-like Triton grouped
GEMM with every group empty, 0.05-21 M programs, and (2) VeOmni's two MoE shapes' three expert
GEMMs (gate, up: N = ffn, K = hidden; down: N = hidden, K = ffn) with the routed rows spread
evenly over the experts, once over VeOmni's grid (``max_m`` = every routed row) and once over a
grid of the real row blocks only.

This script (a) refits part (1)'s least-squares line (slope = seconds per empty program
GPU-wide; ``compute.grouped.EMPTY_PROGRAM_SM_S`` is it times the SM count), (b) compares each
part (2) pair's measured difference with its empty programs times that slope, and (c) prices
part (2)'s launches with the shipped validator (``gemm_grouped`` rows: ``veomni`` for VeOmni's
grid, ``triton`` for the real blocks; roofline only, no kernel database) against the
measurement: a check of the whole price on a GPU and on launches no constant was fitted to.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from trainsim.validate.kernels import predict_kernel_row

HERE = Path(__file__).resolve().parent
PROBE = HERE / "h200_2026-11-27" / "empty_program_probe.json"
"""The run ``compute.grouped.EMPTY_PROGRAM_SM_S`` is taken from."""
PROBES = (PROBE, HERE / "h100_2026-11-27" / "empty_program_probe.json")
GPUS = {"NVIDIA H200": "h200-sxm-141gb", "NVIDIA H100 80GB HBM3": "h100-sxm-80gb"}
"""The catalog GPU of each probe's ``device`` (``torch.cuda.get_device_name``)."""


def load(path: Path = PROBE) -> dict:
    return json.loads(path.read_text())


def fit_line(probe: dict) -> tuple[float, float]:
    """(slope s per program, intercept s) of part (1)'s least-squares line."""
    pts = [(x["programs"], x["seconds"]) for x in probe["launches"]
           if x["part"] == "empty" and "seconds" in x]
    mx = statistics.fmean(p for p, _ in pts)
    my = statistics.fmean(t for _, t in pts)
    slope = (sum((p - mx) * (t - my) for p, t in pts)
             / sum((p - mx) ** 2 for p, _ in pts))
    return slope, my - slope * mx


def pairs(probe: dict) -> list[tuple[dict, dict]]:
    """Part (2)'s (VeOmni grid, real blocks) launches, in the order they ran."""
    grid = [x for x in probe["launches"] if x["part"].endswith("-veomni") and "seconds" in x]
    real = [x for x in probe["launches"] if x["part"].endswith("-real") and "seconds" in x]
    out = []
    for g in grid:
        match = next(r for r in real if r["part"] == g["part"].replace("-veomni", "-real")
                     and (r["n"], r["k"]) == (g["n"], g["k"]))
        real.remove(match)
        out.append((g, match))
    return out


def empty_of(grid: dict, real: dict) -> int:
    """Programs of VeOmni's grid that exit at once: every real row block has a program in both
    grids (the groups are equal, so the real grid is all real)."""
    return grid["programs"] - real["programs"]


def priced(launch: dict, impl: str, gpu: str) -> float:
    """The shipped validator's seconds for one part (2) launch as a ``gemm_grouped`` row."""
    row = {"id": launch["part"], "gpu": gpu, "kind": "gemm_grouped", "implementation": impl,
           "dtype": "bf16", "m": str(launch["rows"]), "n": str(launch["n"]),
           "k": str(launch["k"]), "groups": str(launch["groups"]),
           "measured_value": str(launch["seconds"]), "measured_unit": "s", "note": "",
           "source": "empty_program_probe.py"}
    res = predict_kernel_row(row, compute_db=None)
    if res.error:
        raise ValueError(res.error)
    return res.predicted


def report(markdown: bool = False) -> str:
    lines: list[str] = []
    for path in PROBES:
        lines += _report(load(path), markdown) + [""]
    return "\n".join(lines)


def _report(probe: dict, markdown: bool) -> list[str]:
    gpu = GPUS[probe["device"]]
    slope, intercept = fit_line(probe)
    sms = probe["sms"]
    title = (f"{probe['device']} ({sms} SMs), part (1): slope {slope * 1e9:.4f} ns a program "
             f"GPU-wide ({slope * sms * 1e9:.1f} ns of one SM; the file's "
             f"{probe['empty_program_s'] * 1e9:.4f} / "
             f"{probe['empty_program_s_per_sm'] * 1e9:.1f}), intercept {intercept * 1e6:.1f} us")
    lines = [title, ""]
    head = ("| shape (n x k) | empty programs | measured grid - real ms | empties x slope ms | "
            "ratio | real ms | grid ms | trainsim real / grid ms | error real / grid |")
    if markdown:
        lines += [head, "|---|---|---|---|---|---|---|---|---|"]
    totals: dict[str, list[float]] = {}
    for g, r in pairs(probe):
        empty = empty_of(g, r)
        diff = g["seconds"] - r["seconds"]
        t_real, t_grid = priced(r, "triton", gpu), priced(g, "veomni", gpu)
        shape = g["part"].removesuffix("-veomni").removeprefix("veomni-")
        acc = totals.setdefault(shape, [0.0] * 6)
        for i, v in enumerate((diff, empty * slope, r["seconds"], g["seconds"], t_real, t_grid)):
            acc[i] += v
        cells = [f"{shape} {g['n']}x{g['k']}", f"{empty:,}", f"{diff * 1e3:.3f}",
                 f"{empty * slope * 1e3:.3f}", f"{diff / (empty * slope):.2f}",
                 f"{r['seconds'] * 1e3:.3f}", f"{g['seconds'] * 1e3:.3f}",
                 f"{t_real * 1e3:.3f} / {t_grid * 1e3:.3f}",
                 f"{t_real / r['seconds'] - 1:+.1%} / {t_grid / g['seconds'] - 1:+.1%}"]
        lines.append(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    for shape, (diff, est, real, grid, t_real, t_grid) in totals.items():
        cells = [f"{shape} all three", "", f"{diff * 1e3:.3f}", f"{est * 1e3:.3f}",
                 f"{diff / est:.2f}", f"{real * 1e3:.3f}", f"{grid * 1e3:.3f}",
                 f"{t_real * 1e3:.3f} / {t_grid * 1e3:.3f}",
                 f"{t_real / real - 1:+.1%} / {t_grid / grid - 1:+.1%}"]
        lines.append(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    print(report(ap.parse_args().markdown))


if __name__ == "__main__":
    main()
