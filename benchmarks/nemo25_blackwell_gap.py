"""Which priced category the NeMo 25.0x Blackwell gap follows (a diagnostic: nothing here feeds
trainsim; issue 17, 28th session).

    python benchmarks/nemo25_blackwell_gap.py          # ~3-5 min on 2 cores

The B200 (NeMo 25.02) and GB200 (NeMo 25.04 / 25.07) rows of ``training_nemo_perf.csv`` and the
dense GB200 rows of ``training_dgxc2505.csv`` are predicted 8-25 % too fast; the Megatron-Bridge
Blackwell rows of the public file (errata applied) and of the held-out file are within a few
per cent. For each row this prints what one priced category is worth on the critical path,
found by pricing the row again with that category changed (Blackwell GPUs only):

* ``attn``: attention kernels priced x2 (the step time added = the attention on the critical
  path at x1);
* ``gemm``: GEMMs priced x1.1 (the step time added, x10 = the GEMMs on the critical path);
* ``tp``: the row's ``tp_overlap`` option removed (every TP all-gather / reduce-scatter priced
  as NCCL, exposed where trainsim exposes it);

and the factor on that category alone that would close the row's gap (``x_attn``, ``x_gemm``)
or the share of the exposed TP communication it would take (``tp_share``). A mechanism that is
the gap should need about the same factor on every row of one release and none on the Bridge
rows; a factor that varies row to row, or that the Bridge rows need as well, is not it. Per-GPU
or per-release factors are what DESIGN.md rules out as a model; here they only locate the gap.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from multiprocessing import Pool
from pathlib import Path

from part_cases import priced

from trainsim.catalog import model
from trainsim.compute import roofline
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.workload.ops import Attention, Gemm

HERE = Path(__file__).parent
BLACKWELL = ("b200-sxm-180gb", "gb200", "gb300")
CASES = {"base": {}, "attn": {"attention": 2.0}, "gemm": {"gemm": 1.1}, "tp": {}}


def _dense(row: dict[str, str]) -> bool:
    return not row["num_experts"] and not model(row["model"]).is_moe


def rows() -> list[tuple[str, dict[str, str]]]:
    """(file, row) for every dense Blackwell row of the NeMo files and the Bridge rows."""
    out = []
    for name in ("nemo_perf", "dgxc2505"):
        with (HERE / f"training_{name}.csv").open(newline="") as fh:
            out += [(name, r) for r in csv.DictReader(fh)
                    if r["gpu"] in BLACKWELL and _dense(r)]
    tmp = Path(tempfile.mkdtemp())
    public, _ = corrected_file(BUNDLED_DIR / "training_public.csv",
                               HERE / "training_errata.csv", tmp)
    for name, path in (("public", public), ("heldout", HERE / "training_heldout.csv")):
        with path.open(newline="") as fh:
            out += [(name, r) for r in csv.DictReader(fh)
                    if r["gpu"] in BLACKWELL and _dense(r)
                    and r["framework"] == "megatron-bridge"]
    return out


def _scale(change: dict[str, float]) -> None:
    time = roofline.RooflineModel._time

    def scaled(self: roofline.RooflineModel, op) -> float:
        t = time(self, op)
        if (self.gpu.compute_capability or 0) < 100:
            return t
        key = "gemm" if isinstance(op, Gemm) else "attention" if isinstance(op, Attention) \
            else "memory"
        return t * change.get(key, 1.0)

    roofline.RooflineModel._time = scaled


def case(label: str) -> None:
    """One case in a fresh process (prices are cached per process): id, measured, predicted."""
    _scale(CASES[label])
    sel = [r for _, r in rows()]
    if label == "tp":
        sel = [dict(r, options=";".join(o for o in r["options"].split(";") if o != "tp_overlap"))
               for r in sel]
    with Pool(2) as pool:
        for rid, m, p in pool.map(priced, sel):
            print(f"{rid},{m},{p if p is not None else ''}", flush=True)


def run_case(label: str, script: str = __file__) -> dict[str, tuple[float, float | None]]:
    """``script case label`` in a fresh process (its prices scaled for that case only): the
    id -> (measured, predicted) it prints. Shared with cp_blackwell_parts.py."""
    out = subprocess.run([sys.executable, script, "case", label], check=True,
                         capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        rid, m, p = line.split(",")
        res[rid] = (float(m), float(p) if p else None)
    return res


def main() -> None:
    sel = rows()
    got = {label: run_case(label) for label in CASES}
    print(f"{'file':9s} {'row':46s} {'release':9s} tp cp fp8     err%   gap_s  attn_s  gemm_s"
          f"   tp_s  x_attn x_gemm tp_share")
    groups: dict[str, list[tuple[float, float, float]]] = {}
    for name, r in sel:
        m, p = got["base"][r["id"]]
        if p is None:
            continue
        gap = m - p
        attn = got["attn"][r["id"]][1] - p
        gemm = (got["gemm"][r["id"]][1] - p) / 0.1
        tp = got["tp"][r["id"]][1] - p
        xa = 1 + gap / attn if attn > 1e-9 else float("nan")
        xg = 1 + gap / gemm if gemm > 1e-9 else float("nan")
        share = gap / tp if tp > 1e-9 else float("nan")
        rel = f"{r['framework'][:6]} {r['framework_version'][:5]}"
        fp8 = (r["fp8_recipe"] or "-")[:7] if r["dtype"] == "fp8" else "bf16"
        print(f"{name:9s} {r['id'][:46]:46s} {rel:12s} {r['tp']:>2s} {r['cp'] or '1':>2s} "
              f"{fp8:7s} {100 * gap / -m:+6.1f} {gap:7.3f} {attn:7.3f} {gemm:7.3f} {tp:6.3f} "
              f"{xa:7.2f} {xg:6.2f} {share:8.2f}")
        groups.setdefault(rel, []).append((xa, xg, 100 * -gap / m))
    print("\nby release: rows, mean signed error, x_attn range, x_gemm range")
    for rel, vals in sorted(groups.items()):
        xa = [v[0] for v in vals]
        xg = [v[1] for v in vals]
        print(f"  {rel:12s} {len(vals):2d} {sum(v[2] for v in vals) / len(vals):+6.1f} % "
              f"x_attn {min(xa):.2f}..{max(xa):.2f}  x_gemm {min(xg):.2f}..{max(xg):.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "case":
        case(sys.argv[2])
    else:
        main()
