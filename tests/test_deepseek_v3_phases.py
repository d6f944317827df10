"""benchmarks/deepseek_v3_phases.py: DeepSeek's measured DeepSeek-V3 step (arXiv:2505.09343
Table 4) checked against itself and the technical report, DualPipe's pass counts per rank by
hand from deepseek-ai/DualPipe's ``step``, and the simulated step sorted into the table's
phases."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

import trainsim
from trainsim.workload.pipeline_schedules import Overlapped, dualpipe

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
try:
    import deepseek_v3_phases as ph
finally:
    sys.path.remove(str(BENCH))

TINY = {"name": "tinymoe", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
        "num_kv_heads": 4, "vocab_size": 32000, "activation": "swiglu",
        "position_embedding": "rope", "normalization": "rmsnorm", "tied_embeddings": False,
        "add_bias_linear": False, "num_experts": 8, "moe_router_topk": 2,
        "moe_ffn_hidden_size": 1024, "moe_first_dense_layers": 2}


def test_table4_cells_agree_with_each_other_and_with_the_report():
    """Each column of Table 4 is one measurement seen several ways: 15,360 x 4,096 tokens a
    step over 86,400 s a day at 19.926 s (19.946 s) is 272.80B (272.52B) tokens a day; the six
    phases add up to the step within 0.03 s; causal TFLOPS x 2,048 GPUs x the step over the
    step's tokens is the paper's Table 2 figure, 250 GFLOPs a token; MFU is TFLOPS over the
    H800's 989.4 dense 16-bit TFLOPS (the stated MFU within 0.1 point: the TFLOPS cells are
    rounded); and 19.926 s is 180.2K GPU-hours per trillion tokens, the technical report's
    180K (arXiv:2412.19437 §1), so 2.664M is that steady step times 14.8T tokens."""
    checks = ph.table4_checks()
    for net in ("MPFT", "MRFT"):
        t, c = ph.TABLE4[net], checks[net]
        assert c["tokens_per_day"] == pytest.approx(t["tokens_per_day"], rel=2e-4)
        assert c["phases_sum_s"] == pytest.approx(t["time_per_step_s"], abs=0.03)
        assert c["gflops_per_token_causal"] == pytest.approx(ph.TABLE2_GFLOPS_PER_TOKEN, rel=2e-3)
        assert c["mfu_causal"] == pytest.approx(t["mfu_causal"], abs=1e-3)
        assert c["mfu_noncausal"] == pytest.approx(t["mfu_noncausal"], abs=1e-3)
        assert round(c["gpu_hours_per_T"], -3) == 180e3
    assert checks["MPFT"]["gpu_hours_per_T"] * 14.8 == pytest.approx(2.664e6, rel=2e-3)


def _counts(stage: int, pp: int, m: int) -> Counter:
    out: Counter = Counter()
    for step in dualpipe(stage, pp, m):
        out["pair" if isinstance(step, Overlapped) else step.kind] += 1
    return out


def test_dualpipe_pass_counts_of_rank_0_and_a_middle_rank_by_hand():
    """deepseek-ai/DualPipe@3da1bbe dualpipe.py ``step`` with 16 ranks and 120 micro-batches
    (half_num_chunks 60). Rank 0 (half_rank 0): step 1 14 F; step 2 one F0, F1; step 3 seven
    (B zero-bubble, W, F); step 4 45 x two pairs; step 5 seven (B, pair); step 6 B1 whole, B0
    zero-bubble; step 7 seven (W, B zero-bubble); step 8 one W: 23 F, 8 B, 15 I, 15 W, 97
    pairs. Rank 7 (the middle, half_rank 7): step 2 eight F0, F1; step 4 52 rounds, the first
    a lone F0 and B1 then a pair, the rest two pairs; step 6 eight (B1, B0), zero-bubble from
    the fifth; step 8 eight W: 17 F, 9 B, 8 I, 8 W, 103 pairs. The simulated step places these
    orders (``rank_phases`` counts them per rank)."""
    assert _counts(0, 16, 120) == Counter({"F": 23, "B": 8, "I": 15, "W": 15, "pair": 97})
    assert _counts(15, 16, 120) == _counts(0, 16, 120)
    assert _counts(7, 16, 120) == Counter({"F": 17, "B": 9, "I": 8, "W": 8, "pair": 103})


def test_phase_of_a_task_label():
    assert ph.phase_of("F mb3 c0 & B mb1 c1") == "1F1B"
    assert [ph.phase_of(x) for x in ("F mb0 c0", "B mb2 c1", "I mb4 c0", "W mb4 c0")] == \
        ["1F", "1B", "1B", "1W"]
    assert ph.phase_of("optimizer step") == ph.phase_of("zero_grad_buffer") == "opt"


@pytest.fixture(scope="module")
def tiny():
    cfg = trainsim.run_config_from_dict({
        "model": TINY,
        "parallel": {"tp": 1, "pp": 4, "ep": 2, "pipeline_schedule": "dualpipe",
                     "moe_token_dispatcher_type": "deepep",
                     "pipeline_model_parallel_layout": "Ett|tt|tt|ttL"},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 4096,
                     "dtype": "bf16"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    return cfg, trainsim.simulate(cfg, keep_timeline=True)


def test_every_ranks_phases_add_up_to_the_simulated_step(tiny):
    """On a small DualPipe run (4 ranks, 8 micro-batches) each rank's six phases sum to the
    iteration, none is negative, and the passes counted are its DualPipe order's."""
    cfg, r = tiny
    tl = r.timeline
    rows = ph.rank_phases(tl.tasks, tl.start_s, tl.end_s, 4, r.iteration_time_s)
    for s, row in enumerate(rows):
        assert sum(row[k] for k in ph.PHASES) == pytest.approx(r.iteration_time_s, rel=1e-12)
        assert min(row[k] for k in ph.PHASES) >= 0.0
        n = _counts(s, 4, cfg.schedule_microbatches)
        assert row["passes"] == {"1F": n["F"], "1B": n["B"] + n["I"], "1W": n["W"],
                                 "1F1B": n["pair"]}
    assert rows[0] == {**rows[3], "rank": 0}  # the two ends mirror each other
    order = ph.closest_rank(rows, {**rows[1], "rank": 9})
    assert order[0] == (1, 0.0) and {k for k, _ in order} == {0, 1, 2, 3}


