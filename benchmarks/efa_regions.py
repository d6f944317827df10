"""Which NCCL algorithm and protocol ran each published p5 EFA all_reduce row, and what each
reached (a diagnostic: nothing here feeds trainsim; issue 17 scope 3, 31st session).

    PYTHONPATH=src python benchmarks/efa_regions.py        # ~2 s

The collectives file's AWS p5.48xlarge rows (``fabric = efa``: nccl-tests all_reduce_perf on
SageMaker HyperPod, 2-32 nodes of 8 H100, 32 MiB-8 GiB; crazyguitar/aws-gpu-communication-
benchmark @ 4fdb5a4f data/nccl_all_reduce.csv) step: 4-16 nodes sit flat at ~275 GB/s from
256 MiB to 1-2 GiB and then jump to ~355; 32 nodes falls to 157-220 GB/s at 512 MiB-1 GiB.

On EFA, NCCL's algorithm and protocol are not chosen by NCCL's own cost model but by the
tuner plugin that ships in aws-ofi-nccl (``libnccl-ofi-tuner``, the "region" tuner for P5 /
P5e: aws/aws-ofi-nccl src/tuner/nccl_ofi_regions.c ``region_init_internal_p5_p5e``, read at
39ee9694): for a communicator of 8 ranks a node it maps each (message bytes, rank count) point
to one (algorithm, protocol) by polygons in that plane, and falls back to NCCL's tuner outside
them. ``P5_BANDS`` below is that table read at the rank counts of the published rows (our own
reading of the polygons' edges at each rank count; an edge counts as inside, the first region
in the file's order wins). The source does not state the plugin version of its runs, so the
labels are what the current table says, checked by the rows themselves: every class's rows
form one flat plateau (below), and the steps fall exactly on the band edges.

What it shows (2026-11-26):
- tree/LL128 below 36 MiB (4 nodes) to 288 MiB (16-32 nodes); ring/LL128 above it up to
  1.3-2 GiB; ring/Simple (4-16 nodes) or NVLS+tree/Simple (16-32 nodes) beyond; NVLS+tree on
  2 nodes throughout and on 32 nodes also at 288 MiB-1 GiB (the 157 and 220 GB/s rows).
- per class, a fixed cost plus bytes at one rate fits each node count; ring/Simple reaches
  ~355 GB/s and ring/LL128 ~275 at 4, 8, 16 and 32 nodes alike: no decline with the ring's
  length on EFA, where NVIDIA/nccl #1229's InfiniBand reduce_scatter falls 360 -> 300 from 4 to
  32 nodes (``scale_terms.FABRIC_DOUBLING_COST``). SRD sprays each flow's packets over many
  paths (Shalev et al., IEEE Micro 2020), so ring flows do not collide in ECMP hashing: the
  mechanism behind the doubling cost is absent, and the rows agree.
- a ring's fixed cost grows with its length as it should (ring/LL128: 0.26, 0.49, 0.85 ms on
  4, 8, 16 nodes, 33, 31, 27 us a network step), but each step costs a quarter of the 114 us
  that trainsim's EFA hop (``scale_terms.EFA_HOP_US``, fitted while NVLS+tree was the only
  choice) charges a ring step; NVLS+tree on 32 nodes pays 3.6 ms (trainsim: 1.2 ms).
- trainsim prices every one of these rows as NVLS+tree/Simple (its EFA fit); the last table
  prices each row with the tuner's class instead (mean |ln| 0.117 -> 0.226: the class alone
  does not fit without per-class EFA costs). Small messages (tree/LL128, 32 MiB on 8-32
  nodes) run 1.3-1.5x faster than trainsim prices them: a faithful EFA model makes the
  nanotron file's small DP buckets faster, not slower.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

from trainsim.catalog import gpu as catalog_gpu
from trainsim.collectives.nccl import _hop_us
from trainsim.config import ClusterConfig
from trainsim.network import network_for

HERE = Path(__file__).parent
FILE = HERE / "collectives_published.csv"
GIB = 2**30
MIB = 2**20

P5_BANDS: dict[int, tuple[tuple[float, str, str], ...]] = {
    16: ((30 * MIB, "tree", "LL128"), (math.inf, "nvls_tree", "Simple")),
    32: ((36 * MIB, "tree", "LL128"), (GIB * (1 + 15 / 47), "ring", "LL128"),
         (1.5 * GIB - 1, "nccl", "own tuner"), (math.inf, "ring", "Simple")),
    64: ((112 * MIB, "tree", "LL128"), (2 * GIB, "ring", "LL128"),
         (2.5 * GIB - 1, "nccl", "own tuner"), (math.inf, "ring", "Simple")),
    128: ((288 * MIB, "tree", "LL128"), (2 * GIB, "ring", "LL128"),
          (6 * GIB, "nvls_tree", "Simple"), (math.inf, "ring", "Simple")),
    256: ((288 * MIB, "tree", "LL128"), (1025 * MIB - 1, "nvls_tree", "Simple"),
          (2 * GIB, "ring", "LL128"), (12 * GIB, "nvls_tree", "Simple"),
          (math.inf, "ring", "Simple")),
}
"""aws-ofi-nccl's P5/P5e region tuner for all_reduce with 8 ranks a node, read at 16-256 ranks:
per rank count, (largest message in bytes, algorithm, protocol) bands in ascending order
(src/tuner/nccl_ofi_regions.c @ 39ee9694 ``region_init_internal_p5_p5e``, the ``nRanks == 8 *
nNodes`` all_reduce regions: tree/LL128 up to the edge through 30 MiB at 16, 36 MiB at 32,
112 MiB at 64 and 288 MiB at 128-256 ranks; on 16 ranks NVLS+tree above it; ring/LL128 up to
the edge through 1 GiB at 17, 2 GiB at 64-128 and, at 160-256 ranks, from the edge 424 MiB at
160 - 1 GiB + 1 MiB at 256 up to 2 GiB; NVLS+tree between the ring/LL128 region and the
ring/Simple edge through 1.5 GiB at 32, 2.5 GiB at 64, 7.5 GiB at 160 and 9 GiB at 192, which
passes 12 GiB at 256; at 128 ranks NVLS+tree's own edge reaches 6 GiB before ring/Simple's
5.8 GiB, and NVLS+tree is listed first). 'nccl': no region, NCCL's own tuner decides."""


