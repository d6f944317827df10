"""FlashAttention-2 with dropout on one H200: the kernel rows, and what dropout costs FA2 there.

The 40th session's device runs (``benchmarks/device_checks40.py``; JSON under benchmarks/
h200_2026-11-27_s40/: run 1 section ``fa_dropout``, causal, head dim 128, four shapes; run 4
section ``fa_dropout2``, head dim 128 and 64, causal and unmasked) timed PyTorch SDPA's
FLASH_ATTENTION backend (FlashAttention-2's kernels, vendored), bf16, with dropout 0 and 0.1:
the forward alone and forward + backward, eager calls between two CUDA events.

``--write-csv`` writes those 32 timings as kernels-format rows (benchmarks/
kernels_h200_fa_dropout.csv; the dropout is stated in the note, which ``validate.kernels``
reads: ``DROPOUT_NOTE``). The default prints, shape by shape, the measured dropout/no-dropout
time ratio beside trainsim's as shipped (every fused kernel's matmuls slowed to
``ATTN_DROPOUT_FWD``/``_BWD``, FA4's GB200 figures) and beside the candidate
benchmarks/candidates/fa2_dropout_philox.patch, which prices FA1's and FA2's Philox draws as a
time per score that does not grow with the head dim: a share of FA2's matmul time per score at
head dim 128, fitted here on the head-dim-128 shapes (forward from the forward rows, then the
backward from the forward + backward rows with the forward's fixed), the median over the
shapes whose dropout run is slower (the smallest, ~0.14 ms a forward, ran faster with dropout:
launch and timing noise, not the kernel); head dim 64 is held out. The matmul time the share
multiplies is read back from the shipped prices (``priced_pairs``), so the fit needs no model
internals and the candidate, at these shapes, prices exactly this.

Superseded (54th session): FA2's draws are now priced per computed score from the 54th session's
H200 runs (``compute.attention_dropout``, benchmarks/dropout54_fit.py), which also holds these
rows out; this script prices as the 40th session's model did (``priced_s``), and the candidate
patch no longer applies.

usage: PYTHONPATH=src python benchmarks/fa_dropout40.py [--write-csv] [--format json]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

from trainsim.compute import attention_dropout
from trainsim.compute.attention_dropout import ATTN_DROPOUT_BWD, ATTN_DROPOUT_FWD
from trainsim.validate import kernels
from trainsim.validate.kernels import predict_kernel_row

HERE = Path(__file__).resolve().parent
RUN = HERE / "h200_2026-11-27_s40" / "run1_device_checks40.json"
RUN4 = HERE / "h200_2026-11-27_s40" / "run4_device_checks40.json"
FIT_HEAD_DIM = 128
CSV_PATH = HERE / "kernels_h200_fa_dropout.csv"
COLUMNS = ["id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups",
           "batch", "seq_len", "heads", "kv_heads", "head_dim", "causal", "tokens", "hidden",
           "ffn", "experts", "top_k", "bytes", "measured_value", "measured_unit", "note"]
KINDS = {"fwd": "attention_fwd", "fwd_bwd": "attention_fwd_bwd"}


def rows_from_run(path: Path = RUN, section: str = "fa_dropout") -> list[dict[str, str]]:
    """One run's FA timings as kernels-format rows (time in us), in the JSON's order; a case
    named ``full-...`` ran without the causal mask."""
    run = json.loads(path.read_text())
    env, times = run["env"], run["sections"][section]["times"]
    source = (f"measured on {env['device']}, torch {env['torch']}, CUDA {env['cuda']}, CUDA "
              f"events, benchmarks/device_checks40.py ({section}), "
              f"{run['started_utc'][:10]}")
    rows = []
    for case, t in times.items():
        causal = not case.startswith("full-")
        shape, p = case.removeprefix("full-").rsplit("-p", 1)
        b, s, h, d = (int(part[1:]) for part in shape.split("-"))
        mask = "causal" if causal else "nomask"
        for what, kind in KINDS.items():
            how = ("forward" if what == "fwd" else
                   "forward + backward (torch.autograd.grad of the packed qkv)")
            rows.append({**dict.fromkeys(COLUMNS, ""),
                         "id": f"dc40-h200-sdpa-flash-{mask}-{shape}-p{p}-{what}",
                         "source": source, "gpu": env["gpu"], "kind": kind,
                         "implementation": "sdpa", "dtype": "bf16", "batch": str(b),
                         "seq_len": str(s), "heads": str(h), "kv_heads": str(h),
                         "head_dim": str(d), "causal": str(int(causal)),
                         "measured_value": f"{t[what + '_us']:g}", "measured_unit": "us",
                         "note": f"SDPA FLASH_ATTENTION backend (FlashAttention-2's kernels), "
                                 f"{'causal' if causal else 'no mask'}, dropout {p}; {how}; "
                                 f"eager calls between two events, median of 3"})
    return rows


def all_runs() -> list[dict[str, str]]:
    """Run 1's ``fa_dropout`` (causal, head dim 128) and run 4's ``fa_dropout2`` (head dim 64,
    and no mask)."""
    return rows_from_run(RUN) + rows_from_run(RUN4, "fa_dropout2")


def read_rows(path: Path = CSV_PATH) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def priced_s(row: dict[str, str]) -> float:
    """The row's price with every kernel's dropout a slower matmul rate, as this session's model
    priced it (since the 54th session FA2's draws are priced per score instead:
    ``compute.attention_dropout``, benchmarks/dropout54_fit.py)."""
    saved = attention_dropout.DROPOUT_KERNEL
    kernels._model.cache_clear()  # the models keep each op's price
    attention_dropout.DROPOUT_KERNEL = {}
    try:  # the roofline, as then: no database record answered these ``sdpa`` rows until the
        # 63rd session keyed the H200's SDPA records ``sdpa`` (database.SDPA_RECORD_IMPL)
        res = predict_kernel_row(row, compute_db=None)
    finally:
        attention_dropout.DROPOUT_KERNEL = saved
        kernels._model.cache_clear()
    if res.error:
        raise SystemExit(f"{row['id']}: {res.error}")
    return res.extra["time_s"]


def pairs(rows: list[dict[str, str]], what: str) -> list[tuple[str, dict, dict]]:
    """(shape, no-dropout row, dropout row) of one kind."""
    by_id = {r["id"]: r for r in rows}
    out = []
    for r in rows:
        if r["kind"] == KINDS[what] and "-p0.1-" in r["id"]:
            base = by_id[r["id"].replace("-p0.1-", "-p0.0-")]
            out.append((r["id"].split("sdpa-flash-")[1].split("-p0.1")[0], base, r))
    return out


def priced_pairs(rows: list[dict[str, str]]) -> dict[str, dict[str, dict]]:
    """Per kind and shape: the measured and shipped-priced times without and with dropout, and
    the matmul time ``mma_s`` dropout's slowdown acts on as shipped (the matmuls, times the
    causal forward's tail): the shipped price adds ``mma_s * (1 / ATTN_DROPOUT_FWD - 1)``
    forward, and the forward's plus ``mma_s * (1 / ATTN_DROPOUT_BWD - 1)`` for a forward +
    backward row, so ``mma_s`` is read back from the two prices (forward first)."""
    out: dict[str, dict[str, dict]] = {"fwd": {}, "fwd_bwd": {}}
    for what in ("fwd", "fwd_bwd"):
        for shape, base, drop in pairs(rows, what):
            t0, t1 = priced_s(base), priced_s(drop)
            added = t1 - t0
            if what == "fwd_bwd":
                fwd = out["fwd"][shape]
                added -= fwd["mma_s"] * (1 / ATTN_DROPOUT_FWD - 1)
            slow = ATTN_DROPOUT_BWD if what == "fwd_bwd" else ATTN_DROPOUT_FWD
            out[what][shape] = {
                "measured_ratio": float(drop["measured_value"]) / float(base["measured_value"]),
                "no_dropout_us": float(base["measured_value"]), "priced_s": t0,
                "head_dim": int(base["head_dim"]),
                "shipped_ratio": t1 / t0, "mma_s": added / (1 / slow - 1)}
    return out


def fit(rows: list[dict[str, str]]) -> tuple[float, float]:
    """(forward, backward) dropout time per score as a share of FA2's matmul time per score at
    head dim 128: per head-dim-128 shape slower with dropout, the share that prices the measured
    ratio with the draws added to the no-dropout price (forward; then the backward with the
    forward's fixed), the median over those shapes (the candidate's ``FA2_DROPOUT_OF_MMA``).
    The head-dim-64 shapes are left to check it."""
    p = priced_pairs(rows)
    fwd = statistics.median((c["measured_ratio"] - 1) * c["priced_s"] / c["mma_s"]
                            for c in p["fwd"].values()
                            if c["measured_ratio"] > 1 and c["head_dim"] == FIT_HEAD_DIM)
    bwd = statistics.median(
        ((c["measured_ratio"] - 1) * c["priced_s"] - fwd * p["fwd"][shape]["mma_s"]) / c["mma_s"]
        for shape, c in p["fwd_bwd"].items()
        if c["measured_ratio"] > 1 and c["head_dim"] == FIT_HEAD_DIM)
    return round(fwd, 4), round(bwd, 4)


def table(rows: list[dict[str, str]]) -> list[dict]:
    """Per kind and shape: measured ratio, shipped ratio, and the candidate's (the fitted draws,
    a time per score that does not grow with the head dim: at head dim d the matmul time the
    share multiplies is ``mma_s * 128 / d``)."""
    p, (f, b) = priced_pairs(rows), fit(rows)
    out = []
    for what in ("fwd", "fwd_bwd"):
        for shape, c in p[what].items():
            scale = FIT_HEAD_DIM / c["head_dim"]
            added = scale * (f * p["fwd"][shape]["mma_s"]
                             + (b * c["mma_s"] if what == "fwd_bwd" else 0))
            out.append({"kind": what, "shape": shape, "no_dropout_us": c["no_dropout_us"],
                        "head_dim": c["head_dim"],
                        "measured": round(c["measured_ratio"], 4),
                        "shipped": round(c["shipped_ratio"], 4),
                        "per_score_draws": round(1 + added / c["priced_s"], 4)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-csv", action="store_true", help=f"write {CSV_PATH.name} from the "
                    "run's JSON first")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    args = ap.parse_args(argv)
    if args.write_csv:
        rows = all_runs()
        with CSV_PATH.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    rows = read_rows()
    out = {"fitted": list(fit(rows)), "rows": table(rows)}
    if args.format == "json":
        json.dump(out, sys.stdout, indent=1)
        print()
        return 0
    print(f"FA2 dropout draws per score, share of FA2's matmul time at head dim 128 (forward, "
          f"backward): {out['fitted']}")
    print("| shape | kind | no-dropout (us) | measured ratio | shipped ratio | per-score draws |")
    print("|---|---|---|---|---|---|")
    for r in out["rows"]:
        print(f"| {r['shape']} | {r['kind']} | {r['no_dropout_us']:.1f} | {r['measured']:.3f} | "
              f"{r['shipped']:.3f} | {r['per_score_draws']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
