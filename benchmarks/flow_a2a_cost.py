"""What an all-to-all's flow-step costs on the flow backend against a ring's: the measurement
behind ``limits.FLOW_A2A_STEP_WEIGHT``, the weight that puts an all-to-all's counted
flow-steps in ring-step units.

    python benchmarks/flow_a2a_cost.py [--repeats 3] [--size 1048576]

Times (CPU seconds, best of ``--repeats``; the machine is shared) one ``--size``-byte
all_to_all over 64 / 128 / 256 GPUs and one ring all_reduce over 1,024 / 2,048 / 4,096 GPUs
(8 a node, the fabric built beforehand), so both count 1e5-1e6 flow-steps by
``limits.flow_steps`` with the weight left out, and divides each time by its count. The
weight is the median all-to-all seconds a step over the median ring seconds a step, rounded
up to a whole number (an all-to-all routes each pair its own path and runs every flow once,
where a ring's set-up is shared by a template repeated until its steady state). Then prints
what the default limit refuses: the 256-GPU all_to_all over ``trainsim collective``'s
default 31 sizes (fuzz46 ran it 11.6 CPU s inside the limit). Wall clock: about 15 s.
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import statistics
import time

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig
from trainsim.limits import DEFAULTS, FLOW_A2A_STEP_WEIGHT, fabric_steps, flow_steps
from trainsim.network.flow import FlowNetwork

A2A_GPUS = (64, 128, 256)
RING_GPUS = (1024, 2048, 4096)


def cpu_s(kind: str, algorithm: str, gpus: int, size: float, repeats: int) -> float:
    """Best CPU seconds of one collective over every GPU of a fresh flow fabric."""
    c = ClusterConfig(gpu=gpu("h100"), num_gpus=gpus, gpus_per_node=8, network_backend="flow")
    net = FlowNetwork.from_cluster(c)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        net.collective_time(kind, size, list(range(gpus)), algorithm)
        best = min(best, time.process_time() - t0)
    return best


def unweighted(kind: str, algorithm: str, gpus: int) -> float:
    """``limits.flow_steps`` without the all-to-all weight (the unit being measured)."""
    steps = flow_steps(gpus, 8, kind, algorithm)
    return steps / FLOW_A2A_STEP_WEIGHT if kind == "all_to_all" else steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", type=float, default=float(2**20))
    a = ap.parse_args()
    print(f"## flow all-to-all cost ({datetime.date.today()}, {platform.machine()}, "
          f"{platform.processor() or 'cpu'}, best of {a.repeats}, {a.size:,.0f} bytes)\n")
    print("| collective | GPUs | flow-steps (unweighted) | CPU s | us a flow-step |\n"
          "|---|---|---|---|---|")
    per: dict[str, list[float]] = {"all_to_all": [], "all_reduce": []}
    for kind, algorithm, counts in (("all_to_all", "auto", A2A_GPUS),
                                    ("all_reduce", "ring", RING_GPUS)):
        for n in counts:
            steps = unweighted(kind, algorithm, n)
            t = cpu_s(kind, algorithm, n, a.size, a.repeats)
            per[kind].append(t / steps)
            print(f"| {kind} ({algorithm}) | {n:,} | {steps:,.0f} | {t:.3f} | "
                  f"{t / steps * 1e6:.3f} |")
    a2a, ring = statistics.median(per["all_to_all"]), statistics.median(per["all_reduce"])
    print(f"\n- median: all_to_all {a2a * 1e6:.3f} us, ring {ring * 1e6:.3f} us a flow-step; "
          f"ratio {a2a / ring:.2f}, rounded up {math.ceil(a2a / ring)} "
          f"(limits.FLOW_A2A_STEP_WEIGHT = {FLOW_A2A_STEP_WEIGHT})")
    cap = float(DEFAULTS["TRAINSIM_MAX_FLOWS"])
    one = flow_steps(256, 8, "all_to_all")
    total = 31 * one + fabric_steps(256)
    print(f"- 256-GPU all_to_all x 31 sizes: {total:.3g} flow-steps against the default "
          f"{cap:.3g} ({'refused' if total > cap else 'allowed'}); "
          f"{int((cap - fabric_steps(256)) // one)} sizes fit")


if __name__ == "__main__":
    main()
