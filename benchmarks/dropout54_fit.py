"""Attention dropout by kernel on one H200: the kernel rows, the fit of the draws per score, and
what the shipped and the old pricing give on the rows the fit never reads.

Measured (``benchmarks/device_checks54.py`` section ``attn_dropout``, JSON under
benchmarks/h200_2026-11-28_s54/; torch 2.11, CUDA 13.0, cuDNN 9.19): PyTorch SDPA's cuDNN, flash
(FlashAttention-2's kernels, vendored) and memory-efficient backends, bf16, causal, b 1, 16 query
heads, 16 or 4 key/value heads, head dim 128, 4,096 and 8,192 tokens, dropout 0 and 0.1, the
forward alone and forward + backward (the backward is their difference), eager calls between two
CUDA events. Held out: the 40th session's run 7 (``cudnn_dropout``: cuDNN, head dim 64 and 128,
b 1-4, causal and unmasked, forward and forward + backward) and FlashAttention-2's rows of runs 1
and 4 (benchmarks/kernels_h200_fa_dropout.csv, ``fa_dropout40.py``).

``--write-csv`` writes the run-54 and run-7 timings as kernels-format rows
(benchmarks/kernels_h200_attn_dropout54.csv, times in us, the dropout in the note, which
``validate.kernels`` reads). The fit (``compute.attention_dropout.DROPOUT_CLOCKS_PER_SCORE``),
per kernel and direction, shape by shape: the kernel with dropout is priced with its draws off
and at one SM clock per score; the price is linear in the clocks, so the clocks that make the
priced time ratio (dropout over none) the measured one follow; the constant is the median over
the four shapes. A ratio, not the measured added time: the draws come on top of the kernel's
price, whatever that price's own error.

usage: PYTHONPATH=src python benchmarks/dropout54_fit.py [--write-csv] [--format json]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

from trainsim.compute import attention_dropout as ad
from trainsim.validate import kernels
from trainsim.validate.kernels import predict_kernel_row

HERE = Path(__file__).resolve().parent
RUN54 = HERE / "h200_2026-11-28_s54" / "device_checks54.json"
RUN4 = HERE / "h200_2026-11-28_s54" / "run4" / "device_checks54.json"
RUN7 = HERE / "h200_2026-11-27_s40" / "run7_device_checks40.json"
FA2_HELD = HERE / "kernels_h200_fa_dropout.csv"
CSV_PATH = HERE / "kernels_h200_attn_dropout54.csv"
COLUMNS = ["id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups",
           "batch", "seq_len", "heads", "kv_heads", "head_dim", "causal", "tokens", "hidden",
           "ffn", "experts", "top_k", "bytes", "measured_value", "measured_unit", "note"]
IMPL = {"cudnn": "cudnn", "flash2": "sdpa", "sdpa_efficient": "mem_efficient"}
"""device_checks54's SDPA backends -> the kernels rows' implementation."""
KERNEL = {"cudnn": "cudnn", "sdpa": "flash2", "mem_efficient": "mem_efficient"}
"""A row's implementation -> its ``DROPOUT_CLOCKS_PER_SCORE`` key."""
BACKEND = {"cudnn": "CUDNN_ATTENTION", "sdpa": "FLASH_ATTENTION (FlashAttention-2's kernels)",
           "mem_efficient": "EFFICIENT_ATTENTION"}
KINDS54 = {"fwd_ms": "attention_fwd", "bwd_ms": "attention_bwd"}
KINDS7 = {"fwd_us": "attention_fwd", "fwd_bwd_us": "attention_fwd_bwd"}
DIRECTION = {"attention_fwd": 0, "attention_bwd": 1}


def _row(**cells: str) -> dict[str, str]:
    return {**dict.fromkeys(COLUMNS, ""), "dtype": "bf16", "measured_unit": "us", **cells}


