"""FlashAttention-2's causal backward tail in the plain roofline, with the attention constants
refitted under it: does a refit take back what the tail adds to the training rows?

1. ``fit_kernels.py`` with the tail off and on (``--bwd-tail``): the fitted constants and every
   report cell (kind, GPU, fit / held-out part) side by side.
2. ``--validate FILE ...``: each file validated three ways, in a subprocess each: as shipped
   (tail off), the tail on at the shipped constants, the tail on at the constants step 1 fitted
   with it (``ATTENTION_OF_GEMM``, ``ATTN_ROW_OVERHEAD_KEYS``, ``SOFTMAX_EXP_EXPOSED``,
   ``MEM_EFFICIENT_OF_FLASH2``): MAPE of the file and per framework where it names one.

usage: PYTHONPATH=src python benchmarks/fa2tail48_refit.py [--validate FILE ...]
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ATTENTION_CONSTANTS = ("ATTENTION_OF_GEMM", "ATTN_ROW_OVERHEAD_KEYS", "SOFTMAX_EXP_EXPOSED",
                       "MEM_EFFICIENT_OF_FLASH2")
RUN = ("import json, sys, trainsim.compute.attention as a; c = json.loads(sys.argv[1]); "
       "a.FA2_BWD_TAIL = c.pop('FA2_BWD_TAIL'); "
       "[getattr(a, k).update({i: tuple(v) for i, v in x.items()}) if isinstance(x, dict) "
       "else setattr(a, k, tuple(x) if isinstance(x, list) else x) for k, x in c.items()]; "
       "from trainsim.cli import main; main(sys.argv[2:], prog_name='trainsim')")


def fit_output(tail: str) -> list[str]:
    done = subprocess.run([sys.executable, str(HERE / "fit_kernels.py"), "--bwd-tail", tail],
                          check=True, capture_output=True, text=True)
    return done.stdout.splitlines()


def constants(lines: list[str]) -> dict[str, object]:
    out = {}
    for line in lines:
        name, _, value = line.strip().partition(" = ")
        if name in ATTENTION_CONSTANTS:
            out[name] = ast.literal_eval(value)
    return out


def validated(path: str, consts: dict[str, object]) -> list[dict]:
    cmd = [sys.executable, "-c", RUN, json.dumps(consts), "validate", path, "--format", "json"]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)["rows"]


def mapes(path: str, rows: list[dict]) -> dict[str, float]:
    with open(path, newline="") as f:
        framework = {r["id"]: r.get("framework") or "" for r in csv.DictReader(
            line for line in f if not line.startswith("#"))}
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.get("ape") is None:
            continue
        groups["all"].append(r["ape"])
        if framework.get(r["id"]):
            groups[framework[r["id"]]].append(r["ape"])
    return {k: 100 * sum(v) / len(v) for k, v in groups.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--validate", nargs="+", metavar="FILE", default=[])
    args = ap.parse_args(argv)
    off, on = fit_output("off"), fit_output("on")
    print("| fit_kernels.py, tail off | tail on |\n|---|---|")
    for a, b in zip(off, on):
        if " = " in a or "MAPE" in a:
            print(f"| {a.strip()} | {b.strip() if b != a else '='} |")
    refit = {"FA2_BWD_TAIL": True, **constants(on)}
    variants = {"shipped (tail off)": {"FA2_BWD_TAIL": False},
                "tail on, shipped constants": {"FA2_BWD_TAIL": True},
                "tail on, refitted with it": refit}
    for path in args.validate:
        table = {name: mapes(path, validated(path, c)) for name, c in variants.items()}
        keys = list(next(iter(table.values())))
        print(f"\n{Path(path).name}\n| MAPE % | {' | '.join(variants)} |\n|---|---|---|---|")
        for k in keys:
            print(f"| {k} | {' | '.join(f'{t[k]:.3f}' for t in table.values())} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
