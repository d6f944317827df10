"""ss52: zb_2p's late settlers (the order search settling past the first A, 8 pp micro-batches)
among tests/test_steady_zb2p.py's 200 random configs: the shortcut path's in-process CPU with
ss52's two savings and without each, paired in one process (best of 3 per config, each config's
search cached first by a full simulation, ``MIN_TASKS`` 0 as the tests): the settling point
read from the priced passes against the first graph built for it (main's way), and an attempt
whose B shows the timeline still in its transient stopped before A's run
(``steady_decay.spaced_evenly``) against run to the end.

    PYTHONPATH=src:tests python benchmarks/ss52_zb2p_paired.py [--n 200]
"""

from __future__ import annotations

import argparse
import time

from helpers import pipelined_configs

import trainsim.steady_state as steady
from trainsim import simulate
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph


def first_graph(cfg, pricer, layer_source):
    """main's way to the settling point: the first A's graph (8 pp micro-batches) built."""
    graph = build_graph(cfg, pricer, layer_source, 8 * cfg.parallel.pp)
    return graph.settled_from, graph.settled_rounds


def best_ms(cfg) -> tuple[float, str]:
    best, method = float("inf"), ""
    for _ in range(3):
        t0 = time.process_time()
        result = simulate(cfg)
        best = min(best, time.process_time() - t0)
        method = result.simulation["method"]
    return 1e3 * best, method


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    steady.MIN_TASKS = 0
    new_settled, new_even = steady._settled_from, steady.spaced_evenly
    variants = {"ss52": (new_settled, new_even),
                "no transient check": (new_settled, lambda *a: True),
                "main's way (both off)": (first_graph, lambda *a: True)}
    total = dict.fromkeys(variants, 0.0)
    methods: dict[str, dict[str, int]] = {v: {} for v in variants}
    late = 0
    for cfg in pipelined_configs(args.n, "zb_2p", lambda pp: (40 * pp + 8, 80 * pp)):
        settled, _ = new_settled(cfg, Pricer(cfg), None)
        if not settled or settled <= 8 * cfg.parallel.pp:
            continue
        late += 1
        simulate(cfg, keep_timeline=True)  # the search cached
        for name, (settle, even) in variants.items():
            steady._settled_from, steady.spaced_evenly = settle, even
            ms, method = best_ms(cfg)
            total[name] += ms
            methods[name][method] = methods[name].get(method, 0) + 1
        steady._settled_from, steady.spaced_evenly = new_settled, new_even
    print(f"{late} late settlers of {args.n}")
    for name in variants:
        print(f"{name:24s} {total[name]:8.0f} CPU ms  {methods[name]}")


if __name__ == "__main__":
    main()