def _source(run: dict, script: str, section: str) -> str:
    env = run["env"]
    cudnn = f", cuDNN {env['cudnn']}" if "cudnn" in env else ""
    return (f"measured on {env['device']}, torch {env['torch']}, CUDA {env['cuda']}{cudnn}, CUDA "
            f"events, benchmarks/{script} ({section}), {run['started_utc'][:10]}")


def rows_run54(path: Path = RUN54) -> list[dict[str, str]]:
    """Run 54's ``attn_dropout`` timings as kernels rows: forward and backward (forward +
    backward minus forward) of every backend, shape and dropout, in the JSON's order."""
    run = json.loads(path.read_text())
    source = _source(run, "device_checks54.py", "attn_dropout")
    rows = []
    for case, t in run["sections"]["attn_dropout"]["times"].items():
        backend, s, h, kv, p = case.rsplit("-", 4)
        impl = IMPL[backend]
        for field, kind in KINDS54.items():
            how = "forward" if field == "fwd_ms" else "backward: forward + backward minus forward"
            rows.append(_row(
                id=f"dc54-h200-{impl}-{s}-{h}-{kv}-{p}-{field[:3]}", source=source,
                gpu=run["env"]["gpu"], kind=kind, implementation=impl, batch="1",
                seq_len=s[1:], heads=h[1:], kv_heads=kv[2:], head_dim="128", causal="1",
                measured_value=f"{t[field] * 1e3:.1f}",
                note=f"SDPA {BACKEND[impl]}, causal, dropout {p[1:]}; {how}; eager calls "
                     "between two events, median of 3 x 5"))
    return rows


def rows_run7(path: Path = RUN7) -> list[dict[str, str]]:
    """Run 7's ``cudnn_dropout`` timings (cuDNN; a ``full-`` case ran unmasked) as kernels rows:
    forward and forward + backward."""
    run = json.loads(path.read_text())
    source = _source(run, "device_checks40.py", "cudnn_dropout")
    rows = []
    for case, t in run["sections"]["cudnn_dropout"]["times"].items():
        causal = not case.startswith("full-")
        shape, p = case.removeprefix("full-").rsplit("-p", 1)
        b, s, h, d = (part[1:] for part in shape.split("-"))
        mask = "causal" if causal else "nomask"
        for field, kind in KINDS7.items():
            how = "forward" if field == "fwd_us" else "forward + backward"
            rows.append(_row(
                id=f"dc40r7-h200-cudnn-{mask}-{shape}-p{p}-{field[:-3]}", source=source,
                gpu=run["env"]["gpu"], kind=kind, implementation="cudnn", batch=b, seq_len=s,
                heads=h, kv_heads=h, head_dim=d, causal=str(int(causal)),
                measured_value=f"{t[field]:g}",
                note=f"SDPA CUDNN_ATTENTION, {'causal' if causal else 'no mask'}, dropout {p}; "
                     f"{how}; eager calls between two events, median of 3"))
    return rows


def rows_run4(path: Path = RUN4) -> list[dict[str, str]]:
    """Run 4's ``attn_grid_graph`` timings (SDPA cuDNN and FA2, causal, batch 1-4 x 4-32 heads x
    2,048-16,384 tokens x head dims 64 and 128, each a CUDA graph's replays: kernel time without
    the host) as kernels rows, forward and forward + backward. MLA's 192/128 heads are left out:
    a kernels row states one head dim."""
    run = json.loads(path.read_text())
    source = _source(run, "device_checks54.py", "attn_grid_graph")
    rows = []
    for case, t in run["sections"]["attn_grid_graph"]["times"].items():
        backend, b, s, h, d, p = case.split("-")
        qk, v = d[1:].split("x")
        if qk != v:
            continue
        impl = IMPL[backend]
        for field, kind in KINDS7.items():
            how = "forward" if field == "fwd_us" else "forward + backward"
            rows.append(_row(
                id=f"dc54r4-h200-{impl}-{b}-{s}-{h}-d{qk}-{p}-{field[:-3]}", source=source,
                gpu=run["env"]["gpu"], kind=kind, implementation=impl, batch=b[1:],
                seq_len=s[1:], heads=h[1:], kv_heads=h[1:], head_dim=qk, causal="1",
                measured_value=f"{t[field]:g}",
                note=f"SDPA {BACKEND[impl]}, causal, dropout {p[1:]}; {how}; one CUDA graph of 5 "
                     "calls between two events, median of 3"))
    return rows


