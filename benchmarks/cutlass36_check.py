"""DeepGEMM's README compares each shape with DeepSeek's CUTLASS 3.6 kernels: those CUTLASS rates
priced by trainsim (diagnostic; nothing is fitted to them).

    PYTHONPATH=src python benchmarks/cutlass36_check.py [--markdown]

deepseek-ai/DeepGEMM README.md @327ec92f6977 (2025-04-09, the last commit with the tables;
H800 SXM5, NVCC 12.8, fp8 e4m3 with 1x128 activation and 128x128 weight scales, bf16 out)
gives, for every shape, DeepGEMM's TFLOPS and a "Speedup" over "our internally and carefully
optimized implementation based on CUTLASS 3.6". DeepGEMM's own rates are rows of
``kernels_published.csv`` already; the CUTLASS rate of a shape is DeepGEMM's over the speedup
(printed to 0.1x: about +-4 % at 1.2x, +-2 % at 2.7x). Each is priced here as a block-scaled
fp8 CUTLASS kernel (``validate.kernels.block_scales``: promotion between k blocks, ``serial``)
on the H800, dense GEMMs as ``gemm`` rows and the grouped ones (contiguous and masked layouts,
equal groups) as ``gemm_grouped`` rows with ``implementation = cutlass``
(``compute.grouped.GROUPED_OF_GEMM['cutlass']``). The rows are derived, not measured, and the
CUTLASS kernels are DeepSeek's, not a public build: this checks how far the shipped pricing
of a tuned CUTLASS block-scaled kernel is from one, beside vLLM #23280's CUTLASS rows
(``kernels_published.csv``), which time vLLM's own kernel.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from trainsim.validate.kernels import predict_kernel_row

README = "deepseek-ai/DeepGEMM README.md @327ec92f6977"

DENSE = (  # M, N, K, DeepGEMM TFLOPS, speedup over CUTLASS 3.6
    (64, 2112, 7168, 206, 2.7), (64, 24576, 1536, 289, 1.7), (64, 32768, 512, 219, 1.8),
    (64, 7168, 16384, 336, 1.4), (64, 4096, 7168, 287, 1.4), (64, 7168, 2048, 295, 1.7),
    (128, 2112, 7168, 352, 2.4), (128, 24576, 1536, 535, 1.6), (128, 32768, 512, 358, 1.5),
    (128, 7168, 16384, 645, 1.4), (128, 4096, 7168, 533, 2.0), (128, 7168, 2048, 510, 1.7),
    (4096, 2112, 7168, 1127, 1.2), (4096, 24576, 1536, 1212, 1.2),
    (4096, 32768, 512, 775, 1.2), (4096, 7168, 16384, 1520, 1.4),
    (4096, 4096, 7168, 1410, 1.3), (4096, 7168, 2048, 1168, 1.2),
)
GROUPED = (  # layout, groups, M per group, N, K, DeepGEMM TFLOPS, speedup
    ("contiguous", 4, 8192, 4096, 7168, 1346, 1.3), ("contiguous", 4, 8192, 7168, 2048, 1214, 1.3),
    ("contiguous", 8, 4096, 4096, 7168, 1346, 1.3), ("contiguous", 8, 4096, 7168, 2048, 1214, 1.2),
    ("masked", 1, 1024, 4096, 7168, 1233, 1.2), ("masked", 1, 1024, 7168, 2048, 925, 1.2),
    ("masked", 2, 512, 4096, 7168, 1040, 1.2), ("masked", 2, 512, 7168, 2048, 916, 1.2),
    ("masked", 4, 256, 4096, 7168, 932, 1.1), ("masked", 4, 256, 7168, 2048, 815, 1.2),
)
GPU = "h800-sxm-80gb"
NOTE = "1x128 activation / 128x128 weight block scales"


@dataclass(frozen=True)
class Check:
    label: str
    kind: str
    deepgemm: float
    cutlass: float
    predicted: float

    @property
    def time_error(self) -> float:
        """trainsim's time over the CUTLASS kernel's, less one."""
        return self.cutlass / self.predicted - 1.0


def _row(kind: str, m: int, n: int, k: int, groups: int | None, rate: float) -> dict[str, str]:
    return {"id": f"cutlass36-{kind}-{m}x{n}x{k}", "source": README, "gpu": GPU, "kind": kind,
            "implementation": "cutlass", "dtype": "fp8", "m": str(m), "n": str(n), "k": str(k),
            "groups": str(groups) if groups else "", "measured_value": str(rate),
            "measured_unit": "TFLOP/s", "note": NOTE}


def checks() -> list[Check]:
    out = []
    for m, n, k, tf, speedup in DENSE:
        rate = tf / speedup
        res = predict_kernel_row(_row("gemm", m, n, k, None, rate))
        out.append(Check(f"{m} x {n} x {k}", "gemm", tf, rate, res.predicted))
    for layout, g, mg, n, k, tf, speedup in GROUPED:
        rate = tf / speedup
        res = predict_kernel_row(_row("gemm_grouped", g * mg, n, k, g, rate))
        out.append(Check(f"{layout} {g} x {mg} x {n} x {k}", "gemm_grouped", tf, rate,
                         res.predicted))
    return out


def summary(rows: list[Check]) -> list[tuple[str, int, float, float]]:
    """(group, n, time MAPE, mean signed time error) for the dense rows by M and the grouped."""
    groups: dict[str, list[Check]] = {}
    for c in rows:
        key = c.kind if c.kind != "gemm" else f"gemm M={c.label.split(' x ')[0]}"
        groups.setdefault(key, []).append(c)
    return [(key, len(cs), sum(abs(c.time_error) for c in cs) / len(cs),
             sum(c.time_error for c in cs) / len(cs)) for key, cs in groups.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    md = ap.parse_args().markdown
    rows = checks()
    if md:
        print("| shape (H800, fp8 block-scaled) | DeepGEMM | CUTLASS 3.6 (DeepGEMM / speedup) | "
              "trainsim CUTLASS | time error |\n|---|---|---|---|---|")
    for c in rows:
        cells = [f"{c.kind} {c.label}", f"{c.deepgemm:.0f}", f"{c.cutlass:.0f}",
                 f"{c.predicted:.0f}", f"{c.time_error:+.1%}"]
        print("| " + " | ".join(cells) + " |" if md else "  ".join(cells))
    print()
    for key, n, mape, signed in summary(rows):
        print(f"{key}: {n} shapes, time MAPE {mape:.1%}, signed {signed:+.1%}")


if __name__ == "__main__":
    main()
