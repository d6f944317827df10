"""Why tuning the expert overlap takes the Hopper Bridge MoE rows 25 points too fast: the
dispatcher the tuner picks with it, not the overlap's price (issue 17 item 2, 44th session; a
diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/ovl44_dispatch_split.py     # ~2-4 min on a loaded machine

dsv3bw39 and bridge40 found that adding ``ep_overlap`` to Megatron-Bridge's tuned switches (the
validation README's rule for a setting the framework leaves to its user) takes the public
B200 DeepSeek-V3 row +45.6 -> -1.0 % but the two Qwen3-235B-A22B H100 rows -8.8 / -11.0 ->
-33.6 / -33.3 %: the tuner then runs the flex dispatcher (HybridEP / DeepEP) with the combined
1F1B, where the recipe ran NCCL's all-to-all with it (``training_errata.csv``: -3.6 / -8.3 %).

1. **Cell by cell** (``cells_table``): each Hopper Bridge MoE row of the public file with an
   empty options cell, and the B200 DeepSeek-V3 row, priced as written (main), with
   ``ep_overlap`` tuned (``dsv3bw39_parts.tuned_option``), and with its options stated as the
   recipe's (``pp_overlap;dp_overlap`` with and without ``ep_overlap``) for each dispatcher the
   row's release can run: which cell carries the tuned row's miss.
2. **Measured dispatcher A/Bs on H100** (``ab_table``): the only same-hardware measurements
   that hold the layout and change the dispatcher. (a) Megatron-Bridge's own Qwen3-30B-A3B
   A/B, 16 H100, EP 16 over two nodes (``ep_overlap_pairs.csv``): alltoall and HybridEP, each
   with and without the overlap; (b) the Qwen3-235B-A22B layout of the public rows (TP 2, PP 8,
   VP 4, EP 32 over four nodes, GBS 2048) run by the MoE Model Zoo with DeepEP (bf16, recompute
   layernorm + moe_act; ``training_moe_modelzoo.csv``) and by Bridge 25.11 with alltoall (FP8
   current scaling, no recompute; the public row with the errata). Each as the ratio of the two
   step times, measured and priced: where the priced ratio is below the measured one trainsim
   prices the flex dispatcher too fast against alltoall.
3. **The split** (``split_table``): the tuned row's error against what its flex + overlap
   configuration would measure were trainsim's price of it as right as on its nearest measured
   twin (DeepEP: the zoo's overlap row; HybridEP: Bridge's HybridEP overlap row), and beside it
   what measurement alone says that configuration runs (HybridEP: the run's step times Bridge's
   measured HybridEP-over-alltoall ratio with the overlap; DeepEP: the zoo's bf16 step on the
   same layout). What is left is the time the recipe's own configuration left to a dispatcher
   it did not run, which no price of the overlap removes.
"""

from __future__ import annotations

import contextlib
import csv
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ep_overlap_pairs
from dsv3bw39_parts import tuned_option

from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.validate.training import predict_training_row

HERE = Path(__file__).resolve().parent
PUBLIC = BUNDLED_DIR / "training_public.csv"
ZOO = HERE / "training_moe_modelzoo.csv"
ERRATA = HERE / "training_errata.csv"
HOPPER_ROWS = ("bridge2511-qwen3-235b-a22b-h100-256-gbs2048",
               "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192",
               "bridge2604p1-qwen3-30b-a3b-h100-16-ep16",
               "bridge2604p1-gpt-oss-120b-h100-64")
B200_ROW = "bridge2604p1-deepseek-v3-b200-256"
ZOO_OFF = "mzoo2505-qwen3-235b-a22b-h100-256-tp2pp8vpp4ep32"
ZOO_ON = "mzoo2505-qwen3-235b-a22b-h100-256-tp2pp8vpp4ep32-ep-overlap"
BRIDGE_A2A = "bridge2511-qwen3-235b-a22b-h100-256-gbs2048"  # its recipe: alltoall + overlap
DISPATCHERS = ("alltoall", "deepep", "hybridep")
RUN_OPTIONS = "pp_overlap;dp_overlap"  # Bridge's run_options (megatron-bridge.yaml)
TWIN = {"deepep": "zoo DeepEP EP 32 overlap row", "hybridep": "Bridge HybridEP EP 16 overlap row"}


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def row_of(row_id: str, path: Path = PUBLIC, recipe: bool = False) -> dict[str, str]:
    """Row ``row_id`` of ``path``, with the errata's cells where ``recipe``."""
    if not recipe:
        return next(r for r in read_rows(path) if r["id"] == row_id)
    with tempfile.TemporaryDirectory() as tmp:
        src, _ = corrected_file(str(path), str(ERRATA), tmp)
        return next(r for r in read_rows(Path(src)) if r["id"] == row_id)