def all_rows() -> list[dict[str, str]]:
    return rows_run54() + rows_run7() + rows_run4()


def read_rows(path: Path = CSV_PATH) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@contextlib.contextmanager
def clocks(table: dict[str, tuple[float, float]] | None) -> Iterator[None]:
    """Price with ``table`` as ``DROPOUT_CLOCKS_PER_SCORE``; None: every kernel's dropout as a
    slower matmul rate, as before this session (no measured kernel)."""
    saved = ad.DROPOUT_CLOCKS_PER_SCORE, ad.DROPOUT_KERNEL
    kernels._model.cache_clear()  # the models keep each op's price
    ad.DROPOUT_CLOCKS_PER_SCORE = dict(table) if table is not None else saved[0]
    ad.DROPOUT_KERNEL = saved[1] if table is not None else {}
    try:
        yield
    finally:
        ad.DROPOUT_CLOCKS_PER_SCORE, ad.DROPOUT_KERNEL = saved
        kernels._model.cache_clear()


def priced_s(row: dict[str, str]) -> float:
    res = predict_kernel_row(row)
    if res.error:
        raise SystemExit(f"{row['id']}: {res.error}")
    return res.extra["time_s"]


def pairs(rows: list[dict[str, str]]) -> list[tuple[dict, dict]]:
    """(no-dropout row, dropout row) of every shape and kind."""
    by_id = {r["id"]: r for r in rows}
    return [(by_id[r["id"].replace("-p0.1-", "-p0.0-")], r) for r in rows if "-p0.1-" in r["id"]]


def _with(kernel: str, direction: int, value: float) -> dict[str, tuple[float, float]]:
    table = dict(ad.DROPOUT_CLOCKS_PER_SCORE)
    pair = list(table[kernel])
    pair[direction] = value
    table[kernel] = (pair[0], pair[1])
    return table


def shape_fits(rows: list[dict[str, str]]) -> list[dict]:
    """Per run-54 shape and kind: the clocks per score that price its measured ratio."""
    out = []
    for base, drop in pairs(rows):
        if not drop["id"].startswith("dc54-"):
            continue
        kernel, d = KERNEL[drop["implementation"]], DIRECTION[drop["kind"]]
        p0 = priced_s(base)
        with clocks(_with(kernel, d, 0.0)):
            off = priced_s(drop)
        with clocks(_with(kernel, d, 1.0)):
            unit = priced_s(drop) - off
        ratio = float(drop["measured_value"]) / float(base["measured_value"])
        out.append({"kernel": kernel, "direction": ("fwd", "bwd")[d], "id": drop["id"],
                    "measured_ratio": round(ratio, 4),
                    "clocks": (ratio * p0 - off) / unit})
    return out


def fit(rows: list[dict[str, str]]) -> dict[str, tuple[float, float]]:
    """``DROPOUT_CLOCKS_PER_SCORE`` from run 54: the median over the shapes, 3 decimals."""
    per = shape_fits(rows)
    return {k: tuple(round(statistics.median(f["clocks"] for f in per if f["kernel"] == k
                                             and f["direction"] == d), 3)
                     for d in ("fwd", "bwd"))  # type: ignore[misc]
            for k in ("cudnn", "flash2", "mem_efficient")}


