"""What the nanotron check file's gap is made of (a diagnostic: nothing here feeds trainsim;
issue 17, 29th session).

    python benchmarks/nanotron_gap.py        # a few seconds

``benchmarks/training_nanotron.csv`` (the Ultra-Scale Playbook's nanotron runs on AWS p5: 8 H100
a node, EFA between nodes) is predicted too fast on every row. Three parts:

1. Per row: measured and predicted step, the predicted parts (compute, exposed TP / DP / PP
   communication, pipeline bubble, optimizer + other), the residual (measured - predicted),
   whether the TP group spans nodes (tp > 8: nanotron's ParallelContext puts TP innermost,
   huggingface/nanotron@e24d2483 src/nanotron/parallel/context.py ``_init_parallel_groups``,
   the ranks reshaped (ep, pp, dp, tp): the order trainsim's placement assumes), and for those
   rows the TP bus bandwidth the residual implies if it were all TP time (each TP collective
   on the critical stage, ``m`` micro-batches x its ops, priced at trainsim's time plus an
   equal share of the residual).
2. EFA: nccl-tests all_reduce on p5.48xlarge (crazyguitar/aws-gpu-communication-benchmark
   @ 4fdb5a4f data/nccl_all_reduce.csv: 2-32 nodes, 32 MiB-8 GiB, out-of-place busbw) beside
   trainsim's analytical all_reduce for the same GPUs and bytes (400 Gbit/s a GPU, the
   file's NIC) on ``cluster.fabric: efa``, as the file's rows are priced: the EFA gap left.
   (Priced as InfiniBand, before the fabric field, medium messages took 2.4-2.9x trainsim's
   time, large ones 1.05-1.7x.)
3. Per row, an upper bound of what that EFA gap explains: every TP collective of a TP group
   over nodes (the whole count on the critical stage, hidden or not) and the exposed DP
   communication, each slowed by the measured / trainsim ratio at the nearest (nodes, bytes)
   point of part 2 (an all-gather or reduce-scatter of S bytes moves what an all-reduce of
   S / 2 moves: that point), beside the residual.
4. Per pipelined row, the step if the pipeline ran fully serialized (``serial``: pp x the
   predicted step less its bubble, every stage's work back to back with nothing overlapped):
   nanotron's p2p (parallel/pipeline_parallel/p2p.py ``P2P._send_meta`` / ``_recv_meta``:
   blocking metadata send/recv per tensor, a pageable host-to-device copy and a device-to-host
   read of the metadata, then one isend/irecv per tensor outside ``batch_isend_irecv``) can
   at worst make each stage wait for its neighbours; a measured step above that bound is
   beyond any schedule.
5. Where the summed |error| lies (32nd session): each class's share of the file's summed
   absolute error, best-per-cell against drawn rows.
6. ``--efa-ring-hop-us X``: the rows re-priced with an EFA ring hop of X us above
   InfiniBand's (``_HOP_US["net"]["ring"]``) in place of ``EFA_HOP_US`` (trees, PAT and
   NVLS+tree unchanged), best and drawn MAPE and every row that moves: a what-if, not a
   constant. The p5 all_reduce rows' ring steps (~30 us, ``benchmarks/efa_regions.py``) were
   measured under aws-ofi-nccl's tuner, which NCCL only loads from 2.19.3 on (ext-tuner/
   appears in NVIDIA/nccl v2.19.3-1, absent at v2.18.1-1 and v2.18.3-1); the playbook's runs
   used the conda env ``2-1-cu121`` (huggingface/nanotron@67c5ebb6 run_multinode.sh and
   examples/config_tiny_llama_bench.yaml's torchrun path), torch 2.1, whose wheels pin
   nvidia-nccl-cu12 2.18.1.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from trainsim import simulator
from trainsim.catalog import gpu as catalog_gpu
from trainsim.config import ClusterConfig
from trainsim.model.counts import total_params
from trainsim.network import network_for
from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Comm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

HERE = Path(__file__).parent
FILE = HERE / "training_nanotron.csv"
MIB = 2**20
# crazyguitar/aws-gpu-communication-benchmark @ 4fdb5a4fab8b2e173e2c7e87d9faddd9f54ddfea
# data/nccl_all_reduce.csv (SageMaker HyperPod p5.48xlarge, 4 EFA a GPU; nccl-tests
# all_reduce_perf, 1,000 iterations, out-of-place busbw GB/s): {(nodes, MiB): busbw}
P5_ALL_REDUCE = {
    (2, 32): 147.32, (2, 128): 305.13, (2, 1024): 435.14, (2, 8192): 477.71,
    (4, 32): 95.38, (4, 128): 229.48, (4, 1024): 280.30, (4, 8192): 356.99,
    (8, 32): 86.74, (8, 128): 156.33, (8, 1024): 274.47, (8, 8192): 355.36,
    (16, 32): 74.85, (16, 128): 129.20, (16, 1024): 269.23, (16, 8192): 356.27,
    (32, 32): 66.34, (32, 128): 115.78, (32, 1024): 220.08, (32, 8192): 321.10,
}


def trainsim_all_reduce_s(gpus: int, size: float) -> float:
    """trainsim's analytical all_reduce of ``size`` bytes over ``gpus`` H100 (8 a node, 400
    Gbit/s a GPU, EFA), as ``trainsim collective`` prices it."""
    cluster = ClusterConfig(gpu=catalog_gpu("h100-sxm-80gb"), num_gpus=gpus, gpus_per_node=8,
                            nic_bw_Bps=400e9 / 8, fabric="efa")
    net = network_for(cluster)
    return net.collective("all_reduce", float(size), net.span(gpus, 1), "auto", "auto").time_s


def efa_ratios() -> dict[tuple[int, int], float]:
    """Measured p5 time over trainsim's time at each point of ``P5_ALL_REDUCE``."""
    out = {}
    for (nodes, mib), busbw in P5_ALL_REDUCE.items():
        g = 8 * nodes
        measured = mib * MIB * 2 * (g - 1) / g / (busbw * 1e9)
        out[(nodes, mib)] = measured / trainsim_all_reduce_s(g, mib * MIB)
    return out


