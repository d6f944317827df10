"""Speed of the flow backend: a 1 GiB ring all-reduce over 1,024 GPUs (128 DGX H100 nodes).

    python benchmarks/flow_speed.py            # print a dated markdown block
    python benchmarks/flow_speed.py --gpus 256 # a smaller run

Times the three phases separately (topology build, routing of the flows, event-driven
simulation) and the whole, the median of ``--repeats`` runs in fresh processes' worth of
state (a new FlowNetwork each time, so no rate memo is reused). Also reports the simulated
collective time and bus bandwidth, the (re)acceptance figures (a), (b), (c) of issue 3, and
issue 21's acceptance 5: a 1 GiB all-reduce over 16,384 GPUs (< 10 s) and a training iteration
of a 1,024-GPU config (examples/gpt3-175b-a100.yaml) on the flow backend (< 30 s), wall clock
and this process's CPU time (the machine is shared: CPU time is what the code costs).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time

GiB = 2**30


def one_run(gpus: int, size: float) -> dict[str, float]:
    from trainsim.network.flow import FlowNetwork
    from trainsim.network.topology import load_topology

    t0 = time.perf_counter()
    topo = load_topology("dgx-h100-superpod", nodes=gpus // 8)
    net = FlowNetwork(topo)
    sched = net.collective_flows("all_reduce", size, list(range(gpus)))
    t1 = time.perf_counter()
    for f in sched.flows:
        net._path(f, f.channel)
    t2 = time.perf_counter()
    res = net.run(sched)
    t3 = time.perf_counter()
    return {"build_s": t1 - t0, "route_s": t2 - t1, "simulate_s": t3 - t2, "total_s": t3 - t0,
            "collective_s": res.makespan_s, "events": res.events,
            "flows": len(sched.flows) * sched.repeat, "skipped": res.skipped_periods}


def issue21() -> list[tuple[str, str]]:
    """Issue 21, acceptance 5: the 16,384-GPU all-reduce and a 1,024-GPU training iteration."""
    from pathlib import Path

    from trainsim import load_run_config, simulate

    wall, cpu = time.perf_counter(), time.process_time()
    r = one_run(16384, GiB)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    example = Path(__file__).resolve().parent.parent / "examples" / "gpt3-175b-a100.yaml"
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    res = simulate(load_run_config(example, ["cluster.network_backend=flow"]))
    t_wall, t_cpu = time.perf_counter() - t_wall, time.process_time() - t_cpu
    return [
        ("issue 21 (5): ring all-reduce 1 GiB over 16,384 GPUs (2,048 DGX H100), whole",
         (f"{wall:.2f} s wall, {cpu:.2f} s CPU (build / route / simulate {r['build_s']:.2f} / "
         f"{r['route_s']:.2f} / {r['simulate_s']:.2f} s wall; {r['events']:,.0f} events, "
         f"{r['skipped']:,.0f} steady-state periods skipped; simulated "
         f"{r['collective_s'] * 1e3:.2f} ms)")),
        ("issue 21 (5): training iteration, examples/gpt3-175b-a100.yaml (1,024 A100s), flow backend",
         (f"{t_wall:.2f} s wall, {t_cpu:.2f} s CPU (iteration "
         f"{res.iteration_time_s:.3f} s)")),
    ]


def acceptance() -> list[tuple[str, str]]:
    """The measured figures behind tests/test_flow_backend.py (a), (b), (c)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import test_flow_backend as tb  # the tests define the scenarios

    from trainsim.network.flow import FlowNetwork
    from trainsim.network.topology import rail_fat_tree

    topo = rail_fat_tree(nodes=8, gpus_per_node=8, nodes_per_leaf=4, nic_bw_Bps=tb.NIC)
    net = FlowNetwork(topo)
    sched = net.collective_flows("all_reduce", GiB, list(range(64)))
    alpha = max(sum(topo.links[lk].latency_s for lk in net._path(f, 0)) for f in sched.flows)
    flow_t = net.collective_time("all_reduce", GiB, list(range(64)))
    ab_t = tb.nic_bound_ring_s(64, 8, GiB, alpha)
    one, four = tb.cross_rail_time(1, 1), tb.cross_rail_time(4, 1)
    ecmp_one, ecmp_four = tb.cross_rail_time(1, 4), tb.cross_rail_time(4, 4)
    per_seed = [tb.ecmp_mean_throughput(s) for s in range(20)]
    return [
        ("(a) ring all-reduce 1 GiB, 64 GPUs, 2-tier 1:1: flow vs NIC-bound alpha-beta",
         f"{flow_t * 1e3:.3f} ms vs {ab_t * 1e3:.3f} ms ({(flow_t / ab_t - 1) * 100:+.2f} %)"),
        ("(b) cross-rail pattern, 4:1 over 1:1 (one spine trunk / ECMP over 4 spines)",
         (f"{four / one:.3f}x / {ecmp_four / ecmp_one:.3f}x; with PXN at 4:1: "
          f"{tb.cross_rail_time(4, 1, pxn=True) / one:.3f}x")),
        ("(c) 8 flows over 8 spines, mean per-flow throughput, 20 seeds",
         (f"{statistics.fmean(per_seed) / 1e9:.1f} GB/s (min {min(per_seed) / 1e9:.1f}, "
          f"max {max(per_seed) / 1e9:.1f}) vs 50.0 GB/s collision-free")),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=1024)
    parser.add_argument("--size", type=float, default=GiB)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import trainsim

    runs = [one_run(args.gpus, args.size) for _ in range(args.repeats)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    n = args.gpus
    busbw = 2 * (n - 1) / n * args.size / med["collective_s"]
    print(f"## {datetime.date.today().isoformat()} flow backend "
          f"({platform.processor() or platform.machine()}, {platform.python_version()}, "
          f"trainsim {trainsim.__version__})\n")
    print("| benchmark | figure |\n| --- | --- |")
    print(f"| ring all-reduce {args.size / GiB:g} GiB over {n} GPUs, whole (median of "
          f"{args.repeats}) | {med['total_s']:.2f} s |")
    print(f"| of which build / route / simulate | {med['build_s']:.2f} / {med['route_s']:.2f} / "
          f"{med['simulate_s']:.2f} s |")
    print(f"| flows simulated, events | {med['flows']:,.0f}, {med['events']:,.0f} |")
    print(f"| simulated time, bus bandwidth | {med['collective_s'] * 1e3:.2f} ms, "
          f"{busbw / 1e9:.1f} GB/s |")
    for name, figure in acceptance() + issue21():
        print(f"| {name} | {figure} |")


if __name__ == "__main__":
    main()
