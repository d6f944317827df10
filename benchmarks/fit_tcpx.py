"""Fit ``scale_terms.TCPX_HOP_US`` and ``TCPX_BW_SHARE`` on the published GPUDirect-TCPX rows.

Rows: those of benchmarks/collectives_gcp_a3.csv with ``fabric = tcpx`` (SkyPilot's nccl-tests
all_reduce on 2 x a3-highgpu-8g, 128 KiB-2 GiB). Loss: mean |ln(predicted / measured)|; search:
golden section on the share in [0.4, 1] around golden section on the hop in [0, 400] us (as
``fit_efa``). One source, one node count: what can be held out is a size range, so the script
also fits on the rows of 16 MiB and more and predicts the smaller ones (``--split``).

usage: PYTHONPATH=src:benchmarks python benchmarks/fit_tcpx.py [--no-fit]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from fit_collectives import log_loss, ratios, stats
from fit_kernels import golden

from trainsim.collectives import scale_terms

ROOT = Path(__file__).resolve().parent
GCP_A3 = ROOT / "collectives_gcp_a3.csv"
SPLIT_BYTES = 16 * 2**20
"""Rows at or above this size fit the held-out check; the smaller ones are predicted."""


def _rows(path: Path) -> dict[str, int]:
    """id -> message bytes of the file's ``fabric = tcpx`` rows."""
    with path.open(newline="", encoding="utf-8") as f:
        return {r["id"]: int(r["message_bytes"]) for r in csv.DictReader(f)
                if (r.get("fabric") or "").strip() == "tcpx"}


def _ratios(path: Path, ids: set[str], hop: float, share: float) -> dict[str, float]:
    scale_terms.TCPX_HOP_US, scale_terms.TCPX_BW_SHARE = hop, share
    return ratios(path, ids)


def fit(path: Path, ids: set[str]) -> tuple[float, float]:
    """(hop us, share) minimising the mean |ln(predicted / measured)| over ``ids``."""
    def inner(share: float) -> float:
        return golden(lambda h: log_loss(_ratios(path, ids, h, share), ids), 0.0, 400.0, tol=0.5)

    share = golden(lambda s: log_loss(_ratios(path, ids, inner(s), s), ids), 0.4, 1.0, tol=2e-3)
    return inner(share), share


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=str(GCP_A3), help="a collectives file with tcpx rows")
    ap.add_argument("--no-fit", action="store_true", help="report the module's constants only")
    args = ap.parse_args(argv)
    path = Path(args.csv)
    sizes = _rows(path)
    ids = set(sizes)
    module = scale_terms.TCPX_HOP_US, scale_terms.TCPX_BW_SHARE
    print(f"TCPX rows: {len(ids)}")
    hop, share = module if args.no_fit else fit(path, ids)
    kind = "module" if args.no_fit else "fitted"
    for label, (h, s) in (("as InfiniBand (0 us, 1.0)", (0.0, 1.0)),
                          (f"{kind} ({hop:.1f} us, {share:.3f})", (hop, share))):
        print(f"{label:30s} {stats(_ratios(path, ids, h, s), ids)}")
    if not args.no_fit:
        big = {i for i, b in sizes.items() if b >= SPLIT_BYTES}
        h, s = fit(path, big)
        r = _ratios(path, ids, h, s)
        print(f"fitted on >= 16 MiB ({h:.1f} us, {s:.3f}): fitted {stats(r, big)}")
        print(f"{'':30s} predicted < 16 MiB {stats(r, ids - big)}")
    print(f"per row at ({hop:.1f} us, {share:.3f}), predicted / measured:")
    r = _ratios(path, ids, hop, share)
    for i in sorted(ids, key=sizes.__getitem__):
        print(f"  {i:38s} {r[i]:6.3f}")
    scale_terms.TCPX_HOP_US, scale_terms.TCPX_BW_SHARE = module
    return 0


if __name__ == "__main__":
    sys.exit(main())
