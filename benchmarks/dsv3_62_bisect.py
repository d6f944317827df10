"""Where DeepSeek-V3's simulated step moved between two commits (issue 20 item 3; dsv3_62).

    python benchmarks/dsv3_62_bisect.py [--from REV] [--to REV] [--repo PATH] [--grid N]

Each probe extracts one commit's ``src``, ``examples`` and ``benchmarks/*.py`` (``git archive``)
and runs that commit's own ``benchmarks/deepseek_v3.py`` setting ``dualpipe`` (its ``CONFIG``
and ``SETTINGS``) in a fresh interpreter, so the probe prices what the commit itself shipped,
example included. Only commits that touch ``src``, ``examples/deepseek-v3-h800.yaml`` or
``benchmarks/deepseek_v3*.py`` can move the figure; of those, ``--grid`` evenly spaced ones are
probed first, then every interval whose ends differ is bisected to the single commit that moved
the step. An interval whose ends agree is not opened (a move and its exact undo inside one grid
interval would be missed; the grid makes that unlikely, and the table's moves add up to the
whole drift, which the output checks). Prints a table, or JSON with ``--format json``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = r"""
import json, sys
sys.path.insert(0, "benchmarks")
import trainsim
import deepseek_v3 as d
cfg = trainsim.load_run_config(d.CONFIG, d.SETTINGS["dualpipe"])
r = trainsim.simulate(cfg)
print(json.dumps({"step_s": r.iteration_time_s, "breakdown": dict(r.breakdown)}))
"""

PATHS = ("src", "examples/deepseek-v3-h800.yaml", "benchmarks/deepseek_v3*.py")


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def probe(repo: str, rev: str, cache: dict[str, dict]) -> dict:
    """The commit's own DualPipe step, run from an extracted copy of its tree."""
    if rev in cache:
        return cache[rev]
    with tempfile.TemporaryDirectory(prefix="dsv3bis_") as tmp:
        arch = subprocess.run(["git", "-C", repo, "archive", rev, "src", "examples", "benchmarks"],
                              check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp, "--wildcards", "src", "examples",
                        "benchmarks/*.py"], input=arch, check=True)
        out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp, capture_output=True,
                             text=True, env={"PYTHONPATH": "src", "PATH": "/usr/bin:/bin"},
                             check=False)
    if out.returncode:
        cache[rev] = {"error": out.stderr.strip().splitlines()[-1]}
    else:
        cache[rev] = json.loads(out.stdout.strip().splitlines()[-1])
    return cache[rev]


def step(res: dict) -> float | None:
    return res.get("step_s")


def movers(repo: str, revs: list[str], grid: int, cache: dict[str, dict]) -> list[int]:
    """Indices i (>= 1) into ``revs`` whose commit moved the step from revs[i - 1]'s."""
    ends = sorted({0, len(revs) - 1, *range(0, len(revs), max(1, len(revs) // grid))})
    found: list[int] = []

    def split(lo: int, hi: int) -> None:
        if step(probe(repo, revs[lo], cache)) == step(probe(repo, revs[hi], cache)):
            return
        if hi - lo == 1:
            found.append(hi)
            return
        mid = (lo + hi) // 2
        split(lo, mid)
        split(mid, hi)

    for lo, hi in itertools.pairwise(ends):
        split(lo, hi)
    return sorted(found)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--from", dest="base", default="64e01ea0")
    ap.add_argument("--to", default="HEAD")
    ap.add_argument("--grid", type=int, default=24)
    ap.add_argument("--format", choices=("table", "json"), default="table")
    args = ap.parse_args()
    revs = [args.base, *git(args.repo, "rev-list", "--reverse", f"{args.base}..{args.to}", "--",
                            *PATHS).split()]
    cache: dict[str, dict] = {}
    idx = movers(args.repo, revs, args.grid, cache)
    rows = []
    for i in idx:
        before, after = step(probe(args.repo, revs[i - 1], cache)), step(probe(args.repo, revs[i], cache))
        rows.append({"commit": revs[i][:8], "subject": git(args.repo, "log", "-1", "--format=%s",
                                                           revs[i]).strip(),
                     "before_s": before, "after_s": after,
                     "delta_s": None if before is None or after is None else after - before})
    first, last = step(probe(args.repo, revs[0], cache)), step(probe(args.repo, revs[-1], cache))
    summary = {"from": revs[0][:8], "to": revs[-1][:8], "commits_scanned": len(revs) - 1,
               "probes": len(cache), "from_step_s": first, "to_step_s": last, "moves": rows,
               "moves_sum_s": sum(r["delta_s"] or 0.0 for r in rows)}
    if args.format == "json":
        print(json.dumps(summary, indent=1))
        return
    print(f"{summary['from']} {first:.3f} s -> {summary['to']} {last:.3f} s over "
          f"{summary['commits_scanned']} commits ({summary['probes']} probes)")
    print("| commit | before (s) | after (s) | delta (s) | subject |\n| --- | --- | --- | --- | --- |")
    for r in rows:
        d = "error" if r["delta_s"] is None else f"{r['delta_s']:+.3f}"
        print(f"| {r['commit']} | {r['before_s']} | {r['after_s']} | {d} | {r['subject'][:90]} |")
    print(f"moves sum to {summary['moves_sum_s']:+.3f} s (whole drift {last - first:+.3f} s)")


if __name__ == "__main__":
    main()
