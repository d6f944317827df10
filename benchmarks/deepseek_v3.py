"""DeepSeek-V3's pre-training cost, predicted (issue 5 acceptance 3; issue 20 acceptance 3).

    python benchmarks/deepseek_v3.py [--format table|json]

Reported (arXiv:2412.19437 Table 1): 2.664M H800 GPU-hours for 14.8T tokens of pre-training.
Simulates examples/deepseek-v3-h800.yaml with DualPipe as the report describes it (§3.2.1:
``parallel.pipeline_schedule=dualpipe``, the expert all-to-alls hidden only where a forward and
a backward chunk overlap, not by the 1F1B approximation ``moe_overlap_ep_comm``), and the two
earlier approximations for comparison. It also checks the simulated pipeline bubble against
the report's DualPipe formula, (PP/2 - 1)(F&B + B - 3W) (Table 2 of the report; the
deepseek-ai/DualPipe README), with F, B, W and F&B taken from the same priced passes: F a
chunk's forward, B its whole backward, W its weight-gradient part, F&B an overlapped pair.

The formula is the published schedule's bubble where its figure's premises hold: every stage
alike, no send time, and passes F = I = W (I the input-gradient part of B) with F&B = F + B
(tests/test_pipeline_schedules.py replays deepseek-ai/DualPipe's order so). To say what
separates it from the simulated bubble, ``bubble_steps`` replays the same order (each rank's
order from ``workload.pipeline_schedules.dualpipe``, a transcription of dualpipe.py ``step``)
in the event engine three times, adding one departure from those premises at a time: the
priced passes of the middle stage on every stage, then each stage's own priced passes, then
each send's time. Each figure is the critical rank's idle time, as the simulated bubble is.

The layer split (``split_table``). No DeepSeek source states how the 61 layers (3 dense, 58
MoE) and the MTP module sit on the 16 stages. What the sources fix: the report's §3.2.3 puts the
embedding and the output head on one rank (under DualPipe rank 0 holds stage 0 and stage 15),
and deepseek-ai/profile-data@4496024 README says a DualPipe chunk "contains 4 MoE layers"
(EP64, TP1, 4K, the pre-training settings), so the 14 middle stages hold 4 MoE layers each
and rank 0 holds the rest: the embedding, 3 dense and 2 MoE layers, the MTP module and the
head, whatever the split between its two stages. ``split_table`` simulates the three splits
that leave that (``first`` = 3 + k layers on stage 0, 2 - k MoE layers before the MTP module
on stage 15, k = 0, 1, 2); k = 2 is Megatron-core's published DeepSeek-V3 layout for PP16 x
VPP2, ``Et*3|(tt|)*29,m|L`` (docs/user-guide pipeline_model_parallel_layout), with each
adjacent pair of its 32 virtual stages as one of DualPipe's 16. The example keeps k = 1.

DeepSeek's measured step (``phases``; benchmarks/deepseek_v3_phases.py). arXiv:2505.09343
Table 4 gives the step on the 2,048 H800s, 19.926 s, split into DualPipe's phases (lone F, B
and W passes, overlapped pairs, bubble, optimizer). 19.926 s is 180.2K GPU-hours per trillion
tokens, the report's 180K: the reported 2.664M is that steady step times the tokens, so the
simulated step compares with it directly (JSON ``measured_step_s``, ``vs_measured_step``),
and the batch-ramp and goodput terms of ``accounting`` are what a whole run would add beyond
the reported figure, not parts of it. ``phases`` sorts each simulated rank's step into the
table's phases and prices one what-if: the end ranks' pairs run as their two passes alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import trainsim
from trainsim.engine import Task, run
from trainsim.pipeline import ScheduledPipeline
from trainsim.pricing import Pricer
from trainsim.simulator import _TaskGraph
from trainsim.workload.pipeline_schedules import Overlapped, dualpipe, rank_of, virtual_stage

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import deepseek_v3_phases as ph
    import deepseek_v3_terms as terms
finally:
    sys.path.pop(0)

REPORTED_GPU_HOURS = 2.664e6
CONFIG = Path(__file__).resolve().parents[1] / "examples" / "deepseek-v3-h800.yaml"
SETTINGS = {
    "dualpipe": ["parallel.pipeline_schedule=dualpipe", "parallel.moe_overlap_ep_comm=false"],
    "1f1b_ep_hidden": ["parallel.moe_overlap_ep_comm=true"],
    "1f1b_ep_exposed": ["parallel.moe_overlap_ep_comm=false"],
}


def dualpipe_formula_s(cfg) -> dict[str, float]:
    """The report's DualPipe bubble for ``cfg`` from the simulator's priced passes of a middle
    stage (one chunk, one micro-batch)."""
    graph = _TaskGraph(cfg, Pricer(cfg), None)
    sched = ScheduledPipeline(graph)
    v = cfg.parallel.pp // 2
    f, b = sched.fwd[v].duration_s, sched.bwd[v].duration_s
    w = sched.split[v][1].duration_s
    fb = sched.pair_fwd[v].duration_s + sched.pair_bwd[v].duration_s
    return {"F_s": f, "B_s": b, "W_s": w, "F&B_s": fb,
            "bubble_formula_s": (cfg.parallel.pp / 2 - 1) * (fb + b - 3 * w)}


def replay(sched: ScheduledPipeline, m: int, stage_times: bool, send_s: float
           ) -> tuple[float, list[float]]:
    """Every rank runs its DualPipe order, each pass waiting for its input from the
    neighbouring stage, ``send_s`` after that stage's pass ends; passes priced as ``sched``
    prices them (a pair as its two paired passes), with the middle stage's on every stage
    unless ``stage_times``. Returns the makespan and each rank's busy time."""
    pp = sched.pp
    mid = pp // 2

    def of(v: int) -> int:
        return v if stage_times else mid

    def dur(s: int, step) -> float:
        if isinstance(step, Overlapped):
            vf = of(virtual_stage("dualpipe", s, step.f.chunk, pp))
            vb = of(virtual_stage("dualpipe", s, step.b.chunk, pp))
            return sched.pair_fwd[vf].duration_s + sched.pair_bwd[vb].duration_s
        v = of(virtual_stage("dualpipe", s, step.chunk, pp))
        return {"F": sched.fwd[v].duration_s, "B": sched.bwd[v].duration_s,
                "I": sched.split[v][0].duration_s, "W": sched.split[v][1].duration_s}[step.kind]

    def needs(s: int, p) -> list[tuple]:
        v = virtual_stage("dualpipe", s, p.chunk, pp)
        if p.kind == "F":
            return [] if v == 0 else [("F", p.microbatch, v - 1)]
        if p.kind == "W":
            return [("B", p.microbatch, v)]
        return [("F", p.microbatch, v)] + ([("B", p.microbatch, v + 1)] if v < pp - 1 else [])

    plan = [dualpipe(s, pp, m) for s in range(pp)]
    ids: dict[tuple, int] = {}
    tasks: list[Task] = []
    cursor = [0] * pp
    while any(cursor[s] < len(plan[s]) for s in range(pp)):
        for s in range(pp):
            while cursor[s] < len(plan[s]):
                step = plan[s][cursor[s]]
                parts = step if isinstance(step, Overlapped) else (step,)
                need = [k for p in parts for k in needs(s, p)]
                if any(k not in ids for k in need):
                    break
                i = len(tasks)
                tasks.append(Task((s, "compute"), dur(s, step), [ids[k] for k in need]))
                for p in parts:
                    v = virtual_stage("dualpipe", s, p.chunk, pp)
                    key = ("B" if p.kind in "IB" else p.kind, p.microbatch, v)
                    ids[key] = i
                    nxt = v + 1 if p.kind == "F" else v - 1
                    if send_s and p.kind != "W" and 0 <= nxt < pp \
                            and rank_of("dualpipe", nxt, p.chunk, pp) != s:
                        ids[key] = len(tasks)
                        tasks.append(Task((s, "send"), send_s, [i]))
                cursor[s] += 1
    tl = run(tasks)
    busy = [0.0] * pp
    for t in tasks:
        if t.stream[1] == "compute":
            busy[t.stream[0]] += t.duration_s
    return max(tl.end_s), busy


