"""cuDNN fused attention by release (benchmarks/kernels_cudnn_release.csv): cudnn-frontend's own
benchmark at cuDNN 9.1.0 (May 2024) and 9.4.0 (Sept 2024), on the FlashAttention-3 paper's hd128
shapes and packed BSHD layout. Held out: nothing is fitted on it."""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.validate import validate_file
from trainsim.validate.kernels import predict_kernel_row

ROOT = Path(__file__).resolve().parents[1]
RELEASES = ROOT / "benchmarks" / "kernels_cudnn_release.csv"
PUBLISHED = ROOT / "src" / "trainsim" / "data" / "validation" / "kernels_published.csv"


def _rows(path: Path, prefix: str) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh) if r["id"].startswith(prefix)}


def _ratio(row: dict[str, str]) -> float:
    res = predict_kernel_row(row)
    assert res.error is None, res.error
    return res.predicted / res.measured


def test_every_release_row_is_priced():
    _, results = validate_file(RELEASES, workers=1)
    assert len(results) == 42
    assert all(r.error is None and r.predicted for r in results)


def test_mid_2024_cudnn_forward_fits_and_the_fa3_paper_bars_sit_below_it():
    """cuDNN 9.1.0, the oldest Hopper release with a published forward on the paper's shapes,
    is priced within 5 % at 4k-16k tokens (0.96-1.02), while the paper's cuDNN bars at the same
    six shapes measure 4-10 % below it and are priced 4-13 % fast: the paper's forward is the
    outlier, not the release. Fails if the cuDNN forward fraction moves by about 5 %."""
    mine = _rows(RELEASES, "cudnnfe910-")
    paper = _rows(PUBLISHED, "fa3paper-h100-fwd-hd128-")
    pairs = 0
    for mask in ("nc", "causal"):
        for s in (4096, 8192, 16384):
            r = mine[f"cudnnfe910-fwdbwd-hd128-{mask}-s{s}-fwd"]
            p = paper[f"fa3paper-h100-fwd-hd128-{mask}-s{s}-cudnn"]
            assert abs(_ratio(r) - 1.0) <= 0.05
            assert float(p["measured_value"]) <= 0.965 * float(r["measured_value"])
            assert _ratio(p) > _ratio(r)
            pairs += 1
    assert pairs == 6
