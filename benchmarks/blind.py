"""Framework-blind score: every training row predicted as if its framework had no profile here.

    python benchmarks/blind.py                      # public, held-out and every check file
    python benchmarks/blind.py --files public heldout --summary   # one line each (board.sh)
    python benchmarks/blind.py --name nemo2         # another unknown name (default: otherfw)
    python benchmarks/blind.py --files heldout --rows   # each row predicted with another
                                                    # framework's mechanisms, worst first
    python benchmarks/blind.py --named              # also each file named: what the fallback
                                                    # costs per (true framework, fallback) pair

The held-out runs that check ``trainsim validate`` come from other sources, some from
frameworks with no profile in ``catalog/frameworks/`` (levanter, accelerate, picotron, ...).
This script shows what such a row gets: each row's ``framework`` cell is replaced by a name
that no profile answers to (``framework_version`` kept), the file is validated as it is, and
the errors are reported per file and per the row's true framework (time and, where the row
publishes it, memory). Files without a ``framework`` column (the row names none already) are
skipped: their blind score is their score. With ``--named`` each file is validated as it is too,
and the rows predicted with another framework's mechanisms are pooled over every file by (true
framework, profile that predicted them): each pair's blind and named MAPE and what the fallback
adds (the sum over its rows of blind less named error, in points), the pairs that cost most
first: which stack's mechanisms a rule would have to change, judged on all files at once.
Nothing here feeds back into trainsim.
"""

from __future__ import annotations

import argparse
import collections
import csv
import os
import sys
import tempfile
from pathlib import Path

from trainsim.validate import summarize, validate_file

HERE = Path(__file__).resolve().parent
PUBLIC = HERE.parent.parent / "shared" / "validation" / "training_public.csv"
BUNDLED = HERE.parent / "src" / "trainsim" / "data" / "validation" / "training_public.csv"
NOT_TRAINING = ("training_errata.csv",)


def files(which: list[str]) -> list[Path]:
    """The training files named by ``which`` (public, heldout, checks, or paths)."""
    out: list[Path] = []
    for name in which:
        if name == "public":
            out.append(PUBLIC if PUBLIC.exists() else BUNDLED)
        elif name == "heldout":
            out.append(HERE / "training_heldout.csv")
        elif name == "checks":
            out += [p for p in sorted(HERE.glob("training_*.csv"))
                    if p.name not in NOT_TRAINING and p.name != "training_heldout.csv"]
        else:
            out.append(Path(name))
    return out


def blinded(path: Path, name: str, into: Path) -> tuple[Path, dict[str, str]] | None:
    """A copy of ``path`` under ``into`` with every ``framework`` cell ``name`` (an empty cell
    left empty), and {row id: its true framework}; None for a file with no framework column."""
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    if "framework" not in fields:
        return None
    truth = {r["id"]: (r["framework"] or "").strip() or "(none)" for r in rows}
    for r in rows:
        if (r["framework"] or "").strip():
            r["framework"] = name
    out = into / path.name
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return out, truth


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def fallback_of(result) -> str:
    """The profile whose mechanisms predicted a blinded row (the tool's choice, in its
    ``chosen``), or '-' (a failed row)."""
    return str(result.chosen.get("framework", "-"))


def report(label: str, results: list, truth: dict[str, str], summary_only: bool) -> list[str]:
    """The file's summary line, then (unless ``summary_only``) one line per true framework with
    the fallback profiles its rows were predicted with, the rows predicted with another
    framework's mechanisms than their own (the figure that is not circular), and failures."""
    s = summarize(results)
    line = (f"{label}: {s['n']} rows, MAPE {_pct(s['mape'])}, max {_pct(s['max_ape'])}, "
            f"{s['failed']} failed")
    if s.get("memory_n"):
        line += f"; memory: {s['memory_n']} rows, MAPE {_pct(s['memory_mape'])}"
    others = [r for r in results if fallback_of(r) != truth.get(r.id)]
    o = summarize(others) if others else None
    if o and o["n"] < s["n"]:
        line += f"; other than their own profile: {o['n']} rows, MAPE {_pct(o['mape'])}"
    lines = [line]
    if summary_only:
        return lines
    groups: dict[str, list] = collections.defaultdict(list)
    for r in results:
        groups[truth.get(r.id, "?")].append(r)
    for fw in sorted(groups):
        g = summarize(groups[fw])
        used = collections.Counter(fallback_of(r) for r in groups[fw])
        text = (f"  {fw:20s} n={g['n']:3d} MAPE {_pct(g['mape']):>6s} max {_pct(g['max_ape']):>6s}"
                f" failed {g['failed']}")
        if g.get("memory_n"):
            text += f"  memory n={g['memory_n']} MAPE {_pct(g['memory_mape'])}"
        text += "  as " + ", ".join(f"{k} {v}" for k, v in sorted(used.items()))
        lines.append(text)
    for r in results:
        if r.error:
            lines.append(f"  failed {r.id}: {r.error[:160]}")
    return lines


