"""Where the DeepSpeed ZeRO-3 rows' errors sit (issue 17 item 3 diagnostics; nothing here feeds
trainsim).

    python benchmarks/zero3_gap.py              # all four sections, a few min on one core
    python benchmarks/zero3_gap.py residuals    # or copies, zeropp, azure: one section

1. ``residuals``: every ZeRO-3 row of the ``deepspeed`` framework (public file and
   ``benchmarks/training_deepspeed.csv``) with its measured step minus the predicted one, in
   seconds and as a share of the predicted compute, by hidden size. What it shows: a gap that
   stays near +33..+41 s on all four hidden-20480 (530B) rows of two sources and two DeepSpeed
   generations (v0.3.x per-tensor synchronous gathers, 0.6.2 coalesced prefetch), at 512 to
   2,240 ranks and 2,048 or 8,192 tokens per GPU, against +3..+4 s on the hidden-12288 rows at
   256 and 384 ranks: neither per-rank nor per-token, and not the GEMM rate (the predicted
   fc1 rate is 223-225 TFLOP/s on both sizes).
2. ``copies``: the 2021 rows with the host cost of ProcessGroupNCCL's per-rank copy-outs
   (``workload.sharding.list_all_gather_ops``: one ``copy_`` per rank after a list
   ``all_gather``, issued from a C++ loop in ProcessGroupNCCL::allgather, not from Python;
   priced since the 30th session at ``compute.host.CPP_LAUNCH_S``, 8.13 us, not an eager
   Python op's ``HOST_S_PER_KERNEL``) set to other values: a what-if. What it showed at 30 us
   (29th session): the 1,536- and 2,240-rank rows sit on a knife edge (host launches against
   the all-gather they follow); with the persistent parameters' per-rank Python copies after
   each step (``workload.zero3_persistent``) the many-rank rows carry a per-rank cost of their
   own.
3. ``zeropp``: the check file's -85 % row (the ZeRO++ tutorial's ZeRO-3 baseline log: 18B, 64
   V100 in 4 DGX-2-class nodes, the network cell empty) at 100, 200, 400 and 800 Gb/s per
   16-GPU node, and the ZeRO++ blog's own ZeRO-3 baseline bars for the same 18B model on 384
   V100 (microsoft/DeepSpeed @ 38327e07f6cd blogs/zeropp/assets/images/eval1.png: 4 IB links
   of 100 Gb/s per node, 1K / 2K tokens per GPU: 25 / 40 TFLOPs; eval2.png: 1 IB link, 14 / 26;
   eval3.png: 2K tokens at 200 and 800 Gb/s, 37 / 47; the links per node from
   blogs/zeropp/chinese/README.md, figures 6-8) turned into rows the same way the check file
   turns the tutorial's TFLOPs into a step (Megatron-DeepSpeed's 96 B s l h^2 (1 + s/6h +
   V/16lh); sequence 512, the tutorial's, micro-batch = tokens / 512), predicted as given
   (DeepSpeed of 2023: prefetched per-block gathers) and with every gather waited for
   (``framework_version`` 2021-07). What-if rows, not a check file: the blog states neither the
   sequence length nor the batch.
4. ``azure``: the DeepSpeed-on-Azure bars (benchmarks/training_dsazure.csv, DeepSpeed 0.6.2, and
   the three labelled rows of training_deepspeed.csv): the gap per step by model, micro-batch
   and ranks, and one least-squares line gap = a + b x ranks per model. What it shows: per
   model a per-step constant that does not follow the tokens (micro-batch 2 to 32) plus a
   per-rank slope; the 530B constant is several times the 175B one.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import sys
from collections.abc import Iterator
from pathlib import Path

from trainsim.compute import host
from trainsim.compute.host import CPP_LAUNCH_S, HOST_S_PER_KERNEL
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = BUNDLED_DIR / "training_public.csv"
CHECKS = ROOT / "benchmarks" / "training_deepspeed.csv"
TUTORIAL_ROW = "zeropp-tutorial-18b-zero3-64gpu"
IB_GBPS = 100.0
"""One InfiniBand link of the ZeRO++ evaluation cluster, Gb/s (the blog: '4 IB, each 100 Gbps')."""
GPUS_PER_NODE = 16
"""V100 per DGX-2-class node (the tutorial: '4 nodes of 16x V100-SXM3')."""
BLOG_BARS = (  # (IB links per node, tokens per GPU, ZeRO-3 baseline TFLOPs per GPU, figure)
    (4, 1024, 25.0, "eval1.png"), (4, 2048, 40.0, "eval1.png"),
    (1, 1024, 14.0, "eval2.png"), (1, 2048, 26.0, "eval2.png"),
    (2, 2048, 37.0, "eval3.png"), (8, 2048, 47.0, "eval3.png"))
BLOG_GPUS = 384
BLOG_SEQ = 512
COPY_US = (30.0, 20.0, 15.0, 10.0, CPP_LAUNCH_S * 1e6, 5.0)


def read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def zero3_rows(path: Path) -> list[dict[str, str]]:
    return [r for r in read(path) if r["framework"] == "deepspeed" and r["zero_stage"] == "3"]


def predict(row: dict[str, str]) -> dict[str, float]:
    res = predict_training_row(row)
    if res.predicted is None:
        raise RuntimeError(f"{row['id']}: {res.error}")
    b = res.extra["breakdown"]
    return {"measured": res.measured, "predicted": res.predicted, "compute": b["compute_s"],
            "comm": b["exposed_comm_s"], "memory": res.predicted_memory_gib or 0.0}


def error(p: dict[str, float]) -> float:
    return p["predicted"] / p["measured"] - 1


def megatron_ds_flops(row: dict[str, str]) -> float:
    """FLOPs per step by Megatron-DeepSpeed's throughput formula (activation checkpointing
    counted): 96 B s l h^2 (1 + s/6h + V/16lh), V the padded vocabulary."""
    b, s = float(row["global_batch_size"]), float(row["seq_length"])
    h, n, v = float(row["hidden_size"]), float(row["num_layers"]), float(row["vocab_size"])
    return 96 * b * s * n * h * h * (1 + s / (6 * h) + v / (16 * n * h))


def tflops(row: dict[str, str], step_s: float) -> float:
    return megatron_ds_flops(row) / (step_s * float(row["num_gpus"]) * 1e12)


def blog_rows(tutorial: dict[str, str]) -> list[dict[str, str]]:
    """The ZeRO++ blog's ZeRO-3 baseline bars for 18B as rows: the tutorial row's model and
    settings on 384 GPUs, the bar's links per node, micro-batch tokens / 512."""
    out = []
    for ib, tokens, tf, fig in BLOG_BARS:
        mb = tokens // BLOG_SEQ
        r = dict(tutorial, id=f"zeropp-blog-18b-ib{ib}-{tokens}tok", num_gpus=str(BLOG_GPUS),
                 nic_gbps_per_gpu=f"{ib * IB_GBPS / GPUS_PER_NODE:g}",
                 seq_length=str(BLOG_SEQ), micro_batch_size=str(mb),
                 global_batch_size=str(mb * BLOG_GPUS), source=fig)
        r["measured_iteration_s"] = f"{megatron_ds_flops(r) / (tf * 1e12 * BLOG_GPUS):.6f}"
        out.append(r)
    return out


