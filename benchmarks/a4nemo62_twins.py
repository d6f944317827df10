"""Issue 17 (a4nemo62): what the gpu-recipes A4 (B200) NeMo 25.02 runs do that their A3 Ultra
(H200) NeMo 24.07 twins do not, and whether the A4 rows' miss is the A4 recipe's or NeMo 25.02's
on B200 (a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src:benchmarks python benchmarks/a4nemo62_twins.py           # ~20 s
    PYTHONPATH=src:benchmarks python benchmarks/a4nemo62_twins.py --recipes # part 1 only (mirror)

Part 1 (needs the AI-Hypercomputer+gpu-recipes mirror): each twin's NeMo config, values file and
Helm chart at the commits the rows cite, compared key by key (the model section flattened) and
line by line for the launch settings that can cost time (nsys, NCCL / NVTE environment, the
torchrun wrapper).

Part 2: every NeMo 25.02 B200 row the repository holds (gpu-recipes A4, NVIDIA's own performance
summary rows in training_nemo_perf.csv) and the A4 MaxText rows, priced as ``trainsim validate``
prices them, then again without the ``tp_overlap`` option: a miss that userbuffers, TP or the
gpu-recipes chart carried would sit on the TP > 1 / gpu-recipes rows alone.
"""

from __future__ import annotations

import csv
import sys
import warnings
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mirror_rows

GR = "AI-Hypercomputer+gpu-recipes"
TWINS = (
    ("70B fp8: A3 Ultra 256 H200 (NeMo 24.07) vs A4 256 B200 (NeMo 25.02)",
     ("7fa45181", "src/frameworks/a3ultra/nemo-configs/llama-3.1-70b-256gpus-a3ultra-fp8.yaml",
      "training/a3ultra/llama-3.1-70b/nemo-pretraining-gke/values.yaml",
      "src/helm-charts/a3ultra/nemo-training/templates/nemo-launcher-job.yaml"),
     ("0211dc17", "src/frameworks/a4/nemo-configs/llama3-1-70b-256gpus-a4-fp8.yaml",
      "training/a4/llama3-1-70b/nemo-pretraining-gke/values.yaml",
      "src/helm-charts/a4/nemo-training/templates/nemo-launcher-job.yaml")),
    ("405B fp8: A3 Ultra 576 H200 (NeMo 24.07) vs A4 224 B200 (NeMo 25.02)",
     ("1a3020bb", "src/frameworks/a3ultra/nemo-configs/llama-3.1-405b-576gpus-a3ultra-fp8.yaml",
      "training/a3ultra/llama-3.1-405b/nemo-pretraining-gke/values.yaml",
      "src/helm-charts/a3ultra/nemo-training/templates/nemo-launcher-job.yaml"),
     ("6d85af42", "src/frameworks/a4high/nemo-configs/llama-3.1-405b-224gpus-a4high-fp8.yaml",
      "training/a4high/llama-3.1-405b/nemo-pretraining-gke/values.yaml",
      "src/helm-charts/a4high/nemo-training/templates/nemo-launcher-job.yaml")),
)
IGNORED = ("tokenizer.", "data.", "nsys_profile.", "optim.sched.")
"""Config keys that cannot change a step (data paths, tokenizer files, a disabled profiler's
window, the LR schedule); printed as a count."""
LAUNCH = ("nsys profile", "NCCL_", "NVTE_", "TORCH_NCCL", "OMP_NUM_THREADS", "set_nccl_env.sh",
          "nvidia-smi dmon")
"""Chart lines (comments dropped) that can change what a step costs."""
B200_ROWS = (
    ("gpurecipes", lambda r: r["gpu"].startswith("b200")),
    ("nemo_perf", lambda r: r["gpu"].startswith("b200") and r["framework_version"] == "25.02"),
)


def _flat(d: dict, pre: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{pre}{k}."))
        else:
            out[f"{pre}{k}"] = v
    return out


def _launch(chart: str) -> set[str]:
    lines = (ln.split("#", 1)[0].strip() for ln in chart.splitlines())
    return {ln for ln in lines if ln and any(w in ln for w in LAUNCH)}


def recipes() -> None:
    for title, old, new in TWINS:
        print(f"## {title}")
        confs = [_flat(yaml.safe_load(mirror_rows.show(GR, c, p))["model"]) for c, p, _, _ in
                 (old, new)]
        keys = sorted(set(confs[0]) | set(confs[1]))
        diff = [k for k in keys if confs[0].get(k, "<unset>") != confs[1].get(k, "<unset>")]
        print("| model key | A3 Ultra | A4 |\n|---|---|---|")
        for k in diff:
            if not k.startswith(IGNORED):
                print(f"| {k} | {confs[0].get(k, '<unset>')} | {confs[1].get(k, '<unset>')} |")
        print(f"({sum(k.startswith(IGNORED) for k in diff)} data / tokenizer / profiler-window /"
              " schedule keys differ besides)")
        vals = [yaml.safe_load(mirror_rows.show(GR, c, v)) for c, _, v, _ in (old, new)]
        nccl = [{e["name"]: e["value"] for e in (v.get("network") or {}).get("ncclSettings") or []}
                for v in vals]
        print(f"values.yaml ncclSettings: A3 Ultra {nccl[0]} | A4 {nccl[1]}")
        charts = [_launch(mirror_rows.show(GR, c, ch)) for c, _, _, ch in (old, new)]
        for side, only in (("A3 Ultra only", charts[0] - charts[1]),
                           ("A4 only", charts[1] - charts[0])):
            print(f"chart, {side}:")
            for ln in sorted(only):
                print(f"    {ln}")
        print()


def _rows() -> list[tuple[str, dict[str, str]]]:
    out = []
    for name, keep in B200_ROWS:
        with open(HERE / f"training_{name}.csv", newline="") as fh:
            out += [(name, r) for r in csv.DictReader(fh) if keep(r)]
    return out


def prices() -> None:
    from trainsim.validate.training import predict_training_row
    print("| file | row | TP / PP / CP / VP | options | error | without tp_overlap |")
    print("|---|---|---|---|---:|---:|")
    for name, row in _rows():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = predict_training_row(row)
            opts = row["options"].split(";")
            bare = predict_training_row({**row, "options": ";".join(
                o for o in opts if o != "tp_overlap")}) if "tp_overlap" in opts else None
        m = float(row["measured_iteration_s"])
        err = f"{res.predicted / m - 1:+.1%}"
        alt = f"{bare.predicted / m - 1:+.1%}" if bare else ""
        lay = "/".join(row[k] or "-" for k in ("tp", "pp", "cp", "vpp"))
        print(f"| {name} | {row['id']} ({row['framework']} {row['framework_version']}) | {lay} "
              f"| {row['options']} | {err} | {alt} |")


def main(argv: list[str]) -> int:
    if mirror_rows.mirror(GR).exists():
        recipes()
    else:
        print(f"(no {GR} mirror: part 1 skipped)\n")
    if "--recipes" not in argv:
        prices()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