def nearest_ratio(ratios: dict[tuple[int, int], float], nodes: int, size: float) -> float:
    """The ratio at the table point nearest (log scale) to ``nodes`` and ``size`` bytes;
    1 inside one node (no EFA on the path)."""
    if nodes <= 1:
        return 1.0
    key = min(ratios, key=lambda k: (math.log2(k[0] / nodes)) ** 2
              + (math.log2(k[1] * MIB / max(size, 1.0))) ** 2)
    return ratios[key]


def tp_ops_per_microbatch(cfg, stage: int) -> list[Comm]:
    """The TP collectives one micro-batch runs on pipeline stage ``stage``."""
    sh = shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=False)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    ops = [op for op in lf + lb if isinstance(op, Comm) and op.group == "tp"]
    ops = ops * cfg.stage_layer_counts[stage]
    last = len(cfg.stage_layer_counts) - 1
    ends = []
    if stage == 0:
        ends += embedding_forward(cfg, sh) + embedding_backward(cfg, sh)
    if stage == last:
        hf = head_forward(cfg, sh)
        ends += hf + head_backward(cfg, sh, hf)
    return ops + [op for op in ends if isinstance(op, Comm) and op.group == "tp"]


AXES = (("model", lambda r: r["id"].split("-")[2]), ("nodes", lambda r: int(r["num_gpus"]) // 8),
        ("tp", lambda r: int(r["tp"])), ("pp", lambda r: int(r["pp"])),
        ("dp", lambda r: int(r["num_gpus"]) // (int(r["tp"]) * int(r["pp"]))),
        ("mbs", lambda r: int(r["micro_batch_size"])),
        ("acc", lambda r: int(r["global_batch_size"]) * int(r["tp"]) * int(r["pp"])
         // (int(r["micro_batch_size"]) * int(r["num_gpus"]))),
        ("zero", lambda r: int(r["zero_stage"])))
"""Configuration axes of a row (its CSV fields; the model from the id, 1b/3b/8b/80b)."""


def by_axis(records: list[tuple[dict, float]]) -> dict[str, list[tuple[object, float, int]]]:
    """Signed error (%) of ``records`` ((CSV row, signed error %)) grouped along each of
    ``AXES``: per axis, (value, mean error, rows) in increasing value order."""
    out: dict[str, list[tuple[object, float, int]]] = {}
    for name, get in AXES:
        cells: dict[object, list[float]] = {}
        for row, err in records:
            cells.setdefault(get(row), []).append(err)
        key = (lambda v: (0, int(v[:-1]))) if name == "model" else (lambda v: (0, v))
        out[name] = [(v, sum(e) / len(e), len(e)) for v, e in
                     sorted(cells.items(), key=lambda kv: key(kv[0]))]
    return out


def error_share(records: list[tuple[str, float]]) -> dict[str, tuple[float, float, int]]:
    """Each class's share of the summed |error| of ``records`` ((class, signed error %)):
    {class: (share of the sum, MAPE of the class, rows)}."""
    total = sum(abs(e) for _, e in records) or 1.0
    out: dict[str, tuple[float, float, int]] = {}
    for key in sorted({k for k, _ in records}):
        errs = [abs(e) for k, e in records if k == key]
        out[key] = (sum(errs) / total, sum(errs) / len(errs), len(errs))
    return out


def efa_ring_hop_what_if(rows: list[dict], extra_us: float) -> list[tuple[str, float, float]]:
    """(row id, signed error %, signed error % with an EFA ring hop of ``extra_us`` above
    InfiniBand's) for every row; ``nccl._hop_us`` is restored afterwards."""
    from trainsim.collectives import nccl

    base = [(r["id"], predict_training_row(r)) for r in rows]
    original = nccl._hop_us

    def hop(kind: str, fam: str, proto: str) -> float:
        if kind == "efa" and fam == "ring":
            return nccl._HOP_US["net"][fam][proto] + extra_us
        return original(kind, fam, proto)

    nccl._hop_us = hop
    try:
        alt = [predict_training_row(r) for r in rows]
    finally:
        nccl._hop_us = original
    return [(rid, 100 * (b.predicted / b.measured - 1), 100 * (a.predicted / a.measured - 1))
            for (rid, b), a in zip(base, alt)]


def print_what_if(rows: list[dict], extra_us: float) -> None:
    out = efa_ring_hop_what_if(rows, extra_us)
    print(f"== EFA ring hop {extra_us:g} us above InfiniBand's (main: EFA_HOP_US on every hop)")
    for label, pick in (("all", lambda i: True), ("best", lambda i: i.startswith("nt-best")),
                        ("draw", lambda i: i.startswith("nt-draw"))):
        sel = [(b, a) for i, b, a in out if pick(i)]
        print(f"   {label:5s} MAPE {sum(abs(b) for b, _ in sel) / len(sel):6.2f} -> "
              f"{sum(abs(a) for _, a in sel) / len(sel):6.2f}  [{len(sel)}]")
    for rid, b, a in out:
        if abs(a - b) > 0.3:
            print(f"   {rid:48s} {b:+7.1f} -> {a:+7.1f}")


def main() -> int:
    import sys

    if "--efa-ring-hop-us" in sys.argv:
        with FILE.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        print_what_if(rows, float(sys.argv[sys.argv.index("--efa-ring-hop-us") + 1]))
        return 0
    ratios = efa_ratios()
    print("== EFA (p5.48xlarge nccl-tests all_reduce, crazyguitar @ 4fdb5a4f) vs trainsim: "
          "measured / predicted time")
    print("   nodes " + " ".join(f"{m:>8d}M" for m in (32, 128, 1024, 8192)))
    for nodes in (2, 4, 8, 16, 32):
        print(f"   {nodes:5d} " + " ".join(f"{ratios[(nodes, m)]:9.2f}"
                                           for m in (32, 128, 1024, 8192)))
    with FILE.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    print(f"\n== {FILE.name}: {len(rows)} rows (s; tp/dp/pp = exposed communication; resid = "
          "measured - predicted; busbw = the TP bus bandwidth the residual implies, GB/s; "
          "efa = upper bound of the EFA gap, s)")
    print(f"   {'row':44s} {'meas':>8s} {'pred':>7s} {'err%':>6s} {'comp':>7s} {'tp':>6s} "
          f"{'dp':>6s} {'pp':>6s} {'bubble':>6s} {'other':>6s} {'resid':>8s} {'busbw':>6s} "
          f"{'efa':>6s} {'serial':>7s}")
    groups: dict[str, list[float]] = {}
    best: list[tuple[dict, float]] = []
    shares: list[tuple[str, float]] = []
    bounds: list[tuple[str, float]] = []
    for row in rows:
        res = predict_training_row(row)
        cfg = row_config(row, res.chosen)
        sim = simulator.simulate(cfg)
        b, ex = sim.breakdown, sim.exposed_comm
        pricer = Pricer(cfg)
        tp, dp, gpn = cfg.parallel.tp, cfg.dp, cfg.cluster.gpus_per_node
        m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * dp)
        resid = res.measured - res.predicted
        ops = tp_ops_per_microbatch(cfg, sim.critical_stage) if tp > 1 else []
        tp_nodes = tp // gpn if tp > gpn else 1
        busbw, efa = "", 0.0
        if ops and tp_nodes > 1:
            t_ops = [pricer.comm_time(op) for op in ops]
            extra = resid / (m * len(ops))
            bw = [op.bytes * (tp - 1) / tp / (t + extra) for op, t in zip(ops, t_ops)]
            busbw = f"{sum(bw) / len(bw) / 1e9:6.1f}"
            efa += m * sum((nearest_ratio(ratios, tp_nodes, op.bytes / 2) - 1) * t
                           for op, t in zip(ops, t_ops))
        dp_nodes = max(1, dp * tp // gpn) if dp > 1 else 1
        # ZeRO-1 all-reduces the rank's whole fp32 gradient buffer, ZeRO-0 DDP buckets of
        # 13.1 M fp32 elements (the profile's ddp_bucket_size)
        grad_bytes = 4 * total_params(cfg.model) / (tp * cfg.parallel.pp)
        if cfg.parallel.zero_stage == 0:
            grad_bytes = min(grad_bytes, 4 * 13107200)
        efa += ex.get("dp", 0.0) * (nearest_ratio(ratios, min(dp_nodes, 32), grad_bytes) - 1)
        pp = cfg.parallel.pp
        serial = f"{pp * (res.predicted - b['pipeline_bubble_s']):7.2f}" if pp > 1 else ""
        other = b["optimizer_s"] + b["other_s"] + b["data_loading_s"]
        err = 100 * (res.predicted / res.measured - 1)
        print(f"   {row['id']:44s} {res.measured:8.3f} {res.predicted:7.3f} {err:+6.1f} "
              f"{b['compute_s']:7.3f} {ex.get('tp', 0):6.3f} {ex.get('dp', 0):6.3f} "
              f"{ex.get('pp', 0):6.3f} {b['pipeline_bubble_s']:6.3f} {other:6.3f} "
              f"{resid:8.3f} {busbw:>6s} {efa:6.3f} {serial:>7s}")
        kind = "best" if row["id"].startswith("nt-best") else "draw"
        if kind == "best":
            best.append((row, err))
        span = "tp>node" if tp_nodes > 1 else ("pp>1" if cfg.parallel.pp > 1 else "tp<=node,pp1")
        groups.setdefault(f"{kind} {span}", []).append(err)
        groups.setdefault(f"{kind} all", []).append(err)
        shares.append((f"{kind} {span}", err))
        beyond = pp > 1 and res.measured > pp * (res.predicted - b["pipeline_bubble_s"])
        bounds.append((f"{kind} {'beyond serial' if beyond else 'within'}", err))
    print("\n== signed error by class (mean %, median %, rows)")
    for key in sorted(groups):
        errs = sorted(groups[key])
        print(f"   {key:22s} {sum(errs) / len(errs):+7.1f} {errs[len(errs) // 2]:+7.1f} "
              f"{len(errs):4d}")
    print("\n== share of the file's summed |error| by class (share %, MAPE %, rows)")
    for key, (share, mape, n) in error_share(shares).items():
        print(f"   {key:22s} {100 * share:6.1f} {mape:7.1f} {n:4d}")
    print("   (measured above the fully serialized pipeline, column serial, or not)")
    for key, (share, mape, n) in error_share(bounds).items():
        print(f"   {key:22s} {100 * share:6.1f} {mape:7.1f} {n:4d}")
    print("\n== best-per-cell rows, signed error by configuration axis (mean % [rows])")
    for name, cells in by_axis(best).items():
        print(f"   {name:6s} " + "  ".join(f"{v}: {e:+.1f} [{n}]" for v, e, n in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
