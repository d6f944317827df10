"""Rebuild ``kernels_h200_grouped54.csv`` (grouped GEMMs measured on one H200, 54th session) from
the two ``device_checks54.py`` reports in ``h200_2026-11-28_s54/``.

    python benchmarks/kernels_h200_grouped54.py          # write the CSV
    python benchmarks/kernels_h200_grouped54.py --check  # exit 1 if the CSV differs from a rebuild

Kept: the GPU-side timings. Run 2 (``run2/device_checks54.json``, every call inside one CUDA
graph): bf16 ``torch._grouped_mm`` over equal groups (``grouped_graph``), the same GEMMs as one
``torch.mm`` a group on 1 stream (``loop``) and on 4 streams round-robin (``multi_stream``,
Transformer Engine's ``GroupedLinear`` scheme), ``torch._grouped_mm`` over the uneven groups of
top-8 routing (``grouped_ragged``), the weight gradient as one ``torch._grouped_mm`` with the
groups along the reduction (``grouped_wgrad``) and the dense ``torch.mm`` it was timed against.
Run 1 (``device_checks54.json``, eager calls back to back): fp8 ``torch._scaled_grouped_mm``
with fast accumulation off and on (``grouped_fp8``), where its time is at least
``EAGER_FLOOR_S``.

Left out: run 1's eager bf16 rows (``grouped``: the same 80 shapes run 2 timed as graphs; below
~50 us the eager ``_grouped_mm`` times sit on the host's floor, 1.6-3.0x the graphed ones) and
its eager ``loop`` rows (a Python loop of ``torch.mm``, ~29 us of host a GEMM: not a GPU price).

The weight-gradient rows use the file format's grouped convention for the per-group GEMM each
expert's gradient is: C[k x n] = x_g^T[k x r] dy_g[r x n], so ``m`` = groups x k (the output rows
of all groups), ``n``, ``k`` = r (a group's rows, the reduction), as ``workload.layers`` builds
an expert's weight-gradient GEMM (``m=op.k, k=op.m``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUN_DIR = HERE / "h200_2026-11-28_s54"
OUT = HERE / "kernels_h200_grouped54.csv"
GPU = "h200-sxm-141gb"
EAGER_FLOOR_S = 100e-6
"""Shortest eager (run 1) time kept: twice the ~50 us floor that run 1's smallest eager
``_grouped_mm`` calls sat on (47.5-50.6 us against 16-43 us graphed in run 2), so a kept row's
call outlasts its host work and the queue stays ahead of the GPU."""
COLUMNS = ("id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups",
           "batch", "seq_len", "heads", "kv_heads", "head_dim", "causal", "tokens", "hidden",
           "ffn", "experts", "top_k", "bytes", "measured_value", "measured_unit", "note")


def _source(report: dict, run: str) -> str:
    env = report["env"]
    return (f"trainsim benchmarks/device_checks54.py {run} (benchmarks/h200_2026-11-28_s54, 2026-11-28), "
            f"measured on one NVIDIA H200 (132 SMs), torch {env['torch']}, CUDA {env['cuda']}, CUDA events")


def _shape(case: str) -> tuple[str, str, int, int]:
    """(model, projection, groups, rows a group) of a case name 'qwen3-30b-a3b-fc1-g8-r128'."""
    head, g, r = case.rsplit("-", 2)
    model, proj = head.rsplit("-", 1)
    return model, proj, int(g[1:]), int(r[1:])


def _row(rid: str, source: str, kind: str, impl: str, dtype: str, m: int, n: int, k: int,
         groups: int | None, seconds: float, note: str) -> dict[str, str]:
    row = dict.fromkeys(COLUMNS, "")
    groups_flops = 2.0 * m * n * k
    row.update(id=rid, source=source, gpu=GPU, kind=kind, implementation=impl, dtype=dtype,
               m=str(m), n=str(n), k=str(k), groups=str(groups) if groups else "",
               measured_value=f"{groups_flops / seconds / 1e12:.5g}", measured_unit="TFLOP/s",
               note=note)
    return row


def rows(run1: dict, run2: dict) -> list[dict[str, str]]:
    """Every kept measurement as a kernels-file row (the module docstring says which)."""
    out = []
    graphed = run2["sections"]["grouped_graph"]["cases"]
    shapes = {c: v for c, v in run1["sections"]["grouped"]["cases"].items()}
    src2, src1 = _source(run2, "run 2"), _source(run1, "run 1")
    for case, t in graphed.items():
        model, proj, g, r = _shape(case)
        k, n = shapes[case]["k"], shapes[case]["n"]
        where = f"experts of {model} {proj}, {r} rows a group, L2 warm, one CUDA graph"
        out.append(_row(f"dc54g-h200-{case}-cutlass-graph", src2, "gemm_grouped", "cutlass", "bf16",
                        g * r, n, k, g, t["grouped_us"] * 1e-6,
                        f"torch._grouped_mm, {where}; {t['grouped_us']:.1f} us"))
        for impl, streams in (("loop", 1), ("multi_stream", 4)):
            us = t[f"{impl}_us"]
            out.append(_row(f"dc54g-h200-{case}-{impl}-graph", src2, "gemm_grouped", impl, "bf16",
                            g * r, n, k, g, us * 1e-6,
                            f"one torch.mm a group on {streams} stream(s), {where}; {us:.1f} us"))
    for case, t in run1["sections"]["grouped_fp8"]["cases"].items():
        model, proj, g, r = _shape(case)
        k, n = shapes[case]["k"], shapes[case]["n"]
        for fast in (0, 1):
            us = t[f"fast{fast}_us"]
            if us * 1e-6 < EAGER_FLOOR_S:
                continue
            out.append(_row(f"dc54g-h200-{case}-fp8-fast{fast}", src1, "gemm_grouped", "cutlass", "fp8",
                            g * r, n, k, g, us * 1e-6,
                            f"torch._scaled_grouped_mm, row-wise scales, use_fast_accum={bool(fast)}; "
                            f"experts of {model} {proj}, {r} rows a group, L2 warm, eager calls; {us:.1f} us"))
    for case, t in run2["sections"]["grouped_ragged"]["cases"].items():
        model, rest = case.split("-fc1-")
        g = int(rest.split("-")[0][1:])
        k, n = next((v["k"], v["n"]) for c, v in shapes.items() if c.startswith(f"{model}-fc1-"))
        sz = t["sizes"]
        out.append(_row(f"dc54g-h200-{case}-ragged", src2, "gemm_grouped", "cutlass", "bf16",
                        t["rows"], n, k, g, t["ragged_us"] * 1e-6,
                        f"torch._grouped_mm, experts of {model} fc1, top-8 routing with expert skew "
                        f"{case.rsplit('skew', 1)[1]}: groups of {min(sz)}-{max(sz)} rows, one CUDA graph; "
                        f"{t['ragged_us']:.1f} us; equal groups {t['even_us']:.1f} us"))
    for case, t in run2["sections"]["grouped_wgrad"]["cases"].items():
        model, proj, g, r = _shape(case)
        k, n = shapes[case]["k"], shapes[case]["n"]
        out.append(_row(f"dc54g-h200-{case}-wgrad", src2, "gemm_grouped", "cutlass", "bf16",
                        g * k, n, r, g, t["wgrad_us"] * 1e-6,
                        f"torch._grouped_mm weight gradient x^T dy, groups along the reduction: {g} "
                        f"GEMMs of {k} x {n} over {r} rows; experts of {model} {proj}, one CUDA graph; "
                        f"{t['wgrad_us']:.1f} us"))
        out.append(_row(f"dc54g-h200-{case}-wgrad-dense", src2, "gemm", "cublas", "bf16",
                        k, n, g * r, None, t["dense_us"] * 1e-6,
                        f"torch.mm of x^T (k, M) and dy (M, n), the weight gradient's dense twin; "
                        f"experts of {model} {proj}, one CUDA graph; {t['dense_us']:.1f} us"))
    return out


def render(run_dir: Path = RUN_DIR) -> str:
    run1 = json.loads((run_dir / "device_checks54.json").read_text())
    run2 = json.loads((run_dir / "run2" / "device_checks54.json").read_text())
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows(run1, run2))
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed CSV")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        same = OUT.exists() and OUT.read_text() == text
        print(f"{OUT.name}: {'up to date' if same else 'differs from a rebuild'}")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT.name}: {text.count(chr(10)) - 1} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
