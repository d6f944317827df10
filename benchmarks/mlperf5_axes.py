"""Where ``training_mlperf5.csv``'s error lives (MLPerf Training v5.0 / v5.1 Llama 3.1 405B and
8B closed-division runs; a diagnostic: nothing here feeds trainsim; issue 17, 30th session).

    PYTHONPATH=src python benchmarks/mlperf5_axes.py          # ~30 s on 2 cores

1. ``rows``: every row by signed error (predicted / measured - 1) with submitter, GPU and count,
   model, precision and fp8 recipe, layout, MLPerf round and CUDA graphs.
2. ``axes``: the rows grouped by GPU generation, GPU, model, submitter, round, fp8 recipe, CUDA
   graphs, CP size and whether the data-parallel group leaves the NVLink domain: n, mean signed
   error, MAPE and the group's share of the file's absolute error.
3. ``gap``: the missing time (measured - predicted) per step and per layer pass (micro-batches
   per data-parallel rank x layers per pipeline rank), beside the predicted compute of one layer
   pass. A kernel-rate error would be a fixed share of compute; a fixed cost per layer pass or
   per step shows as a share that grows as the layer shrinks.
4. ``pairs``: rows whose work per GPU is the same (model, GPU, tp/pp/cp/vpp, micro-batch,
   micro-batches per data-parallel rank, sequence, recipe) and that differ only in the data-
   parallel size: measured against predicted step ratio to the smallest. What adding data-
   parallel ranks costs, measured and as priced.
5. ``no dp overlap``: the 8B rows priced with their ``dp_overlap`` option removed (every
   gradient reduce-scatter and parameter all-gather exposed): the what-if for "the per-step gap is
   the data-parallel traffic left unhidden under full-iteration CUDA graphs".
6. ``twins``: the one earlier MLPerf round with Hopper and Blackwell on the same code (v4.1 GPT-3
   175B, the public file: H100 256 / 512 and B200 64, no CUDA graphs): the Blackwell offset
   against Hopper there, beside this file's.

What the submissions' code states (mlcommons/training_results_v5.0 @0fdc28f013 and v5.1
@441d65f444), read for this diagnostic; each is in the RESULTS block with its path:
- every v5.0 GB200 405B config (NVIDIA tyche_ngpu256/512, IBM+CoreWeave+NVIDIA carina_*) sources
  ``config_common_blackwell.sh``, a file no v5.0 or v5.1 submission publishes; the TP-overlap
  settings are chosen by ``conf/custom.yaml``'s ``${GPU_ARCH,h}100tp{TP}mbs{MBS}`` (so
  ``b100tp4mbs1.yaml`` only if that unpublished file sets GPU_ARCH);
- the H100 and GB200 405B configs differ in nothing else that moves a step but TP (8 vs 4),
  FULL_CUDA_GRAPH (GB200 only) and NCCL_*_REGISTER=0 (CoreWeave);
- every config caps NCCL CTAs per communicator (``conf/nccl/custom_communicator_cta.yaml``).
"""

from __future__ import annotations

import csv
import warnings
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

import dgxc2505_axes

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row

HERE = Path(__file__).resolve().parent
FILE = HERE / "training_mlperf5.csv"
TWINS = ("mlperf41-gpt3-175b-h100-256", "mlperf41-gpt3-175b-h100-512", "mlperf41-gpt3-175b-b200-64")
"""MLPerf v4.1 GPT-3 175B rows of the public file (same round and code, H100 and B200)."""
LAYERS = {"llama3.1-405b": 126, "llama3-8b": 32}
"""Transformer layers of the two models (the rows leave num_layers to the preset)."""
HOPPER = ("h100", "h200")


def read(path: Path = FILE) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_dp_overlap(row: dict[str, str]) -> dict[str, str]:
    return {**row, "options": ";".join(o for o in row["options"].split(";") if o != "dp_overlap")}