def table(rows: list[dict[str, str]]) -> list[dict]:
    """Per shape and kind of every row pair (run 54 fitted, run 7 and the FA2 file held out): the
    measured ratio, the ratio as priced before (every kernel at FA4's slower matmul rate) and as
    shipped, and the dropout row's priced error before and after."""
    out = []
    for base, drop in pairs(rows):
        measured = float(drop["measured_value"])
        with clocks(None):
            before0, before1 = priced_s(base), priced_s(drop)
        after0, after1 = priced_s(base), priced_s(drop)
        out.append({
            "id": drop["id"], "part": ("fit" if drop["id"].startswith("dc54-") else
                                       "held-out graphed" if drop["id"].startswith("dc54r4-")
                                       else "held-out"),
            "implementation": drop["implementation"], "kind": drop["kind"],
            "head_dim": int(drop["head_dim"]), "no_dropout_us": float(base["measured_value"]),
            "measured": round(measured / float(base["measured_value"]), 4),
            "before": round(before1 / before0, 4), "shipped": round(after1 / after0, 4),
            "error_before": round(before1 / (measured * 1e-6) - 1, 4),
            "error_shipped": round(after1 / (measured * 1e-6) - 1, 4)})
    return out


def noisy(r: dict) -> bool:
    """A pair whose dropout run is not slower: launch and timing noise at ~0.1-0.6 ms (run 7's
    b1 s2048 forward + backward without dropout took 620 us, twice its b2 shape's 365)."""
    return r["measured"] <= 1.0


def summary(rows: list[dict]) -> list[dict]:
    """MAPE of the dropout rows and the mean distance of the priced time ratio (dropout over
    none) from the measured one, before and as shipped, per part, implementation and kind (the
    noisy pairs left out)."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        if not noisy(r):
            groups.setdefault((r["part"], r["implementation"], r["kind"]), []).append(r)
    return [{"part": p, "implementation": i, "kind": k, "n": len(g),
             "mape_before": round(statistics.mean(abs(r["error_before"]) for r in g), 4),
             "mape_shipped": round(statistics.mean(abs(r["error_shipped"]) for r in g), 4),
             "ratio_off_before": round(statistics.mean(abs(r["before"] - r["measured"])
                                                       for r in g), 3),
             "ratio_off_shipped": round(statistics.mean(abs(r["shipped"] - r["measured"])
                                                        for r in g), 3)}
            for (p, i, k), g in sorted(groups.items())]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-csv", action="store_true",
                    help=f"write {CSV_PATH.name} from the runs' JSON first")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    args = ap.parse_args(argv)
    if args.write_csv:
        with CSV_PATH.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(all_rows())
    rows = read_rows()
    held = read_rows(FA2_HELD)
    out = {"fitted": fit(rows), "shipped": dict(ad.DROPOUT_CLOCKS_PER_SCORE),
           "shapes": shape_fits(rows), "rows": table(rows) + table(held)}
    out["summary"] = summary(out["rows"])
    if args.format == "json":
        json.dump(out, sys.stdout, indent=1)
        print()
        return 0
    print("SM clocks of dropout draws per computed score (forward, backward):")
    for k, v in out["fitted"].items():
        print(f"  {k}: fitted {v}, shipped {out['shipped'][k]}")
    print("| row (dropout 0.1) | part | measured ratio | before | shipped | error before | "
          "error shipped |")
    print("|---|---|---|---|---|---|---|")
    for r in out["rows"]:
        flag = " (noise: not slower)" if noisy(r) else ""
        print(f"| {r['id']}{flag} | {r['part']} | {r['measured']:.3f} | {r['before']:.3f} | "
              f"{r['shipped']:.3f} | {r['error_before']:+.1%} | {r['error_shipped']:+.1%} |")
    print("| part | implementation | kind | rows | MAPE before | MAPE shipped | ratio off before "
          "| ratio off shipped |")
    print("|---|---|---|---|---|---|---|---|")
    for g in out["summary"]:
        print(f"| {g['part']} | {g['implementation']} | {g['kind']} | {g['n']} | "
              f"{g['mape_before']:.1%} | {g['mape_shipped']:.1%} | {g['ratio_off_before']:.3f} | "
              f"{g['ratio_off_shipped']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
