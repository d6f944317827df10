"""The FlashAttention-3 paper's cuDNN and FA2 forward bars against the same shapes timed on the
36th session's H200 with today's libraries: which of the paper's misses are its release.

    PYTHONPATH=src python benchmarks/attention_release_shapes.py

Two sources at the same shapes (batch x sequence = 16k tokens, hidden 2048, head dim 64 /
128 / 256, sequence 512-16k, causal and not):

* the paper's Fig. 5 bars (``kernels_published.csv``, ids ``fa3paper-h100-fwd-...``): H100
  SXM5, cuDNN 9.1.1.17 and FlashAttention 2.5.8, "GPU clock speed fixed to 1830MHz" (FA3
  paper, arXiv 2407.08608, appendix C.1 "System and libraries");
* the device checks (``h200_2026-11-27/device_checks_kernels.csv``, ids
  ``dc-h200-attn-...``): H200, torch 2.11 SDPA's cuDNN backend (cuDNN 9.19) and its flash
  backend (FA2's kernels), free clocks. The H200 runs these kernels at the H100's rate
  (RESULTS.md, 36th session, kern36: 0.997 forward at > 1k tokens, same script, both GPUs).

Per direction (the paper's backward bars, Fig. 6, are non-causal), (implementation, head dim, mask): the geometric means over sequence lengths of the paper's
rate over the H200's, and of each source's priced time over its measured time (the roofline as
``fit_kernels.predict`` prices a kernel row: burst clock). FA2 is the harness reference: its
kernels changed little between 2.5.8 and torch 2.11's copy, so its paper/H200 ratio is what
the two harnesses and clocks differ by; cuDNN's ratio beyond it is the release.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fit_kernels
from h200_kernel_evidence import rows_by_id

PUBLISHED = fit_kernels.BUNDLED_DIR / "kernels_published.csv"  # the shared file, bundled
DEVICE_CHECKS = HERE / "h200_2026-11-27" / "device_checks_kernels.csv"
IMPLS = {"cudnn": "cudnn", "flash2": "fa2"}
"""Device-check implementation -> the paper row id's suffix."""


def _rows(path: Path, ids: set[str]) -> dict[str, tuple[object, float]]:
    """(loaded row, priced time / measured time) by id, for the ``ids`` in ``path``."""
    loaded, _ = rows_by_id(path)
    chosen = [(i, row) for i, row in loaded.items() if i in ids]
    priced = fit_kernels.predict([row for _, row in chosen])
    return {i: (row, float(t) / row.measured_s) for (i, row), t in zip(chosen, priced)}


def pairs(path_published: Path = PUBLISHED, path_checks: Path = DEVICE_CHECKS,
          direction: str = "fwd") -> list[tuple[str, int, int, int, float, float, float]]:
    """(implementation, head dim, causal, n, paper/H200 rate, paper priced/measured time,
    H200 priced/measured time), geometric means over the sequence lengths both sources hold."""
    keys = []
    for impl, suffix in IMPLS.items():
        for hd in (64, 128, 256):
            for causal in (0, 1):
                for s in (512, 1024, 2048, 4096, 8192, 16384):
                    mask = "causal" if causal else "nc"
                    keys.append((impl, hd, causal,
                                 f"fa3paper-h100-{direction}-hd{hd}-{mask}-s{s}-{suffix}",
                                 f"dc-h200-attn-{impl}-{direction}-hd{hd}-s{s}-c{causal}"))
    paper = _rows(path_published, {k[3] for k in keys})
    checks = _rows(path_checks, {k[4] for k in keys})
    out = []
    for impl in IMPLS:
        for hd in (64, 128, 256):
            for causal in (0, 1):
                both = [(paper[p], checks[c]) for i, h, m, p, c in keys
                        if (i, h, m) == (impl, hd, causal) and p in paper and c in checks]
                if not both:
                    continue
                # rate ratio = inverse time ratio; the FLOP counts of a shape are the same
                rate = [math.log(c[0].measured_s / p[0].measured_s) for p, c in both]
                out.append((impl, hd, causal, len(both), math.exp(statistics.mean(rate)),
                            math.exp(statistics.mean(math.log(p[1]) for p, _ in both)),
                            math.exp(statistics.mean(math.log(c[1]) for _, c in both))))
    return out


def main() -> int:
    print("| direction | kernel | head dim | causal | n | paper / H200 rate "
          "| paper priced / measured time | H200 priced / measured time |")
    print("|---|---|---|---|---|---|---|---|")
    for direction in ("fwd", "bwd"):
        for impl, hd, causal, n, rate, p, c in pairs(direction=direction):
            print(f"| {direction} | {impl} | {hd} | {causal} | {n} | {rate:.3f} | {p:.3f} "
                  f"| {c:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
