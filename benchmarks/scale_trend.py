"""Does trainsim under-price the cost of scale? Signed error against log2(GPUs) within each
source (diagnostics; nothing here feeds trainsim).

    python benchmarks/scale_trend.py                 # predicts every training file (minutes)
    python benchmarks/scale_trend.py --json DIR      # reads DIR/NAME.json instead, written by
        # `trainsim validate FILE --format json > DIR/NAME.json` (NAME: the file's stem)

Files: the public file (../shared/validation/training_public.csv, as published, no errata),
the held-out file and every ``benchmarks/training_*.csv`` check file (the errata file aside).

A *group* is the rows of one source (the ``source`` cell up to its first `` @ ``, ``,`` or
``;``, commit hashes dropped) on one model, GPU and dtype, at two or more GPU counts. A source
whose rows never repeat a (model, GPU, dtype) at two GPU counts is fitted whole and marked
``mixed`` (its model changes with the GPU count, e.g. Narayanan 2021 Table 1). Per group:
least-squares slope of the signed error (predicted / measured - 1, in percentage points) on
log2(num_gpus), i.e. points per doubling of the GPU count; its standard error (n > 2); the
range of the signed error; the scaling kind (``weak``: global batch per GPU constant,
``strong``: global batch constant, else ``other``); the largest DP and PP size; fp8 or not.

The pooled trend is the within-group slope (every group its own intercept, one slope:
sum (x - mean_g x)(y - mean_g y) / sum (x - mean_g x)^2), over all groups and over the groups
split by each feature. A negative slope: the prediction gets faster than the measurement as
the GPU count grows (scale under-priced).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT.parent / "shared" / "validation" / "training_public.csv"
if not PUBLIC.exists():
    PUBLIC = Path("/work/shared/validation/training_public.csv")


def training_files() -> list[Path]:
    """The public file, the held-out file, then every check file (not the errata file)."""
    checks = sorted(p for p in (ROOT / "benchmarks").glob("training_*.csv")
                    if p.stem not in ("training_errata", "training_heldout"))
    return [PUBLIC, ROOT / "benchmarks" / "training_heldout.csv", *checks]


def source_key(text: str) -> str:
    """The part of a ``source`` cell that names the source (a table, a README, a submitter)."""
    text = re.sub(r"\s*\(commit [0-9a-f]+\)", "", text)
    return re.split(r" @ |, |; |/results/", text, maxsplit=1)[0][:80].strip()


class Point(NamedTuple):
    id: str
    gpus: int
    signed: float  # percentage points
    row: dict[str, str]


class Group:
    """The rows of one source fitted together; ``label``: model/gpu/dtype (``*...``: the
    config too), or "mixed"."""

    def __init__(self, file: str, source: str, label: str, points: list[Point]) -> None:
        self.file, self.source, self.label, self.points = file, source, label, points

    @property
    def n(self) -> int:
        return len(self.points)

    def xs(self) -> list[float]:
        return [math.log2(p.gpus) for p in self.points]

    def ys(self) -> list[float]:
        return [p.signed for p in self.points]

    def fit(self) -> tuple[float, float | None]:
        """Slope (points per doubling) and its standard error (None for two points)."""
        return slope(self.xs(), self.ys())

    def kind(self) -> str:
        per_gpu = {float(p.row["global_batch_size"]) / p.gpus for p in self.points}
        batch = {float(p.row["global_batch_size"]) for p in self.points}
        if len(batch) == 1:
            return "strong"
        if max(per_gpu) <= 1.01 * min(per_gpu):
            return "weak"
        return "other"

    def fp8(self) -> bool:
        return any("fp8" in (p.row.get("dtype") or "") for p in self.points)

    def max_dp(self) -> int:
        return max(dp(p.row, p.gpus) for p in self.points)

    def max_pp(self) -> int:
        return max(_int(p.row.get("pp")) for p in self.points)

    def gpu(self) -> str:
        return "/".join(sorted({p.row["gpu"].split("-")[0] for p in self.points}))


def _int(text: str | None, default: int = 1) -> int:
    try:
        return int(float(text)) if text not in (None, "") else default
    except ValueError:
        return default


def dp(row: dict[str, str], gpus: int) -> int:
    """Data-parallel size: GPUs over TP x PP x CP (EP lives inside DP)."""
    return max(1, gpus // (_int(row.get("tp")) * _int(row.get("pp")) * _int(row.get("cp"))))


def slope(xs: list[float], ys: list[float]) -> tuple[float, float | None]:
    """Least-squares slope of ys on xs and its standard error (None when n <= 2)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    if n <= 2:
        return b, None
    resid = sum((y - my - b * (x - mx)) ** 2 for x, y in zip(xs, ys))
    return b, math.sqrt(resid / (n - 2) / sxx)