def err(predicted: float, measured: float) -> float:
    return 100.0 * (predicted / measured - 1.0)


def price(row: dict[str, str]) -> tuple[float | None, str]:
    """(predicted step s, or None, and the dispatcher / overlap the tuner ran or the error)."""
    res = predict_training_row(row)
    if res.error:
        return None, res.error.splitlines()[0][:60]
    d = res.chosen.get("moe_token_dispatcher_type") or row.get("moe_dispatcher") or "-"
    on = res.chosen.get("moe_overlap_ep_comm", "ep_overlap" in (row.get("options") or ""))
    return res.predicted, f"{d}{' +ep_ovl' if on else ''}"


def variants(row: dict[str, str]) -> list[tuple[str, dict[str, str] | None]]:
    """The row as written, with ep_overlap tuned (None: priced under ``tuned_option``), and
    with Bridge's run options, the overlap off and on, for each dispatcher."""
    out: list[tuple[str, dict[str, str] | None]] = [("as written (main)", dict(row)),
                                                    ("ep_overlap tuned", None)]
    for overlap in (False, True):
        for d in DISPATCHERS:
            v = dict(row, moe_dispatcher=d,
                     options=RUN_OPTIONS + (";ep_overlap" if overlap else ""))
            out.append((f"{d}{' + overlap' if overlap else ''}", v))
    return out


def cells_table(rows: tuple[str, ...] = (*HOPPER_ROWS, B200_ROW)) -> tuple[list[str], dict]:
    """Section 1 and each variant's prediction, by row and label."""
    got: dict[str, dict[str, float | None]] = {}
    lines = ["| row | measured s | variant | settings | predicted s | err % |",
             "|---|---|---|---|---|---|"]
    for row_id in rows:
        row = row_of(row_id)
        meas = float(row["measured_iteration_s"])
        got[row_id] = {}
        for label, v in variants(row):
            if v is None:
                with tuned_option("ep_overlap"):
                    pred, how = price(dict(row))
            else:
                pred, how = price(v)
            got[row_id][label] = pred
            e = f"{err(pred, meas):+.1f}" if pred else "-"
            p = f"{pred:.2f}" if pred else "-"
            lines.append(f"| {row_id} | {meas:.2f} | {label} | {how} | {p} | {e} |")
        recipe = row_of(row_id, recipe=True)
        if recipe != row:
            pred, how = price(recipe)
            got[row_id]["recipe cells (errata)"] = pred
            lines.append(f"| {row_id} | {meas:.2f} | recipe cells (errata) | {how} | "
                         f"{pred:.2f} | {err(pred, meas):+.1f} |")
    return lines, got


def ab_pairs() -> list[tuple[str, float, float, float, float]]:
    """(what, measured A, measured B, priced A, priced B): B over A is the dispatcher's ratio."""
    res = ep_overlap_pairs.predict()
    by = {(r["moe_dispatcher"], ep_overlap_pairs.run_config(r).parallel.moe_overlap_ep_comm):
          (float(r["measured_step_s"]), p) for r, p in res}
    out = []
    for on in (False, True):
        (ma, pa), (mb, pb) = by[("alltoall", on)], by[("hybridep", on)]
        out.append(((f"Bridge Qwen3-30B-A3B EP 16, 16 H100: hybridep over alltoall, overlap "
                    f"{'on' if on else 'off'}"), ma, mb, pa, pb))
    zoo_on = row_of(ZOO_ON, ZOO)
    zoo_off = row_of(ZOO_OFF, ZOO)
    a2a = row_of(BRIDGE_A2A, recipe=True)
    p_zoo_on, _ = price(zoo_on)
    p_zoo_off, _ = price(zoo_off)
    p_a2a, _ = price(a2a)
    out.append((("Qwen3-235B TP2 PP8 VP4 EP32, 256 H100: zoo DeepEP + overlap (bf16) over Bridge "
                "25.11 alltoall + overlap (fp8)"), float(a2a["measured_iteration_s"]),
                float(zoo_on["measured_iteration_s"]), p_a2a, p_zoo_on))
    out.append(("the same layout, zoo DeepEP: overlap on over off",
                float(zoo_off["measured_iteration_s"]), float(zoo_on["measured_iteration_s"]),
                p_zoo_off, p_zoo_on))
    return out


