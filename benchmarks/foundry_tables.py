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
no preset and is skipped.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from trainsim.validate import BUNDLED_DIR, validate_file

GPUS = {"h100_80gb": "h100-sxm-80gb", "a100_80gb": "a100-sxm-80gb", "a100_40gb": "a100-sxm-40gb"}


def readme_rows(readme: Path, attention: str) -> list[dict[str, str]]:
    """The README's table lines as training rows (see the module docstring)."""
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        template = {r["model"]: r for r in csv.DictReader(fh) if r["framework"] == "llm-foundry"}
    rows, table = [], ""
    for line in readme.read_text().splitlines():
        if line.startswith("## "):
            table = line[3:].strip()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 20 or cells[0] in ("Model", "---") or cells[3] not in GPUS:
            continue
        (model, seq, gpus, gpu, _mfu, _hfu, _tflop, mb, _ga, gbs, _sps, tps, _tpg, gbs_tokens,
         precision, mp_mode, sharding, ckpt) = cells[:18]
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


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("readme", type=Path)
    ap.add_argument("--attention", default="flash2")
    ap.add_argument("--csv", type=Path, help="also write the rows and their errors here")
    args = ap.parse_args(argv)
    if not args.readme.is_file():
        print(f"error: {args.readme}: no such file", file=sys.stderr)
        return 2
    rows = readme_rows(args.readme, args.attention)
    path = Path(tempfile.mkdtemp()) / "foundry_tables.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    by_id = {r["id"]: r for r in rows}
    errors = {r.id: r.predicted / r.measured - 1 for r in validate_file(path, workers=2)[1]
              if r.predicted}
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
