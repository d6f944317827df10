"""Qwen3-30B-A3B on 16 H100, two published Megatron-Bridge configurations of the same model, GPU
count, micro-batch and fp8 recipe, and the ladder of settings between them (a diagnostic:
nothing here feeds trainsim; issue 17 scope 4, 30th session).

    python benchmarks/moe_config_ladder.py            # ~30 s on 2 cores

The public file's 25.11 row (EP 8, PP 2 x VPP 12, NCCL all-to-all dispatcher with the expert
all-to-all overlap) and its 26.04 row (EP 16, PP 1, HybridEP) route the same 4,096 tokens per
GPU per micro-batch through the same 48 layers; every GPU runs the same expert FLOPs (16 local
experts of ~2,064 rows against 8 of ~4,135). The measured time per layer pass (forward +
backward of one decoder layer for one micro-batch) is read from each row as (measured -
the predicted time outside the layers) / layer passes, the passes being micro-batches per rank x
the heaviest stage's layers; the predicted one is ``moe_parts.parts``' layer (its forward and
backward op lists priced alone, host waits included). The ladder changes one setting at a time
from the 25.11 row toward the 26.04 row and prints trainsim's layer pass and its parts, so that
the measured ratio between the two rows can be set against the settings trainsim charges for it.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import moe_parts

from trainsim.compute.host import HOST_S_PER_KERNEL, launches
from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

HERE = Path(__file__).parent
ROWS = (("public", "bridge2511-qwen3-30b-a3b-16"),
        ("public", "bridge2604p1-qwen3-30b-a3b-h100-16-ep16"),
        ("heldout", "bridge2606-qwen3-30b-a3b-h100-16-fp8"))
FILES = {"public": BUNDLED_DIR / "training_public.csv", "heldout": HERE / "training_heldout.csv"}
LADDER = (
    ("25.11 row as stated", {}),
    ("- expert a2a overlap", {"options": "pp_overlap;dp_overlap"}),
    ("PP 1 (no VPP), EP 8, a2a", {"pp": "1", "vpp": "", "options": "dp_overlap"}),
    ("PP 1, EP 8, HybridEP", {"pp": "1", "vpp": "", "options": "dp_overlap",
                              "moe_dispatcher": "hybridep"}),
    ("PP 1, EP 16, a2a", {"pp": "1", "vpp": "", "ep": "16", "options": "dp_overlap"}),
    ("PP 1, EP 16, HybridEP (26.04 cfg)", {"pp": "1", "vpp": "", "ep": "16", "options": "dp_overlap",
                                           "moe_dispatcher": "hybridep"}),
)


def _row(file: str, rid: str) -> dict[str, str]:
    with open(FILES[file], newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == rid)


def measured_pass(row: dict[str, str]) -> tuple[float, float, float]:
    """(measured, predicted) seconds per layer pass and the predicted error (%) of one row."""
    g = moe_parts.parts(row)
    assert g is not None
    outside = float(g["predicted"]) - float(g["layer"]) * int(g["passes"])  # type: ignore[arg-type]
    meas = (float(g["measured"]) - outside) / int(g["passes"])  # type: ignore[arg-type]
    err = 100.0 * (float(g["predicted"]) / float(g["measured"]) - 1.0)  # type: ignore[arg-type]
    return meas, float(g["layer"]), err  # type: ignore[arg-type]


def launch_load(row: dict[str, str]) -> tuple[int, float]:
    """Host launches of one MoE layer pass (forward + backward, as ``moe_parts`` builds it) and
    its GPU seconds (each op priced alone, no overlap)."""
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    ops = lf + lb
    return sum(launches(op) for op in ops), sum(moe_parts._op_s(pricer, op) for op in ops)


def main() -> int:
    print("measured rows (ms per layer pass; 'outside' = predicted time outside the layers)")
    got = {}
    for file, rid in ROWS:
        meas, pred, err = measured_pass(_row(file, rid))
        got[rid] = (meas, pred)
        print(f"  {rid:44s} measured {1e3 * meas:6.2f}  predicted {1e3 * pred:6.2f}  "
              f"row error {err:+6.1f} %")
    (m1, p1), (m2, p2) = got[ROWS[0][1]], got[ROWS[1][1]]
    print(f"  25.11 / 26.04 per layer pass: measured x{m1 / m2:.2f}, predicted x{p1 / p2:.2f}; "
          f"difference measured {1e3 * (m1 - m2):.2f} ms, predicted {1e3 * (p1 - p2):.2f} ms")
    print("\nladder from the 25.11 row (trainsim, ms per layer pass)")
    base = _row(*ROWS[0])
    print(f"  {'setting':36s} {'layer':>6s} " + " ".join(f"{p:>6s}" for p in
                                                      (*moe_parts.PARTS, "host")) + "  launches  x30us    gpu")
    for tag, change in LADDER:
        g = moe_parts.parts({**base, **change})
        assert g is not None
        n, gpu_s = launch_load({**base, **change})
        print(f"  {tag:36s} {1e3 * float(g['layer']):6.2f} " +  # type: ignore[arg-type]
              " ".join(f"{1e3 * float(g[p]):6.2f}" for p in  # type: ignore[arg-type]
                       (*moe_parts.PARTS, "host")) +
              f"  {n:8d} {1e3 * n * HOST_S_PER_KERNEL:6.2f} {1e3 * gpu_s:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
