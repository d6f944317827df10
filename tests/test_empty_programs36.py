"""A worst-case-grid Triton grouped GEMM (``triton_max_m``, VeOmni's ``group_gemm_same_nk``)
priced with the empty-program cost the H200 probe measured (36th session, moe36)."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import grouped
from trainsim.compute.roofline import RooflineModel
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.kernels import predict_kernel_row
from trainsim.validate.vocab import grouped_impl_of
from trainsim.workload.ops import Gemm

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "benchmarks" / "h200_2026-11-27" / "empty_program_probe.json"
VEOMNI_TRITON = ("veomni460-h100-moe-s32768-h2048-f768-e128-k8-triton",
                 "veomni460-h100-moe-s32768-h2048-f512-e512-k10-triton")


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location(
        "empty_program_check", ROOT / "benchmarks" / "empty_program_check.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["empty_program_check"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("empty_program_check", None)


def _fc1_128e(impl: str = "triton_max_m") -> Gemm:
    """VeOmni #460's 128-expert shape: 32768 tokens x top-8 = 262144 routed rows, 2048 an
    expert; gate and up (ffn 768 each) as one N = 1536 GEMM over K = hidden 2048."""
    return Gemm("expert_fc1", 2048, 1536, 2048, "bf16", batch=128, grouped=impl, ragged=True)


def test_the_empty_program_cost_is_the_committed_probe_measurement(check):
    """The constant is the JSON's per-SM figure, and the JSON's figure is its own launches'
    least-squares slope times the SM count it recorded."""
    probe = json.loads(PROBE.read_text())
    assert probe["device"] == "NVIDIA H200" and probe["sms"] == 132
    assert grouped.EMPTY_PROGRAM_SM_S == pytest.approx(probe["empty_program_s_per_sm"], rel=2e-3)
    slope, intercept = check.fit_line(probe)
    assert slope == pytest.approx(probe["empty_program_s"], rel=1e-9)
    assert slope * probe["sms"] == pytest.approx(probe["empty_program_s_per_sm"], rel=1e-9)
    assert 0 < intercept < 1e-4  # one launch's fixed time, tens of microseconds
    # the probe ran the kernel at VeOmni's fallback tiles, the ones the grid is counted in
    assert (probe["config"]["BM"], probe["config"]["BN"]) == grouped.MAX_M_GRID_BLOCK


def test_the_h100_run_measures_the_same_per_sm_cost(check):
    """The same probe on one H100 SXM (same GH100 SMs, 132 of them, same 1980 MHz clock):
    its slope is the H200's within 1 %, so the cost carries between the two boards."""
    h100 = check.load(check.PROBES[1])
    assert h100["device"].startswith("NVIDIA H100") and h100["sms"] == 132
    slope, _ = check.fit_line(h100)
    assert slope * h100["sms"] == pytest.approx(grouped.EMPTY_PROGRAM_SM_S, rel=0.01)


def test_empty_programs_by_hand():
    """cdiv(262144, 128) = 2048 row blocks x cdiv(1536, 128) = 12 column blocks x 128 experts
    launched; real: 2048 / 128 + 0.5 = 16.5 row blocks an expert (dropless, last half full)."""
    launched = 2048 * 12 * 128
    real = 16.5 * 12 * 128
    assert grouped.empty_programs(_fc1_128e()) == pytest.approx(launched - real)
    assert grouped.empty_programs(_fc1_128e("triton")) == 0.0
    equal = replace(_fc1_128e(), ragged=False)  # equal groups: 16 whole row blocks each
    assert grouped.empty_programs(equal) == 2048 * 12 * 128 - 16 * 12 * 128


