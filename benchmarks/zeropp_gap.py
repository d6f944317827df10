"""Where the ZeRO++ blog's ZeRO-3 baseline rows (benchmarks/training_zeropp.csv) miss, by network
bandwidth (a diagnostic; nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/zeropp_gap.py      # ~30 s on one core

Per row: the measured step, the prediction as given (DeepSpeed of 2023: coalesced, prefetched
per-block gathers) with its compute and exposed communication, the same row with every gather
waited for (``framework_version`` 2021-07), whose exposed communication is the whole wire time
W of the step's gathers and reduce-scatters, and the serial bound compute + W (no overlap at
all). Then, per tokens-per-GPU setting, the least-squares line measured = a + b / links (the
step at unlimited bandwidth a, the bandwidth-bound part b) against trainsim's W = c + d / links,
and the per-step gap spread over DeepSpeed's parameter fetches: each block's weights above
``stage3_param_persistence_threshold`` (1e5 elements: the four GEMM weights; the norms and
biases stay gathered) fetched in the forward, the recompute and the backward.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from trainsim.validate.training import predict_training_row

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_zeropp.csv"
SYNC_PATH_VERSION = "2021-07"
PERSISTENCE = 100_000
PASSES = 3
"""forward, activation-checkpointing recompute, backward: each fetches every partitioned weight"""


def fetched_weights_per_layer(h: int) -> int:
    """The block's weights over the persistence threshold: QKV, projection, fc1, fc2 (h x 3h,
    h x h, h x 4h, 4h x h); layernorm weights and biases (h to 4h elements) stay gathered."""
    return sum(n > PERSISTENCE for n in (3 * h * h, h * h, 4 * h * h, 4 * h * h, h, h, 3 * h,
                                         h, 4 * h, h, h, h))


def table() -> list[dict]:
    out = []
    with open(FILE, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        a = predict_training_row(r)
        b = predict_training_row(dict(r, framework_version=SYNC_PATH_VERSION))
        links = round(float(r["nic_gbps_per_gpu"]) * int(r["gpus_per_node"]) / 100)
        tokens = int(r["micro_batch_size"]) * int(r["seq_length"])
        b_ = b.extra["breakdown"]
        out.append({"id": r["id"], "links": links, "tokens": tokens, "measured": a.measured,
                    "pred": a.predicted, "compute": a.extra["breakdown"]["compute_s"],
                    "comm": a.extra["breakdown"]["exposed_comm_s"],
                    "wire": b_["exposed_comm_s"], "sync": b.predicted,
                    "fetches": fetched_weights_per_layer(int(r["hidden_size"]))
                    * int(r["num_layers"]) * PASSES})
    return out


def line(x: list[float], y: list[float]) -> tuple[float, float]:
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b)


def main() -> None:
    t = table()
    print(f"{'row':40s} {'links':>5s} {'meas':>6s} {'pred':>6s} {'err':>6s} {'comp':>5s} "
          f"{'comm':>5s} {'W':>5s} {'C+W':>6s} {'sync':>6s} {'gap':>5s} {'ms/fetch':>8s}")
    for d in t:
        gap = d["measured"] - d["pred"]
        print(f"{d['id']:40s} {d['links']:5d} {d['measured']:6.2f} {d['pred']:6.2f} "
              f"{d['pred'] / d['measured'] - 1:+6.1%} {d['compute']:5.2f} {d['comm']:5.2f} "
              f"{d['wire']:5.2f} {d['compute'] + d['wire']:6.2f} {d['sync']:6.2f} {gap:+5.2f} "
              f"{gap / d['fetches'] * 1e3:8.2f}")
    print(f"\nfetches per step: {t[0]['fetches']} (weights over {PERSISTENCE:,} elements x "
          f"layers x {PASSES} passes)")
    for tokens in sorted({d["tokens"] for d in t}):
        s = [d for d in t if d["tokens"] == tokens]
        inv = [1 / d["links"] for d in s]
        a, b = line(inv, [d["measured"] for d in s])
        c, w = line(inv, [d["wire"] for d in s])
        print(f"{tokens} tokens/GPU ({len(s)} rows): measured = {a:.2f} + {b:.2f}/links s; "
              f"trainsim's wire W = {c:.2f} + {w:.2f}/links s; predicted compute "
              f"{s[0]['compute']:.2f} s; unlimited-bandwidth step minus compute "
              f"{a - s[0]['compute']:+.2f} s")


if __name__ == "__main__":
    main()
