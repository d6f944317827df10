"""Where the Nemotron 3 Nano H100 FP8 rows' time goes under their recipe's selective recompute
(``moe;layernorm;core_attn;moe_act``), and what the ``moe`` module adds (RESULTS, 59th session,
recomp59).

Prints, for one micro-batch, each hybrid layer kind's forward, re-run and backward priced by
category (compute, expert-parallel communication, host waits), and the simulated iteration with
the recipe's modules and without ``moe``, against the published time.

usage: PYTHONPATH=src python benchmarks/recomp59_nano.py [ROW_ID ...]
"""

from __future__ import annotations

import collections
import csv
import sys
from dataclasses import replace

from trainsim import simulate
from trainsim.pricing import Pricer
from trainsim.validate.training import row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

FILE = "benchmarks/training_nemotron3.csv"
ROWS = ("bridgearch2606-nemotron-3-nano-30b-a3b-h100-16-fp8",
        "bridgearch2604p1-nemotron-3-nano-30b-a3b-h100-16-fp8")


def _by_category(pricer: Pricer, ops: list) -> dict[str, float]:
    out: dict[str, float] = collections.Counter()
    for cat, seconds, _ in pricer.price(ops).segments:
        out[cat] += seconds * 1e3
    return out


def report(row: dict[str, str]) -> None:
    cfg = row_config(row, {})
    sh, pricer, m = shard_of(cfg), Pricer(cfg), cfg.model
    print(f"## {row['id']}  (micro-batches {cfg.num_microbatches}, "
          f"modules {';'.join(cfg.parallel.recompute_modules or ())})")
    print("layer  n   pass      total_ms  compute  ep_comm  host")
    for sym in sorted(set(m.hybrid_layer_pattern) - {"-", "|"}):
        fwd = layer_forward(cfg, sh, moe=sym)
        n = m.hybrid_layer_pattern.count(sym)
        for name, ops in (("forward", fwd), ("re-run", layer_recompute(cfg, sh, fwd)),
                          ("backward", backward_of(fwd, sh))):
            c = _by_category(pricer, ops)
            print(f"{sym:5s} {n:3d}  {name:9s} {sum(c.values()):8.3f} {c['compute']:8.3f} "
                  f"{c['ep_comm']:8.3f} {c['host']:6.3f}")
    modules = cfg.parallel.recompute_modules or ()
    for mods in (modules, tuple(x for x in modules if x != "moe")):
        r = simulate(replace(cfg, parallel=replace(cfg.parallel, recompute_modules=mods)))
        b = r.breakdown
        print(f"simulated {';'.join(mods):32s} {r.iteration_time_s:7.3f} s  compute "
              f"{b['compute_s']:.3f}  exposed comm {b['exposed_comm_s']:.3f}  other (host) "
              f"{b['other_s']:.3f}  error {100 * (r.iteration_time_s / float(row['measured_iteration_s']) - 1):+.1f} %")
    print(f"measured {float(row['measured_iteration_s']):.3f} s")


def main(ids: list[str]) -> None:
    with open(FILE) as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    for i in ids or ROWS:
        report(rows[i])


if __name__ == "__main__":
    main(sys.argv[1:])
