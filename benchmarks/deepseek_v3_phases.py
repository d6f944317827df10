"""DeepSeek-V3's measured training step, phase by phase, against the simulated DualPipe step
(issue 20 item 3, "explain what remains"). Used by benchmarks/deepseek_v3.py (its JSON
``settings.dualpipe.phases``).

The measurement. DeepSeek's ISCA 2025 paper (Zhao et al., "Insights into DeepSeek-V3: Scaling
Challenges and Reflections on Hardware for AI Architectures", arXiv:2505.09343, Table 4,
"training metric comparison" of the multi-plane (MPFT) and multi-rail (MRFT) fat-trees) gives
DeepSeek-V3's training step on its 2,048 H800s split into DualPipe's phases: the lone forward
chunks (1F), lone backward chunks (1B), lone weight-gradient chunks (1W), overlapped
forward-and-backward pairs (1F1B), the bubble, and the optimizer (opt), with tokens per day,
time per step, TFLOPS and MFU. ``TABLE4`` holds it. Its cells check each other
(``table4_checks``, tests/test_deepseek_v3_phases.py): tokens per day = 15,360 x 4,096 x 86,400 /
time per step (272.80B, 272.52B); the six phases sum to the step within 0.03 s; causal TFLOPS x
2,048 x step / tokens = 250 GFLOPs a token, the paper's Table 2 figure for DeepSeek-V3; MFU =
TFLOPS / the H800's 989 dense 16-bit TFLOPS. And 19.926 s a step is 180.2K GPU-hours per trillion
tokens, the technical report's 180K (arXiv:2412.19437 §1; 2.664M = 180K x 14.8): the reported
pre-training figure is the measured steady step times the tokens, with no room left in it for
the batch ramp or interruptions (the terms ``deepseek_v3_terms`` prices beside it).

Which rank. The table does not say whose timers it reports; every DualPipe rank runs its own
mix of lone passes and pairs (dualpipe.py ``step``: rank 0 has 23 lone forwards, 8 lone and 15
input-gradient backwards, 15 lone W and 97 pairs; the middle ranks 17, 9 + 8, 8 and 103).
``rank_phases`` sorts each simulated rank's step into the table's phases; ``closest_rank``
orders the ranks by their summed distance. Two readings: rank 0 (and its mirror 15), the only
ranks whose bubble (2.19 s) and lone W (0.45 s) come near the table's 2.06 and 0.48 s, and whose
lone passes all lie within 6 %; or a middle rank, whose pairs match (13.99 s against 13.95) but
whose 8 lone W passes would have to take 60 ms each, twice the 29.8 ms DeepSeek's own profile
measures for the same four layers' W (deepseek-ai/profile-data, RESULTS "wgrad39").

The what-if (``pairs_alone``). deepseek-ai/DualPipe@3da1bbe dualpipe/dualpipe.py L23 overlaps a
pair only where a rank's two chunk modules are of one type (``type(modules[0]) ==
type(modules[1])`` and the type defines ``overlapped_forward_backward``); otherwise (L126-129)
the pair runs its forward, then its backward. The end ranks hold the embedding in one chunk and
the head, the loss and the MTP module in the other; whether DeepSeek's classes for those differ
from their middle stages' is not published. ``pairs_alone`` replays the published order with
the end ranks' pairs priced as their two passes alone (each all-to-all exposed, as the lone
passes have it) and reports what that adds to the step: a bound, not a term.
"""

from __future__ import annotations

from collections.abc import Iterable

TABLE4 = {
    "source": "arXiv:2505.09343 (ISCA 2025) Table 4: DeepSeek-V3 training on 2,048 H800 GPUs, "
              "multi-plane (MPFT) and multi-rail (MRFT) fat-tree networks",
    "MPFT": {"tokens_per_day": 272.80e9, "time_per_step_s": 19.926, "1F": 1.13,
             "bubble": 2.06, "1B": 1.99, "1W": 0.48, "1F1B": 13.95, "opt": 0.29,
             "tflops_noncausal": 432, "tflops_causal": 385,
             "mfu_noncausal": 0.4373, "mfu_causal": 0.3894},
    "MRFT": {"tokens_per_day": 272.52e9, "time_per_step_s": 19.946, "1F": 1.13,
             "bubble": 2.03, "1B": 1.99, "1W": 0.48, "1F1B": 14.00, "opt": 0.31,
             "tflops_noncausal": 432, "tflops_causal": 385,
             "mfu_noncausal": 0.4368, "mfu_causal": 0.3890},
}
"""DeepSeek's measured step (module docstring). The paper itself is not in this project's
stored sources: three cells (tokens per day, time per step, causal MFU, both networks) are as a
stored third-party summary quotes them (bzhng-development/summary-of-some-paper-in-cuda@dae082bf
docs/llm-systems/InsightsintoDeepSeek-V3-ScalingChallengesandReflectionsonHar.md, "Table 4");
the phase and TFLOPS cells were transcribed from the paper's Table 4 without a stored copy to
read them against, so ``table4_checks`` checks them against each other: the phases add up to
the quoted step, the TFLOPS give the quoted MFU and the paper's Table 2 GFLOPs a token. Confirm
them against arXiv:2505.09343 when it can be read."""

