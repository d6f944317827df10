"""vidur's whole H100 / A100 GEMM profile against the dense GEMM model, and what its published
rows are: repeatable, locally smooth, and systematically slower than the model (and than the
project's CUDA 13 H100) where a grid fills fewer than three waves (issue 17 item 1, 44th session).

    PYTHONPATH=src python benchmarks/gemm44_vidur_profile.py --vidur DIR   # ~1 min on 2 cores
    PYTHONPATH=src python benchmarks/gemm44_vidur_profile.py --vidur DIR --hypotheses  # +~4 min

``DIR`` is a clone of microsoft/vidur (a work tree, or a bare git directory read at
``VIDUR_COMMIT``): ``kernels_published.csv`` took its 256 vidur GEMM rows from its
``data/profiling/compute/{h100,a100}/meta-llama/Llama-2-{7b,70b}-hf/mlp.csv`` at tokens 512,
1,024, 2,048 and 4,096. The same files, and those of four more models (CodeLlama-34B,
InternLM-20B, Qwen-72B, phi-2; Llama-3-8B / 70B on A100), profile every token count from 1 to
4,096 (H100) or 32,768 (A100), each op's Kineto kernel time a median of repeats
(vidur/profiling/common/cuda_timer.py ``handle_trace``, timer_stats_store.py ``get_stats``).
Nothing here is fitted and nothing in trainsim reads it; the profile stays in vidur's repository
(only its figures are quoted in benchmarks/RESULTS.md).

Reports:

1. *Replicates*: a few (model, TP, tokens) settings appear twice in one file (two profiling
   runs); the mean |second / first - 1| of each GEMM op's median.
2. *Same-grid neighbours* of each published row: the same op at m - 32, m - 64, m - 96 has the
   same 128-row (and 256-row) tile grid as m, so the library does the same work up to 2.3 %
   fewer useful rows; how well the m - 32 row predicts the row, and the model's error against
   the row and against the four rows' mean.
3. *The whole profile*: every GEMM op at m >= 256 in steps of 64 (``STEP``), the down
   projections left out (they multiply an all-zero activation: ``kernels_errata.csv``, 12th
   session), priced as ``trainsim validate`` prices vidur's rows; MAPE and mean signed time
   error by whole waves of 128x128 tiles, beside the same binning of the project's own H100
   file (``kernels_h100_measured.csv`` bf16, CUDA 13, the roofline alone: no database).
4. ``--hypotheses``: ``gemm_hypotheses.HYPOTHESES`` scored on the whole profile (the published
   file's cells beside).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from trainsim.validate import BUNDLED_DIR, validate_file

HERE = Path(__file__).resolve().parent
VIDUR_COMMIT = "7d47513363ec"
"""The vidur commit ``kernels_published.csv`` cites for its vidur rows."""
GPUS = {"h100": ("h100-sxm-80gb", 132), "a100": ("a100-sxm-80gb", 108)}
STEP = 64
"""Token step of the whole-profile rows (the files step by 8 below 1,024 tokens)."""
MIN_M = 256
"""Fewest tokens of a whole-profile row (below it vidur's GEMMs are a few microseconds)."""


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


HEADER = list(read_csv(BUNDLED_DIR / "kernels_published.csv")[0])
"""The kernels format's columns (the rows written here fill the GEMM ones)."""


def gemm_shapes(row: dict[str, str]) -> dict[str, tuple[int, int, int]]:
    """(m, n, k) of each GEMM op of one profile row (sarathi-serve's column / row parallel
    linears: qkv, output projection, gate and up together where gated, down)."""
    heads, kv = int(row["n_head"]), int(row["n_kv_head"])
    hidden, ffn = int(row["n_embd"]), int(row["n_expanded_embd"])
    tp, m = int(row["num_tensor_parallel_workers"]), int(row["num_tokens"])
    hd = hidden // heads
    up = (2 if row["use_gated_mlp"] == "True" else 1) * ffn // tp
    return {"attn_pre_proj": (m, (heads + 2 * kv) * hd // tp, hidden),
            "attn_post_proj": (m, hidden, heads * hd // tp),
            "mlp_up_proj": (m, up, hidden), "mlp_down_proj": (m, hidden, ffn // tp)}


def profile_files(vidur: Path, gpu: str) -> dict[str, str]:
    """{model: mlp.csv text} for ``gpu`` from a vidur work tree or bare git directory."""
    base = vidur / "data" / "profiling" / "compute" / gpu
    if base.is_dir():
        return {str(p.parent.relative_to(base)): p.read_text()
                for p in sorted(base.rglob("mlp.csv"))}
    git = ["git", "--git-dir", str(vidur)]
    names = subprocess.run(git + ["ls-tree", "-r", "--name-only", VIDUR_COMMIT,
                                  f"data/profiling/compute/{gpu}"], check=True,
                           capture_output=True, text=True).stdout.split()
    return {n.split("/")[-3] + "/" + n.split("/")[-2]: subprocess.run(
        git + ["show", f"{VIDUR_COMMIT}:{n}"], check=True, capture_output=True, text=True).stdout
        for n in names if n.endswith("/mlp.csv")}


def load(vidur: Path, gpu: str) -> dict[tuple[str, str, int, int], list[tuple[tuple, float]]]:
    """(model, op, TP, tokens) -> [((m, n, k), median ms), ...] in file order."""
    out: dict[tuple[str, str, int, int], list[tuple[tuple, float]]] = defaultdict(list)
    for model, text in profile_files(vidur, gpu).items():
        for row in csv.DictReader(text.splitlines()):
            for op, shape in gemm_shapes(row).items():
                cell = row.get(f"time_stats.{op}.median")
                if cell:
                    key = (model, op, int(row["num_tensor_parallel_workers"]), shape[0])
                    out[key].append((shape, float(cell)))
    return out


def replicates(data) -> tuple[int, float, float]:
    """Settings profiled twice: count, mean and median |second / first - 1|."""
    d = [abs(v[1][1] / v[0][1] - 1) for v in data.values() if len(v) > 1]
    return len(d), statistics.mean(d), statistics.median(d)


def published_rows(gpu: str) -> list[dict[str, str]]:
    return [r for r in read_csv(BUNDLED_DIR / "kernels_published.csv")
            if r["kind"] == "gemm" and "microsoft/vidur" in r["source"]
            and r["gpu"] == GPUS[gpu][0]]


def row_key(r: dict[str, str]) -> tuple[str, str, int, int]:
    """The profile key of a published vidur row (its id names model, TP, tokens and op)."""
    m = int(r["m"])
    tp = int(r["id"].split("-tp")[1].split("-")[0])
    model = "meta-llama/Llama-2-7b-hf" if "-7b-" in r["id"] else "meta-llama/Llama-2-70b-hf"
    return model, r["id"].split(f"-t{m}-")[1], tp, m


def priced(rows: list[dict[str, str]], compute_db: str | None = "auto") -> dict[str, tuple]:
    """{id: (predicted, measured)} of kernel rows as ``trainsim validate`` prices them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.csv"
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=HEADER, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        _, results = validate_file(path, compute_db=compute_db)
    return {r.id: (r.predicted, r.measured) for r in results if r.predicted is not None}


def neighbours(data, gpu: str) -> tuple[int, float, float, float, float, list[str]]:
    """Published rows with all three same-grid neighbours: count, the m - 32 row's MAPE as a
    predictor, the mean of the three, the model against the row, against the 4-row mean;
    and the rows more than 8 % from their m - 32 neighbour."""
    pub = published_rows(gpu)
    prices = priced(pub)
    nn, near, model, smooth, odd = [], [], [], [], []
    for r in pub:
        key = row_key(r)
        nb = [data.get(key[:3] + (key[3] - d,)) for d in (32, 64, 96)]
        if any(x is None for x in nb) or r["id"] not in prices:
            continue
        t = float(r["measured_value"])
        times = [x[0][1] for x in nb]
        pred = prices[r["id"]][0]
        nn.append(abs(times[0] / t - 1))
        near.extend(abs(x / t - 1) for x in times)
        model.append(abs(pred / t - 1))
        smooth.append(abs(pred / statistics.mean([t] + times) - 1))
        if nn[-1] > 0.08:
            odd.append(f"{r['id']} {t:.4f} ms; m-32/-64/-96: "
                       + " / ".join(f"{x:.4f}" for x in times) + f"; model {pred:.4f}")
    mean = statistics.mean
    return len(nn), mean(nn), mean(near), mean(model), mean(smooth), odd


def whole_profile_rows(data, gpu: str) -> list[dict[str, object]]:
    name = GPUS[gpu][0]
    out = []
    for (model, op, tp, m), v in sorted(data.items()):
        if m < MIN_M or m % STEP or op == "mlp_down_proj":
            continue
        (_, n, k), t = v[0]
        out.append({"id": f"vidur-{gpu}-{model.replace('/', '-')}-tp{tp}-t{m}-{op}",
                    "source": f"microsoft/vidur @{VIDUR_COMMIT} data/profiling/compute (Kineto "
                              "kernel time in ms, median of repeats)",
                    "gpu": name, "kind": "gemm", "implementation": "vllm", "dtype": "fp16",
                    "m": m, "n": n, "k": k, "measured_value": t, "measured_unit": "ms",
                    "note": op})
    return out


def waves(m: int, n: int, sms: int) -> int:
    """Whole waves of 128x128 tiles (8 and more together)."""
    return min(8, math.ceil(m / 128) * math.ceil(n / 128) // sms)


def by_waves(errors: list[tuple[int, float]]) -> dict[int, tuple[int, float, float]]:
    g: dict[int, list[float]] = defaultdict(list)
    for w, e in errors:
        g[w].append(e)
    return {w: (len(v), statistics.mean(map(abs, v)), statistics.mean(v))
            for w, v in sorted(g.items())}


def project_h100_errors() -> list[tuple[int, float]]:
    """(waves, signed time error) of the project's H100 bf16 GEMMs, roofline alone."""
    rows = [r for r in read_csv(BUNDLED_DIR / "kernels_h100_measured.csv")
            if r["kind"] == "gemm" and r["dtype"] == "bf16"]
    prices = priced(rows, compute_db=None)
    out = []
    for r in rows:
        if r["id"] in prices:
            pred, meas = prices[r["id"]]  # TFLOP/s: time error = measured / predicted rate - 1
            out.append((waves(int(r["m"]), int(r["n"]), 132), meas / pred - 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vidur", type=Path, required=True,
                    help="a microsoft/vidur clone (work tree or bare git directory)")
    ap.add_argument("--hypotheses", action="store_true",
                    help="also score gemm_hypotheses.HYPOTHESES on the whole profile")
    args = ap.parse_args(argv)
    data = {gpu: load(args.vidur, gpu) for gpu in GPUS}
    print("1. replicates (a setting profiled twice in one file)")
    for gpu, d in data.items():
        n, mean, med = replicates(d)
        print(f"   {gpu}: {n} GEMM timings, |second/first - 1| mean {100 * mean:.2f} %, "
              f"median {100 * med:.2f} %")
    print("\n2. published rows against their same-grid neighbours (m - 32, m - 64, m - 96)")
    for gpu, d in data.items():
        n, nn, near, model, smooth, odd = neighbours(d, gpu)
        print(f"   {gpu}: {n} rows; m - 32 row as the predictor {100 * nn:.2f} % (any of the "
              f"three {100 * near:.2f} %); model vs row {100 * model:.2f} %, vs the 4-row mean "
              f"{100 * smooth:.2f} %; {len(odd)} rows > 8 % from m - 32:")
        for line in odd:
            print(f"      {line}")
    print(f"\n3. whole profile (m >= {MIN_M} in steps of {STEP}, down projections out): "
          "MAPE / mean signed time error by whole waves of 128x128 tiles")
    files = {}
    cells: dict[str, dict[int, tuple[int, float, float]]] = {}
    for gpu, d in data.items():
        rows = whole_profile_rows(d, gpu)
        prices = priced(rows)
        errs = [(waves(int(r["m"]), int(r["n"]), GPUS[gpu][1]),  # type: ignore[arg-type]
                 prices[r["id"]][0] / prices[r["id"]][1] - 1) for r in rows if r["id"] in prices]
        allv = [abs(e) for _, e in errs]
        print(f"   vidur {gpu}: {len(errs)} GEMMs, MAPE {100 * statistics.mean(allv):.2f} %, "
              f"signed {100 * statistics.mean(e for _, e in errs):+.2f} %")
        cells[f"vidur {gpu}"] = by_waves(errs)
        files[gpu] = rows
    cells["project H100 (CUDA 13), roofline"] = by_waves(project_h100_errors())
    print("\n   | whole waves | " + " | ".join(cells) + " |\n   |---|" + "---|" * len(cells))
    for w in range(9):
        line = []
        for c in cells.values():
            n, mape, signed = c.get(w, (0, 0.0, 0.0))
            line.append(f"{n}: {100 * mape:.1f} / {100 * signed:+.1f}" if n else "")
        print(f"   | {w if w < 8 else '8+'} | " + " | ".join(line) + " |")
    if args.hypotheses:
        hypotheses(files)
    return 0


def hypotheses(files: dict[str, list[dict[str, object]]]) -> None:
    """``gemm_hypotheses.HYPOTHESES`` on the whole profile and on the published file."""
    sys.path.insert(0, str(HERE))
    import gemm_hypotheses as gh

    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for gpu, rows in files.items():
            paths[gpu] = Path(tmp) / f"{gpu}.csv"
            with open(paths[gpu], "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=HEADER, extrasaction="ignore")
                w.writeheader()
                w.writerows(rows)
        print("\n4. hypotheses (gemm_hypotheses.py): whole-profile GEMM MAPE | published cells")
        for name, make in gh.HYPOTHESES.items():
            with make():
                whole = {gpu: gh.cells(p)[GPUS[gpu][0]] for gpu, p in paths.items()}
                pub = gh.cells(gh.PUBLISHED)
            print(f"   {name}: vidur-all " + " ".join(f"{g} {100 * v:.2f}" for g, v in
                                                      whole.items())
                  + " | published " + " ".join(f"{g.split('-')[0]} {100 * v:.2f}" for g, v in
                                               sorted(pub.items())), flush=True)


if __name__ == "__main__":
    sys.exit(main())
