"""Every row of llm-foundry's benchmark tables, priced like the public file's 29, by table, GPU
and activation checkpointing: a diagnostic of trends across sequence length and model size that
the 29 rows sample too thinly. Nothing is fitted to it and its rows are not validation data.

    git -C LLM_FOUNDRY show 5e85bd62d:scripts/train/benchmarking/README.md > README.md
    PYTHONPATH=src python benchmarks/foundry_tables.py README.md [--attention triton] [--csv OUT]

Each README row (mosaicml/llm-foundry scripts/train/benchmarking/README.md at 5e85bd62, the
tables' last change) takes the public file's row of the same MPT size as its template and
changes what the README line gives: sequence length, GPU and count, micro and global batch,
activation checkpointing (``recompute`` full or none), sharding (SHARD_GRAD_OP: zero 2), dtype
and MP Mode (PURE: bf16 gradient reduce, DEFAULT: fp32). The measured iteration time is
GlobalBatchSize (T) / Throughput (T/s). ``--attention`` sets the kernel (default ``flash2``, the
public file's; ``triton``, what the harness ran: benchmarks/training_errata.csv). MPT-350m has
no preset and is skipped. Columns are found by the header's names, so the README before
b2a43a14 (no "Model TFLOP" column) reads too.

    git -C LLM_FOUNDRY show b2a43a147^:scripts/train/benchmarking/README.md > OLD.md
    PYTHONPATH=src python benchmarks/foundry_tables.py README.md --pair OLD.md [--attention triton]

``--pair`` lists the launches both READMEs hold with different times: b2a43a14 (2023-10-19)
remeasured the A100-80GB table on the torch 2.1.0 image (sweep.sh ``IMAGE``) with amp_bf16 /
DEFAULT, where the older lines ran bf16 / PURE on the torch <= 2.0 stack of May-October 2023
(sweep.sh ``IMAGE`` mosaicml/pytorch:1.13.1_cu117 at 92bd673c; README L70 there: "TODO: Update
tables with torch 2.0 after next Composer release"). Same GPUs, same
model, batch, sequence and checkpointing: the new/old throughput by checkpointing isolates
what the software stack changed.

    PYTHONPATH=src python benchmarks/foundry_tables.py README.md --attention triton --per-microbatch

``--per-microbatch`` lists each launch's measured-minus-predicted time per micro-batch, and
that per block and billion block parameters (``microbatch_gap``): a cost trainsim misses once
per FSDP unit and micro-batch shows as a constant there across sequence, micro-batch size and
GPU count.

    PYTHONPATH=src python benchmarks/foundry_tables.py README.md --attention triton --fp8-twins

``--fp8-twins`` sets each H100 FP8 launch beside its BF16 twin (same model, sequence, GPU
count and checkpointing; the micro-batch may differ) and compares the measured speed-up in
tokens per second with trainsim's (``fp8_twins``): the attention kernel, the FSDP units and
the host are the same in both, so the ratio isolates what fp8 changes (submit_benchmarks.py
sets ``fc_type: te`` for fp8 on H100: Wqkv, out_proj, up_proj and down_proj as TE v0.10
``te.Linear`` under Composer's ``amp_fp8``).

    PYTHONPATH=src python benchmarks/foundry_tables.py README.md --attention triton --seq-slope

``--seq-slope`` reads the attention kernel's rate off the measured times alone: for each launch
series of one model, table, GPU count, checkpointing and dtype, the step from one sequence length
to the next changes the time per token by the attention it adds and little else (the GEMMs, norms,
FSDP traffic and optimizer per token do not grow with the sequence), so the added causal attention
FLOPs per token over the added seconds per token is the rate the runs' kernel reached
(``seq_slopes``). trainsim's predictions give the same figure for the kernel it prices; their
ratio (priced over measured seconds) is that kernel's price error, free of the GEMM, host and
FSDP errors the row's total carries.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

from trainsim.validate import BUNDLED_DIR, validate_file

GPUS = {"h100_80gb": "h100-sxm-80gb", "a100_80gb": "a100-sxm-80gb", "a100_40gb": "a100-sxm-40gb"}
COLUMNS = ("Model", "SeqLen (T)", "# GPUs", "GPU", "MicroBatchSize", "GlobalBatchSize",
           "Throughput (T/s)", "GlobalBatchSize (T)", "Precision", "MP Mode", "Sharding Strategy",
           "Activation Checkpointing")


def readme_rows(readme: Path, attention: str) -> list[dict[str, str]]:
    """The README's table lines as training rows (see the module docstring)."""
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        template = {r["model"]: r for r in csv.DictReader(fh) if r["framework"] == "llm-foundry"}
    rows, table, col = [], "", {}
    for line in readme.read_text().splitlines():
        if line.startswith("## "):
            table = line[3:].strip()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "Model":  # the header names the columns (README at 92bd673c and before
            col = {name: i for i, name in enumerate(cells)}  # has no "Model TFLOP")
            continue
        if len(cells) < 19 or cells[0] == "---" or not col or cells[3] not in GPUS:
            continue
        (model, seq, gpus, gpu, mb, gbs, tps, gbs_tokens, precision, mp_mode, sharding,
         ckpt) = (cells[col[name]] for name in COLUMNS)
        if f"mpt-{model}" not in template:
            continue
        row = dict(template[f"mpt-{model}"])
        fp8 = "fp8" in precision
        row.update(
            id=f"readme-mpt{model}-{gpu}-s{seq}-g{gpus}-mb{mb}{'-fp8' if fp8 else ''}",
            note=table, seq_length=seq, gpu=GPUS[gpu], num_gpus=gpus, micro_batch_size=mb,
            global_batch_size=gbs, recompute="full" if ckpt == "True" else "none",
            zero_stage="2" if sharding == "SHARD_GRAD_OP" else "3",
            dtype="fp8" if fp8 else "bf16", fp8_recipe="delayed" if fp8 else "",
            nic_gbps_per_gpu="200" if gpu.startswith("a100") else "",
            grad_reduce_dtype="bf16" if mp_mode == "PURE" else "fp32", attention=attention,
            measured_iteration_s=f"{int(gbs_tokens) / int(tps):.6g}", measured_peak_memory_gib="")
        rows.append(row)
    return rows


