"""Where the ZeRO++ blog's ZeRO-3 baseline rows (benchmarks/training_zeropp.csv) miss, by network
bandwidth (a diagnostic; nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/zeropp_gap.py          # ~30 s on one core
    PYTHONPATH=src python benchmarks/zeropp_gap.py whatif   # every DeepSpeed ZeRO-3 row, ~20 s

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

from trainsim import sharded_passes
from trainsim.compute import host
from trainsim.validate.training import predict_training_row

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_zeropp.csv"
ZERO3_FILES = (ROOT.parent.parent / "shared" / "validation" / "training_public.csv",
               Path("/work/shared/validation/training_public.csv"),
               ROOT / "benchmarks" / "training_deepspeed.csv", FILE)
"""Every file with DeepSpeed ZeRO-3 rows: the public file (found beside the worktree or at its
usual place, the first that exists), the DeepSpeed check file and this one."""
COORDINATOR_SINCE = "2022-03"
"""The deepspeed profile's entry from which fetch_sub_module runs the v0.6.0 coordinator (4912e0ad,
#1453: coalesced prefetched gathers, the two-event fetch limit); the 2021 rows run v0.3.x's
per-parameter synchronous path, already priced as waited for."""
FETCH_COSTS_MS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
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


def zero3_rows() -> list[tuple[str, dict]]:
    """(file stem, row) of every DeepSpeed ZeRO-3 row with a measured step."""
    out, seen = [], set()
    for f in ZERO3_FILES:
        if not f.exists() or f.name in seen:
            continue
        seen.add(f.name)
        with open(f, newline="") as fh:
            out += [(f.stem, r) for r in csv.DictReader(fh)
                    if r["framework"] == "deepspeed" and r["zero_stage"] == "3"
                    and r["measured_iteration_s"]]
    return out


def serial_launches_s(ops, gpu_s, per_kernel_s, blocking=False, counts=None, beside=None):
    """``host.exposed_s`` with the host never ahead of the GPU: every launch's host cost adds to
    the GPU time (the what-if's reading of the fetch path's host waits), collectives overlapped
    as priced."""
    if per_kernel_s <= 0.0 or not ops:
        return 0.0
    n = list(counts) if counts is not None else [host.launches(op) for op in ops]
    return per_kernel_s * sum(n)


WEIGHT_SHARES = (3, 1, 4, 4)
"""A GPT block's partitioned weights in forward order (QKV, projection, fc1, fc2), in h^2: the
share of the block's gather, and (attention ~s/6h of it, neglected) of its GEMM compute."""


def split_units(xs: list[float] | None, shares: tuple[int, ...]) -> list[float] | None:
    """Each unit's time spread over per-weight sub-units in ``shares`` (the root unit too: a
    what-if's approximation)."""
    if xs is None:
        return None
    return [x * f / sum(shares) for x in xs for f in shares]


def per_weight_prediction(r: dict):
    """The row with DeepSpeed's one-parameter-ahead prefetch instead of one block ahead: every
    unit of ``sharded_passes``' forward walk and backward walk split into its four weights
    (``stage3_prefetch_bucket_size`` 5e7 is below each 18B GEMM weight, so the coordinator's
    prefetch loop, v0.9.2 partitioned_param_coordinator.py L304-308, stops after one)."""
    pe, pw = sharded_passes.prefetch_exposed_s, sharded_passes.prefetch_walk
    back = WEIGHT_SHARES[::-1]
    sharded_passes.prefetch_exposed_s = lambda g, c, red=None: pe(
        split_units(g, WEIGHT_SHARES), split_units(c, WEIGHT_SHARES), split_units(red, WEIGHT_SHARES))
    sharded_passes.prefetch_walk = lambda g, c, red=None, rs_wait=False: pw(
        split_units(g, back), split_units(c, back), split_units(red, back), rs_wait)
    try:
        return predict_training_row(r)
    finally:
        sharded_passes.prefetch_exposed_s, sharded_passes.prefetch_walk = pe, pw