def test_pairs_alone_adds_what_the_pairs_hid(tiny):
    """Pricing the end ranks' pairs as their two passes alone adds to each end rank's busy
    time exactly, pair by pair of its order, the lone passes less the paired ones (the
    all-to-alls the pair hid, less what the pair's own pricing charges), and leaves the middle
    ranks' busy time and the pricer's pairs as they were."""
    sys.path.insert(0, str(BENCH))
    try:
        import deepseek_v3 as d
    finally:
        sys.path.remove(str(BENCH))
    from trainsim.pipeline import ScheduledPipeline
    from trainsim.pricing import Pricer
    from trainsim.simulator import _TaskGraph
    from trainsim.workload.pipeline_schedules import virtual_stage

    cfg, _ = tiny
    sched = ScheduledPipeline(_TaskGraph(cfg, Pricer(cfg), None))
    kept = dict(sched.pair_fwd)
    m = cfg.schedule_microbatches
    w = ph.pairs_alone(sched, m, sched.g.send.duration_s, d.replay, (0, 3))
    assert sched.pair_fwd == kept
    extra = 0.0
    for step in dualpipe(0, 4, m):
        if isinstance(step, Overlapped):
            vf = virtual_stage("dualpipe", 0, step.f.chunk, 4)
            vb = virtual_stage("dualpipe", 0, step.b.chunk, 4)
            extra += sched.fwd[vf].duration_s + sched.bwd[vb].duration_s \
                - sched.pair_fwd[vf].duration_s - sched.pair_bwd[vb].duration_s
    assert extra != 0.0
    for s in (0, 3):
        assert w["rank_busy_alone_s"][s] - w["rank_busy_s"][s] == pytest.approx(extra, rel=1e-9)
    for s in (1, 2):
        assert w["rank_busy_alone_s"][s] == pytest.approx(w["rank_busy_s"][s], rel=1e-12)


@pytest.mark.slow
def test_deepseek_v3_step_against_table4():
    """The example's DualPipe step (about 3 s) against DeepSeek's measured one: ranks 0 and 15
    hold the largest bubble and lone weight-gradient phases, the ones nearest the table's 2.06 s
    and 0.48 s, and there the lone passes lie within 10 %; with the kernels DeepSeek's trace
    names (FA3, fp8 GEMMs on 112 SMs: dsv3k43) the pairs are priced 12 % short and the bubble,
    which grows with the passes, 27 % (1.51 s; 2.14 s with the FA2 stand-in on all SMs)."""
    sys.path.insert(0, str(BENCH))
    try:
        import deepseek_v3 as d
    finally:
        sys.path.remove(str(BENCH))
    cfg = trainsim.load_run_config(d.CONFIG, d.SETTINGS["dualpipe"])
    r = trainsim.simulate(cfg, keep_timeline=True)
    q = d.phases(cfg, r)
    t = q["measured"]
    rows = q["ranks"]
    for k in ("bubble", "1W"):
        top = max(row[k] for row in rows)
        assert [row["rank"] for row in rows if row[k] == pytest.approx(top)] == [0, 15]
    for k in ("1F", "1B", "1W"):
        assert rows[0][k] == pytest.approx(t[k], rel=0.10)
    assert rows[0]["1F1B"] < t["1F1B"] and rows[0]["bubble"] < t["bubble"]
    assert q["pairs_alone"]["added_s"] > 0.0