def _predict(row: dict[str, str]) -> tuple[str, float, float | None, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = predict_training_row(row)
    compute = res.extra.get("breakdown", {}).get("compute_s", float("nan"))
    return row["id"], res.measured, res.predicted, compute


def predict(rows: list[dict[str, str]]) -> dict[str, tuple[float, float, float]]:
    """(measured s, predicted s, predicted compute s) by row id."""
    with Pool(2) as pool:
        out = pool.map(_predict, rows)
    return {i: (m, float("nan") if p is None else p, c) for i, m, p, c in out}


def submitter(r: dict[str, str]) -> str:
    return r["note"].split("submitter ", 1)[1].split(",", 1)[0]


def gpu_name(r: dict[str, str]) -> str:
    return r["gpu"].split("-")[0]


def dp(r: dict[str, str]) -> int:
    return int(r["num_gpus"]) // (int(r["tp"]) * int(r["pp"]) * int(r["cp"] or 1))


def microbatches(r: dict[str, str]) -> int:
    """Micro-batches per data-parallel rank in one step."""
    return int(r["global_batch_size"]) // (dp(r) * int(r["micro_batch_size"]))


def layer_passes(r: dict[str, str]) -> float:
    """Forward + backward passes of one layer a GPU runs in a step."""
    return microbatches(r) * LAYERS[r["model"]] / int(r["pp"])


def dp_leaves_domain(r: dict[str, str]) -> bool:
    return int(r["num_gpus"]) > int(r["gpus_per_node"])


AXES = {
    "generation": lambda r: "hopper" if gpu_name(r) in HOPPER else "blackwell",
    "gpu": gpu_name,
    "model": lambda r: r["model"],
    "submitter": submitter,
    "round": lambda r: r["framework_version"],
    "fp8 recipe": lambda r: r["fp8_recipe"],
    "cuda graphs": lambda r: "on" if "cuda_graphs" in r["options"].split(";") else "off",
    "cp": lambda r: r["cp"] or "1",
    "multi-domain": lambda r: "yes" if dp_leaves_domain(r) else "no",
}


def group(rows: list[dict[str, str]], err: dict[str, float]) -> dict[str, list[tuple]]:
    """Per axis: (value, n, mean signed %, MAPE %, share of the file's absolute error %)."""
    return dgxc2505_axes.group(rows, err, AXES)


def layout(r: dict[str, str]) -> str:
    parts = [f"{k}{r[k]}" for k in ("tp", "pp", "vpp", "cp") if r[k] not in ("", "1")]
    return " ".join(parts) + f" dp{dp(r)} gbs{r['global_batch_size']} mbs{r['micro_batch_size']}"


def work_key(r: dict[str, str]) -> tuple:
    """What one GPU computes in a step: rows equal on it differ only in data-parallel size."""
    return (r["model"], r["gpu"], r["tp"], r["pp"], r["cp"], r["vpp"], r["micro_batch_size"],
            microbatches(r), r["seq_length"], r["fp8_recipe"], r["framework_version"])


def pairs(rows: list[dict[str, str]]) -> list[tuple[dict[str, str], dict[str, str]]]:
    """(base, other) for each row sharing its work_key with a smaller-DP row (base: the smallest
    DP of the group)."""
    groups: dict[tuple, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        groups[work_key(r)].append(r)
    out = []
    for members in groups.values():
        members.sort(key=dp)
        out += [(members[0], m) for m in members[1:] if dp(m) != dp(members[0])]
    return out


def main() -> None:
    rows = read()
    small = [r for r in rows if r["model"] == "llama3-8b"]
    twins = [r for r in read(BUNDLED_DIR / "training_public.csv") if r["id"] in TWINS]
    pred = predict(rows + twins
                   + [{**without_dp_overlap(r), "id": r["id"] + "~"} for r in small])
    err = {i: p / m - 1 for i, (m, p, _) in pred.items()}
    rows_err = {r["id"]: err[r["id"]] for r in rows}

    print("1. rows by signed error (%)")
    for r in sorted(rows, key=lambda r: err[r["id"]]):
        cg = "cg" if "cuda_graphs" in r["options"].split(";") else "--"
        print(f"  {100 * err[r['id']]:+6.1f} {r['id']:46s} {submitter(r)[:12]:12s} "
              f"{gpu_name(r):5s} x{r['num_gpus']:>4s} {r['model']:13s} {r['dtype']} "
              f"{r['fp8_recipe']:8s} {layout(r):34s} v{r['framework_version']} {cg}")

    dgxc2505_axes.print_axes(group(rows, rows_err), 22)

    print("3. gap = measured - predicted: per step (ms), per layer pass (ms), predicted compute "
          "per layer pass (ms), gap / compute (%)")
    for r in sorted(rows, key=lambda r: (AXES["generation"](r), r["model"], err[r["id"]])):
        m, p, c = pred[r["id"]]
        n = layer_passes(r)
        print(f"  {r['id']:46s} {1e3 * (m - p):9.1f} {1e3 * (m - p) / n:7.3f} "
              f"{1e3 * c / n:7.3f} {100 * (m - p) / c:+6.1f}")

    print("4. same work per GPU, data-parallel size differs: measured / predicted step ratio "
          "to the smallest DP")
    for base, r in pairs(rows):
        mb, pb, _ = pred[base["id"]]
        mr, pr, _ = pred[r["id"]]
        print(f"  {r['id']:46s} dp{dp(r):<4d}/ dp{dp(base):<4d} {mr / mb:.3f} / {pr / pb:.3f}  "
              f"({1e3 * (mr - mb):+.1f} ms measured, {1e3 * (pr - pb):+.1f} ms priced)")
    what_if(small, err)
    print("6. v4.1 GPT-3 175B (public file, same round and code on both GPUs): signed %")
    for r in twins:
        print(f"  {r['id']:46s} {gpu_name(r):5s} {100 * err[r['id']]:+6.1f}  {r['options']}")


def what_if(rows: list[dict[str, str]], err: dict[str, float]) -> None:
    print("5. 8B rows without dp_overlap: signed % as shipped -> every DP collective exposed")
    for r in rows:
        print(f"  {r['id']:46s} {100 * err[r['id']]:+6.1f} -> {100 * err[r['id'] + '~']:+6.1f}")


if __name__ == "__main__":
    main()
