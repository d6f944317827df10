"""MLPerf GPT-3 175B on 512 H100: the time per sample by micro-batch size and interleaving,
measured and priced, part by part (56th session, mbsplit56; issue 17 item 2; a diagnostic:
nothing here feeds trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/mbsplit56_parts.py            # ~30 s
    PYTHONPATH=src:benchmarks python benchmarks/mbsplit56_parts.py --as-written

The files hold four configurations of NVIDIA's MLPerf GPT-3 code on 512 H100 (TP 4, PP 8, DP
16): NVIDIA v3.1 (micro-batch 1, vpp 12), Sustainable Metal Cloud's v4.0 run of NVIDIA's v4.0
code (micro-batch 2, vpp 12), NVIDIA v4.0 (micro-batch 2, vpp 4) and NVIDIA v4.1 (micro-batch 2,
vpp 6). It prints

1. each configuration's step as seconds per pipeline sample (step x DP / GBS: the time one
   pipeline spends on one sequence), measured and priced, by part (``step_parts.parts``:
   compute, exposed communication, bubble, optimizer, host), with the priced what-ifs of the
   other micro-batch size (the row's cell changed, every other cell as it is);
2. one decoder layer per sample by kind of work as the pricer charges it at micro-batch 1 and 2
   (GEMM, attention, elementwise kernels alone; compute, TP and host as charged);
3. the contrasts: micro-batch 1 -> 2 at one stack and vpp (priced only: no such pair was
   measured), vpp 12 -> 4 at one stack and micro-batch (SMC against NVIDIA v4.0: measured and
   priced), and the passes (chunk forwards and backwards) each sample costs a rank, 2 vpp / mbs;
4. H100 GEMM rates by token count: the rows of ``kernels_h100_measured.csv`` whose M is the
   token count (forward and dgrad GEMMs of the layer shapes measured at M 1,024 ... 16,384),
   priced over measured, geometric mean by dtype and M (``validate.kernels``'s pricing).

By default a public row takes ``benchmarks/training_errata.csv``'s cells (v3.1: flash2).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from step_parts import PUBLIC, parts, read

from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.kernels import predict_kernel_row
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

HERE = Path(__file__).resolve().parent
PARTNERS = str(HERE / "training_mlperf_partners.csv")
KERNELS = str(BUNDLED_DIR / "kernels_h100_measured.csv")

CASES = (("v3.1 NVIDIA", "mlperf31-gpt3-175b-512", PUBLIC),
         ("v4.0 SMC", "mlperf40-smc-gpt3-175b-512", PARTNERS),
         ("v4.0 NVIDIA", "mlperf40-gpt3-175b-512", PUBLIC),
         ("v4.1 NVIDIA", "mlperf41-gpt3-175b-h100-512", PUBLIC))
"""(label, row id, file): NVIDIA's MLPerf GPT-3 code on 512 H100, TP 4, PP 8, DP 16."""

CONTRASTS = (("mbs 1 -> 2, v3.1 stack, vpp 12", ("v3.1 NVIDIA", 1), ("v3.1 NVIDIA", 2)),
             ("mbs 1 -> 2, v4.0 stack, vpp 4", ("v4.0 NVIDIA", 1), ("v4.0 NVIDIA", 2)),
             ("mbs 1 -> 2, v4.1 stack, vpp 6", ("v4.1 NVIDIA", 1), ("v4.1 NVIDIA", 2)),
             ("vpp 12 -> 4, v4.0 stack, mbs 2", ("v4.0 SMC", 2), ("v4.0 NVIDIA", 2)),
             ("v3.1 (mbs 1, vpp 12) -> v4.0 (mbs 2, vpp 4)", ("v3.1 NVIDIA", 1), ("v4.0 NVIDIA", 2)),
             ("v3.1 (mbs 1, vpp 12) -> v4.1 (mbs 2, vpp 6)", ("v3.1 NVIDIA", 1), ("v4.1 NVIDIA", 2)))