def priced(rows: list[dict[str, str]]) -> dict[str, tuple[float, float]]:
    """Each row's (predicted, measured) seconds by id; rows with no prediction left out."""
    path = Path(tempfile.mkdtemp()) / "foundry_tables.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return {r.id: (r.predicted, r.measured) for r in validate_file(path, workers=2)[1]
            if r.predicted}


def price(rows: list[dict[str, str]]) -> dict[str, float]:
    """Each row's signed error (predicted / measured - 1) by id; rows with no prediction left out."""
    return {rid: p / m - 1 for rid, (p, m) in priced(rows).items()}


def microbatch_gap(row: dict[str, str], predicted: float, measured: float
                   ) -> tuple[int, float, float]:
    """(micro-batches a GPU runs per step, measured minus predicted seconds per micro-batch,
    that per block and per billion parameters of one block). Composer splits each GPU's share
    of the global batch into micro-batches of ``micro_batch_size`` and a remainder (the
    README: "48 ... and a micro of 11 ... 11, 11, 11, 11, 4"), so a step runs the ceiling.
    A block's parameters: MPT's four matrices, Wqkv 3h x h, out_proj h x h, up_proj and
    down_proj h x f each (biases and norms, under 0.1 %, left out). A cost paid once per
    FSDP unit and micro-batch in proportion to the unit's size reads as a constant in the
    last figure, whatever the sequence, micro-batch or GPU count."""
    gpus, mb = int(row["num_gpus"]), int(row["micro_batch_size"])
    n = -(-int(row["global_batch_size"]) // (gpus * mb))
    h, f = int(row["hidden_size"]), int(row["ffn_hidden_size"])
    block = (4 * h * h + 2 * h * f) / 1e9
    per_mb = (measured - predicted) / n
    return n, per_mb, per_mb / int(row["num_layers"]) / block * 1e3


def print_microbatch_gaps(rows: list[dict[str, str]], times: dict[str, tuple[float, float]]
                          ) -> None:
    """Every priced launch's ``microbatch_gap``, by table, checkpointing and model size."""
    print("| launch | recompute | micro-batches | tokens per micro-batch | error | "
          "gap per micro-batch (s) | per block per Gparam (ms) |\n|---|---|---|---|---|---|---|")
    for r in sorted((r for r in rows if r["id"] in times),
                    key=lambda r: (r["note"], r["recompute"], int(r["hidden_size"]),
                                   int(r["num_gpus"]), int(r["seq_length"]))):
        p, m = times[r["id"]]
        n, per_mb, per_gp = microbatch_gap(r, p, m)
        tokens = int(r["micro_batch_size"]) * int(r["seq_length"])
        print(f"| {r['id'][7:]} | {r['recompute']} | {n} | {tokens} | {p / m - 1:+.1%} | "
              f"{per_mb:+.3f} | {per_gp:+.1f} |")


TWIN = ("model", "seq_length", "gpu", "num_gpus", "recompute", "zero_stage")


def fp8_twins(rows: list[dict[str, str]]) -> list[tuple[dict[str, str], dict[str, str]]]:
    """(bf16, fp8) launches of the same model, sequence, GPU and count, checkpointing and
    sharding; the micro and global batch may differ (the README tuned each)."""
    bf16 = {tuple(r[k] for k in TWIN): r for r in rows if r["dtype"] == "bf16"}
    return [(bf16[key], r) for r in rows if r["dtype"] == "fp8"
            if (key := tuple(r[k] for k in TWIN)) in bf16]


def twin_speedups(bf16: dict[str, str], fp8: dict[str, str], times: dict[str, tuple[float, float]]
                  ) -> tuple[float, float]:
    """(measured, predicted) fp8-over-bf16 speed-up in tokens per second per GPU: each time
    over its global batch's sequences (same sequence length and GPU count in a pair)."""
    (pb, mb), (pf, mf) = times[bf16["id"]], times[fp8["id"]]
    nb, nf = int(bf16["global_batch_size"]), int(fp8["global_batch_size"])
    return (mb / nb) / (mf / nf), (pb / nb) / (pf / nf)


def print_fp8_twins(rows: list[dict[str, str]], times: dict[str, tuple[float, float]]) -> None:
    """Every fp8 launch with a priced bf16 twin: the two speed-ups and each launch's error."""
    print("| fp8 launch | bf16 twin micro-batch | measured fp8/bf16 | trainsim | ratio | "
          "error bf16 | error fp8 |\n|---|---|---|---|---|---|---|")
    for b, f in sorted(fp8_twins(rows), key=lambda p: p[1]["id"]):
        if b["id"] not in times or f["id"] not in times:
            continue
        meas, pred = twin_speedups(b, f, times)
        eb, ef = (times[r["id"]][0] / times[r["id"]][1] - 1 for r in (b, f))
        print(f"| {f['id'][7:]} | {b['micro_batch_size']} | {meas:.3f} | {pred:.3f} | "
              f"{pred / meas:.3f} | {eb:+.1%} | {ef:+.1%} |")


SAME_RUN = ("model", "seq_length", "gpu", "num_gpus", "micro_batch_size", "global_batch_size",
            "recompute", "zero_stage", "dtype")


def pairs(old: list[dict[str, str]], new: list[dict[str, str]]
          ) -> list[tuple[dict[str, str], dict[str, str]]]:
    """(old, new) for every configuration both READMEs list (same model, sequence, GPU and
    count, micro and global batch, checkpointing, sharding, dtype) with another measured time:
    the same launch measured again on another software stack."""
    by_key = {tuple(r[k] for k in SAME_RUN): r for r in old}
    out = []
    for r in new:
        o = by_key.get(tuple(r[k] for k in SAME_RUN))
        if o is not None and o["measured_iteration_s"] != r["measured_iteration_s"]:
            out.append((o, r))
    return out


def print_pairs(old_readme: Path, new_readme: Path, attention: str) -> None:
    """The remeasured configurations: new over old throughput and trainsim's error on each,
    summarized by activation checkpointing."""
    old = [dict(r, id=r["id"] + "-old") for r in readme_rows(old_readme, attention)]
    matched = pairs(old, readme_rows(new_readme, attention))
    errors = price([r for pair in matched for r in pair])
    print(f"{len(matched)} configurations measured in both READMEs, attention {attention}")
    print("| run | recompute | old reduce | new reduce | new/old throughput | error old | "
          "error new |\n|---|---|---|---|---|---|---|")
    summary: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for o, n in sorted(matched, key=lambda p: (p[1]["recompute"], p[1]["id"])):
        speed = float(o["measured_iteration_s"]) / float(n["measured_iteration_s"])
        eo, en = errors.get(o["id"]), errors.get(n["id"])
        if eo is None or en is None:
            continue
        summary[n["recompute"]].append((speed, eo, en))
        print(f"| {n['id'][7:]} | {n['recompute']} | {o['grad_reduce_dtype']} | "
              f"{n['grad_reduce_dtype']} | {speed:.3f} | {eo:+.1%} | {en:+.1%} |")
    for rc, vals in sorted(summary.items()):
        print(f"recompute {rc}: n {len(vals)}, new/old median "
              f"{statistics.median(v[0] for v in vals):.3f} (min {min(v[0] for v in vals):.3f}, "
              f"max {max(v[0] for v in vals):.3f}); mean signed error old "
              f"{statistics.mean(v[1] for v in vals):+.1%}, new {statistics.mean(v[2] for v in vals):+.1%}")


SERIES = ("note", "model", "gpu", "num_gpus", "recompute", "dtype")


def attention_flops_per_token(row: dict[str, str]) -> float:
    """Causal attention FLOPs per token of one step: per layer 2 s h forward (QK^T and PV over
    s/2 keys on average), the backward 2.5x that (the FlashAttention papers' count), one more
    forward where the block is recomputed."""
    s, h, layers = int(row["seq_length"]), int(row["hidden_size"]), int(row["num_layers"])
    return layers * 2 * s * h * (3.5 + (1.0 if row["recompute"] == "full" else 0.0))


def seconds_per_token(row: dict[str, str], seconds: float) -> float:
    """A step's seconds per token on one GPU."""
    tokens = int(row["global_batch_size"]) * int(row["seq_length"]) / int(row["num_gpus"])
    return seconds / tokens


def seq_slopes(rows: list[dict[str, str]], times: dict[str, tuple[float, float]]
               ) -> list[tuple[dict[str, str], dict[str, str], float, float]]:
    """(shorter, longer, measured rate, priced rate) in FLOP/s for each pair of consecutive
    sequence lengths in a launch series (``SERIES``): the added attention FLOPs per token over
    the added seconds per token, measured and predicted. A time per token that does not grow
    gives ``inf``."""
    series: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        if r["id"] in times:
            series[tuple(r[k] for k in SERIES)].append(r)
    out = []
    for launches in series.values():
        launches.sort(key=lambda r: int(r["seq_length"]))
        for a, b in pairwise(launches):
            if a["seq_length"] == b["seq_length"]:
                continue
            flops = attention_flops_per_token(b) - attention_flops_per_token(a)
            (pa, ma), (pb, mb) = times[a["id"]], times[b["id"]]
            dm = seconds_per_token(b, mb) - seconds_per_token(a, ma)
            dp = seconds_per_token(b, pb) - seconds_per_token(a, pa)
            meas, pred = (flops / d if d > 0 else float("inf") for d in (dm, dp))
            out.append((a, b, meas, pred))
    return out


def print_seq_slopes(rows: list[dict[str, str]], times: dict[str, tuple[float, float]],
                     least: int = 4096) -> None:
    """Every pair's rates, then the median by table and GPU over pairs from ``least`` tokens
    up (below it the added attention is a few per cent of the step and the slope is noise)."""
    print("| series | sequence | micro-batch | measured TFLOP/s | priced TFLOP/s | priced / "
          "measured seconds | error shorter, longer |\n|---|---|---|---|---|---|---|")
    summary: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for a, b, meas, pred in sorted(seq_slopes(rows, times), key=lambda p: (
            p[0]["note"], p[0]["gpu"], int(p[0]["hidden_size"]), p[0]["recompute"],
            p[0]["dtype"], int(p[0]["seq_length"]))):
        ea, eb = (times[r["id"]][0] / times[r["id"]][1] - 1 for r in (a, b))
        print(f"| {a['note'][:14]} {a['model']} g{a['num_gpus']} {a['recompute']} {a['dtype']} "
              f"| {a['seq_length']} -> {b['seq_length']} | {a['micro_batch_size']} -> "
              f"{b['micro_batch_size']} | {meas / 1e12:.0f} | {pred / 1e12:.0f} | "
              f"{meas / pred:.2f} | {ea:+.1%}, {eb:+.1%} |")
        if int(a["seq_length"]) >= least:
            summary[(a["note"][:40], a["gpu"])].append((meas, pred))
    print(f"\nmedian over pairs from {least} tokens (each model's series; mpt-30b included):")
    print("| table | GPU | pairs | measured TFLOP/s | priced TFLOP/s | priced / measured seconds |"
          "\n|---|---|---|---|---|---|")
    for (table, gpu), vals in sorted(summary.items()):
        m = statistics.median(v[0] for v in vals)
        p = statistics.median(v[1] for v in vals)
        q = statistics.median(v[0] / v[1] for v in vals)
        print(f"| {table} | {gpu} | {len(vals)} | {m / 1e12:.0f} | {p / 1e12:.0f} | {q:.2f} |")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("readme", type=Path)
    ap.add_argument("--attention", default="flash2")
    ap.add_argument("--csv", type=Path, help="also write the rows and their errors here")
    ap.add_argument("--per-microbatch", action="store_true",
                    help="each launch's measured-minus-predicted time per micro-batch, and per "
                         "block and billion block parameters")
    ap.add_argument("--fp8-twins", action="store_true",
                    help="each fp8 launch's measured and predicted speed-up over its bf16 twin")
    ap.add_argument("--seq-slope", action="store_true",
                    help="the attention rate read off each series' step in sequence length, "
                         "measured and priced")
    ap.add_argument("--pair", type=Path, metavar="OLD_README",
                    help="compare with an older README: the configurations it measured too")
    args = ap.parse_args(argv)
    for readme in (args.readme, args.pair):
        if readme is not None and not readme.is_file():
            print(f"error: {readme}: no such file", file=sys.stderr)
            return 2
    if args.pair:
        print_pairs(args.pair, args.readme, args.attention)
        return 0
    rows = readme_rows(args.readme, args.attention)
    by_id = {r["id"]: r for r in rows}
    times = priced(rows)
    errors = {rid: p / m - 1 for rid, (p, m) in times.items()}
    if args.per_microbatch:
        print_microbatch_gaps(rows, times)
        return 0
    if args.fp8_twins:
        print_fp8_twins(rows, times)
        return 0
    if args.seq_slope:
        print_seq_slopes(rows, times)
        return 0
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for rid, err in errors.items():
        r = by_id[rid]
        groups[(r["note"][:40], r["gpu"], r["recompute"])].append(err)
    print(f"{len(errors)} of {len(rows)} rows priced, attention {args.attention}: "
          f"MAPE {statistics.mean(abs(e) for e in errors.values()):.2%}")
    print("| table | GPU | recompute | n | mean signed | MAPE |\n|---|---|---|---|---|---|")
    for (table, gpu, rc), errs in sorted(groups.items()):
        print(f"| {table} | {gpu} | {rc} | {len(errs)} | {statistics.mean(errs):+.1%} | "
              f"{statistics.mean(abs(e) for e in errs):.1%} |")
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "table", "recompute", "error"])
            for rid, err in errors.items():
                writer.writerow([rid, by_id[rid]["note"], by_id[rid]["recompute"], f"{err:+.4f}"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
