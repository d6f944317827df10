"""benchmarks/nanotron_gap.py (issue 17 diagnostics for training_nanotron.csv): the nccl-tests
busbw-to-time conversion against the source file's own algbw column, the EFA ratio outside
EFA, and the TP collectives one micro-batch runs, counted by hand."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.validate.training import row_config

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "nanotron_gap.py")


def test_busbw_to_time_matches_the_files_algbw():
    """nccl-tests all_reduce: algbw = busbw x n / (2 (n - 1)); the p5 file gives 78.57 GB/s
    algbw beside 147.32 busbw on 16 GPUs at 32 MiB, and 184.25 beside 356.99 on 32 GPUs."""
    ratios = SCRIPT.efa_ratios()
    for (nodes, mib), algbw in (((2, 32), 78.57), ((4, 8192), 184.25)):
        measured = mib * SCRIPT.MIB / (algbw * 1e9)
        trainsim = SCRIPT.trainsim_all_reduce_s(8 * nodes, mib * SCRIPT.MIB)
        assert ratios[(nodes, mib)] == pytest.approx(measured / trainsim, rel=2e-3)


def test_no_efa_inside_a_node_and_the_nearest_point():
    ratios = SCRIPT.efa_ratios()
    assert SCRIPT.nearest_ratio(ratios, 1, 32 * SCRIPT.MIB) == 1.0
    assert SCRIPT.nearest_ratio(ratios, 2, 30e6) == ratios[(2, 32)]
    assert SCRIPT.nearest_ratio(ratios, 64, 1e10) == ratios[(32, 8192)]


def test_tp_collectives_of_one_microbatch_by_hand():
    """8B on TP 16, PP 1, sequence parallel: per layer 2 all-gathers and 2 reduce-scatters
    forward, and backward their conjugates plus the two re-gathers (10); the embedding's
    reduce-scatter and its backward all-gather; the head's all-gather, the cross-entropy
    all-reduce, the head's re-gather and reduce-scatter: 32 x 10 + 2 + 4 = 326."""
    with (ROOT / "benchmarks" / "training_nanotron.csv").open(newline="") as fh:
        row = next(r for r in csv.DictReader(fh)
                   if r["id"] == "nt-draw-8b-n2-dp1-tp16-pp1-mbs1-acc256-z0")
    ops = SCRIPT.tp_ops_per_microbatch(row_config(row), 0)
    assert len(ops) == 326
    big = [op for op in ops if op.kind != "all_reduce"]
    assert all(op.bytes == 4096 * 4096 * 2 for op in big)  # one sequence of h in bf16


def test_errors_grouped_by_axis():
    """Two rows: a 1B DP 8 on one node (GradAcc 256 x 1 / (2 x 8) = 16) and an 80B TP 4 PP 16
    on 8 nodes (DP 1, GradAcc 256): each axis holds each row's error under its own value."""
    a = {"id": "nt-best-1b-n1", "num_gpus": "8", "tp": "1", "pp": "1", "micro_batch_size": "2",
         "global_batch_size": "256", "zero_stage": "0"}
    b = {"id": "nt-best-80b-n8", "num_gpus": "64", "tp": "4", "pp": "16",
         "micro_batch_size": "1", "global_batch_size": "256", "zero_stage": "1"}
    axes = SCRIPT.by_axis([(a, -2.0), (b, -12.0), (dict(a, id="nt-best-1b-n2"), -4.0)])
    assert axes["model"] == [("1b", -3.0, 2), ("80b", -12.0, 1)]
    assert axes["nodes"] == [(1, -3.0, 2), (8, -12.0, 1)]
    assert axes["dp"] == [(1, -12.0, 1), (8, -3.0, 2)]
    assert axes["acc"] == [(16, -3.0, 2), (256, -12.0, 1)]
    assert axes["zero"] == [(0, -3.0, 2), (1, -12.0, 1)]


def test_error_share_by_hand():
    """Three rows, |errors| 10, 30, 60 (sum 100): class a holds 10 + 30 = 40 % at MAPE 20."""
    out = SCRIPT.error_share([("a", -10.0), ("a", 30.0), ("b", -60.0)])
    assert out["a"] == pytest.approx((0.4, 20.0, 2))
    assert out["b"] == pytest.approx((0.6, 60.0, 1))


def test_efa_ring_hop_what_if_moves_a_tp_over_nodes_row_and_restores_the_hop():
    """TP 16 over two nodes runs its all-gathers and reduce-scatters as rings: a 400 us EFA
    ring hop (main: 110 us above InfiniBand's) makes the 8B row slower; the module's hop
    function is back afterwards."""
    from trainsim.collectives import nccl

    before = nccl._hop_us
    with (ROOT / "benchmarks" / "training_nanotron.csv").open(newline="") as fh:
        row = next(r for r in csv.DictReader(fh)
                   if r["id"] == "nt-draw-8b-n2-dp1-tp16-pp1-mbs1-acc256-z0")
    [(rid, base, alt)] = SCRIPT.efa_ring_hop_what_if([row], 400.0)
    assert rid == row["id"] and alt > base + 20
    assert nccl._hop_us is before
