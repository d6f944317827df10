"""The DeepSpeed ZeRO-3 rows of two sources compared at equal micro-batch, 175B against 530B
(issue 17 item 2 diagnostics; nothing here feeds trainsim).

    python benchmarks/zero3_scaling.py            # all three sections, ~1 min on one core
    python benchmarks/zero3_scaling.py pairs      # or perbyte, whatif: one section

Every ZeRO-3 row here runs TP 1, PP 1 and one micro-batch per rank and step (global batch =
ranks x micro-batch), so at equal micro-batch and sequence both models do the same compute and
move the same bytes per parameter (every parameter gathered and every gradient reduced once a
pass): only the costs trainsim charges per call (a gather, a rank of a gather, a persistent
tensor) do not scale with the parameters.

1. ``pairs``: published TFLOP/s per GPU of 175B and 530B at the same micro-batch (Narayanan et
   al. 2021 Table 2, DeepSpeed 2021-03: 384 / 768 / 1,536 against 640 / 1,120 / 2,240 ranks at
   micro-batch 4 / 2 / 1, the two micro-batch-2 points are not in a file, as
   ``benchmarks/zero3_overhead.py`` has them; DeepSpeed-on-Azure 0.6.2, sequence 1,024, the
   same 512 and 1,024 ranks, micro-batch 1-8: ``benchmarks/training_dsazure.csv`` and the
   labelled rows of ``benchmarks/training_deepspeed.csv``) and trainsim's, with the 530B / 175B
   ratio of each.
2. ``perbyte``: the 2021 rows' time beyond pure compute per layer, over the bytes a layer moves
   (gathers + gradient all-reduce, ``zero3_overhead.analyse``), measured and predicted, and the
   part of the prediction that the per-rank loops carry (the prediction less the prediction
   with ``compute.host`` ``PY_LAUNCH_S``, ``PY_VIEW_S`` and ``CPP_LAUNCH_S`` at 0).
3. ``whatif``: (a) the ``torch.distributed.get_rank(group=...)`` call inside v0.3.13
   ``_allgather_param``'s per-rank loop priced at ``GET_RANK_S``; (b) every collective over 64
   or more ranks taking ``f`` times its NCCL-model time: the four public rows, the Azure check
   file's MAPE and its mean signed error per model.
"""

from __future__ import annotations

import contextlib
import csv
import sys
from collections.abc import Iterator
from pathlib import Path

from trainsim.collectives import nccl
from trainsim.compute import host
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row
from trainsim.workload import sharding
from trainsim.workload.ops import Elementwise

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zero3_overhead as z3

ROOT = Path(__file__).resolve().parents[1]
AZURE = ROOT / "benchmarks" / "training_dsazure.csv"
LABELLED = ROOT / "benchmarks" / "training_deepspeed.csv"

GET_RANK_S = 1.0e-6
"""Host seconds of ``torch.distributed.get_rank(group=pg)``, a what-if: timed here (2 shared
cores, PyTorch 2.13 CPU, gloo, ``timeit``) at 0.45 of a ``narrow`` (3.29 against 7.25 us),
scaled to the published 2.26 us a view (``compute.host.PY_VIEW_S``). PyTorch 1.8's path is
shorter (no group-name lookup), so an upper bound there."""

TFLOPS_2021 = {("174.6B", 4): 144.0, ("174.6B", 2): 88.0, ("174.6B", 1): 44.0,
               ("529.6B", 4): 138.0, ("529.6B", 2): 98.0, ("529.6B", 1): 48.0}
"""Narayanan et al. 2021 Table 2, ZeRO-3 rows: TFLOP/s per GPU by model and micro-batch."""


def read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def rows_2021() -> list[dict[str, str]]:
    """The four public rows and the two micro-batch-2 points, as zero3_overhead builds them."""
    rows = [r for r in read(BUNDLED_DIR / "training_public.csv")
            if r["id"].startswith("megatron21-t2-zero3")]
    by_id = {r["id"]: r for r in rows}
    for base, gpus, mb, tflops, gbs, layers, hidden in z3.EXTRA:
        row = dict(by_id[base]) | {"num_gpus": str(gpus), "micro_batch_size": str(mb)}
        row["id"] = f"{base.rsplit('-', 1)[0]}-{gpus}"
        row["measured_iteration_s"] = str(z3.eq3_seconds(gbs, 2048, layers, hidden, 51200,
                                                         gpus, tflops))
        rows.append(row)
    return rows


