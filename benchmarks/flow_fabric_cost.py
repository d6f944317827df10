"""What building and routing the flow backend's fabric costs, in flow-steps: the measurements
behind ``limits.FLOW_FABRIC_STEPS_PER_GPU``, ``FLOW_FABRIC_STEPS_PER_LINK`` and
``FLOW_ROUTE_STEPS_PER_GPU_SPINE``, and the share of each term in the charge of a large
default cluster.

    python benchmarks/flow_fabric_cost.py [--repeats 2] [--spines 2048]

A flow-step's seconds come from an 8-byte ring all-reduce over 4,096 GPUs (8 a node), whose
flow-steps ``limits.flow_steps`` counts; the fabric of 4,096 and 16,384 GPUs (8 a node, the
default 32 nodes a leaf) gives the seconds a GPU of building it (``FlowNetwork.from_cluster``:
topology and router); 8 GPUs under 20,000 nodes a leaf (160,000 leaf-spine links) less 8 under
the default gives a link's; the same all-reduce over 4,096 one-GPU nodes under ``--spines``
spines, less under 32, gives a GPU-spine's routing (the router's shortest paths fan out over
every spine). Each timing is the best of ``--repeats`` (the machine is shared). Wall clock:
about 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig
from trainsim.limits import (
    DEFAULTS,
    FLOW_FABRIC_STEPS_PER_GPU,
    FLOW_FABRIC_STEPS_PER_LINK,
    FLOW_ROUTE_STEPS_PER_GPU_SPINE,
    fabric_steps,
    flow_steps,
)
from trainsim.network.flow import FlowNetwork
from trainsim.network.topology import fabric_size


def cluster(gpus: int, per_node: int, per_leaf: int = 32) -> ClusterConfig:
    return ClusterConfig(gpu=gpu("h100"), num_gpus=gpus, gpus_per_node=per_node,
                         nodes_per_leaf=per_leaf, network_backend="flow")


def build_s(c: ClusterConfig, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        FlowNetwork.from_cluster(c)
        best = min(best, time.perf_counter() - t0)
    return best


def ring_s(c: ClusterConfig, repeats: int) -> float:
    """Seconds of an 8-byte ring all-reduce over every GPU, the fabric built beforehand."""
    best = float("inf")
    for _ in range(repeats):
        net = FlowNetwork.from_cluster(c)
        t0 = time.perf_counter()
        net.collective_time("all_reduce", 8.0, list(range(c.num_gpus)), "ring")
        best = min(best, time.perf_counter() - t0)
    return best


def largest_default(limit: float) -> int:
    """Most GPUs (8 a node, 32 nodes a leaf, a multiple of 8) whose fabric charge is within
    ``limit``."""
    lo, hi = 8, 8 * 10**6
    while hi - lo > 8:
        mid = (lo + hi) // 16 * 8
        c = cluster(mid, 8)
        lo, hi = (mid, hi) if fabric_steps(mid, *fabric_size(c)) <= limit else (lo, mid)
    return lo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--spines", type=int, default=2048)
    a = ap.parse_args()
    r = a.repeats
    print(f"## flow fabric cost ({datetime.date.today()}, {platform.machine()}, best of {r})\n")

    c = cluster(4096, 8)
    step = ring_s(c, r) / flow_steps(4096, 8, "all_reduce", "ring")
    print(f"- a flow-step: {step * 1e6:.3f} us (8-byte ring all-reduce, 4,096 GPUs, "
          f"{flow_steps(4096, 8):,.0f} flow-steps)")

    print("\n| measured | seconds | per unit | flow-steps a unit | constant |\n|---|---|---|---|---|")
    for n in (4096, 16384):
        t = build_s(cluster(n, 8), r)
        print(f"| build {n:,} GPUs (8 a node, 32 nodes a leaf; {fabric_size(cluster(n, 8))[0]:,}"
              f" links) | {t:.3f} | {t / n * 1e6:.1f} us a GPU | {t / n / step:.0f} | "
              f"{FLOW_FABRIC_STEPS_PER_GPU} + {FLOW_FABRIC_STEPS_PER_LINK} a link |")
    wide, narrow = cluster(8, 8, 20000), cluster(8, 8)
    links = fabric_size(wide)[0] - fabric_size(narrow)[0]
    t = build_s(wide, r) - build_s(narrow, r)
    print(f"| build 8 GPUs under 20,000 nodes a leaf, less under 32 ({links:,} links more) | "
          f"{t:.3f} | {t / links * 1e6:.2f} us a link | {t / links / step:.1f} | "
          f"{FLOW_FABRIC_STEPS_PER_LINK} |")
    few, many = cluster(4096, 1, 32), cluster(4096, 1, a.spines)
    more = fabric_size(many)[1] - fabric_size(few)[1]
    t = ring_s(many, r) - ring_s(few, r)
    print(f"| ring all-reduce, 4,096 one-GPU nodes, {a.spines:,} spines less 32 | {t:.3f} | "
          f"{t / (4096 * more) * 1e9:.0f} ns a GPU-spine | {t / (4096 * more) / step:.2f} | "
          f"{FLOW_ROUTE_STEPS_PER_GPU_SPINE} |")

    n = 65_536
    links, spines = fabric_size(cluster(n, 8))
    per_gpu = FLOW_FABRIC_STEPS_PER_GPU * n
    link = FLOW_FABRIC_STEPS_PER_LINK * links
    route = FLOW_ROUTE_STEPS_PER_GPU_SPINE * n * spines
    total = fabric_steps(n, links, spines)
    print(f"\n- the charge at {n:,} GPUs (8 a node, 32 nodes a leaf: {links:,} links, {spines} "
          f"spines): {total:.3g} flow-steps = {per_gpu:.3g} (GPUs) + {link:.3g} (links, "
          f"{link / per_gpu:.0%} more) + {route:.3g} (spine routing, {route / per_gpu:.0%} "
          "more)")
    limit = float(DEFAULTS["TRAINSIM_MAX_FLOWS"])
    print(f"- largest such cluster under the default limit ({limit:.3g}): "
          f"{largest_default(limit):,} GPUs (GPUs alone: {int(limit / FLOW_FABRIC_STEPS_PER_GPU):,})")


if __name__ == "__main__":
    main()
