"""benchmarks/row_kinds.py: a row's predicted time by kind of work."""

from pathlib import Path

import pytest
from helpers import load_script

from trainsim.pricing import HOST
from trainsim.workload.ops import Attention, Comm, Elementwise, Gemm

rk = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "row_kinds.py")


def test_kind_of_files_each_segment_by_the_op_behind_it():
    gemm = Gemm("fc1", m=8, n=8, k=8, dtype="bf16")
    assert rk.kind_of("compute", gemm) == "gemm"
    assert rk.kind_of("compute", Gemm("fc1", m=8, n=8, k=8, dtype="bf16", batch=4,
                                      grouped="multi_stream")) == "grouped_gemm"
    # a GEMM chunked by the TP overlap is still a dense GEMM
    assert rk.kind_of("compute", Gemm("fc1", m=8, n=8, k=8, dtype="bf16", batch=4,
                                      grouped="userbuffers")) == "gemm"
    assert rk.kind_of("compute", Attention("attn_core", batch=1, heads=1, kv_heads=1, q_len=8, kv_len=8,
                                           head_dim=8)) == "attention"
    assert rk.kind_of("compute", Elementwise("norm", bytes=1.0)) == "memory_bound"
    assert rk.kind_of("tp_comm", Comm("rs", "reduce_scatter", 1.0, "tp")) == "exposed_tp"
    assert rk.kind_of(HOST, gemm) == "host"  # the GPU waiting for the host before the GEMM


@pytest.fixture(scope="module")
def llama8b():
    rows = rk._rows(rk.PUBLIC, False, ["bridge2511-llama3-8b-8"])
    return rk.decompose(rows[0])


def test_the_kinds_add_up_to_the_prediction(llama8b):
    kinds = llama8b["kinds"]
    assert sum(kinds.values()) == pytest.approx(llama8b["predicted"])
    # one stage, DDP-free single node: the steady part is nearly all of it, GEMMs first
    assert abs(kinds["rest"]) < 0.05 * llama8b["predicted"]
    assert max(kinds, key=kinds.get) == "gemm"
    assert llama8b["micro_batches"] == 128 // 8


def test_table_gives_each_kind_the_growth_that_closes_the_gap(llama8b):
    line = rk.table([llama8b])[0]
    gap = llama8b["measured"] - llama8b["predicted"]
    gemm = llama8b["kinds"]["gemm"]
    assert f"gemm {gemm:.2f} ({100 * gap / gemm:+.0f} %)" in line
    assert line.startswith("bridge2511-llama3-8b-8: measured 9.070 s")


def test_unknown_ids_are_refused():
    with pytest.raises(SystemExit, match="not in"):
        rk._rows(rk.PUBLIC, False, ["no-such-row"])