def fetches(r: dict) -> int:
    """Parameter fetches of one step: partitioned weights x layers x passes x micro-batches."""
    tp, pp = int(r["tp"] or 1), int(r["pp"] or 1)
    h = int(r["hidden_size"])
    passes = PASSES if r["recompute"] == "full" else PASSES - 1
    micro = int(r["global_batch_size"]) // (int(r["num_gpus"]) // (tp * pp)
                                            * int(r["micro_batch_size"]))
    per_layer = sum(n // tp > PERSISTENCE for n in (3 * h * h, h * h, 4 * h * h, 4 * h * h))
    return per_layer * int(r["num_layers"]) // pp * passes * micro


def whatif() -> list[dict]:
    """Every DeepSpeed ZeRO-3 row as given, with every host launch serialised with the GPU
    (``serial_launches_s``), and the per-fetch cost that would close its gap."""
    out = []
    for stem, r in zero3_rows():
        a = predict_training_row(r)
        orig = host.exposed_s
        host.exposed_s = serial_launches_s
        try:
            b = predict_training_row(r)
        finally:
            host.exposed_s = orig
        n = fetches(r)
        coordinator = r["framework_version"] >= COORDINATOR_SINCE or \
            r["framework_version"][0] == "0" and r["framework_version"] >= "0.6"
        out.append({"file": stem, "id": r["id"], "version": r["framework_version"],
                    "measured": a.measured, "pred": a.predicted, "serial": b.predicted,
                    "fetches": n, "coordinator": coordinator,
                    "per_weight": per_weight_prediction(r).predicted if coordinator else None})
    return out


def mape(errs: list[float]) -> float:
    return sum(abs(e) for e in errs) / len(errs) if errs else float("nan")


def main_whatif() -> None:
    t = whatif()
    print(f"{'file':20s} {'row':42s} {'version':8s} {'meas':>7s} {'as given':>8s} "
          f"{'serial':>7s} {'+host s':>7s} {'fetches':>7s} {'ms/fetch to close':>17s}")
    for d in t:
        m = d["measured"]
        print(f"{d['file']:20s} {d['id'][:42]:42s} {d['version']:8s} {m:7.2f} "
              f"{d['pred'] / m - 1:+8.1%} {d['serial'] / m - 1:+7.1%} "
              f"{d['serial'] - d['pred']:7.2f} {d['fetches']:7d} "
              f"{(m - d['pred']) / d['fetches'] * 1e3:17.2f}")
    print("\nper file, MAPE as given -> every launch serialised:")
    for stem in dict.fromkeys(d["file"] for d in t):
        s = [d for d in t if d["file"] == stem]
        print(f"  {stem:22s} {len(s):2d} rows {mape([d['pred'] / d['measured'] - 1 for d in s]):6.1%}"
              f" -> {mape([d['serial'] / d['measured'] - 1 for d in s]):6.1%}")
    c = [d for d in t if d["coordinator"]]
    print("\none weight ahead instead of one block (the coordinator's rows):")
    for d in c:
        m = d["measured"]
        print(f"  {d['id'][:42]:42s} {d['pred'] / m - 1:+7.1%} -> {d['per_weight'] / m - 1:+7.1%}"
              f" ({d['per_weight'] - d['pred']:+.2f} s)")
    print(f"\na serialised cost per fetch on the {len(c)} rows of the coordinator "
          f"(v0.6+), MAPE by file:")
    for ms in FETCH_COSTS_MS:
        cells = []
        for stem in dict.fromkeys(d["file"] for d in c):
            s = [d for d in c if d["file"] == stem]
            cells.append(f"{stem} {mape([(d['pred'] + ms * 1e-3 * d['fetches']) / d['measured'] - 1 for d in s]):6.1%}")
        print(f"  {ms:4.1f} ms: " + ", ".join(cells))


if __name__ == "__main__":
    import sys

    main_whatif() if sys.argv[1:] == ["whatif"] else main()