def pooled(groups: list[Group]) -> tuple[float, float | None, int]:
    """Within-group slope: one slope, each group its own intercept; its standard error and
    the number of points."""
    sxx = sxy = 0.0
    n = 0
    for g in groups:
        xs, ys = g.xs(), g.ys()
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx += sum((x - mx) ** 2 for x in xs)
        sxy += sum((x - mx) * (y - my) for x, y in zip(xs, ys))
        n += len(xs)
    if sxx == 0:
        return float("nan"), None, n
    b = sxy / sxx
    dof = n - len(groups) - 1
    if dof <= 0:
        return b, None, n
    resid = 0.0
    for g in groups:
        xs, ys = g.xs(), g.ys()
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        resid += sum((y - my - b * (x - mx)) ** 2 for x, y in zip(xs, ys))
    return b, math.sqrt(resid / dof / sxx), n


# what stays fixed in a "config" group: all but the GPU count, the global batch and the outcome
CONFIG_KEYS = ("tp", "pp", "cp", "ep", "vpp", "micro_batch_size", "seq_length", "recompute",
               "recompute_num_layers", "options", "framework_version", "fp8_recipe",
               "zero_stage", "distributed_optimizer", "attention")


def _label(row: dict[str, str], level: str) -> str:
    """Fixed model, GPU and dtype ("model"), and the parallel layout and settings too
    ("config": the label ends in ``*``)."""
    label = f"{row['model']}/{row['gpu']}/{row.get('dtype') or '?'}"
    if level == "config":
        label += "*" + "|".join(row.get(k) or "" for k in CONFIG_KEYS)
    return label


def _spans(points: list[Point]) -> bool:
    """At least a doubling of the GPU count between the group's smallest and largest row."""
    gpus = [p.gpus for p in points]
    return max(gpus) >= 2 * min(gpus)


def expected_max(n: int) -> float:
    """E[max of n independent standard normal draws] (0 for n = 1), by quadrature of
    x * n * phi(x) * Phi(x)^(n-1) on a fine grid."""
    if n <= 1:
        return 0.0
    dx = 1e-3
    total = 0.0
    for i in range(-9000, 9001):
        x = i * dx
        phi = math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        cdf = 0.5 * math.erfc(-x / math.sqrt(2))
        total += x * n * phi * cdf ** (n - 1) * dx
    return total


def stretched(results: dict[str, dict], rows: list[dict[str, str]], sigma: float,
              reference: int = 1) -> dict[str, dict]:
    """What-if (not a model): every prediction times 1 + sigma * E[max of N normals], N the
    row's GPU count: a synchronous step run at the pace of the slowest of N GPUs whose speeds
    scatter normally with relative standard deviation ``sigma`` (persistent per-GPU spread).
    ``reference`` > 1: the stretch counted from that many GPUs on (1 + sigma * (E_N - E_ref)),
    none below it, as if the model's constants already held the spread of ``reference`` GPUs."""
    if not sigma:
        return results
    cache: dict[int, float] = {}
    out = dict(results)
    for row in rows:
        r = results.get(row["id"])
        if not r or r.get("predicted") is None:
            continue
        n = _int(row["num_gpus"])
        if n not in cache:
            cache[n] = expected_max(n)
        if reference not in cache:
            cache[reference] = expected_max(reference)
        extra = max(0.0, cache[n] - cache[reference])
        out[row["id"]] = {**r, "predicted": r["predicted"] * (1 + sigma * extra)}
    return out


def file_errors(rows: list[dict[str, str]], results: dict[str, dict]) -> tuple[int, float, float]:
    """Rows, MAPE and mean signed error (%) of a file's predicted rows."""
    errs = [100.0 * (r["predicted"] / r["measured"] - 1.0) for r in
            (results.get(row["id"]) for row in rows)
            if r and r.get("predicted") is not None and r.get("measured")]
    if not errs:
        return 0, float("nan"), float("nan")
    return len(errs), sum(map(abs, errs)) / len(errs), sum(errs) / len(errs)


def make_groups(name: str, rows: list[dict[str, str]], results: dict[str, dict]) -> list[Group]:
    """Fixed-config groups of one file (else fixed-model groups), then whole ``mixed``
    sources where no group formed."""
    by_source: dict[str, list[Point]] = defaultdict(list)
    for row in rows:
        r = results.get(row["id"])
        if not r or r.get("predicted") is None or not r.get("measured"):
            continue
        signed = 100.0 * (r["predicted"] / r["measured"] - 1.0)
        by_source[source_key(row["source"])].append(
            Point(row["id"], _int(row["num_gpus"]), signed, row))
    out: list[Group] = []
    for src, points in by_source.items():
        found: list[Group] = []
        for level in ("config", "model"):
            fixed: dict[str, list[Point]] = defaultdict(list)
            for p in points:
                fixed[_label(p.row, level)].append(p)
            found = [Group(name, src, label, ps) for label, ps in fixed.items() if _spans(ps)]
            if found:
                break
        if not found and _spans(points):
            found = [Group(name, src, "mixed", points)]
        out.extend(found)
    return out