def ab_table(pairs: list[tuple[str, float, float, float, float]]) -> list[str]:
    lines = [("| A/B | measured A -> B s | ratio measured | priced A -> B s | ratio priced | "
             "priced / measured ratio |"), "|---|---|---|---|---|---|"]
    for what, ma, mb, pa, pb in pairs:
        lines.append(f"| {what} | {ma:.2f} -> {mb:.2f} | {mb / ma:.3f} | {pa:.2f} -> {pb:.2f} | "
                     f"{pb / pa:.3f} | {(pb / pa) / (mb / ma):.3f} |")
    return lines


def twin_ratios(pairs: list[tuple[str, float, float, float, float]]) -> dict[str, float]:
    """Measured over priced step of each flex dispatcher's nearest measured overlap run on H100:
    DeepEP the zoo's overlap row (its layout is the Qwen3-235B rows'), HybridEP Bridge's A/B."""
    hyb = next(p for p in pairs if p[0].endswith("overlap on"))
    zoo = next(p for p in pairs if p[0].startswith("the same layout"))
    return {"hybridep": hyb[2] / hyb[4], "deepep": zoo[2] / zoo[4]}


def split_table(got: dict, pairs: list[tuple[str, float, float, float, float]],
                rows: tuple[str, ...] = HOPPER_ROWS[:2]) -> list[str]:
    """Section 3: each Qwen3-235B H100 row's tuned error; its faster flex + overlap
    configuration at its twin's measured-over-priced ratio; what measurement alone says that
    configuration runs (HybridEP: the run times Bridge's measured HybridEP-over-alltoall ratio
    with the overlap; DeepEP: the zoo's measured bf16 DeepEP + overlap step on the same layout,
    a bound from above for an fp8 run without recompute); the recipe's own error."""
    ratios = twin_ratios(pairs)
    hyb = next(p for p in pairs if p[0].endswith("overlap on"))
    zoo = next(p for p in pairs if p[0].startswith("Qwen3-235B"))
    lines = [("| row | tuned + ep_overlap err % | flex + overlap priced s | twin ratio | "
             "at the twin's ratio s (err % vs the run) | measured evidence s (err % vs the run) | "
             "recipe cells err % |"), "|---|---|---|---|---|---|---|"]
    for row_id in rows:
        meas = float(row_of(row_id)["measured_iteration_s"])
        g = got[row_id]
        flex = {d: g.get(f"{d} + overlap") for d in ("deepep", "hybridep")}
        d, p = min(((d, p) for d, p in flex.items() if p), key=lambda x: x[1])
        r = ratios[d]
        evidence = meas * hyb[2] / hyb[1] if d == "hybridep" else zoo[2]
        lines.append(f"| {row_id} | {err(g['ep_overlap tuned'], meas):+.1f} | {p:.2f} ({d}) | "
                     f"{r:.3f} ({TWIN[d]}) | {p * r:.2f} ({err(p * r, meas):+.1f}) | "
                     f"{evidence:.2f} ({err(evidence, meas):+.1f}) | "
                     f"{err(g['recipe cells (errata)'], meas):+.1f} |")
    return lines


def main() -> int:
    with contextlib.redirect_stderr(sys.stdout):
        print("## 1. Cell by cell: the rows as written, tuned, and with each dispatcher\n")
        lines, got = cells_table()
        print("\n".join(lines))
        print("\n## 2. Measured dispatcher and overlap A/Bs on H100 (B over A)\n")
        pairs = ab_pairs()
        print("\n".join(ab_table(pairs)))
        print("\n## 3. The tuned Qwen3-235B H100 rows' miss, split\n")
        print("\n".join(split_table(got, pairs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
