"""Where the Blackwell training rows' time is mispriced, kind of work by kind of work (issue 17,
32nd session; a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/blackwell_work.py [--out DIR]   # ~10 min on 2 busy cores

Every training row on a Blackwell GPU (B200, B300, GB200, GB300) in the check files and the
public file, and the Hopper rows of the same files as a control, is priced with the shipped
model and with one kind of work made 10 % slower at a time: dense GEMMs, grouped GEMMs,
fused attention, memory-bound kernels, collectives and sends, every kernel's launch
(``roofline.LAUNCH_S`` +3 us), the eager host cost (``host.HOST_S_PER_KERNEL``). The step's
rise over 10 % is that kind's share of the critical path, hidden work counting nothing.
A kind priced too fast by a fraction a on every row would leave a gap
(measured / predicted - 1) of a x share; so the gaps are regressed on the shares, per GPU
generation (non-negative least squares on each sign, rows of every file at once), and the
variants below are priced whole:

* ``tile_once``: the Blackwell GEMM tile's fixed cost paid once per kernel, not per tile
  (``gemm_hypotheses.py``'s "Blackwell tile cost once per kernel": B200's MAMF rows show no
  per-tile cost, bf16 1,745 TFLOP/s at k 3,072 vs 1,771 at 14,336).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FILES = ["training_mlperf5", "training_dgxc2505", "training_mcore_dsv3_gb200", "training_nemo_perf",
         "training_nemo_longseq", "training_mlperf51_partners", "training_moe_modelzoo",
         "training_heldout"]
BLACKWELL = ("b200", "b300", "gb200", "gb300")
KINDS = ("gemm", "grouped", "attention", "memory", "comm", "launch", "host")
STEP = 0.10


def files() -> list[Path]:
    from trainsim.validate import BUNDLED_DIR
    return [HERE / f"{f}.csv" for f in FILES] + [BUNDLED_DIR / "training_public.csv"]


def generation(gpu: str) -> str:
    g = gpu.lower()
    if any(g.startswith(b) for b in BLACKWELL):
        return "blackwell"
    return "hopper" if g.startswith(("h100", "h200", "h800", "h20")) else "other"


def patch(variant: str) -> None:
    """Make one kind of work slower (or apply a model variant) in this process."""
    from trainsim import pricing
    from trainsim.compute import chain, host, roofline
    from trainsim.workload.ops import Attention, Elementwise, Gemm
    if variant in ("gemm", "grouped", "attention", "memory"):
        orig = chain.ChainModel.explain

        def explain(self, op):
            t, how = orig(self, op)
            grouped = isinstance(op, Gemm) and op.grouped and op.grouped != "userbuffers"
            hit = (variant == "gemm" and isinstance(op, Gemm) and not grouped
                   or variant == "grouped" and grouped
                   or variant == "attention" and isinstance(op, Attention)
                   or variant == "memory" and isinstance(op, Elementwise))
            return (t * (1 + STEP) if hit else t), how
        chain.ChainModel.explain = explain
    elif variant == "comm":
        orig_c = pricing.Pricer._comm_time
        pricing.Pricer._comm_time = lambda self, op: orig_c(self, op) * (1 + STEP)
    elif variant == "launch":
        roofline.LAUNCH_S *= 2  # +3 us a kernel
    elif variant == "host":
        host.HOST_S_PER_KERNEL *= 1 + STEP
    elif variant == "tile_once":
        sys.path.insert(0, str(HERE))
        import gemm_hypotheses as gh
        eff = gh._efficiency(gh._shipped_overhead, kernel_once=True)
        roofline.RooflineModel.gemm_efficiency = eff
    elif variant == "tile_zero":  # no tile fixed cost at all on Blackwell
        sys.path.insert(0, str(HERE))
        import gemm_hypotheses as gh

        def zero(self, op):
            return 0.0 if (self.gpu.sm_arch or 0) >= 100 else gh._shipped_overhead(self, op)
        roofline.RooflineModel.gemm_efficiency = gh._efficiency(zero)
    elif variant != "base":
        raise SystemExit(f"unknown variant {variant}")


def _predict(row: dict[str, str]) -> tuple[str, float, float]:
    from trainsim.validate.training import predict_training_row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = predict_training_row(row)
        except Exception:  # noqa: BLE001 (a row the model refuses)
            return row["_key"], float("nan"), float("nan")
    p = float("nan") if res.predicted is None else res.predicted
    return row["_key"], res.measured, p


def is_moe(r: dict[str, str]) -> bool:
    """A row with experts (its own cell or its model preset's)."""
    from trainsim import catalog
    if r.get("num_experts") and int(float(r["num_experts"])) > 1:
        return True
    try:
        return (catalog.model(r["model"]).num_experts or 0) > 1
    except Exception:  # noqa: BLE001 (a model spelled out in the row only)
        return False


def rows() -> list[dict[str, str]]:
    out = []
    for f in files():
        with open(f, newline="") as fh:
            rs = list(csv.DictReader(fh))
        if not any(generation(r["gpu"]) == "blackwell" for r in rs):
            continue
        for r in rs:
            if generation(r["gpu"]) in ("blackwell", "hopper") and r.get("measured_iteration_s"):
                out.append({**r, "_key": f"{f.stem}:{r['id']}", "_gen": generation(r["gpu"]),
                            "_moe": is_moe(r)})
    return out


def run(variant: str, rs: list[dict[str, str]]) -> dict[str, tuple[float, float]]:
    with Pool(2, initializer=patch, initargs=(variant,)) as pool:
        return {k: (m, p) for k, m, p in pool.map(_predict, rs, chunksize=4)}


def shares(out: Path, rs: list[dict[str, str]]) -> dict[str, dict[str, float]]:
    """Each kind's share of a row's predicted step (``launch``: the step's rise per +3 us a
    kernel)."""
    base = json.loads((out / "base.json").read_text())
    got: dict[str, dict[str, float]] = {r["_key"]: {} for r in rs}
    for k in KINDS:
        path = out / f"{k}.json"
        if not path.exists():
            continue
        for key, (_, p) in json.loads(path.read_text()).items():
            got[key][k] = (p / base[key][1] - 1) / (1.0 if k == "launch" else STEP)
    return got


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with free signs (a kind may be priced too fast or too slow), no
    intercept: the gap each kind's share would leave if that kind were mispriced by a."""
    return np.linalg.lstsq(x, y, rcond=None)[0]


def mape(pred: dict[str, list[float]], keys: list[str]) -> str:
    """MAPE % (mean signed %) of (measured, predicted) pairs."""
    e = [pred[k][1] / pred[k][0] - 1 for k in keys]
    return f"{100 * np.mean(np.abs(e)):.1f} ({100 * np.mean(e):+.1f})"


def report(out: Path, rs: list[dict[str, str]]) -> None:
    base = json.loads((out / "base.json").read_text())
    sh = shares(out, rs)
    kinds = [k for k in KINDS if (out / f"{k}.json").exists()]
    by = {r["_key"]: r for r in rs}
    print("1. Mean share of the predicted step by kind of work, and the signed gap "
          "(measured / predicted - 1), per file and generation\n")
    print("| file | gen | n | gap % | " + " | ".join(kinds) + " |")
    print("|---|---|---|---|" + "---|" * len(kinds))
    cells: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key in base:
        cells[(key.split(":")[0], by[key]["_gen"] + (" MoE" if by[key]["_moe"] else ""))
              ].append(key)
    for (f, g), keys in sorted(cells.items()):
        gap = np.mean([base[k][0] / base[k][1] - 1 for k in keys])
        print(f"| {f.replace('training_', '')} | {g} | {len(keys)} | {100 * gap:+.1f} | "
              + " | ".join(f"{np.mean([sh[k].get(c, 0) for k in keys]):.3f}" for c in kinds)
              + " |")
    print("\n2. Gap regressed on the shares (a kind priced too fast by a: gap = a x share); "
          "every file's rows at once, per generation; rows within 40 %\n")
    print("| gen | n | " + " | ".join(kinds) + " | rms gap before / after % |")
    print("|---|---|" + "---|" * len(kinds) + "---|")
    for g, moe in [(g, m) for g in ("blackwell", "hopper") for m in (False, True)]:
        keys = [k for k in base if by[k]["_gen"] == g and by[k]["_moe"] == moe
                and abs(base[k][0] / base[k][1] - 1) < 0.4]
        x = np.array([[sh[k].get(c, 0) for c in kinds] for k in keys])
        y = np.array([base[k][0] / base[k][1] - 1 for k in keys])
        a = fit(x, y)
        res = y - x @ a
        print(f"| {g}{' MoE' if moe else ' dense'} | {len(keys)} | "
              + " | ".join(f"{v:+.2f}" for v in a)
              + f" | {100 * np.sqrt(np.mean(y ** 2)):.1f} / {100 * np.sqrt(np.mean(res ** 2)):.1f} |")
    print("\n3. Dense rows within 40 % (the two MLPerf 8B TP2 CP4 rows, +56 %, and DeepSeek-V3's "
          "out), gap on the GEMM share alone, by framework and release\n")
    print("| generation | framework | release | n | gap % | GEMM share | a (GEMM) |")
    print("|---|---|---|---|---|---|---|")
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for k in base:
        r = by[k]
        if not r["_moe"] and abs(base[k][0] / base[k][1] - 1) < 0.4:
            groups[(r["_gen"], r["framework"], r.get("framework_version", ""))].append(k)
    for (g, fw, rel), keys in sorted(groups.items()):
        if len(keys) < 2:
            continue
        x = np.array([[sh[k].get("gemm", 0.0)] for k in keys])
        y = np.array([base[k][0] / base[k][1] - 1 for k in keys])
        print(f"| {g} | {fw} | {rel} | {len(keys)} | {100 * y.mean():+.1f} | {x.mean():.2f} | "
              f"{fit(x, y)[0]:+.3f} |")
    print("\n3b. The same rows cut by one cell at a time (GEMM share alone)\n")
    cuts = {"TP > 1": lambda r: int(r["tp"] or 1) > 1,
            "TP overlap": lambda r: "tp_overlap" in r["options"],
            "CUDA graphs": lambda r: "cuda_graphs" in r["options"],
            "fp8 current scaling": lambda r: r["fp8_recipe"] in ("current", "tensorwise"),
            "fp8": lambda r: "fp8" in r["dtype"]}
    for g in ("blackwell", "hopper"):
        keys = [k for k in base if by[k]["_gen"] == g and not by[k]["_moe"]
                and abs(base[k][0] / base[k][1] - 1) < 0.4]
        for name, cut in cuts.items():
            cells_out = []
            for v in (False, True):
                kk = [k for k in keys if cut(by[k]) == v]
                if kk:
                    x = np.array([[sh[k].get("gemm", 0.0)] for k in kk])
                    y = np.array([base[k][0] / base[k][1] - 1 for k in kk])
                    cells_out.append(f"{'yes' if v else 'no'} {fit(x, y)[0]:+.3f} ({len(kk)})")
            print(f"- {g}, {name}: " + ", ".join(cells_out))
    variants = [v for v in ("tile_once", "tile_zero") if (out / f"{v}.json").exists()]
    if variants:
        print("\n4. Model variants, MAPE % (mean signed %) per file and generation\n")
        print("| file | gen | n | shipped | " + " | ".join(variants) + " |")
        print("|---|---|---|---|" + "---|" * len(variants))
        got = {v: json.loads((out / f"{v}.json").read_text()) for v in variants}
        for (f, g), keys in sorted(cells.items()):
            print(f"| {f.replace('training_', '')} | {g} | {len(keys)} | {mape(base, keys)} | "
                  + " | ".join(mape(got[v], keys) for v in variants) + " |")
        if "tile_once" in got:  # does the gap follow what the tile fix takes off each row?
            keys = [k for k in base if by[k]["_gen"] == "blackwell" and not by[k]["_moe"]
                    and abs(base[k][0] / base[k][1] - 1) < 0.4]
            g = np.array([sh[k].get("gemm", 0.0) for k in keys])
            save = np.array([1 - got["tile_once"][k][1] / base[k][1] for k in keys]) / g
            y = np.array([base[k][0] / base[k][1] - 1 for k in keys])
            print(f"\ntile_once takes {100 * save.min():.1f}-{100 * save.max():.1f} % (median "
                  f"{100 * np.median(save):.1f} %) off the dense Blackwell rows' GEMM time; "
                  f"correlation of gap / GEMM share with it: {np.corrcoef(y / g, save)[0, 1]:+.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="/tmp/blackwell_work")
    ap.add_argument("--report", action="store_true", help="only print the tables")
    ap.add_argument("--variants", default=",".join(("base",) + KINDS + ("tile_once", "tile_zero")))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rs = rows()
    if args.report:
        report(out, rs)
        return 0
    for v in args.variants.split(","):
        path = out / f"{v}.json"
        if not path.exists():
            path.write_text(json.dumps(run(v, rs)))
        print(v, "done", flush=True)
    meta = {r["_key"]: {k: r[k] for k in ("gpu", "_gen", "framework", "model", "options",
                                          "num_gpus", "tp", "cp", "fp8_recipe", "dtype")}
            for r in rs}
    (out / "rows.json").write_text(json.dumps(meta))
    report(out, rs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