@contextlib.contextmanager
def copy_cost(us: float) -> Iterator[None]:
    """ProcessGroupNCCL's per-rank copy-outs (``list_all_gather_ops``, the persistent
    parameters' list ``all_gather`` too) costing ``us`` of host time each instead of the
    shipped ``compute.host.CPP_LAUNCH_S`` (a C++-issued launch); kernels and bytes unchanged."""
    original = host.CPP_LAUNCH_S
    host.CPP_LAUNCH_S = us * 1e-6
    try:
        yield
    finally:
        host.CPP_LAUNCH_S = original


def residuals() -> None:
    print("\n== ZeRO-3 rows of the deepspeed framework: measured minus predicted")
    print(f"{'row':34s} {'version':>7s} {'h':>6s} {'ranks':>5s} {'tok/GPU':>7s} {'meas s':>7s} "
          f"{'pred s':>7s} {'err':>7s} {'compute':>7s} {'comm':>6s} {'gap s':>7s} "
          f"{'gap/comp':>8s} {'GiB':>5s}")
    by_h: dict[str, list[float]] = collections.defaultdict(list)
    for path in (PUBLIC, CHECKS):
        for r in zero3_rows(path):
            p = predict(r)
            gap = p["measured"] - p["predicted"]
            tokens = int(r["micro_batch_size"] or 0) * int(r["seq_length"])
            by_h[r["hidden_size"]].append(gap)
            print(f"{r['id'][:34]:34s} {r['framework_version']:>7s} {r['hidden_size']:>6s} "
                  f"{r['num_gpus']:>5s} {tokens:7d} {p['measured']:7.1f} {p['predicted']:7.1f} "
                  f"{p['predicted'] / p['measured'] - 1:+7.1%} {p['compute']:7.1f} "
                  f"{p['comm']:6.1f} {gap:+7.1f} {gap / p['compute']:+8.1%} {p['memory']:5.1f}")
    for h, gaps in sorted(by_h.items(), key=lambda kv: int(kv[0])):
        print(f"   hidden {h}: {len(gaps)} rows, gap {min(gaps):+.1f} .. {max(gaps):+.1f} s")