"""(label, from, to): (case label, micro-batch size); a measured figure exists where the
micro-batch is the row's own."""


def per_sample_ms(step_s: float, dp: int, gbs: int) -> float:
    """Milliseconds one pipeline spends per sequence: the step over the sequences each of the
    DP pipelines runs (GBS / DP)."""
    return 1e3 * step_s * dp / gbs


def passes_per_sample(vpp: int, mbs: int) -> float:
    """Chunk passes (one forward and one backward of each of the rank's vpp model chunks per
    micro-batch) a pipeline rank runs per sequence."""
    return 2.0 * vpp / mbs


def change(pct_from: float, pct_to: float) -> float:
    """Relative change in percent."""
    return 100.0 * (pct_to / pct_from - 1.0)


def with_mbs(row: dict[str, str], mbs: int) -> dict[str, str]:
    """The row with its micro-batch cell set to ``mbs`` (every other cell as it is)."""
    return {**row, "micro_batch_size": str(mbs)}


def case_row(path: str, row_id: str, errata: bool) -> dict[str, str]:
    row = read(row_id, path, True) if errata and path == PUBLIC else None
    got = row or read(row_id, path, False)
    if got is None:
        raise SystemExit(f"{row_id}: not in {path}")
    return got


def layer_kinds(row: dict[str, str]) -> dict[str, float]:
    """One decoder layer's forward and backward, seconds per sample: GEMM, attention and
    elementwise kernels priced alone, and the layer as ``Pricer.price`` charges it by
    category (compute, TP communication, host)."""
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    out: dict[str, float] = defaultdict(float)
    for ops in (lf, lb):
        for op in ops:
            if isinstance(op, Comm):
                continue
            kind = "gemm" if isinstance(op, Gemm) else \
                "attention" if isinstance(op, Attention) else "elementwise"
            out[kind] += pricer.compute.explain(op)[0]
        for cat, t in pricer.price(ops).summary:
            out[f"charged {cat}"] += t
    mbs = cfg.training.micro_batch_size
    return {k: v / mbs for k, v in out.items()}


def priced_case(row: dict[str, str]) -> dict[str, Any]:
    """The row's priced step by part and per sample (``step_parts.parts``)."""
    g = parts(row)
    if "error" in g:
        return g
    dp = int(row["num_gpus"]) // (int(row["tp"]) * int(row["pp"]) * int(row["cp"] or 1))
    gbs = int(row["global_batch_size"])
    g["per_sample"] = {k: per_sample_ms(g[k], dp, gbs)
                       for k in ("measured", "predicted", "compute", "tp", "pp", "dp", "bubble",
                                 "optimizer", "host")}
    g["vpp"] = int(row["vpp"] or 1)
    g["mbs"] = int(row["micro_batch_size"])
    return g


def step_table(got: dict[tuple[str, int], dict[str, Any]], own: dict[str, int]) -> list[str]:
    lines = [("| case | mbs / vpp | passes per sample | measured ms | priced ms | err % | "
              "compute | xtp | xpp | xdp | bubble | optim | host |"), "|---" * 13 + "|"]
    for (label, mbs), g in got.items():
        if "error" in g:
            lines.append(f"| {label} | {mbs} | {g['error']} |")
            continue
        s = g["per_sample"]
        mine = own[label] == mbs  # the row's own micro-batch: a measured step
        measured = f"{s['measured']:.2f}" if mine else "-"
        err = f"{100 * (g['predicted'] / g['measured'] - 1):+.1f}" if mine else "-"
        rest = " | ".join(f"{s[k]:.2f}" for k in ("compute", "tp", "pp", "dp", "bubble",
                                                   "optimizer", "host"))
        lines.append(f"| {label} | {mbs} / {g['vpp']} | {passes_per_sample(g['vpp'], mbs):.0f} "
                     f"| {measured} | {s['predicted']:.2f} | {err} | {rest} |")
    return lines


