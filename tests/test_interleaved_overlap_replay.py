"""benchmarks/interleaved_overlap.py: Megatron's interleaved 1F1B with overlapped p2p
(sail-sg zero-bubble arxiv f68d3879 schedules.py), replayed op by op. The transcription runs
every pass once and matches every send with a receive; with free sends it gives the
interleaved schedule's ideal span by hand; priced sends lengthen only the fill and drain, by one send per virtual-stage boundary."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import load_script

replay_mod = load_script(Path(__file__).resolve().parents[1] / "benchmarks"
                         / "interleaved_overlap.py")

SHAPES = [(4, 2, 4), (4, 3, 8), (8, 3, 24), (8, 4, 16)]  # (p, v, m), m a multiple of p


@pytest.mark.parametrize("p,v,m", SHAPES)
def test_every_rank_runs_each_forward_and_backward_once(p, v, m):
    for s in range(p):
        prog = replay_mod.host_program(s, p, v, m)
        passes = Counter((kind, k) for tag, kind, k in (i for i in prog if i[0] == "C"))
        assert passes == Counter({(kind, k): 1 for kind in "FB" for k in range(m * v)})


@pytest.mark.parametrize("p,v,m", SHAPES)
def test_sends_and_receives_pair_up_per_directed_link(p, v, m):
    sent, received = Counter(), Counter()
    for s in range(p):
        for item in replay_mod.host_program(s, p, v, m):
            if item[0] != "P":
                continue
            for kind, side in item[1]:
                peer = (s + 1) % p if side == "next" else (s - 1) % p
                (sent if kind == "send" else received)[
                    (s, peer) if kind == "send" else (peer, s)] += 1
    assert sent == received
    # one activation per virtual-stage boundary forward and one gradient back, per micro-batch
    assert sum(sent.values()) == 2 * m * (p * v - 1)


@pytest.mark.parametrize("one_queue,rendezvous", [(True, True), (False, False), (True, False)])
def test_free_sends_give_the_interleaved_ideal(one_queue, rendezvous):
    # Narayanan et al. 2021 §2.2: m v (f + b) of work and a bubble of (p - 1)(f + b) per chunk
    p, v, m, f, b = 8, 3, 24, 4e-3, 7e-3
    r = replay_mod.replay(p, v, m, [[f] * v] * p, [[b] * v] * p, 0.0, one_queue, rendezvous)
    assert r.span_s == pytest.approx(m * v * (f + b) + (p - 1) * (f + b))


def test_overlapped_sends_cost_the_fill_and_drain_only():
    p, v, f, b, send = 8, 3, 4e-3, 7e-3, 0.5e-3
    extra = []
    for m in (16, 32, 64):
        free = replay_mod.replay(p, v, m, [[f] * v] * p, [[b] * v] * p, 0.0).span_s
        priced = replay_mod.replay(p, v, m, [[f] * v] * p, [[b] * v] * p, send).span_s
        extra.append(priced - free)
    assert extra[0] > 0
    assert extra[1] == pytest.approx(extra[0]) and extra[2] == pytest.approx(extra[0])
    # one send per virtual-stage boundary on the way in (the first forward) and on the way
    # out (the last backward), whatever m: not the 2 v m a stage's blocking sends would add
    assert extra[0] == pytest.approx(2 * (p * v - 1) * send)


def test_zero_bubble_overlaps_only_the_interleaved_rows_when_asked():
    # the arxiv script left Megatron's default for interleaved runs; 1F1B and the zero-bubble
    # schedules exchange batched whatever the flag (arguments.py 186, zb_schedules.py)
    import csv

    zb = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "zero_bubble.py")
    with zb.ROWS.open() as f:
        rows = {r["schedule"]: r for r in csv.DictReader(f) if r["model"] == "1.5B"}
    assert not any(zb.config(r).parallel.overlap_p2p_comm for r in rows.values())
    assert {s for s, r in rows.items() if zb.config(r, True).parallel.overlap_p2p_comm} == {"1F1B-I"}


def test_the_excess_line_of_simulated_iterations_recovers_a_line_built_into_them():
    """zero_bubble.py's trainsim-side excess: 1F1B-I iterations made as 1F1B's times the ideal
    bubble ratio plus a + b x (x the extra passes) give back (a, b); the published side keeps
    its figures (1.5B: 0.47 ms per extra pass + 37 ms)."""
    import csv

    zb = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "zero_bubble.py")
    with zb.ROWS.open() as f:
        rows = [r for r in csv.DictReader(f)
                if r["model"] == "1.5B" and r["schedule"] in ("1F1B", "1F1B-I")]
    a, b, res = 0.040, 0.0005, []
    for r in rows:
        m, p = int(r["num_microbatches"]), int(r["num_gpus"])
        v = (int(r["num_layers"]) + 2) // p
        t1 = 1.0 + 0.05 * m
        t = t1 if r["schedule"] == "1F1B" else (
            t1 * (m + (p - 1) / v) / (m + p - 1) + a + b * 2 * (v - 1) * m)
        res.append({"model": r["model"], "num_microbatches": m, "schedule": r["schedule"],
                    "iteration_s": t})
    fixed, per_pass = zb.predicted_excess_per_pass(rows, res)["1.5B"]
    assert fixed == pytest.approx(a) and per_pass == pytest.approx(b)
    fixed, per_pass = zb.excess_per_pass(rows)["1.5B"]
    assert round(per_pass * 1e3, 2) == 0.47 and round(fixed * 1e3) == 37


def test_the_miss_lines_recover_a_fixed_and_a_per_micro_batch_miss():
    """zero_bubble.py's ``miss_lines``: iterations made as the published one plus a + b m give
    back (a, b) for each schedule (the fixed part of the miss, which the 30th session found
    shared by 1F1B-I, ZB-1p and ZB-2p at 8 and 16 stages, apart from the per-micro-batch one)."""
    import csv

    zb = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "zero_bubble.py")
    with zb.ROWS.open() as f:
        rows = [r for r in csv.DictReader(f) if r["model"] == "6.2B"]
    built = {"1F1B": (0.050, 0.002), "1F1B-I": (-0.020, 0.003), "ZB-1p": (0.0, -0.001),
             "ZB-2p": (0.010, 0.0)}
    res = []
    for r in rows:
        m, a_b = int(r["num_microbatches"]), built[r["schedule"]]
        rate = float(r["samples_per_gpu_per_s"])
        published = int(r["micro_batch_size"]) * m / int(r["num_gpus"]) / rate
        res.append({"model": r["model"], "num_microbatches": m, "schedule": r["schedule"],
                    "published": rate, "iteration_s": published + a_b[0] + a_b[1] * m})
    lines = zb.miss_lines(rows, res)["6.2B"]
    for sched, (a, b) in built.items():
        assert lines[sched] == (pytest.approx(a, abs=1e-12), pytest.approx(b, abs=1e-12))
