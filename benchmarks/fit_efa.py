"""``fit_collectives.py --efa``: fit ``scale_terms.EFA_HOP_US`` and ``EFA_BW_SHARE`` on the
collectives file's all_reduce rows with ``fabric = efa`` only.

Loss: mean |ln(predicted / measured)| over the EFA all_reduce rows; search: golden section on
the share in [0.7, 1] around golden section on the hop cost in [0, 400] us. With one published
source (AWS p5, crazyguitar/aws-gpu-communication-benchmark) no source can be held out: each
node count is predicted instead by a fit on the other node counts (leave one node count out),
and the same study's all_to_all rows (another collective, never fitted) are reported apart.
"""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

from fit_collectives import log_loss, ratios, stats
from fit_kernels import golden

from trainsim.collectives import scale_terms


def _subset(path: Path, ids: set[str], out: Path) -> None:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(r for r in rows if r["id"] in ids)


def _ratios(path: Path, hop: float, share: float) -> dict[str, float]:
    scale_terms.EFA_HOP_US, scale_terms.EFA_BW_SHARE = hop, share
    return ratios(path)


def _fit(path: Path, ids: set[str]) -> tuple[float, float]:
    def inner(share: float) -> float:
        return golden(lambda h: log_loss(_ratios(path, h, share), ids), 0.0, 400.0, tol=0.5)

    share = golden(lambda s: log_loss(_ratios(path, inner(s), s), ids), 0.7, 1.0, tol=2e-3)
    return inner(share), share


def _nodes(row_id: str) -> int:
    return int(row_id.split("-")[1].split("x")[1]) // 8


def _all_reduce(path: Path, ids: set[str]) -> set[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return {r["id"] for r in csv.DictReader(f)
                if r["id"] in ids and r["collective"] == "all_reduce"}


def fit_efa(path: Path, efa_ids: set[str], no_fit: bool) -> int:
    """Fit on the EFA all_reduce rows; the other EFA rows (all_to_all, added 2026-11-26,
    31st session) are held out: reported, never fitted."""
    module = scale_terms.EFA_HOP_US, scale_terms.EFA_BW_SHARE
    ids = _all_reduce(path, efa_ids)
    held = efa_ids - ids
    with tempfile.TemporaryDirectory() as d:
        sub = Path(d) / "efa.csv"
        _subset(path, efa_ids, sub)
        print(f"EFA rows: {len(ids)} all_reduce fitted, {len(held)} others held out")
        hop, share = module if no_fit else _fit(sub, ids)
        kind = "module" if no_fit else "fitted"
        for label, (h, s) in (("as InfiniBand (0 us, 1.0)", (0.0, 1.0)),
                              (f"{kind} ({hop:.1f} us, {share:.3f})", (hop, share))):
            r = _ratios(sub, h, s)
            print(f"{label:28s} {stats(r, ids)}")
            if held:
                print(f"{'  held out':28s} {stats(r, held)}")
        if not no_fit:
            print("leave one node count out (fitted on the others, this one predicted):")
            for n in sorted({_nodes(i) for i in ids}):
                mine = {i for i in ids if _nodes(i) == n}
                h, s = _fit(sub, ids - mine)
                print(f"  {n:3d} nodes  hop {h:6.1f} us  share {s:.3f}  "
                      f"{stats(_ratios(sub, h, s), mine)}")
        print(f"per row at ({hop:.1f} us, {share:.3f}), predicted / measured:")
        r = _ratios(sub, hop, share)
        for i in sorted(ids, key=lambda x: (_nodes(x), int(x.rsplit("-", 1)[1][:-1]))):
            print(f"  {i:34s} {r[i]:6.3f}")
    scale_terms.EFA_HOP_US, scale_terms.EFA_BW_SHARE = module
    return 0