def load(path: Path, json_dir: Path | None) -> tuple[list[dict[str, str]], dict[str, dict]]:
    """A file's rows and its results by id (from DIR/NAME.json, or predicted here)."""
    from trainsim.validate import read_rows, validate_file

    _, rows = read_rows(path)
    if json_dir is not None:
        data = json.loads((json_dir / f"{path.stem}.json").read_text())
        return rows, {r["id"]: r for r in data["rows"]}
    _, results = validate_file(path)
    return rows, {r.id: r.to_dict() for r in results}


def table(groups: list[Group]) -> list[str]:
    lines = [(f"{'file':<16} {'source':<44} {'group':<34} {'n':>3} {'GPUs':>11} {'kind':<6} "
              f"{'fp8':<3} {'DP':>5} {'PP':>3} {'slope':>6} {'se':>5} {'signed range':>14}")]
    for g in groups:
        b, se = g.fit()
        gpus = sorted({p.gpus for p in g.points})
        ys = g.ys()
        label = g.label.split("*")[0] + ("*" if "*" in g.label else "")
        lines.append(
            f"{g.file[9:25]:<16} {g.source[:44]:<44} {label[:34]:<34} {g.n:>3} "
            f"{f'{gpus[0]}-{gpus[-1]}':>11} {g.kind():<6} {'y' if g.fp8() else '-':<3} "
            f"{g.max_dp():>5} {g.max_pp():>3} {b:>+6.2f} "
            f"{(f'{se:.2f}' if se is not None else '-'):>5} "
            f"{f'{min(ys):+.1f}..{max(ys):+.1f}':>14}")
    return lines


def splits(groups: list[Group]) -> list[str]:
    """The pooled within-group slope over all groups and per feature."""
    cuts = {
        "all groups": lambda g: True,
        "all but nanotron": lambda g: "nanotron" not in g.file,
        "weak scaling": lambda g: g.kind() == "weak",
        "strong scaling": lambda g: g.kind() == "strong",
        "other (model or batch changes)": lambda g: g.kind() == "other",
        "fp8": lambda g: g.fp8(),
        "bf16/fp16": lambda g: not g.fp8(),
        "weak, fp8": lambda g: g.kind() == "weak" and g.fp8(),
        "weak, bf16/fp16": lambda g: g.kind() == "weak" and not g.fp8(),
        "largest DP >= 256": lambda g: g.max_dp() >= 256,
        "largest DP < 256": lambda g: g.max_dp() < 256,
        "PP > 1": lambda g: g.max_pp() > 1,
        "PP = 1": lambda g: g.max_pp() == 1,
        "A100": lambda g: g.gpu() == "a100",
        "H100/H200": lambda g: g.gpu() in ("h100", "h200"),
        "B200/GB200/GB300": lambda g: g.gpu()[:1] in ("b", "g"),
        "fixed config (label *)": lambda g: "*" in g.label,
        "fixed config, all but nanotron": lambda g: "*" in g.label and "nanotron" not in g.file,
        "fixed model, config varies": lambda g: g.label != "mixed" and "*" not in g.label,
        "mixed models": lambda g: g.label == "mixed",
    }
    lines = [(f"{'pooled within-group slope (points per doubling)':<48} {'groups':>6} "
              f"{'rows':>5} {'slope':>6} {'se':>5} {'<0':>4}")]
    for name, keep in cuts.items():
        sel = [g for g in groups if keep(g)]
        if not sel:
            continue
        b, se, n = pooled(sel)
        neg = sum(1 for g in sel if g.fit()[0] < 0)
        lines.append(f"{name:<48} {len(sel):>6} {n:>5} {b:>+6.2f} "
                     f"{(f'{se:.2f}' if se is not None else '-'):>5} {neg:>2}/{len(sel)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=None,
                    help="directory of `trainsim validate FILE --format json` outputs")
    ap.add_argument("--sigma", type=float, default=0.0,
                    help="what-if: predictions times 1 + SIGMA * E[max of num_gpus normals]")
    ap.add_argument("--reference", type=int, default=1,
                    help="what-if: count the stretch from this many GPUs on (default 1)")
    args = ap.parse_args(argv)
    groups: list[Group] = []
    per_file: list[str] = []
    for path in training_files():
        rows, results = load(path, args.json)
        after = stretched(results, rows, args.sigma, args.reference)
        groups.extend(make_groups(path.stem, rows, after))
        if args.sigma:
            n, m0, s0 = file_errors(rows, results)
            _, m1, s1 = file_errors(rows, after)
            per_file.append(f"{path.stem:<26} {n:>4} {m0:>6.2f} {s0:>+7.2f}   {m1:>6.2f} {s1:>+7.2f}")
    print("\n".join(table(groups)))
    print()
    print("\n".join(splits(groups)))
    if per_file:
        print(f"\nwhat-if sigma={args.sigma}: {'file':<15} {'rows':>4} {'MAPE':>6} {'signed':>7}"
              f"   {'MAPE':>6} {'signed':>7}  (before | after)")
        print("\n".join(per_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