PHASES = ("1F", "1B", "1W", "1F1B", "bubble", "opt")
H800_DENSE_16BIT_FLOPS = 989.4e12
"""The H800's dense 16-bit tensor peak (the H100 SXM's; the catalog's ``peak_flops_16bit``),
against which DeepSeek states MFU."""
TABLE2_GFLOPS_PER_TOKEN = 250
"""arXiv:2505.09343 Table 2: DeepSeek-V3's training cost, GFLOPs per token at sequence 4,096."""


def table4_checks(batch: int = 15360, seq: int = 4096, gpus: int = 2048) -> dict:
    """What each column of ``TABLE4`` implies, for the tests and the report: tokens per day
    from the step, the phases' sum, GFLOPs a token from causal TFLOPS, MFU from TFLOPS, and
    GPU-hours per trillion tokens."""
    out = {}
    for net in ("MPFT", "MRFT"):
        t = TABLE4[net]
        step = t["time_per_step_s"]
        tokens = batch * seq
        out[net] = {
            "tokens_per_day": tokens * 86400 / step,
            "phases_sum_s": sum(t[k] for k in PHASES),
            "gflops_per_token_causal": t["tflops_causal"] * 1e12 * gpus * step / tokens / 1e9,
            "mfu_causal": t["tflops_causal"] * 1e12 / H800_DENSE_16BIT_FLOPS,
            "mfu_noncausal": t["tflops_noncausal"] * 1e12 / H800_DENSE_16BIT_FLOPS,
            "gpu_hours_per_T": gpus * step / 3600 / tokens * 1e12,
        }
    return out


def phase_of(label: str) -> str:
    """The table's phase of one compute task of a DualPipe rank, by its label
    (``pipeline.ScheduledPipeline``): a pair ``F .. & B ..``, a lone ``F``, a lone ``B`` or its
    input-gradient half ``I`` (1B), a lone ``W``; anything else (optimizer step, gradient buffer
    reset, gather copies) is the optimizer's."""
    if "&" in label:
        return "1F1B"
    head = label.split(" ", 1)[0]
    return {"F": "1F", "B": "1B", "I": "1B", "W": "1W"}.get(head, "opt")


def rank_phases(tasks, start_s: Iterable[float], end_s: Iterable[float], pp: int,
                iteration_s: float) -> list[dict]:
    """Per rank, the table's phases of a simulated step (seconds, and how many passes of each
    kind): lone passes and pairs by their compute tasks' spans; ``opt`` from the rank's last
    pass to its last task (the gradient reduction, the step, the parameter gather: what a timer
    around the optimizer sees); ``bubble`` the rest of the iteration (waits, and the end of
    the step spent waiting for the slowest rank). The six sum to ``iteration_s`` on every
    rank."""
    start_s, end_s = list(start_s), list(end_s)
    rows = [{"rank": s, **{k: 0.0 for k in PHASES}, "passes": {k: 0 for k in PHASES[:4]}}
            for s in range(pp)]
    last_pass, last_task = [0.0] * pp, [0.0] * pp
    for i, t in enumerate(tasks):
        s, stream = t.stream
        last_task[s] = max(last_task[s], end_s[i])
        k = phase_of(t.label) if stream == "compute" else "opt"
        if k == "opt":
            continue
        rows[s][k] += end_s[i] - start_s[i]
        rows[s]["passes"][k] += 1
        last_pass[s] = max(last_pass[s], end_s[i])
    for s, row in enumerate(rows):
        row["opt"] = last_task[s] - last_pass[s]
        row["bubble"] = iteration_s - row["opt"] - sum(row[k] for k in PHASES[:4])
    return rows


def distance(row: dict, table: dict) -> float:
    """Sum over the six phases of |simulated - measured| seconds."""
    return sum(abs(row[k] - table[k]) for k in PHASES)


def closest_rank(rows: list[dict], table: dict) -> list[tuple[int, float]]:
    """Ranks by their distance to the table, closest first."""
    return sorted(((row["rank"], distance(row, table)) for row in rows), key=lambda x: x[1])


def gap_table(row: dict, table: dict) -> list[dict]:
    """Phase by phase: simulated, measured, simulated - measured."""
    return [{"phase": k, "simulated_s": row[k], "measured_s": table[k],
             "gap_s": row[k] - table[k]} for k in PHASES]


def pairs_alone(sched, m: int, send_s: float, replay, ranks: tuple[int, ...]) -> dict:
    """The replayed step (``replay(sched, m, stage_times=True, send_s)`` -> (makespan, busy
    per rank)) with the pairs of ``ranks`` priced as their forward then their backward alone
    (dualpipe.py L126-129), against the same replay as priced: the makespan it adds."""
    base, busy = replay(sched, m, True, send_s)
    kept_f, kept_b = dict(sched.pair_fwd), dict(sched.pair_bwd)
    try:
        from trainsim.workload.pipeline_schedules import rank_chunks
        for s in ranks:
            for v in rank_chunks("dualpipe", s, sched.pp, 1):
                sched.pair_fwd[v], sched.pair_bwd[v] = sched.fwd[v], sched.bwd[v]
        alone, busy_alone = replay(sched, m, True, send_s)
    finally:
        sched.pair_fwd, sched.pair_bwd = kept_f, kept_b
    return {"ranks": list(ranks), "replay_makespan_s": base, "alone_makespan_s": alone,
            "added_s": alone - base,
            "rank_busy_s": busy, "rank_busy_alone_s": busy_alone}