def tuner_choice(ranks: int, size: float) -> tuple[str, str]:
    """The (algorithm, protocol) ``P5_BANDS`` gives an all_reduce of ``size`` bytes."""
    for top, algo, proto in P5_BANDS[ranks]:
        if size <= top:
            return algo, proto
    raise AssertionError("the last band is unbounded")


def efa_rows(path: Path = FILE) -> list[dict]:
    """The file's p5 EFA all_reduce rows: ranks, bytes, measured busbw (GB/s), time (s)."""
    out = []
    with path.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if (r.get("fabric") or "").strip() != "efa" or r["collective"] != "all_reduce":
                continue
            g, size, bw = int(r["num_gpus"]), float(r["message_bytes"]), float(
                r["measured_busbw_GBps"])
            out.append({"id": r["id"], "ranks": g, "nodes": g // int(r["gpus_per_node"]),
                        "size": size, "busbw": bw,
                        "time": 2 * (g - 1) / g * size / (bw * 1e9)})
    return out


def line_fit(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Least squares time = a + size / rate over (size, time) points: (a in s, rate in B/s of
    algorithm bytes); None with fewer than two sizes."""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, 1.0 / slope


def trainsim_cost(ranks: int, size: float, algo: str = "auto", proto: str = "auto"):
    """trainsim's analytical all_reduce on the rows' cluster (p5: 400 Gbit/s a GPU, EFA)."""
    cluster = ClusterConfig(gpu=catalog_gpu("h100-sxm-80gb"), num_gpus=ranks, gpus_per_node=8,
                            nic_bw_Bps=400e9 / 8, fabric="efa")
    net = network_for(cluster)
    return net.collective("all_reduce", size, net.span(ranks, 1), algo, proto)


def main() -> int:
    rows = efa_rows()
    print(f"== {len(rows)} p5 EFA all_reduce rows: busbw GB/s [aws-ofi-nccl tuner's class]")
    sizes = sorted({r["size"] for r in rows})
    print("   nodes " + "".join(f"{s / MIB:>12.0f}M" for s in sizes))
    short = {("tree", "LL128"): "T/128", ("ring", "LL128"): "R/128", ("ring", "Simple"): "R/S",
             ("nvls_tree", "Simple"): "NT/S", ("nccl", "own tuner"): "nccl"}
    by = {(r["nodes"], r["size"]): r for r in rows}
    for nodes in sorted({r["nodes"] for r in rows}):
        cells = []
        for s in sizes:
            r = by.get((nodes, s))
            cells.append(f"{r['busbw']:7.0f} {short[tuner_choice(r['ranks'], s)]:>5s}"
                         if r else " " * 13)
        print(f"   {nodes:5d} " + "".join(cells))

    print("\n== per class and node count: time = fixed + algbytes / rate (least squares over"
          " the class's rows); busbw at the rate")
    groups: dict[tuple[str, str], dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[tuner_choice(r["ranks"], r["size"])][r["nodes"]].append(r)
    for cls in sorted(groups):
        for nodes in sorted(groups[cls]):
            rs = groups[cls][nodes]
            fit = line_fit([(r["size"], r["time"]) for r in rs])
            lo, hi = min(r["busbw"] for r in rs), max(r["busbw"] for r in rs)
            g = rs[0]["ranks"]
            tail = (f"fixed {fit[0] * 1e3:6.2f} ms  rate-busbw {2 * (g - 1) / g * fit[1] / 1e9:5.0f}"
                    if fit else "(one size)")
            if fit and cls[0] == "ring":  # 2 x nodes network steps in a ring all_reduce
                tail += (f"  {fit[0] * 1e6 / (2 * nodes):4.0f} us a network step (trainsim's"
                         f" EFA ring hop {_hop_us('efa', 'ring', cls[1]):.0f})")
            print(f"   {short[cls]:5s} {nodes:3d} nodes  {len(rs)} rows  busbw {lo:4.0f}-{hi:4.0f}"
                  f"  {tail}")

    print("\n== large messages by node count (GB/s): EFA ring/Simple vs NVIDIA/nccl #1229"
          " (InfiniBand reduce_scatter, 8 H100 a node)")
    ib = {4: 360, 8: 345, 16: 320, 32: 300, 64: 280, 128: 260}
    for nodes in (4, 8, 16, 32):
        rs = [r for r in rows if r["nodes"] == nodes
              and tuner_choice(r["ranks"], r["size"]) == ("ring", "Simple")]
        efa = f"{max(r['busbw'] for r in rs):5.0f}" if rs else "    -"
        print(f"   {nodes:3d} nodes  EFA ring/Simple {efa}   #1229 IB ring {ib[nodes]:4d}")

    print("\n== trainsim (module constants) per row: its choice, and priced as the tuner's class"
          " (ratio predicted / measured busbw)")
    errs_auto, errs_cls = [], []
    for r in sorted(rows, key=lambda x: (x["nodes"], x["size"])):
        algo, proto = tuner_choice(r["ranks"], r["size"])
        auto = trainsim_cost(r["ranks"], r["size"])
        a_ratio = auto.busbw_Bps / 1e9 / r["busbw"]
        errs_auto.append(abs(math.log(a_ratio)))
        if algo == "nccl":
            cls_txt = "      -"
        else:
            c = trainsim_cost(r["ranks"], r["size"], algo, proto)
            c_ratio = c.busbw_Bps / 1e9 / r["busbw"]
            errs_cls.append(abs(math.log(c_ratio)))
            cls_txt = f"{c_ratio:7.2f}"
        print(f"   {r['id']:32s} {auto.algorithm:>9s}/{auto.protocol:6s} {a_ratio:5.2f}"
              f"   as {short[(algo, proto)]:5s}{cls_txt}")
    print(f"   mean |ln ratio|: trainsim's choice {sum(errs_auto) / len(errs_auto):.3f} "
          f"({len(errs_auto)} rows); forced to the tuner's class "
          f"{sum(errs_cls) / len(errs_cls):.3f} ({len(errs_cls)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
