"""The dgxc v25.05 MoE rows on GB200 against their own exchange (a diagnostic: nothing here feeds
trainsim; 63rd session, dgxc63).

    PYTHONPATH=src:benchmarks python benchmarks/dgxc63_moe_gb200.py [--rows ID ...] [--no-trays]

training_dgxc2505.csv (DeepSeek-V3, EP 32 / 64) and training_dgxc_llama4.csv (Llama 4 Maverick,
EP 64) miss their GB200 rows by -18 .. -51 %; training_dgxc_grok1_2505.csv (Grok-1, EP 8, the
same release, NeMo 25.04, CUDA graphs) does not. For each MoE row this prints:

* the step's gap (measured - predicted) spread over the MoE layer passes one rank of the
  heaviest stage runs (its layers x the MoE share of the model's layers x micro-batches);
* the expert exchange trainsim prices in one MoE layer pass (the dispatcher's all-to-alls,
  forward and backward) and the bytes one rank sends off itself in them;
* the per-GPU rate that exchange would run at if the whole gap were the exchange
  (``implied_rate``): what a layer-pass gap of ``g`` seconds over ``n`` all-to-alls of ``b``
  remote bytes asks of the exchange, ``n b / (priced + g)``;
* ``--no-trays`` off (default on): the step with NCCL's transport across GB200 trays at the NIC
  (``gpus_per_node`` 4), i.e. as if NCCL had run without Multi-Node NVLink, for the rows whose
  tensor-parallel group fits one tray (the only ones where the cell change is that alone).

What it showed (main 6a5b28b2): both families' gaps ask the exchange for 39-47 GB/s a GPU,
about one 400 Gb/s NIC, at 84 MB (Llama 4) and 235 MB (DeepSeek-V3) an all-to-all; but NCCL at the
NIC everywhere is refuted by the control: Grok-1 on GB200 (EP 8 over 2 trays, the same release)
goes +2 -> +48 % (bf16) and -8 -> +53 % (fp8). So the missing time sits with the large expert
groups (32 / 64 ranks over 8 / 16 trays) run eagerly, not with the NVLink domain as a whole.

``--grace`` prints every GB200 row of the check files, the public and the held-out file, grouped by
framework, release, dense / MoE and whether the row runs CUDA graphs, at the host cost per launch
trainsim uses (30 us) and at ``GRACE_US`` (``dsv3_gb200_host.predicted``: ``HOST_S_PER_KERNEL``
set for the row): NeMo 25.04's eager GB200 rows, dense and MoE, fit at 150 us while its graph
rows do not move, but the same cost sends Megatron-Bridge 25.11-26.06 MoE rows to +69..+108 %
(a host cost of the software release on Grace, not one constant).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from dgxc_grok1_parts import moe_layer_pass

from trainsim.validate.training import predict_training_row
from trainsim.workload.ops import Comm

HERE = Path(__file__).parent
FILES = (HERE / "training_dgxc2505.csv", HERE / "training_dgxc_llama4.csv",
         HERE / "training_dgxc_grok1_2505.csv")
GRACE_US = 150.0
"""Host microseconds a launch for the ``--grace`` what-if: about the c* at which NeMo 25.04's
eager GB200 rows meet their measurements (Llama 4 bf16 175, fp8 131; DeepSeek-V3 178-211, dgxc30)."""
TRAY_GPUS = 4
"""GPUs of one GB200 compute tray (llama4 / deepseek_v3 launch.sh GPUS_PER_NODE 4)."""


def read_rows(paths=FILES) -> dict[str, dict[str, str]]:
    """The MoE rows (``ep`` > 1) of the files, by id."""
    out: dict[str, dict[str, str]] = {}
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                if (r.get("ep") or "1") not in ("", "1"):
                    out[r["id"]] = r
    return out


def implied_rate(remote_bytes: float, exchanges: int, priced_s: float, gap_s: float) -> float:
    """Bytes a second one rank's exchange would move if a MoE layer pass's gap ``gap_s`` were all
    exchange time: ``exchanges`` all-to-alls of ``remote_bytes`` each over ``priced_s + gap_s``."""
    return remote_bytes * exchanges / (priced_s + gap_s)


def exchange(row: dict[str, str]) -> dict[str, float]:
    """One row's prediction and its MoE layer pass: passes a rank runs, priced all-to-all
    seconds, their count and the bytes one rank sends off itself in each."""
    res, cfg, pricer, ops = moe_layer_pass(row)
    a2a = [op for op in ops if isinstance(op, Comm) and op.group == "ep"
           and op.kind == "all_to_all"]
    ep = cfg.parallel.ep
    m = cfg.model
    micro = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    stage = max(res.extra["settings"]["stage_layers"])
    passes = stage * m.num_moe_layers / m.num_layers * micro
    sent = sum(op.bytes for op in a2a) / max(len(a2a), 1) * (ep - 1) / ep
    return {"measured": res.measured, "predicted": res.predicted, "moe_passes": passes,
            "priced_s": sum(pricer.comm_time(op) for op in a2a), "exchanges": len(a2a),
            "remote_bytes": sent, "ep": ep}


def trays(row: dict[str, str]) -> float | None:
    """The row predicted with NCCL's nodes the trays, where the cell change is only that: a
    GB200 row whose tensor-parallel group fits one tray; None otherwise."""
    if row["gpu"] != "gb200" or int(row.get("tp") or 1) > TRAY_GPUS:
        return None
    return predict_training_row({**row, "gpus_per_node": str(TRAY_GPUS)}).predicted


def grace_key(row: dict[str, str]) -> tuple[str, str, str, str]:
    """A GB200 row's group for ``--grace``: framework, release (first 5 characters), dense or
    MoE, CUDA graphs or eager (as its options cell states)."""
    moe = "moe" if (row.get("ep") or "1") not in ("", "1") else "dense"
    graphs = "graphs" if "cuda_graphs" in (row.get("options") or "").split(";") else "eager"
    return row["framework"], (row.get("framework_version") or "")[:5], moe, graphs


def grace_table(paths: list[Path]) -> dict[tuple[str, str, str, str], list[tuple[float, float]]]:
    """Signed errors (%) of every GB200 row of ``paths`` (first occurrence of an id) at 30 us and
    at ``GRACE_US`` a launch, by ``grace_key``."""
    import warnings

    import dsv3_gb200_host as host  # benchmarks/: HOST_S_PER_KERNEL set for one prediction

    out: dict[tuple[str, str, str, str], list[tuple[float, float]]] = {}
    seen: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in paths:
            with open(path, newline="") as fh:
                rows = list(csv.DictReader(fh))
            for r in rows:
                if r.get("gpu") != "gb200" or r["id"] in seen:
                    continue
                seen.add(r["id"])
                m = float(r["measured_iteration_s"])
                a, b = host.predicted(r, 30.0), host.predicted(r, GRACE_US)
                out.setdefault(grace_key(r), []).append((100 * (a / m - 1), 100 * (b / m - 1)))
    return out


def print_grace() -> None:
    paths = sorted(p for p in HERE.glob("training_*.csv"))
    public = HERE.parent.parent / "shared" / "validation" / "training_public.csv"
    if public.exists():
        paths.append(public)
    table = grace_table(paths)
    print(f"GB200 rows at 30 / {GRACE_US:.0f} us a launch: n, MAPE %, signed %")
    for key in sorted(table):
        v = table[key]
        n = len(v)
        print(f"  {' '.join(key):36s} {n:3d}  {sum(abs(a) for a, _ in v) / n:5.1f} -> "
              f"{sum(abs(b) for _, b in v) / n:5.1f}   {sum(a for a, _ in v) / n:+6.1f} -> "
              f"{sum(b for _, b in v) / n:+6.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", help="row ids (default: every MoE row of the files)")
    ap.add_argument("--no-trays", action="store_true", help="skip the trays-as-nodes what-if")
    ap.add_argument("--grace", action="store_true", help="only the GB200 rows at a Grace host "
                    "cost (GRACE_US) against 30 us a launch, by framework / release / graphs")
    args = ap.parse_args()
    if args.grace:
        print_grace()
        return 0
    rows = read_rows()
    ids = args.rows or list(rows)
    print(f"{'row':44s} {'ep':>3s} {'meas':>6s} {'pred':>6s} {'err%':>6s} {'passes':>6s} "
          f"{'gap ms':>7s} {'a2a ms':>6s} {'MB':>5s} {'GB/s':>5s} {'trays%':>7s}")
    for rid in ids:
        x = exchange(rows[rid])
        gap = (x["measured"] - x["predicted"]) / x["moe_passes"]
        rate = implied_rate(x["remote_bytes"], x["exchanges"], x["priced_s"], gap) \
            if gap > 0 else None
        t = None if args.no_trays else trays(rows[rid])
        tray = f"{100 * (t / x['measured'] - 1):+7.1f}" if t else f"{'':>7s}"
        shown = f"{rate / 1e9:5.1f}" if rate else f"{'-':>5s}"
        print(f"{rid:44s} {x['ep']:3d} {x['measured']:6.2f} {x['predicted']:6.2f} "
              f"{100 * (x['predicted'] / x['measured'] - 1):+6.1f} {x['moe_passes']:6.0f} "
              f"{1e3 * gap:7.2f} {1e3 * x['priced_s']:6.2f} {x['remote_bytes'] / 1e6:5.0f} "
              f"{shown} {tray}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
