"""DeepSeek-V3's DualPipe step, what remains against DeepSeek's own figures, part by part
(issue 20 item 3; dsv3_62).

    python benchmarks/dsv3_62_parts.py [--format table|json] [--quick]

The example (examples/deepseek-v3-h800.yaml, ``deepseek_v3.SETTINGS['dualpipe']``) priced and
set beside every DeepSeek figure that bounds a part of its step:

* the middle-rank pair against DeepSeek's profiled pair (deepseek-ai/profile-data@4496024
  ``train.json``, figures kept in ``deepseek_v3_kernels_trace.json``: 129.0 ms span), whose
  README says the profile routes "absolutely balanced" and leaves PP communication out;
* rank 0's six phases against arXiv:2505.09343 Table 4 (``deepseek_v3_phases.TABLE4``; the
  reading the 42nd session's dsv3x42 supports), and each phase per pass (Table 4's totals over
  the pass counts of dualpipe.py ``step`` for rank 0: 23 F, 8 B + 15 I, 15 W, 97 pairs);
* the report's bubble formula (arXiv:2412.19437 Table 2, ``(PP/2 - 1)(F&B + B - 3W)``) from
  Table 4's own per-pass figures, beside the simulated bubble and the formula from the priced
  passes: how much of each bubble the schedule's premises explain;
* what-ifs that each name a mechanism and its size, none added to the estimate: the two
  parameter copies' gradients summed (deepseek-ai/DualPipe@3da1bbe examples/example_dualpipe.py
  L168-174; priced as the data-parallel groups twice as large, in a fresh interpreter), the end
  ranks' pairs run as their two passes alone (dualpipe.py L23 / L126-129;
  ``deepseek_v3_phases.pairs_alone``), and the busiest expert rank's excess
  (``model.moe_token_imbalance``) that would close the step, found by the secant method
  (no DeepSeek source states that load; the profile is balanced by construction).

``--quick`` leaves out the what-ifs that simulate again (tests).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import trainsim

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import deepseek_v3 as dsv3
    import deepseek_v3_kernels as kern
    import deepseek_v3_phases as ph
finally:
    sys.path.pop(0)

RANK0_PASSES = {"1F": 23, "B": 8, "I": 15, "1W": 15, "1F1B": 97}
"""Rank 0's passes in one DualPipe step of the example (pp 16, 120 micro-batches), by hand
from dualpipe.py ``step`` (tests/test_deepseek_v3_phases.py checks the same counts): 23 lone
forwards, 8 whole backwards and 15 input-gradient halves (Table 4's 1B), 15 lone weight passes,
97 pairs."""

COPIES_PROBE = r"""
import json, sys
sys.path.insert(0, "benchmarks")
import trainsim
from trainsim.config.run import RunConfig
import deepseek_v3 as d
for name in ("edp", "shard_ranks"):  # both copies of a stage in one data-parallel group
    f = getattr(RunConfig, name).fget
    setattr(RunConfig, name, property(lambda self, f=f: 2 * f(self)))
r = trainsim.simulate(trainsim.load_run_config(d.CONFIG, d.SETTINGS["dualpipe"]))
print(json.dumps({"step_s": r.iteration_time_s, "breakdown": dict(r.breakdown)}))
"""


def per_pass(table: dict, passes: dict) -> dict[str, float]:
    """Table 4's phases per pass on a rank with ``passes``: F, I (an input-gradient half), W,
    B = I + W (a whole backward) and F&B (a pair), seconds. 1B holds ``B`` whole backwards and
    ``I`` halves, so its total is (B + I) * I_s + B * W_s."""
    w = table["1W"] / passes["1W"]
    i = (table["1B"] - passes["B"] * w) / (passes["B"] + passes["I"])
    return {"F": table["1F"] / passes["1F"], "I": i, "W": w, "B": i + w,
            "F&B": table["1F1B"] / passes["1F1B"]}


def bubble_formula(pp: int, p: dict) -> float:
    """The report's DualPipe bubble (arXiv:2412.19437 Table 2) from per-pass seconds."""
    return (pp / 2 - 1) * (p["F&B"] + p["B"] - 3 * p["W"])


def copies_step(root: Path) -> dict:
    """The example's step with DualPipe's two copies of each stage reducing their gradients in
    one data-parallel group twice as large (experts' and the rest), in a fresh interpreter so
    no kept price of the unpatched config is reused."""
    out = subprocess.run([sys.executable, "-c", COPIES_PROBE], cwd=root, capture_output=True,
                         text=True, check=True,
                         env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def imbalance_to_close(target_s: float, lo: float = 1.2, hi: float = 1.4,
                       rounds: int = 3) -> dict:
    """The busiest-expert-rank excess (``model.moe_token_imbalance``) at which the example's
    step reaches ``target_s``: secant steps from ``lo`` and ``hi``."""
    def step(f: float) -> float:
        return trainsim.simulate(trainsim.load_run_config(
            dsv3.CONFIG, dsv3.SETTINGS["dualpipe"] + [f"model.moe_token_imbalance={f}"])
        ).iteration_time_s
    pts = [(lo, step(lo)), (hi, step(hi))]
    for _ in range(rounds):
        (x0, y0), (x1, y1) = pts[-2:]
        x = x1 + (target_s - y1) * (x1 - x0) / (y1 - y0)
        pts.append((x, step(x)))
    return {"imbalance": pts[-1][0], "step_s": pts[-1][1], "points": pts}


def rank0_at_imbalance(f: float) -> dict[str, float]:
    """Rank 0's six phases with the busiest expert rank ``f`` times the mean: where an excess
    would put the step's time (the end ranks wait for the middle ones)."""
    cfg = trainsim.load_run_config(dsv3.CONFIG, dsv3.SETTINGS["dualpipe"]
                                   + [f"model.moe_token_imbalance={f}"])
    r = trainsim.simulate(cfg, keep_timeline=True)
    tl = r.timeline
    row = ph.rank_phases(tl.tasks, tl.start_s, tl.end_s, cfg.parallel.pp, r.iteration_time_s)[0]
    return {k: row[k] for k in ph.PHASES}


def parts(quick: bool = False) -> dict:
    cfg = trainsim.load_run_config(dsv3.CONFIG, dsv3.SETTINGS["dualpipe"])
    r = trainsim.simulate(cfg, keep_timeline=True)
    pp, it, tl = cfg.parallel.pp, r.iteration_time_s, r.timeline
    table = ph.TABLE4["MPFT"]
    rows = ph.rank_phases(tl.tasks, tl.start_s, tl.end_s, pp, it)
    rank0 = rows[0]
    counted = {"1F": RANK0_PASSES["1F"], "1B": RANK0_PASSES["B"] + RANK0_PASSES["I"],
               "1W": RANK0_PASSES["1W"], "1F1B": RANK0_PASSES["1F1B"]}
    if rank0["passes"] != counted:
        raise RuntimeError(f"rank 0's passes {rank0['passes']} are not dualpipe.py's {counted}")
    measured_pass = per_pass(table, RANK0_PASSES)
    simulated_pass = per_pass(rank0, RANK0_PASSES)
    pair = kern.pair(cfg)
    trace = json.loads(kern.KEPT.read_text())
    formula = dsv3.dualpipe_formula_s(cfg)
    out = {
        "step_s": {"simulated": it, "measured": table["time_per_step_s"],
                   "gap": it - table["time_per_step_s"]},
        "middle_pair_s": {"simulated": pair["middle_pair_s"], "profiled": trace["span_s"],
                          "gap": pair["middle_pair_s"] - trace["span_s"]},
        "rank0_pairs_priced_s": pair["rank0_pairs_s"],
        "rank0_phases_s": {k: {"simulated": rank0[k], "measured": table[k],
                               "gap": rank0[k] - table[k]} for k in ph.PHASES},
        "rank0_per_pass_s": {k: {"simulated": simulated_pass[k], "measured": measured_pass[k]}
                             for k in measured_pass},
        "bubble_s": {"rank0_simulated": rank0["bubble"], "measured": table["bubble"],
                     "formula_from_table4_passes": bubble_formula(pp, measured_pass),
                     "formula_from_rank0_simulated_passes": bubble_formula(pp, simulated_pass),
                     "formula_from_middle_stage_priced": formula["bubble_formula_s"]},
        "pair_production_over_profile": measured_pass["F&B"] / trace["span_s"],
    }
    if not quick:
        root = Path(__file__).resolve().parents[1]
        copies = copies_step(root)
        alone = dsv3.phases(cfg, r)["pairs_alone"]
        close = imbalance_to_close(table["time_per_step_s"])
        out["what_ifs"] = {
            "two_copies_one_group": {"step_s": copies["step_s"], "added_s": copies["step_s"] - it},
            "end_rank_pairs_alone": {"step_s": alone["iteration_s"], "added_s": alone["added_s"]},
            "imbalance_closing_the_step": {
                **close, "rank0_phases_s": rank0_at_imbalance(close["imbalance"])}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=("table", "json"), default="table")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    p = parts(args.quick)
    if args.format == "json":
        print(json.dumps(p, indent=1))
        return
    s, mp = p["step_s"], p["middle_pair_s"]
    print(f"step: simulated {s['simulated']:.3f} s, DeepSeek's Table 4 {s['measured']:.3f} s "
          f"({s['gap']:+.3f} s, {100 * s['gap'] / s['measured']:+.1f} %)")
    print(f"middle pair: simulated {1e3 * mp['simulated']:.1f} ms, profiled (balanced routing, "
          f"no PP sends) {1e3 * mp['profiled']:.1f} ms ({100 * mp['gap'] / mp['profiled']:+.1f} %)")
    print("| rank 0 phase | simulated s | Table 4 s | gap s | per pass simulated ms | per pass "
          "Table 4 ms |\n| --- | --- | --- | --- | --- | --- |")
    pass_of = {"1F": "F", "1B": "I", "1W": "W", "1F1B": "F&B"}
    for k, v in p["rank0_phases_s"].items():
        pk = pass_of.get(k)
        pp_s = p["rank0_per_pass_s"].get(pk) if pk else None
        cells = (f"{1e3 * pp_s['simulated']:.1f} | {1e3 * pp_s['measured']:.1f}" if pp_s
                 else "- | -")
        print(f"| {k} | {v['simulated']:.3f} | {v['measured']:.3f} | {v['gap']:+.3f} | {cells} |")
    b = p["bubble_s"]
    print(f"bubble: rank 0 {b['rank0_simulated']:.3f} s (Table 4 {b['measured']:.2f}); the "
          f"report's formula from Table 4's passes {b['formula_from_table4_passes']:.3f} s, from "
          f"rank 0's simulated passes {b['formula_from_rank0_simulated_passes']:.3f} s, from the "
          f"middle stage's priced passes {b['formula_from_middle_stage_priced']:.3f} s")
    print(f"a pair in Table 4 (rank 0) is {p['pair_production_over_profile']:.3f}x the profiled "
          "pair")
    for name, w in p.get("what_ifs", {}).items():
        if "added_s" in w:
            print(f"what-if {name}: step {w['step_s']:.3f} s ({w['added_s']:+.3f} s)")
        else:
            print(f"what-if {name}: model.moe_token_imbalance={w['imbalance']:.3f} gives "
                  f"{w['step_s']:.3f} s; rank 0's phases then (Table 4): " + ", ".join(
                      f"{k} {v:.2f} ({ph.TABLE4['MPFT'][k]:.2f})"
                      for k, v in w["rank0_phases_s"].items()))


if __name__ == "__main__":
    main()