ROW_CELLS = ("framework_version", "gpu", "zero_stage", "distributed_optimizer", "tp", "pp",
             "cp", "ep", "dtype", "fp8_recipe", "attention", "options")
"""The cells of a row that its fallback profile is chosen from, or that an era shows in."""


def row_lines(results: list, truth: dict[str, str], rows: dict[str, dict[str, str]]
              ) -> list[str]:
    """One line per row predicted with another framework's mechanisms than its own, worst
    first: its signed error, true framework, the profile that predicted it and its cells."""
    others = [r for r in results if fallback_of(r) != truth.get(r.id)]
    others.sort(key=lambda r: -(r.ape if r.ape is not None else 9.0))
    lines = []
    for r in others:
        signed = "failed" if r.predicted is None else \
            f"{100 * (r.predicted / r.measured - 1):+7.1f}%" if r.measured else "-"
        cells = " ".join(f"{c}={v}" for c in ROW_CELLS
                         if (v := (rows.get(r.id, {}).get(c) or "").strip()))
        lines.append(f"  row {r.id:44s} {signed:>8s} {truth.get(r.id, '?'):17s} "
                     f"as {fallback_of(r):14s} {cells}")
    return lines


def pair_lines(pairs: list[tuple[str, object, object]], truth: dict[str, str]) -> list[str]:
    """The rows predicted with another framework's mechanisms than their own, pooled by (true
    framework, the profile that predicted them), from ``pairs`` of (file label, named result,
    blind result) over any number of files (``truth``: row key -> true framework, the key
    ``label/id``): per pair its row count, blind MAPE and signed mean error, the same rows'
    named MAPE, and the fallback's cost, the sum of (blind - named) absolute errors in points,
    the costliest first. Rows that either prediction failed are counted apart."""
    groups: dict[tuple[str, str], list[tuple[float, float, float]]] = collections.defaultdict(list)
    failed: collections.Counter[tuple[str, str]] = collections.Counter()
    for label, named, blind in pairs:
        fw = truth.get(f"{label}/{blind.id}", "?")
        used = fallback_of(blind)
        if used == fw:
            continue
        if blind.ape is None or named.ape is None or not blind.measured:
            failed[(fw, used)] += 1
            continue
        signed = blind.predicted / blind.measured - 1
        groups[(fw, used)].append((blind.ape, signed, named.ape))
    rows = []
    for (fw, used), got in groups.items():
        n = len(got)
        cost = sum(b - m for b, _, m in got)
        rows.append((cost, fw, used, n, sum(b for b, _, _ in got) / n,
                     sum(s for _, s, _ in got) / n, sum(m for _, _, m in got) / n))
    rows.sort(key=lambda x: (-x[0], x[1], x[2]))
    every = [x for got in groups.values() for x in got]
    k = len(every) or 1
    lines = [(f"rows predicted with another framework's mechanisms, all files: {len(every)}, "
              f"blind MAPE {_pct(sum(b for b, _, _ in every) / k)}, named MAPE "
              f"{_pct(sum(m for _, _, m in every) / k)}, cost "
              f"{100 * sum(b - m for b, _, m in every):+.1f}; by true framework as profile, "
              "rows, blind MAPE (signed), named MAPE, cost (sum of blind - named, points)")]
    for cost, fw, used, n, mape, signed, named in rows:
        lines.append(f"  {fw:18s} as {used:18s} n={n:4d} blind {_pct(mape):>6s} "
                     f"({100 * signed:+6.1f}%) named {_pct(named):>6s} cost {100 * cost:+8.1f}")
    for (fw, used), k in sorted(failed.items()):
        lines.append(f"  {fw:18s} as {used:18s} failed either way: {k}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", default=["public", "heldout", "checks"])
    ap.add_argument("--name", default="otherfw", help="the unknown framework name written")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--summary", action="store_true", help="one line per file")
    ap.add_argument("--rows", action="store_true",
                    help="also each row predicted with another framework's mechanisms")
    ap.add_argument("--named", action="store_true",
                    help="also validate each file named: the fallback's cost per pair, all files")
    args = ap.parse_args(argv)
    pooled: list[tuple[str, object, object]] = []
    pooled_truth: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in files(args.files):
            made = blinded(path, args.name, Path(tmp))
            if made is None:
                continue
            blind, truth = made
            _, results = validate_file(blind, workers=args.workers)
            label = "public" if path in (PUBLIC, BUNDLED) else path.stem
            print("\n".join(report(label, results, truth, args.summary)), flush=True)
            if args.rows:
                with open(path, newline="") as fh:
                    cells = {r["id"]: r for r in csv.DictReader(fh)}
                print("\n".join(row_lines(results, truth, cells)), flush=True)
            if args.named:
                _, named = validate_file(path, workers=args.workers)
                pooled += [(label, n, b) for n, b in zip(named, results)]
                pooled_truth.update({f"{label}/{k}": v for k, v in truth.items()})
    if args.named:
        print("\n".join(pair_lines(pooled, pooled_truth)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