def predicted_tflops(row: dict[str, str], measured_tflops: float) -> float:
    """trainsim's TFLOP/s per GPU on the row's own FLOPs count: the published rate scaled by
    measured over predicted step."""
    res = predict_training_row(row)
    return measured_tflops * res.measured / res.predicted


def pairs() -> list[tuple[str, float, float, float, float]]:
    """(label, 175B measured, 175B predicted, 530B measured, 530B predicted) TFLOP/s per GPU."""
    out = []
    by_key = {(r["id"].split("-")[3], int(r["micro_batch_size"])): r for r in rows_2021()}
    for mb in (4, 2, 1):
        small, large = by_key[("174.6B", mb)], by_key[("529.6B", mb)]
        ms, ml = TFLOPS_2021[("174.6B", mb)], TFLOPS_2021[("529.6B", mb)]
        out.append((f"2021-03 mb {mb} ({small['num_gpus']} / {large['num_gpus']} ranks)",
                    ms, predicted_tflops(small, ms), ml, predicted_tflops(large, ml)))
    azure = [r for r in read(AZURE) + read(LABELLED) if r["id"].startswith("dsazure")]
    for ranks in (512, 1024):
        for mb in (1, 2, 4, 8):
            pick = {}
            for r in azure:
                if (int(r["num_gpus"]), int(r["micro_batch_size"]), r["seq_length"]) == \
                        (ranks, mb, "1024"):
                    pick["530b" if r["hidden_size"] == "20480" else "175b"] = r
            if len(pick) < 2:
                continue
            rates = []
            for key in ("175b", "530b"):
                r = pick[key]
                flops = azure_flops(r)
                meas = flops / float(r["measured_iteration_s"]) / ranks / 1e12
                rates += [meas, predicted_tflops(r, meas)]
            out.append((f"0.6.2 mb {mb} ({ranks} ranks)", *rates))
    return out


def azure_flops(r: dict[str, str]) -> float:
    """The blog's 96 B s l h^2 (1 + s/6h + V/16lh), as the Azure rows were converted."""
    b, s = int(r["global_batch_size"]), int(r["seq_length"])
    l, h, v = int(r["num_layers"]), int(r["hidden_size"]), int(r["vocab_size"])
    return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))


@contextlib.contextmanager
def loops_free() -> Iterator[None]:
    """Every per-rank loop's op priced at 0 (``compute.host`` PY_LAUNCH_S, PY_VIEW_S,
    CPP_LAUNCH_S)."""
    kept = host.PY_LAUNCH_S, host.PY_VIEW_S, host.CPP_LAUNCH_S
    host.PY_LAUNCH_S = host.PY_VIEW_S = host.CPP_LAUNCH_S = 0.0
    try:
        yield
    finally:
        host.PY_LAUNCH_S, host.PY_VIEW_S, host.CPP_LAUNCH_S = kept


def perbyte() -> list[tuple[str, int, float, float, float, float]]:
    """(row, ranks, GB a layer moves, measured ms/GB beyond compute, predicted ms/GB, of which
    the per-rank loops ms/GB) for the 2021 rows."""
    out = []
    for row in rows_2021():
        _, fit_row, split = z3.analyse(row)
        gb = fit_row[5][0]
        res = predict_training_row(row)
        with loops_free():
            free = predict_training_row(row).predicted
        loops = (res.predicted - free) / int(row["num_layers"])
        out.append((row["id"], split.n, gb, split.over * 1e3 / gb, split.pred * 1e3 / gb,
                    loops * 1e3 / gb))
    return out