def replay_idle_s(sched: ScheduledPipeline, m: int, stage_times: bool, send_s: float,
                  rank: int) -> float:
    """Idle time of ``rank`` in ``replay`` (its span less its busy time, the iteration being
    the longest rank's span)."""
    makespan, busy = replay(sched, m, stage_times, send_s)
    return makespan - busy[rank]


def bubble_steps(cfg, critical: int) -> dict[str, float]:
    """The critical rank's idle time in the three replays (module docstring)."""
    sched = ScheduledPipeline(_TaskGraph(cfg, Pricer(cfg), None))
    m, send = cfg.schedule_microbatches, sched.g.send.duration_s
    return {"schedule_s": replay_idle_s(sched, m, False, 0.0, critical),
            "with_stage_times_s": replay_idle_s(sched, m, True, 0.0, critical),
            "with_sends_s": replay_idle_s(sched, m, True, send, critical),
            "middle_rank_schedule_s": replay_idle_s(sched, m, False, 0.0, cfg.parallel.pp // 2)}


def split_layout(k: int) -> str:
    """Megatron-core layout of the k-th split (module docstring): 3 + k layers after the
    embedding on stage 0, 4 on each of the 14 middle stages, 2 - k before the MTP module and
    the loss on stage 15."""
    return f"Et*{3 + k}|(tttt|)*14,{'t' * (2 - k)}mL"


def split_table(base: list[str]) -> list[dict]:
    """Per split of the module docstring: stage layers, the simulated bubble and iteration, the
    formula from the middle stage's passes, and the peak device memory (GiB)."""
    rows = []
    for k in range(3):
        sets = base + ["parallel.decoder_first_pipeline_num_layers=null",
                       "parallel.decoder_last_pipeline_num_layers=null",
                       f"parallel.pipeline_model_parallel_layout={split_layout(k)}"]
        cfg = trainsim.load_run_config(CONFIG, sets)
        r = trainsim.simulate(cfg)
        rows.append({"layout": split_layout(k), "stage_layers": list(cfg.stage_layer_counts),
                     "bubble_s": r.breakdown["pipeline_bubble_s"],
                     "bubble_formula_s": dualpipe_formula_s(cfg)["bubble_formula_s"],
                     "iteration_time_s": r.iteration_time_s, "critical_rank": r.critical_stage,
                     "peak_memory_gib": r.peak_memory_bytes / 2**30})
    return rows


def accounting(cfg, r, sets: list[str]) -> dict:
    """The terms of benchmarks/deepseek_v3_terms.py for the DualPipe run ``r`` of ``cfg``: the
    batch ramp and goodput added to the steady estimate (each labelled), the reported figure's
    precision, the iteration time it implies, where the exposed communication sits, and what
    node-limited routing and the MTP module cost inside the estimate."""
    steady = r.run_estimate()["gpu_hours"]
    t = cfg.training
    dp = cfg.dp

    def sim(b: int) -> dict:
        rb = trainsim.simulate(trainsim.load_run_config(
            CONFIG, sets + [f"training.global_batch_size={b}"]))
        return {"iteration_time_s": rb.iteration_time_s, "exposed_comm": dict(rb.exposed_comm)}

    ramp = terms.batch_ramp(sim, dp, cfg.parallel.pp, t.seq_length, cfg.cluster.num_gpus,
                            t.micro_batch_size)
    good = terms.goodput_terms(cfg, r.iteration_time_s, steady + ramp["gpu_hours"])
    default = "llama3-405b-16k-h100"  # trainsim.reliability's default profile
    total = steady + ramp["gpu_hours"] + good[default]["gpu_hours"]
    tokens_per_it = t.global_batch_size * t.seq_length
    inside = {}
    for label, extra in (("node_limited_routing_off", ["model.moe_router_group_topk=null"]),
                         ("without_mtp_module",
                          ["parallel.decoder_first_pipeline_num_layers=null",
                           "parallel.decoder_last_pipeline_num_layers=null",
                           "parallel.pipeline_model_parallel_layout=Et*4|(tttt|)*14,tL",
                           "model.mtp_num_layers=0"])):
        rx = trainsim.simulate(trainsim.load_run_config(CONFIG, sets + extra))
        inside[label] = {"iteration_time_s": rx.iteration_time_s,
                         "gpu_hours_change": rx.run_estimate()["gpu_hours"] - steady}
    # Not a term: the paired profile (deepseek-ai/profile-data README) routes "absolutely
    # balanced"; no source gives the busiest EP rank's load in the real run, so this is how
    # much a busiest-rank excess would move the estimate (model.moe_token_imbalance).
    sensitivity = {}
    for f in (1.1, 1.2):
        rx = trainsim.simulate(trainsim.load_run_config(
            CONFIG, sets + [f"model.moe_token_imbalance={f}"]))
        sensitivity[f"moe_token_imbalance={f}"] = {
            "iteration_time_s": rx.iteration_time_s,
            "gpu_hours_change": rx.run_estimate()["gpu_hours"] - steady}
    return {"steady_gpu_hours": steady,
            "batch_ramp": ramp,
            "goodput": {"profile_used": default, "by_profile": good},
            "total_gpu_hours": total, "total_vs_reported": total / REPORTED_GPU_HOURS - 1,
            "reported_precision": terms.reported_precision(t.train_tokens),
            "reported_implied_iteration_s": terms.implied_iteration_s(
                REPORTED_GPU_HOURS, cfg.cluster.num_gpus, t.train_tokens, tokens_per_it),
            "simulated_iteration_s": r.iteration_time_s,
            "exposed_comm_by_collective_s": dict(r.exposed_comm),
            "inside_the_estimate": inside,
            "sensitivity_not_added": sensitivity}


def phases(cfg, r) -> dict:
    """The simulated step of ``r`` (a DualPipe run kept with its timeline) in the phases of
    DeepSeek's measured step (benchmarks/deepseek_v3_phases.py): every rank's phases and
    distance to the measurement, the gaps of the two readings of whose timers it is (rank 0, a
    middle rank), and the step with the end ranks' pairs run as their two passes alone
    (``deepseek_v3_phases.pairs_alone``)."""
    tl, pp, it = r.timeline, cfg.parallel.pp, r.iteration_time_s
    table = ph.TABLE4["MPFT"]
    rows = ph.rank_phases(tl.tasks, tl.start_s, tl.end_s, pp, it)
    sched = ScheduledPipeline(_TaskGraph(cfg, Pricer(cfg), None))
    alone = ph.pairs_alone(sched, cfg.schedule_microbatches, sched.g.send.duration_s, replay,
                           (0, pp - 1))
    step = table["time_per_step_s"]
    t = cfg.training
    steps = t.train_tokens / (t.global_batch_size * t.seq_length)
    table_hours = steps * step * cfg.cluster.num_gpus / 3600
    readings = (0, pp // 2 - 1)
    return {"source": ph.TABLE4["source"], "measured": table, "checks": ph.table4_checks(),
            "table4_gpu_hours": table_hours,
            "table4_vs_reported": table_hours / REPORTED_GPU_HOURS - 1,
            "iteration_vs_table4": it / step - 1,
            "ranks": rows, "by_distance": ph.closest_rank(rows, table),
            "gaps": {str(k): ph.gap_table(rows[k], table) for k in readings},
            "pairs_alone": {**alone, "iteration_s": it + alone["added_s"],
                            "iteration_vs_table4": (it + alone["added_s"]) / step - 1,
                            "rank0_1F1B_s": rows[0]["1F1B"] + alone["rank_busy_alone_s"][0]
                            - alone["rank_busy_s"][0]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=("table", "json"), default="table")
    args = ap.parse_args()
    out: dict[str, dict] = {}
    for name, sets in SETTINGS.items():
        cfg = trainsim.load_run_config(CONFIG, sets)
        r = trainsim.simulate(cfg, keep_timeline=name == "dualpipe")
        hours = r.run_estimate()["gpu_hours"]
        out[name] = {"gpu_hours": hours, "vs_reported": hours / REPORTED_GPU_HOURS - 1,
                     "iteration_time_s": r.iteration_time_s, "mfu": r.mfu,
                     "tokens_per_s_per_gpu": r.tokens_per_s_per_gpu,
                     "breakdown": r.breakdown, "peak_memory_gib": r.peak_memory_bytes / 2**30}
        if name == "dualpipe":
            out[name]["bubble"] = {"simulated_s": r.breakdown["pipeline_bubble_s"],
                                   "critical_rank": r.critical_stage,
                                   **dualpipe_formula_s(cfg),
                                   **bubble_steps(cfg, r.critical_stage)}
            out[name]["splits"] = split_table(sets)
            out[name]["accounting"] = accounting(cfg, r, sets)
            out[name]["phases"] = phases(cfg, r)
    main_row = out["dualpipe"]
    if args.format == "json":
        print(json.dumps({"gpu_hours": main_row["gpu_hours"],
                          "reported_gpu_hours": REPORTED_GPU_HOURS,
                          "vs_reported": main_row["vs_reported"],
                          "accounted_gpu_hours": main_row["accounting"]["total_gpu_hours"],
                          "accounted_vs_reported": main_row["accounting"]["total_vs_reported"],
                          "measured_step_s": ph.TABLE4["MPFT"]["time_per_step_s"],
                          "measured_step_gpu_hours": main_row["phases"]["table4_gpu_hours"],
                          "vs_measured_step": main_row["phases"]["iteration_vs_table4"],
                          "schedule": "dualpipe", "settings": out}, indent=1))
        return
    print("| setting | s/iteration | tokens/s/GPU | MFU | GPU-hours (14.8T) | vs reported |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, row in out.items():
        print(f"| {name} | {row['iteration_time_s']:.2f} | {row['tokens_per_s_per_gpu']:,.0f} | "
              f"{100 * row['mfu']:.1f}% | {row['gpu_hours'] / 1e6:.3f}M | "
              f"{100 * row['vs_reported']:+.1f}% |")
    b = main_row["bubble"]
    print(f"DualPipe bubble: simulated {b['simulated_s']:.3f} s, report's formula "
          f"(PP/2-1)(F&B+B-3W) = {b['bubble_formula_s']:.3f} s (F {b['F_s'] * 1e3:.1f} ms, "
          f"B {b['B_s'] * 1e3:.1f} ms, W {b['W_s'] * 1e3:.1f} ms, F&B {b['F&B_s'] * 1e3:.1f} ms)")
    print(f"The published order replayed (idle of rank {b['critical_rank']}, the critical one): "
          f"middle stage's passes everywhere {b['schedule_s']:.3f} s (middle rank "
          f"{b['middle_rank_schedule_s']:.3f} s), each stage's own passes "
          f"{b['with_stage_times_s']:.3f} s, and the sends {b['with_sends_s']:.3f} s")
    print("| split (Megatron-core layout) | stage 0 / middle / 15 layers | bubble s | formula s "
          "| s/iteration | peak GiB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in main_row["splits"]:
        n = row["stage_layers"]
        print(f"| {row['layout'].replace('|', chr(92) + '|')} | {n[0]} / {n[1]} / {n[-1]} | {row['bubble_s']:.3f} | "
              f"{row['bubble_formula_s']:.3f} | {row['iteration_time_s']:.2f} | "
              f"{row['peak_memory_gib']:.2f} |")
    a = main_row["accounting"]
    ramp, good = a["batch_ramp"], a["goodput"]["by_profile"]
    used = good[a["goodput"]["profile_used"]]
    p = a["reported_precision"]
    print("| term (GPU-hours) | value | share of reported |")
    print("| --- | --- | --- |")
    for label, v in (("steady DualPipe iterations", a["steady_gpu_hours"]),
                     (f"batch ramp 3072 -> 15360 over 469B tokens ({ramp['steps']} steps)",
                      ramp["gpu_hours"]),
                     ((f"goodput ({a['goodput']['profile_used']}, ETTR "
                      f"{used['effective_training_time_ratio']:.3f})"), used["gpu_hours"]),
                     ("total", a["total_gpu_hours"])):
        print(f"| {label} | {v / 1e6:.4f}M | {100 * v / REPORTED_GPU_HOURS:.2f}% |")
    print(f"Total vs reported {100 * a['total_vs_reported']:+.1f}% (reported figure "
          f"{p['gpu_hours_low'] / 1e6:.3f}M-{p['gpu_hours_high'] / 1e6:.3f}M as 175K-185K "
          f"GPU-hours per trillion tokens); the reported figure implies "
          f"{a['reported_implied_iteration_s']:.2f} s an iteration, simulated "
          f"{a['simulated_iteration_s']:.2f} s; exposed communication by collective: "
          + ", ".join(f"{k} {v:.2f} s" for k, v in a["exposed_comm_by_collective_s"].items() if v))
    for name, row in good.items():
        print(f"goodput {name}: ETTR {row['effective_training_time_ratio']:.4f}, "
              f"{row['interruptions']:.0f} interruptions, {row['gpu_hours'] / 1e3:.1f}K GPU-hours")
    q = main_row["phases"]
    print(f"DeepSeek's measured step ({q['source']}): {q['measured']['time_per_step_s']} s = "
          f"{q['checks']['MPFT']['gpu_hours_per_T'] / 1e3:.1f}K GPU-hours/T, "
          f"{q['table4_gpu_hours'] / 1e6:.4f}M for 14.8T ({100 * q['table4_vs_reported']:+.2f}% "
          f"of the reported); simulated {main_row['iteration_time_s']:.3f} s "
          f"({100 * q['iteration_vs_table4']:+.1f}%)")
    print("| phase | measured s | rank 0 s | gap | rank " + str(len(q["ranks"]) // 2 - 1)
          + " s | gap |")
    print("| --- | --- | --- | --- | --- | --- |")
    g0, g1 = (q["gaps"][k] for k in q["gaps"])
    for x, y in zip(g0, g1):
        print(f"| {x['phase']} | {x['measured_s']:.2f} | {x['simulated_s']:.3f} | "
              f"{x['gap_s']:+.3f} | {y['simulated_s']:.3f} | {y['gap_s']:+.3f} |")
    w = q["pairs_alone"]
    print(f"End ranks' pairs as their two passes alone (dualpipe.py L23/L126): step "
          f"{w['iteration_s']:.3f} s ({100 * w['iteration_vs_table4']:+.2f}% of the measured), "
          f"rank 0's pairs {w['rank0_1F1B_s']:.2f} s (measured 1F1B "
          f"{q['measured']['1F1B']} s)")
    for where, rows in (("inside the estimate", a["inside_the_estimate"]),
                        ("sensitivity, not added", a["sensitivity_not_added"])):
        for name, row in rows.items():
            print(f"{where}, {name}: {row['iteration_time_s']:.2f} s/iteration, "
                  f"{row['gpu_hours_change'] / 1e3:+.1f}K GPU-hours")


if __name__ == "__main__":
    main()
