"""Where ``training_dgxc2505.csv``'s error lives, by the axes the v25.05 runs add over v25.02
(a diagnostic: nothing here feeds trainsim; issue 17, 30th session).

    PYTHONPATH=src python benchmarks/dgxc2505_axes.py          # ~30 s on 2 cores

1. ``rows``: every row by signed error (predicted / measured - 1) with its model, GPU, precision
   and fp8 recipe, layout, framework version, options and dispatcher.
2. ``axes``: the rows grouped by GPU, precision, model family (dense / MoE), GPU x family and
   CUDA graphs: n, mean signed error, MAPE and the group's share of the file's absolute error.
   The sibling files (training_dgxc.csv, training_dgxc2502.csv) are H100 dense rows only.
3. ``release pairs``: the same H100 recipe, layout, GPU count and batch in NeMo 25.02
   (training_dgxc.csv's dgxc2504 rows) and NeMo 25.04 (this file): the measured step ratio
   against the predicted one.
4. ``twins``: the rows of other files run the way the worst rows here run: GB200 racks with
   Megatron's NCCL all-to-all token dispatcher and no CUDA graphs (the Megatron-LM DeepSeek-V3
   GB200 guide's baseline steps, training_mcore_dsv3_gb200.csv rows 1-3), and the one exact
   Blackwell twin of a dense row (Llama 3.1 405B fp8 on 128 B200, NeMo 25.02, training_nemo_perf.csv).
5. ``ep``: the DeepSeek-V3 GB200 columns, EP 32 at 128 GPUs against EP 64 at 256 / 512 (8 or 4
   local experts, the same expert GEMM rows per GPU): measured against predicted step ratio.
6. ``--host`` (~2 min more): the DeepSeek-V3 rows of both GPUs priced at other per-launch host
   costs (``compute.host.HOST_S_PER_KERNEL``, fitted 30 us) and the cost c* at which each row's
   prediction meets its measurement (``dsv3_gb200_host.implied_us``), beside the guide's ladder.
"""

from __future__ import annotations

import csv
import sys
import warnings
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

from trainsim.validate.training import predict_training_row

HERE = Path(__file__).resolve().parent
FILE = HERE / "training_dgxc2505.csv"
TWIN_IDS = {
    HERE / "training_dgxc.csv": ("dgxc2504-nemotron4-15b-bf16-16", "dgxc2504-nemotron4-15b-fp8-16",
                                 "dgxc2504-nemotron4-340b-bf16-256", "dgxc2504-nemotron4-340b-fp8-256"),
    HERE / "training_mcore_dsv3_gb200.csv": ("mcore2511-dsv3-gb200-256-01-baseline",
                                             "mcore2511-dsv3-gb200-256-02-fused-alloc-permute",
                                             "mcore2511-dsv3-gb200-256-03-router-fusion",
                                             "mcore2511-dsv3-gb200-256-11-hybridep"),
    HERE / "training_nemo_perf.csv": ("nemo2502-llama3-405b-b200-128",),
}
# 25.04 row -> its 25.02 twin (same recipe, layout, GPUs and global batch on H100)
RELEASE_PAIRS = {f"dgxc2505-nemotron4-{m}-{d}-h100-{n}": f"dgxc2504-nemotron4-{m}-{d}-{n}"
                 for m, n in (("15b", 16), ("340b", 256)) for d in ("bf16", "fp8")}