def test_a_veomni_grid_gemm_costs_its_empty_programs_more_than_its_real_tiles():
    """H100 (132 SMs): 3,120,384 empty programs x 79.5 ns / 132 = 1.879 ms on top of the same
    GEMM over its real tiles (a Triton kernel's rate), nothing else changed."""
    h100 = catalog_gpu("h100-sxm-80gb")
    model = RooflineModel(h100)
    hand = (2048 * 12 * 128 - 16.5 * 12 * 128) * 7.95e-8 / 132
    assert hand == pytest.approx(1.8793e-3, rel=1e-4)
    extra = model.time(_fc1_128e()) - model.time(_fc1_128e("triton"))
    assert extra == pytest.approx(hand, rel=1e-6)
    assert grouped.empty_program_s(h100, _fc1_128e()) == pytest.approx(hand, rel=1e-9)
    # per SM: a GPU with half the SMs pays twice the time for the same programs
    half = replace(h100, num_sms=66)
    assert grouped.empty_program_s(half, _fc1_128e()) == pytest.approx(2 * hand, rel=1e-9)


def test_veomni_names_the_worst_case_grid_kernel_and_its_wgrad_is_full_grid():
    """VeOmni's input gradients run ``group_gemm_same_nk`` over ``max_M`` again, its weight
    gradients ``group_gemm_same_mn`` over each expert's full output."""
    from trainsim.config import (
        ClusterConfig,
        ModelConfig,
        ParallelConfig,
        RunConfig,
        TrainingConfig,
    )
    from trainsim.workload.layers import backward_of
    from trainsim.workload.shard import shard_of

    assert grouped_impl_of("veomni") == "triton_max_m"
    model = ModelConfig(name="moe", hidden_size=2048, num_layers=1, num_attention_heads=16,
                        ffn_hidden_size=768, activation="swiglu", num_experts=128,
                        moe_router_topk=8, moe_ffn_hidden_size=768)
    cfg = RunConfig(model=model, parallel=ParallelConfig(),
                    training=TrainingConfig(global_batch_size=1, micro_batch_size=1,
                                            seq_length=4096, dtype="bf16"),
                    cluster=ClusterConfig(gpu=catalog_gpu("h100-sxm-80gb"), num_gpus=1,
                                          gpus_per_node=1))
    bwd = backward_of([_fc1_128e()], shard_of(cfg))
    impls = {op.name: op.grouped for op in bwd if isinstance(op, Gemm)}
    assert impls["expert_fc1.dgrad"] == "triton_max_m"
    assert impls["expert_fc1.wgrad"] == "triton"


def test_the_probe_measures_less_than_the_slope_adds_in_place(check):
    """Part (2): VeOmni's grid minus the real-block grid is 0.58-0.96 of its empty programs
    times the slope (they partly share the SMs with the real tiles); priced additively."""
    probe = json.loads(PROBE.read_text())
    slope, _ = check.fit_line(probe)
    ratios = [(g["seconds"] - r["seconds"]) / (check.empty_of(g, r) * slope)
              for g, r in check.pairs(probe)]
    assert len(ratios) == 6
    assert all(0.5 < x < 1.0 for x in ratios)
    h100 = check.load(check.PROBES[1])
    slope100, _ = check.fit_line(h100)
    ratios = [(g["seconds"] - r["seconds"]) / (check.empty_of(g, r) * slope100)
              for g, r in check.pairs(h100)]
    assert len(ratios) == 6 and all(0.2 < x < 1.0 for x in ratios)
    for g, r in check.pairs(probe):  # the equal-group real grid is the launch's row blocks
        assert r["programs"] == math.ceil(r["max_m"] / 128) * math.ceil(r["n"] / 128) * r["groups"]


def test_veomni_triton_rows_named_veomni_by_erratum_fall_within_the_cell_target():
    """Held-out source (fit_kernels.py split): nothing was fitted to these rows."""
    with (ROOT / "benchmarks" / "kernels_errata.csv").open(newline="") as f:
        fixes = {(e["id"], e["field"]): e for e in csv.DictReader(f)}
    with (BUNDLED_DIR / "kernels_published.csv").open(newline="") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    errors = []
    for rid in VEOMNI_TRITON:
        fix = fixes[(rid, "implementation")]
        assert (fix["file_value"], fix["corrected_value"]) == ("triton", "veomni")
        row = dict(rows[rid], implementation="veomni")
        as_published = predict_kernel_row(rows[rid])
        res = predict_kernel_row(row)
        assert res.predicted > as_published.predicted * 1.5
        errors.append(abs(res.predicted / res.measured - 1.0))
    assert max(errors) < 0.15
