"""Attention rows of kernel files, MAPE and mean signed error per GPU, kind, implementation and
the model that priced them (a kernel database or the roofline): the 63rd session's (attn63)
tables.

    PYTHONPATH=src python benchmarks/attn63_breakdown.py            # kernels_published + s63 grid
    PYTHONPATH=src python benchmarks/attn63_breakdown.py FILE.csv ...

Signed error is in the row's unit (TFLOP/s: positive = priced faster than measured).
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

from trainsim.validate import validate_file

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = (ROOT / "src/trainsim/data/validation/kernels_published.csv",
           ROOT / "benchmarks/h200_2026-11-29_s63/attn_moe/kernels.csv")


def groups(path: Path) -> dict[tuple[str, ...], list[float]]:
    """{(gpu, kind, implementation, model): [signed errors]} of the file's attention rows."""
    _, rows = validate_file(path)
    out: dict[tuple[str, ...], list[float]] = collections.defaultdict(list)
    for r in rows:
        kind = r.extra.get("kind", "")
        if r.predicted is None or "attention" not in kind:
            continue
        model = str(r.chosen.get("model", "?"))
        model = "database" if model.startswith("database") else model
        err = (r.predicted - r.measured) / r.measured
        key = (str(r.extra.get("gpu", "?")), kind, str(r.extra.get("implementation", "?")))
        out[key + ("all",)].append(err)
        out[key + (model,)].append(err)
    return out


def main(argv: list[str]) -> None:
    for path in [Path(a) for a in argv] or DEFAULT:
        print(f"== {path.name}")
        for key, errs in sorted(groups(path).items()):
            mape = 100 * sum(abs(e) for e in errs) / len(errs)
            print(f"  {' '.join(key):58s} n={len(errs):4d}  MAPE {mape:5.1f} %  "
                  f"signed {100 * sum(errs) / len(errs):+6.1f} %")


if __name__ == "__main__":
    main(sys.argv[1:])
