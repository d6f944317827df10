"""torchtitan on B200: the SDPA backend switch of pytorch/torchtitan#1196 as trainsim prices it,
beside the throughputs that PR logged (issue 17, 38th session; a diagnostic, nothing here feeds
trainsim).

    PYTHONPATH=src python benchmarks/torchtitan_b200_attention.py   # ~1 min on 2 idle cores

#1196 (3b85aa31f, 2025-05-14, "Use cudnn backend on B200") put CUDNN_ATTENTION first in
torchtitan's SDPA backends on capability 10.0 and logged Llama3-8B (torchtitan's flops per token
57.9 G = 631.39 T / 10,902 tokens/s: seq 8192) on B200 at step 70: 10,902 tokens/s per GPU
with the flash backend, 12,211 after (x1.120), memory 46.39 -> 44.59 GiB. Its local batch,
GPU count and power limit are not stated, so it is no check row: the script prices the
torchao B200 bf16 row of benchmarks/training_torchao.csv (8 GPUs, FSDP2, compile, per-op SAC)
at local batch 1 and 2, at 1000 W and at 750 W, with ``attention`` flash2 (the flash backend)
and cudnn (what the torchtitan profile dispatches from 2025-05, its forward re-run by the
per-op checkpointing that does not save it: ``workload.recompute.per_op_sac_reruns_attention``),
and prints the speedup trainsim gives the switch beside the logged x1.120. Then the B200 rows of
training_torchao.csv (torchtitan 6fc499f6, which runs cuDNN there) as the profile prices them
today (``sdpa``: the flash kernel, saved) and with ``attention`` cudnn stated (re-run), time and
memory against the published figures: what recording the dispatch (``sdpa_by_arch``) would do.
"""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.validate.training import predict_training_row

HERE = Path(__file__).resolve().parent
BASE_ID = "ao2508-llama3-8b-b200-750w-8-bf16"
LOGGED = {"flash2": 10902.0, "cudnn": 12211.0}
"""pytorch/torchtitan#1196's step-70 tokens/s per GPU, flash backend and cuDNN."""


def base_row() -> dict[str, str]:
    with open(HERE / "training_torchao.csv", newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == BASE_ID)


def priced(gpu: str, mb: int, kernel: str) -> tuple[float, float]:
    """(seconds, GiB) trainsim predicts for the base row at ``gpu``, local batch ``mb``,
    attention ``kernel``, torchtitan of 2025-05 (the PR's month)."""
    row = dict(base_row(), gpu=gpu, micro_batch_size=str(mb), global_batch_size=str(8 * mb),
               attention=kernel, framework_version="2025-05", measured_peak_memory_gib="",
               measured_iteration_s=f"{8192 * mb / LOGGED[kernel]:.6f}")
    res = predict_training_row(row)
    assert res.error is None and res.predicted, res.error
    return res.predicted, res.predicted_memory_gib or 0.0


def torchao_rows() -> None:
    with open(HERE / "training_torchao.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if "b200" in r["id"]]
    print(f"\n{'torchao row':48s} {'meas s':>7s} {'sdpa':>7s} {'cudnn':>7s}   "
          f"{'meas GiB':>8s} {'sdpa':>5s} {'cudnn':>5s}")
    for r in rows:
        a, b = predict_training_row(r), predict_training_row(dict(r, attention="cudnn"))
        assert a.predicted and b.predicted, (a.error, b.error)

        def err(x: float, m: float) -> str:
            return f"{100 * (x / m - 1):+6.1f}%"
        print(f"{r['id']:48s} {a.measured:7.3f} {err(a.predicted, a.measured)} "
              f"{err(b.predicted, b.measured)}   {a.measured_memory_gib:8.2f} "
              f"{a.predicted_memory_gib:5.1f} {b.predicted_memory_gib:5.1f}")


def main() -> None:
    print(f"{'GPU':22s} {'mb':>2s} {'flash2 s':>9s} {'cudnn s':>8s} {'speedup':>8s} "
          f"{'logged':>7s} {'gain s':>7s} {'logged gain s':>13s} {'GiB flash2->cudnn':>18s}")
    logged = LOGGED["cudnn"] / LOGGED["flash2"]
    for gpu in ("b200-sxm-180gb", "b200-sxm-180gb-750w"):
        for mb in (1, 2):
            (f, fm), (c, cm) = priced(gpu, mb, "flash2"), priced(gpu, mb, "cudnn")
            gain = 8192 * mb * (1 / LOGGED["flash2"] - 1 / LOGGED["cudnn"])
            print(f"{gpu:22s} {mb:2d} {f:9.3f} {c:8.3f} {f / c:8.3f} {logged:7.3f} {f - c:7.3f} "
                  f"{gain:13.3f} {fm:8.1f} -> {cm:5.1f}")
    torchao_rows()


if __name__ == "__main__":
    main()
