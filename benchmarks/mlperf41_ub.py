"""The MLPerf GPT-3 175B rows under NVIDIA's own userbuffer configs, mechanism by mechanism
(41st session, mlperf41; a diagnostic beside ``mlperf40_parts.py``).

    PYTHONPATH=src python benchmarks/mlperf41_ub.py        # ~30 s

Each round's ``conf/tp_overlap/*.yaml`` (mlcommons/training_results_v3.1 / v4.0 / v4.1, read
into the mlperf-nemo profile's ``ub_bulk_all_sms`` and ``ub_rs_overlap``) runs the bulk
overlaps' GEMMs on all SMs (``set_sm_margin`` 0) and sets each forward reduce-scatter's method
and SMs: v3.1 proj_fprop pipeline on 24 SMs and fc2_fprop pipeline on 4; v4.0 / v4.1 an atomic
proj_fprop on 24 and a ring-exchange fc2_fprop (copy engines, 1 SM). For every MLPerf GPT-3
row of the public file (errata applied, as ``mlperf40_parts.rows``) and of
``training_mlperf_partners.csv`` it prints the signed error (predicted / measured - 1) with:

- ``TE defaults``: every pipeline and bulk GEMM on the SMs 16 communication SMs leave (the
  pricing before this session);
- ``+bulk``: the bulk overlaps' GEMMs on all SMs (``beside_all_sms``: on Hopper the GEMM's
  workers on the SMs the communication holds start when it ends);
- ``+sites``: and each forward reduce-scatter as the round's yaml runs it (the profile as it
  stands);

and, for the pairs of rows of one layout (``mlperf40_parts.PAIRS``), the per-micro-batch
slope and the fixed part under each. Run it with and without
``benchmarks/candidates/mlperf_fixed_dropout.patch`` applied.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mlperf40_parts import PAIRS, rows, two_point

from trainsim.pricing import Pricer
from trainsim.simulator import simulate
from trainsim.validate.training import predict_training_row, row_config

VARIANTS = ("TE defaults", "+bulk", "+sites")


def pricer(cfg: Any, variant: str) -> Pricer:
    """A pricer of ``cfg`` with the profile's userbuffer sites switched off up to ``variant``."""
    p = Pricer(cfg)
    if variant in ("TE defaults", "+bulk"):
        p.ub_rs = {}
    if variant == "TE defaults":
        p.ub_bulk_all_sms = p.ub_all_sms
    return p


def predict(row: dict[str, str]) -> dict[str, Any]:
    """Measured seconds, micro-batches per rank and the predicted step under each variant."""
    res = predict_training_row(row)
    if res.error:
        return {"error": res.error}
    cfg = row_config(row, res.chosen)
    t = cfg.training
    out: dict[str, Any] = {"measured": res.measured,
                           "m": t.global_batch_size // (t.micro_batch_size * cfg.dp)}
    for v in VARIANTS:
        out[v] = simulate(cfg, pricer=pricer(cfg, v)).iteration_time_s
    return out


def signed(got: dict[str, Any], variant: str) -> float:
    return 100.0 * (got[variant] / got["measured"] - 1.0)


def main() -> int:
    got: dict[str, dict[str, Any]] = {}
    print("| row | file | m | measured s | " + " | ".join(VARIANTS) + " |")
    print("|---" * (4 + len(VARIANTS)) + "|")
    for name, row in rows():
        g = got[row["id"]] = predict(row)
        if "error" in g:
            print(f"| {row['id']} | {name} | {g['error']} |")
            continue
        cells = " | ".join(f"{signed(g, v):+.1f} %" for v in VARIANTS)
        print(f"| {row['id']} | {name} | {g['m']} | {g['measured']:.3f} | {cells} |")
    print()
    print("| pair (m) | measured per mb ms / fixed s | " + " | ".join(VARIANTS) + " |")
    print("|---" * (2 + len(VARIANTS)) + "|")
    for a, b in PAIRS:
        ga, gb = got.get(a, {}), got.get(b, {})
        if "measured" not in ga or "measured" not in gb:
            continue
        slope, fixed = two_point(ga["m"], ga["measured"], gb["m"], gb["measured"])
        cells = []
        for v in VARIANTS:
            s, f = two_point(ga["m"], ga[v], gb["m"], gb[v])
            cells.append(f"{1e3 * s:.1f} / {f:.3f}")
        print(f"| {a} ({ga['m']}) / {b} ({gb['m']}) | {1e3 * slope:.1f} / {fixed:.3f} | "
              + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