@contextlib.contextmanager
def get_rank_priced(seconds: float) -> Iterator[None]:
    """Each per-parameter list all-gather's per-rank loop also pays ``seconds`` a rank, as that
    many view ops' worth (``PY_VIEW_S``)."""
    kept = sharding.list_all_gather_ops

    def with_get_rank(name, size_bytes, ranks, group, before_gather=None):
        ops = kept(name, size_bytes, ranks, group, before_gather)
        extra = round(ranks * seconds / host.PY_VIEW_S)
        return [*ops[:-3], Elementwise(f"{name}_get_rank", bytes=0.0, kernels=0,
                                       py_views=extra), *ops[-3:]]

    sharding.list_all_gather_ops = with_get_rank
    try:
        yield
    finally:
        sharding.list_all_gather_ops = kept


@contextlib.contextmanager
def collectives_scaled(f: float, min_ranks: int = 64) -> Iterator[None]:
    """Every collective over ``min_ranks`` or more ranks takes ``f`` times its model time."""
    kept = nccl._time

    def scaled(kind, size, span, fabric, algo, proto):
        t = kept(kind, size, span, fabric, algo, proto)
        return t * f if span.size >= min_ranks else t

    nccl._time = scaled
    try:
        yield
    finally:
        nccl._time = kept


def board() -> tuple[list[float], float, float, float]:
    """The four public rows' signed errors, the Azure file's MAPE and its mean signed error on
    175B and on 530B."""
    pub = [r for r in read(BUNDLED_DIR / "training_public.csv") if r["framework"] == "deepspeed"]
    errs = [(x.predicted / x.measured - 1) for x in map(predict_training_row, pub)]
    az = read(AZURE)
    ea = [(x.predicted / x.measured - 1) for x in map(predict_training_row, az)]
    s175 = [e for e, r in zip(ea, az) if r["hidden_size"] == "12288"]
    s530 = [e for e, r in zip(ea, az) if r["hidden_size"] == "20480"]
    return (errs, sum(map(abs, ea)) / len(ea), sum(s175) / len(s175), sum(s530) / len(s530))


def print_board(label: str) -> None:
    errs, mape, s175, s530 = board()
    print(f"{label:28s} " + " ".join(f"{e:+7.1%}" for e in errs)
          + f"  {sum(map(abs, errs)) / len(errs):6.2%}  {mape:6.1%}  {s175:+6.1%}  {s530:+6.1%}")


def main(argv: list[str]) -> None:
    parts = argv or ["pairs", "perbyte", "whatif"]
    if "pairs" in parts:
        print("== TFLOP/s per GPU at equal micro-batch: measured / predicted, 175B and 530B")
        print(f"{'pair':34s} {'175B meas':>9s} {'pred':>6s} {'530B meas':>9s} {'pred':>6s}"
              f"  530B/175B meas  pred")
        for label, ms, ps, ml, pl in pairs():
            print(f"{label:34s} {ms:9.1f} {ps:6.1f} {ml:9.1f} {pl:6.1f}  {ml / ms:14.2f}"
                  f"  {pl / ps:4.2f}")
    if "perbyte" in parts:
        print("\n== 2021 rows: time beyond pure compute per layer, per GB a layer moves")
        print(f"{'row':36s} {'N':>5s} {'GB':>5s} {'meas ms/GB':>10s} {'pred':>6s}"
              f" {'of it per-rank loops':>20s}")
        for rid, n, gb, meas, pred, loops in perbyte():
            print(f"{rid:36s} {n:5d} {gb:5.1f} {meas:10.1f} {pred:6.1f} {loops:20.1f}")
    if "whatif" in parts:
        print("\n== what-if: 174.6B-384 -1536, 529.6B-640 -2240 signed; DS MAPE; Azure MAPE, "
              "mean signed 175B, 530B")
        print_board("as landed")
        with get_rank_priced(GET_RANK_S):
            print_board(f"get_rank {GET_RANK_S * 1e6:.1f} us a rank")
        for f in (1.5, 2.0, 2.5):
            with collectives_scaled(f):
                print_board(f"collectives >= 64 ranks x{f}")


if __name__ == "__main__":
    main(sys.argv[1:])
