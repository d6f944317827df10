"""The MoE un-permute as each implementation runs it: PyTorch's ``index_add_`` on bf16 priced at
the L2's atomic rate (``compute.atomics``, fitted to the H200's run6 profile by
``benchmarks/atomics54_fit.py``), and the eager experts' styles (``workload.moe_experts``)
part by part against the profiler's kernels of the same run."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu
from trainsim.compute import RooflineModel, atomics
from trainsim.errors import ConfigError
from trainsim.validate.kernels import _model, kernel_ops
from trainsim.workload import moe_experts
from trainsim.workload.ops import Elementwise, Gemm

ROOT = Path(__file__).resolve().parents[1]
RUN6 = ROOT / "benchmarks" / "h200_2026-11-28_s54" / "run6"
FIT = load_script(ROOT / "benchmarks" / "atomics54_fit.py")


def test_the_constant_is_the_one_its_script_derives_from_run6():
    value, rows = FIT.derive()
    assert len(rows) == 7
    assert round(value, 3) == atomics.ATOMIC_ADDS_PER_SM_CLOCK


def test_the_atomic_rate_holds_across_hidden_size_top_k_and_rows():
    """One constant for every case: hidden 2,048-7,168, top-2 to top-10, 16k-328k rows, each
    within 6 % of the median (113-124 G adds/s on the H200)."""
    value, rows = FIT.derive()
    for r in rows:
        assert r["per_sm_clock"] == pytest.approx(value, rel=0.06), r["case"]


def test_the_rate_follows_sms_and_clock():
    h100, h200, b200 = gpu("h100-sxm-80gb"), gpu("h200-sxm-141gb"), gpu("b200-sxm-180gb")
    assert atomics.atomic_rate(h100) == atomics.atomic_rate(h200)  # one GH100 at 1980 MHz
    assert atomics.atomic_rate(h200) == pytest.approx(118.9e9, rel=0.01)
    assert atomics.atomic_rate(b200) == pytest.approx(
        atomics.atomic_rate(h200) * 148 * 1965 / (132 * 1980))
    unclocked = dataclasses.replace(h200, max_sm_clock_mhz=None)
    assert atomics.atomic_rate(unclocked) == atomics.atomic_rate(h200)


def test_atomic_adds_add_their_kernel_to_the_ops_bytes():
    """An op's atomic kernel costs its adds at the atomic rate, on top of its other kernels'
    bytes; an op without adds is priced as before."""
    h200 = gpu("h200-sxm-141gb")
    model = RooflineModel(h200)
    plain = Elementwise("x", bytes=2e9)
    adds = dataclasses.replace(plain, atomic_adds=5e8)
    assert model.time(adds) - model.time(plain) == pytest.approx(5e8 / atomics.atomic_rate(h200))
    assert model.time(adds) > 4 * model.time(plain)


def _run6() -> tuple[dict[str, dict], dict[str, dict]]:
    rows = {r["id"].split("-moe-", 1)[1]: r for r in csv.DictReader((RUN6 / "kernels.csv").open())}
    cases = json.loads((RUN6 / "device_checks54.json").read_text())["sections"]["moe_block"]["cases"]
    return rows, cases


def _profiled(kernels: dict[str, float], *keys: str) -> float:
    return sum(t for name, t in kernels.items() if any(k in name for k in keys)) * 1e-6


@pytest.mark.parametrize("case", ["qwen3-30b-a3b-t32768", "veomni-e512-t32768",
                                  "deepseek-v3-ep8-t8192", "gpt-oss-120b-ep4-t8192"])
def test_run6_parts_outside_the_gemms_match_the_profiler(case):
    """The harness's gather, SwiGLU on the chunked halves with the weights' broadcast product,
    zero fill and ``index_add_``, each priced part against its profiled kernels (H200 run6):
    the gather and the element-wise kernels are not fitted here (``roofline`` and
    ``SCALAR_BYTES_PER_SM_CLOCK``), the atomics are (within 6 % of every case)."""
    rows, cases = _run6()
    row, kern = rows[case], cases[case]["kernels_us"]
    ops, _ = kernel_ops(row)
    model = _model(row["gpu"], "auto", False, False)
    t = {op.name: model.explain(op)[0] for op in ops}
    assert t["permute"] == pytest.approx(_profiled(kern, "vectorized_gather"), rel=0.15)
    elementwise = _profiled(kern, "elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast")
    assert t["expert_act"] + t["expert_probs_mul"] == pytest.approx(elementwise, rel=0.15)
    assert t["unpermute"] == pytest.approx(_profiled(kern, "indexFuncLargeIndex<c10::BFloat16"),
                                           rel=0.06)
    assert t["unpermute.zeros"] == pytest.approx(_profiled(kern, "FillFunctor<c10::BFloat16"),
                                                 rel=0.25)


def test_index_add_rows_run_one_gated_gemm_and_no_padding():
    rows, _ = _run6()
    ops, flops = kernel_ops(rows["qwen3-30b-a3b-t32768"])
    names = [op.name for op in ops]
    assert "expert_pad_permute" not in names and "expert_fc3" not in names
    assert [g.n for g in ops if isinstance(g, Gemm)] == [2 * 768, 2048]
    assert flops == pytest.approx(2 * 32768 * 8 * 3 * 2048 * 768)
    unpermute = next(op for op in ops if op.name == "unpermute")
    assert unpermute.atomic_adds == 32768 * 8 * 2048


def test_an_unknown_experts_style_is_refused():
    with pytest.raises(ConfigError, match="unknown MoE experts style"):
        moe_experts.check_style("loop")