def copies() -> None:
    rows = [r for r in zero3_rows(PUBLIC) if r["framework_version"] < "2021-07"]
    print("\n== 2021 rows, host cost of each per-rank copy-out after a list all_gather "
          f"(as given: {CPP_LAUNCH_S * 1e6:.2f} us; an eager op's: {HOST_S_PER_KERNEL * 1e6:.0f} us)")
    print(f"{'copy us':>7s} " + " ".join(f"{r['id'].split('zero3-')[-1]:>14s}" for r in rows)
          + "    MAPE")
    for us in COPY_US:
        with copy_cost(us):
            errs = [error(predict(r)) for r in rows]
        print(f"{us:7.2f} " + " ".join(f"{e:+14.1%}" for e in errs)
              + f" {sum(abs(e) for e in errs) / len(errs):7.1%}")


def zeropp() -> None:
    tutorial = next(r for r in read(CHECKS) if r["id"] == TUTORIAL_ROW)
    print(f"\n== {TUTORIAL_ROW} (measured {float(tutorial['measured_iteration_s']):.2f} s, "
          f"{tflops(tutorial, float(tutorial['measured_iteration_s'])):.2f} TFLOPs/GPU) "
          "by the network cell (IB links of 100 Gb/s per 16-GPU node)")
    for ib in (None, 1, 2, 4, 8):
        r = dict(tutorial)
        if ib is not None:
            r["nic_gbps_per_gpu"] = f"{ib * IB_GBPS / GPUS_PER_NODE:g}"
        p = predict(r)
        label = "as given (cell empty)" if ib is None else f"{ib} IB, {r['nic_gbps_per_gpu']} Gb/s/GPU"
        print(f"   {label:24s} predicted {p['predicted']:6.2f} s "
              f"({p['predicted'] / p['measured'] - 1:+6.1%}), compute {p['compute']:.2f} s, "
              f"exposed comm {p['comm']:.2f} s")
    print("\n== ZeRO++ blog, ZeRO-3 baseline, 18B on 384 V100 (what-if rows, seq 512 assumed)")
    print(f"{'row':34s} {'fig':>9s} {'TFLOPs':>6s} {'meas s':>7s} {'prefetched':>10s} "
          f"{'compute':>7s} {'comm':>5s} {'synchronous':>11s}")
    for r in blog_rows(tutorial):
        p = predict(r)
        s = predict(dict(r, framework_version="2021-07"))
        print(f"{r['id']:34s} {r['source']:>9s} {tflops(r, p['measured']):6.1f} "
              f"{p['measured']:7.2f} {p['predicted'] / p['measured'] - 1:+10.1%} "
              f"{p['compute']:7.2f} {p['comm']:5.2f} {s['predicted'] / s['measured'] - 1:+11.1%}")


AZURE = ROOT / "benchmarks" / "training_dsazure.csv"


def gap_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares of gap = a + b x ranks over (ranks, gap) points: (a s, b s per rank)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


def azure() -> None:
    """The DeepSpeed-on-Azure bars (0.6.2: training_dsazure.csv and the three labelled rows of
    training_deepspeed.csv): measured minus predicted per step by model, micro-batch and ranks,
    and a least-squares gap = a + b x ranks per model (micro-batch >= 2: at micro-batch 1 the
    steps are short and the bar's pixel is up to 3 % of the step)."""
    print("\n== DeepSpeed on Azure (0.6.2): measured minus predicted, s per step")
    rows = [r for r in read(AZURE)] + [r for r in zero3_rows(CHECKS) if r["id"].startswith("dsazure")]
    by_model: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    print(f"{'model':>5s} {'seq':>5s} {'ranks':>5s} {'mb':>3s} {'meas s':>8s} {'pred s':>8s} "
          f"{'err':>7s} {'gap s':>7s}")
    for r in sorted(rows, key=lambda r: (int(r["hidden_size"]), int(r["seq_length"]),
                                         int(r["num_gpus"]), int(r["micro_batch_size"]))):
        p = predict(r)
        gap = p["measured"] - p["predicted"]
        model = "530B" if r["hidden_size"] == "20480" else "175B"
        print(f"{model:>5s} {r['seq_length']:>5s} {r['num_gpus']:>5s} {r['micro_batch_size']:>3s} "
              f"{p['measured']:8.2f} {p['predicted']:8.2f} {error(p):+7.1%} {gap:+7.2f}")
        if int(r["micro_batch_size"]) >= 2:
            by_model[model].append((float(r["num_gpus"]), gap))
    for model, points in sorted(by_model.items()):
        a, b = gap_fit(points)
        print(f"   {model}: {len(points)} bars (micro-batch >= 2): gap = {a:+.1f} s "
              f"{b * 1e3:+.2f} ms x ranks")


SECTIONS = {"residuals": residuals, "copies": copies, "zeropp": zeropp, "azure": azure}


def main(argv: list[str]) -> None:
    for name in argv or list(SECTIONS):
        SECTIONS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
