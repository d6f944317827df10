"""Why the GB200 rows of ``training_dgxc2505.csv`` are too fast (a diagnostic: nothing here feeds
trainsim; issue 17, 27th session).

    python benchmarks/gb200_dgxc2505.py          # ~1-2 min on 2 cores

1. ``pairs``: same-work pairs across GPUs, measured step-time ratio against the predicted one:
   GB200 (dgxc v25.05, NeMo 25.04) against B200 (NeMo 25.02 performance summary) on the same
   Llama 3.1 405B fp8 delayed-scaling layout (the GPU catalog entries alone differ); GB200
   against H100 on Nemotron-4 340B, same software, GPUs and global batch (layouts differ:
   PP 4 / PP 8); bf16 against fp8 on one layout, with the time each row misses by per layer
   pass (the gap over layers per stage x micro-batches per rank).
2. ``what-ifs`` on the file's GB200 rows (signed %): TP communication overlap off (every TP
   all-gather / reduce-scatter exposed, NCCL); each 4-GPU tray priced as its own node
   (``gpus_per_node`` 4: everything beyond the tray on the 400 Gb/s NICs); DeepSeek-V3 with
   NeMo's token-drop callback (capacity 1.0, padded to capacity, as the generator now
   states: the pad has no column, so it is set here).
"""

from __future__ import annotations

import csv
from multiprocessing import Pool
from pathlib import Path

from trainsim.validate import training
from trainsim.validate.training import predict_training_row

HERE = Path(__file__).parent
DGXC = HERE / "training_dgxc2505.csv"
NEMO_PERF = HERE / "training_nemo_perf.csv"
_BASE = training.training_base


def _padded_base(row):
    """``training_base`` with ``moe_pad_expert_input_to_capacity`` where a capacity is stated."""
    base, tuned = _BASE(row)
    if row.get("moe_capacity_factor"):
        base.setdefault("model", {})["moe_pad_expert_input_to_capacity"] = True
    return base, tuned


def _predict(args: tuple[dict, bool]) -> tuple[str, float, float | None]:
    row, pad = args
    training.training_base = _padded_base if pad else _BASE
    res = predict_training_row(row)
    return row["id"], res.measured, res.predicted


def predict(rows: list[dict], pad: bool = False) -> dict[str, tuple[float, float]]:
    with Pool(2) as pool:
        return {i: (m, p) for i, m, p in pool.map(_predict, [(r, pad) for r in rows])}


def err(m: float, p: float | None) -> float:
    return float("nan") if p is None else (p / m - 1) * 100


def read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def passes(row: dict) -> float:
    """Layer passes a rank runs per step: layers per pipeline rank x its micro-batches."""
    layers = {"llama3.1-405b": 126, "nemotron4-340b": 96}[row["model"]]
    gpus, tp, pp, cp = (int(row[k] or 1) for k in ("num_gpus", "tp", "pp", "cp"))
    dp = gpus // (tp * pp * cp)
    return layers / pp * int(row["global_batch_size"]) / dp / int(row["micro_batch_size"])


def main() -> None:
    rows = read(DGXC)
    by_id = {r["id"]: r for r in rows}
    twin = [r for r in read(NEMO_PERF) if r["id"] == "nemo2502-llama3-405b-b200-128"]
    base = predict(rows + twin)

    print("1. pairs: measured ratio / predicted ratio of step times")
    g, b = base["dgxc2505-llama3.1-405b-fp8-gb200-128"], base["nemo2502-llama3-405b-b200-128"]
    print(f"  B200 / GB200, Llama 3.1 405B 128 fp8 delayed, TP4 PP8 CP2 VP8 GBS 64 (NeMo 25.02 / "
          f"25.04): {b[0] / g[0]:.3f} / {b[1] / g[1]:.3f}; signed B200 {err(*b):+.1f} %, "
          f"GB200 {err(*g):+.1f} %")
    for d in ("bf16", "fp8"):
        h, g = (base[f"dgxc2505-nemotron4-340b-{d}-{x}-256"] for x in ("h100", "gb200"))
        print(f"  H100 / GB200, Nemotron-4 340B {d} 256 GPUs GBS 64 (NeMo 25.04): "
              f"{h[0] / g[0]:.3f} / {h[1] / g[1]:.3f}; signed H100 {err(*h):+.1f} %, "
              f"GB200 {err(*g):+.1f} %")
    for model in ("llama3.1-405b", "nemotron4-340b"):
        for tail in ("gb200-128", "gb200-256", "gb200-512", "gb200-128-strong",
                     "gb200-512-strong", "h100-256"):
            ids = [f"dgxc2505-{model}-{d}-{tail}" for d in ("bf16", "fp8")]
            if not all(i in base for i in ids):
                continue
            (mb, pb), (mf, pf) = (base[i] for i in ids)
            n = passes(by_id[ids[0]])
            print(f"  bf16 / fp8 {model} {tail}: {mb / mf:.3f} / {pb / pf:.3f}; missing per layer "
                  f"pass bf16 {(mb - pb) / n * 1e3:.2f} ms, fp8 {(mf - pf) / n * 1e3:.2f} ms")

    print("2. what-ifs on the GB200 rows (signed %): as shipped | TP overlap off | 4-GPU trays "
          "as nodes | DeepSeek-V3 padded to capacity")
    gb = [r for r in rows if r["gpu"] == "gb200"]
    no_tp = [dict(r, options=";".join(o for o in r["options"].split(";") if o != "tp_overlap"))
             for r in gb]
    trays = [dict(r, gpus_per_node="4") for r in gb]
    off, tray = predict(no_tp), predict(trays)
    pad = predict([r for r in gb if r["moe_capacity_factor"]], pad=True)
    for r in gb:
        i = r["id"]
        p = f"{err(*pad[i]):+7.1f}" if i in pad else "      -"
        print(f"  {i:48s} {err(*base[i]):+7.1f} {err(*off[i]):+7.1f} {err(*tray[i]):+7.1f} {p}")
    for name, res in (("as shipped", base), ("TP overlap off", off), ("trays as nodes", tray)):
        e = [abs(err(*res[r["id"]])) for r in gb]
        print(f"  {name}: GB200 rows MAPE {sum(e) / len(e):.1f} %")


if __name__ == "__main__":
    main()