def read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _predict(row: dict[str, str]) -> tuple[str, float, float | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = predict_training_row(row)
    return row["id"], res.measured, res.predicted


def predict(rows: list[dict[str, str]]) -> dict[str, float]:
    """Signed error (predicted / measured - 1) by row id; NaN where a row has no prediction."""
    with Pool(2) as pool:
        out = pool.map(_predict, rows)
    return {i: (float("nan") if p is None else p / m - 1) for i, m, p in out}


def family(row: dict[str, str]) -> str:
    return "moe" if row.get("num_experts") or row.get("ep", "1") not in ("", "1") else "dense"


def gpu_name(row: dict[str, str]) -> str:
    return row["gpu"].split("-")[0]


AXES = {
    "gpu": gpu_name,
    "precision": lambda r: r["dtype"] + (f" {r['fp8_recipe']}" if r["dtype"] == "fp8" else ""),
    "family": family,
    "gpu x family": lambda r: f"{gpu_name(r)} {family(r)}",
    "cuda graphs": lambda r: "on" if "cuda_graphs" in r["options"].split(";") else "off",
}


def group(rows: list[dict[str, str]], err: dict[str, float],
          axes: dict | None = None) -> dict[str, list[tuple]]:
    """Per axis (``AXES`` or ``axes``: name -> the row's value): (value, n, mean signed %, MAPE %,
    share of the file's absolute error %)."""
    total = sum(abs(err[r["id"]]) for r in rows)
    out: dict[str, list[tuple]] = {}
    for axis, key in (AXES if axes is None else axes).items():
        cells: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            cells[key(r)].append(err[r["id"]])
        out[axis] = [(v, len(e), 100 * sum(e) / len(e), 100 * sum(map(abs, e)) / len(e),
                      100 * sum(map(abs, e)) / total) for v, e in sorted(cells.items())]
    return out


def print_axes(groups: dict[str, list[tuple]], width: int) -> None:
    """Section 2 of a per-axis report: ``group``'s cells, the values ``width`` wide."""
    print("2. axes: value, n, mean signed %, MAPE %, share of the file's absolute error %")
    for axis, cells in groups.items():
        for v, n, signed, mape, share in cells:
            print(f"  {axis:13s} {v:{width}s} {n:3d} {signed:+7.1f} {mape:6.1f} {share:6.1f}")


def layout(r: dict[str, str]) -> str:
    parts = [f"{k}{r[k]}" for k in ("tp", "pp", "vpp", "cp", "ep") if r[k] not in ("", "1")]
    return " ".join(parts) + f" gbs{r['global_batch_size']}"


def host_costs() -> None:
    sys.path.insert(0, str(HERE))
    import dsv3_gb200_host as host  # the ladder's bisection over HOST_S_PER_KERNEL

    print("6. DeepSeek-V3 rows at other host costs per launch (signed % at 30 / 60 / 100 / 150 us; "
          "c* us)")
    picked = [r for r in read(FILE) if r["model"] == "deepseek-v3"]
    picked += [r for r in read(HERE / "training_mcore_dsv3_gb200.csv") if r["id"].endswith("01-baseline")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in picked:
            m = float(r["measured_iteration_s"])
            errs = " ".join(f"{100 * (host.predicted(r, us) / m - 1):+6.1f}" for us in (30, 60, 100, 150))
            print(f"  {r['id']:46s} {errs}   c* {host.implied_us(r):6.1f}")


def main() -> None:
    rows = read(FILE)
    others = [r for path, ids in TWIN_IDS.items() for r in read(path) if r["id"] in ids]
    err = predict(rows + others)
    by_id = {r["id"]: r for r in rows + others}

    print("1. rows by signed error (%)")
    for r in sorted(rows, key=lambda r: err[r["id"]]):
        print(f"  {100 * err[r['id']]:+6.1f} {r['id']:46s} {gpu_name(r):5s} {r['dtype']:4s} "
              f"{r['fp8_recipe'] or '-':7s} n{r['num_gpus']:>4s} {layout(r):28s} "
              f"nemo {r['framework_version']} {r['options']} {r['moe_dispatcher']}")

    print_axes(group(rows, err), 14)

    print("3. release pairs (H100, same recipe/layout/GPUs/GBS): measured 25.04 / 25.02, "
          "predicted 25.04 / 25.02, signed errors")
    for new, old in RELEASE_PAIRS.items():
        mn, mo = (float(by_id[i]["measured_iteration_s"]) for i in (new, old))
        pn, po = (float(by_id[i]["measured_iteration_s"]) * (1 + err[i]) for i in (new, old))
        print(f"  {new:38s} {mn / mo:.3f} / {pn / po:.3f}   {100 * err[new]:+.1f} / {100 * err[old]:+.1f}")

    print("4. twins in other files (signed %)")
    for r in others:
        if r["id"] in RELEASE_PAIRS.values():
            continue
        print(f"  {100 * err[r['id']]:+6.1f} {r['id']:50s} {gpu_name(r):5s} {r['dtype']} "
              f"{r['fp8_recipe'] or '-'} {layout(r)} {r['framework']} {r['framework_version']} "
              f"dispatcher={r['moe_dispatcher'] or '-'} {r['options']}")

    print("5. DeepSeek-V3 GB200: EP 32 (128 GPUs) against EP 64 (256 / 512): measured / predicted "
          "step ratio")
    base = by_id["dgxc2505-deepseek-v3-bf16-gb200-128"]
    for n in (256, 512):
        r = by_id[f"dgxc2505-deepseek-v3-bf16-gb200-{n}"]
        m = float(r["measured_iteration_s"]) / float(base["measured_iteration_s"])
        p = m * (1 + err[r["id"]]) / (1 + err[base["id"]])
        print(f"  EP {r['ep']} {n} / EP {base['ep']} 128: {m:.4f} / {p:.4f}")
    if "--host" in sys.argv[1:]:
        host_costs()


if __name__ == "__main__":
    main()
