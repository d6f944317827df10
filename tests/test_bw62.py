"""benchmarks/bw62_parts.py (which part of a Blackwell row's step carries its deficit) and
benchmarks/device_checks62_bw.py (the prepared GEMM check), without a GPU."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers import load_script

from trainsim import catalog
from trainsim.compute.chain import ChainModel
from trainsim.workload.ops import Elementwise, Gemm

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    return load_script(BENCH / f"{name}.py")


@pytest.fixture(scope="module")
def parts():
    return _load("bw62_parts")


@pytest.fixture(scope="module")
def dc():
    return _load("device_checks62_bw")


def test_need_is_the_slowdown_that_closes_the_row_alone(parts):
    # a row priced 7.4 % fast whose GEMMs are 0.875 of its critical path needs them 8.5 % slower
    assert parts.need(-0.074, 0.875) == pytest.approx(0.0846, abs=1e-4)
    assert parts.need(0.05, 0.5) == pytest.approx(-0.10)
    assert math.isnan(parts.need(-0.1, 0.0))


def test_per_gpu_seconds_per_sequence(parts):
    assert parts.gpu_seconds({"num_gpus": "256", "global_batch_size": "2048"}, 20.0) == 2.5


def test_a_patched_part_slows_only_its_kernels_and_the_undo_restores(parts):
    model = ChainModel(catalog.gpu("b200"))
    gemm, norm = Gemm("fc1", 4096, 26624, 16384), Elementwise("norm", 1e8)
    g0, n0 = model.explain(gemm)[0], model.explain(norm)[0]
    orig = ChainModel.explain
    undo = parts.patch("gemm", 0.25)
    try:
        assert model.explain(gemm)[0] == pytest.approx(g0 * 1.25)
        assert model.explain(norm)[0] == n0
    finally:
        undo()
    assert ChainModel.explain is orig
    undo = parts.patch("memory", 0.25)
    try:
        assert model.explain(gemm)[0] == g0
        assert model.explain(norm)[0] == pytest.approx(n0 * 1.25)
    finally:
        undo()
    assert ChainModel.explain is orig
    with pytest.raises(ValueError):
        parts.patch("gemms")


def test_comm_and_host_patches_undo(parts):
    from trainsim import pricing
    from trainsim.compute import host
    before = pricing.Pricer._comm_time, host.exposed_s
    for part in ("comm:tp", "host"):
        undo = parts.patch(part)
        assert (pricing.Pricer._comm_time, host.exposed_s) != before
        undo()
        assert (pricing.Pricer._comm_time, host.exposed_s) == before


def test_kernel_families_split_gemms_at_the_size_of_4096_cubed(parts):
    row = {"kind": "gemm", "implementation": "cublas", "dtype": "fp8", "m": "4096", "n": "4096",
           "k": "4096"}
    assert parts.family(row) == "gemm/cublas/fp8 large"
    assert parts.family({**row, "k": "4095"}) == "gemm/cublas/fp8 small"
    assert parts.family({"kind": "attention_fwd", "implementation": "cudnn", "dtype": "bf16"}) \
        == "attention_fwd/cudnn/bf16"


def test_kernel_table_reads_every_blackwell_gemm_family(parts):
    root = BENCH.parent
    if not (root / parts.KERNEL_FILES[0]).exists():
        pytest.skip("../shared/validation not beside this checkout")
    table = parts.kernels(root)
    # the one fp8 kernel at a training shape (vLLM #19566, CUTLASS per tensor) is priced fast,
    # cuBLAS's best-shape MAMF / MSMF rows within a few per cent
    assert table["kernels_published: b200-sxm-180gb gemm/vllm/fp8 large"]["signed"] > 0.10
    assert abs(table["kernels_published: b200-sxm-180gb gemm/cublas/bf16 large"]["signed"]) < 0.05
    assert sum(v["n"] for v in table.values()) > 600


def test_the_pairs_name_rows_of_the_check_files(parts):
    for bw_file, bw, hop_file, hop in parts.PAIRS:
        assert parts.read_row(bw_file, bw)["gpu"] in parts.SM100
        assert parts.read_row(hop_file, hop)["gpu"].startswith(("h100", "h200"))
    ids = {i for p in parts.PAIRS for i in (p[1], p[3])}
    assert all(first in ids and second in ids for _, first, second in parts.RATIOS)


@pytest.mark.slow
def test_the_gemms_carry_most_of_the_gb200_405b_step(parts):
    row = parts.read_row("dgxc2505", "dgxc2505-llama3.1-405b-bf16-gb200-128")
    job = ("dgxc2505", row["id"])
    _, base = parts._step(job)
    undo = parts.patch("gemm")
    try:
        _, slow = parts._step(job)
    finally:
        undo()
    assert 0.8 < (slow / base - 1) / parts.STEP < 0.95


def test_device_check_plan_and_passes(dc, capsys):
    assert dc.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in dc.SECTIONS)
    with pytest.raises(SystemExit):
        dc.main(["--dry-run", "--sections", "heat,nope"])
    for _, tokens, out_f, in_f in dc.SITES:
        shapes = [dc.gemm_shape(tokens, out_f, in_f, kind) for kind in ("fwd", "dgrad", "wgrad")]
        assert len({m * n * k for m, n, k in shapes}) == 1
        assert shapes[2][2] == tokens
    assert [dc.fast_accum(k) for k in ("fwd", "dgrad", "wgrad")] == [True, False, False]
    assert set(dc.HOT) <= {s[0] for s in dc.SITES}
    assert dc.tflops(1000, 1000, 1000, 2e-6) == pytest.approx(1000.0)


def test_device_check_sites_are_the_rows_layer_gemms(dc):
    """The sites follow from the presets: Llama 3.1 405B at TP 4 / CP 2, 70B at TP 2, one
    8,192-token sequence a micro-batch."""
    sites = {s[0]: s[1:] for s in dc.SITES}
    for tag, name, tp, cp in (("405b-tp4", "llama3.1-405b", 4, 2), ("70b-tp2", "llama3.1-70b", 2, 1)):
        m = catalog.model(name)
        hd = m.hidden_size // m.num_attention_heads
        tokens = 8192 // cp
        assert sites[f"{tag}-qkv"] == (tokens, (m.num_attention_heads + 2 * m.num_kv_heads) * hd // tp,
                                       m.hidden_size)
        assert sites[f"{tag}-out"] == (tokens, m.hidden_size, m.hidden_size // tp)
        assert sites[f"{tag}-fc1"] == (tokens, 2 * m.ffn_hidden_size // tp, m.hidden_size)
        assert sites[f"{tag}-fc2"] == (tokens, m.hidden_size, m.ffn_hidden_size // tp)