def contrast_table(got: dict[tuple[str, int], dict[str, Any]], own: dict[str, int]) -> list[str]:
    lines = [("| contrast | measured per sample | priced per sample | priced: compute / "
              "exposed comm / bubble / host, ms per sample |"), "|---|---|---|---|"]
    for label, a, b in CONTRASTS:
        ga, gb = got.get(a), got.get(b)
        if not ga or not gb or "error" in ga or "error" in gb:
            continue
        sa, sb = ga["per_sample"], gb["per_sample"]
        both = own[a[0]] == a[1] and own[b[0]] == b[1]
        meas = (f"{sa['measured']:.2f} -> {sb['measured']:.2f} "
                f"({change(sa['measured'], sb['measured']):+.1f} %)") if both else "not measured"
        comm = [s["tp"] + s["pp"] + s["dp"] for s in (sa, sb)]
        lines.append(
            f"| {label} | {meas} | {sa['predicted']:.2f} -> {sb['predicted']:.2f} "
            f"({change(sa['predicted'], sb['predicted']):+.1f} %) | "
            f"{sb['compute'] - sa['compute']:+.2f} / {comm[1] - comm[0]:+.2f} / "
            f"{sb['bubble'] - sa['bubble']:+.2f} / {sb['host'] - sa['host']:+.2f} |")
    return lines


def kinds_table(rows: dict[tuple[str, int], dict[str, str]]) -> list[str]:
    keys = ("gemm", "attention", "elementwise", "charged compute", "charged tp_comm",
            "charged host")
    lines = ["| case | mbs | " + " | ".join(keys) + " | (ms per sample, one layer) |",
             "|---" * (len(keys) + 3) + "|"]
    for (label, mbs), row in rows.items():
        k = layer_kinds(row)
        lines.append(f"| {label} | {mbs} | " + " | ".join(f"{1e3 * k.get(x, 0.0):.3f}"
                                                        for x in keys) + " | |")
    return lines


def gemm_token_rates(path: str = KERNELS) -> dict[tuple[str, int], tuple[int, float]]:
    """(dtype, M) -> (rows, geometric mean of priced over measured rate) over the measured
    H100 GEMMs whose M is the token count (``-fwd-m`` and ``-dgrad-m`` rows)."""
    acc: dict[tuple[str, int], list[float]] = defaultdict(list)
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] != "gemm" or not any(f"-{p}-m" in row["id"] for p in ("fwd", "dgrad")):
                continue
            res = predict_kernel_row(row)
            if res.error or not res.predicted:
                continue
            acc[(row["dtype"], int(row["m"]))].append(math.log(res.predicted / res.measured))
    return {k: (len(v), math.exp(sum(v) / len(v))) for k, v in sorted(acc.items())}


def gemm_table(rates: dict[tuple[str, int], tuple[int, float]]) -> list[str]:
    lines = ["| dtype | M (tokens) | rows | priced / measured rate (geo mean) |", "|---|---|---|---|"]
    lines += [f"| {d} | {m} | {n} | {r:.3f} |" for (d, m), (n, r) in rates.items()]
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--as-written", action="store_true", help="public rows without errata")
    ap.add_argument("--no-gemms", action="store_true")
    a = ap.parse_args(argv)
    own: dict[str, int] = {}
    rows: dict[tuple[str, int], dict[str, str]] = {}
    for label, row_id, path in CASES:
        row = case_row(path, row_id, not a.as_written)
        own[label] = int(row["micro_batch_size"])
        for mbs in (1, 2):
            rows[(label, mbs)] = with_mbs(row, mbs)
    got = {key: priced_case(row) for key, row in rows.items()}
    print("\n".join(step_table(got, own)))
    print()
    print("\n".join(contrast_table(got, own)))
    print()
    print("\n".join(kinds_table({k: v for k, v in rows.items() if k[0] in
                                 ("v3.1 NVIDIA", "v4.1 NVIDIA")})))
    if not a.no_gemms:
        print()
        print("\n".join(gemm_table(gemm_token_rates())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
