"""A kernel row timed by summing the kernels' own durations (the PyTorch profiler's Kineto
events, ``device_time_total``) can be priced without the launch gaps between its kernels
(``validate.kernels.UNTIMED_GAPS`` = ``PROFILER_SUMMED``, ``roofline.kernel_launches``); not
shipped: the validator keeps every gap unless the reading is switched on."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu
from trainsim.compute import roofline
from trainsim.validate import kernels as vk
from trainsim.workload.ops import Attention, Elementwise, Gemm

OPS = [
    Gemm("dense", 4096, 4096, 4096),
    Gemm("experts", 512, 1536, 2048, batch=16, grouped="loop"),
    Gemm("experts", 512, 1536, 2048, batch=16, grouped="multi_stream"),
    Attention("fa", 2, 32, 8, 2048, 2048, 128),
    Attention("eager", 2, 16, 16, 1024, 1024, 64, impl="eager", dropout=True),
    Attention("eager-bwd", 2, 16, 16, 1024, 1024, 64, impl="eager", backward=True),
    Attention("unfused", 2, 16, 16, 1024, 1024, 64, impl="unfused"),
    Elementwise("norm", 1e8, kernels=5),
]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_kernel_launches_counts_every_launch_the_roofline_charges(op, monkeypatch):
    h100 = gpu("h100-sxm-80gb")
    with_gaps = roofline.RooflineModel(h100).time(op)
    monkeypatch.setattr(roofline, "LAUNCH_S", 0.0)
    without = roofline.RooflineModel(h100).time(op)
    assert with_gaps - without == pytest.approx(3e-6 * roofline.kernel_launches(op), rel=1e-9)


def _row(source: str, note: str, impl: str = "cublas", groups: str = "128") -> dict[str, str]:
    return {"id": "x", "source": source, "gpu": "h100-sxm-80gb", "kind": "gemm_grouped",
            "implementation": impl, "dtype": "bf16", "m": "65536", "n": "1536", "k": "2048",
            "groups": groups, "measured_value": "1.0", "measured_unit": "ms", "note": note}


def test_a_profiler_summed_row_drops_each_launch_gap_and_says_so(monkeypatch):
    shipped = vk.predict_kernel_row(_row("a profile (Kineto kernel time)", ""), compute_db=None)
    monkeypatch.setattr(vk, "UNTIMED_GAPS", vk.PROFILER_SUMMED)
    plain = vk.predict_kernel_row(_row("someone's loop", "per-expert loop"), compute_db=None)
    summed = vk.predict_kernel_row(
        _row("someone's loop", "per-expert loop; torch.profiler device_time_total"),
        compute_db=None)
    kineto = vk.predict_kernel_row(_row("a profile (Kineto kernel time)", ""), compute_db=None)
    assert plain.error is None and summed.error is None
    launches = roofline.kernel_launches(vk.kernel_ops(_row("", ""))[0][0])
    assert launches == 128  # cuBLAS's per-expert loop: one launch an expert
    assert plain.predicted - summed.predicted == pytest.approx(launches * 3e-6 / 1e-3)
    assert kineto.predicted == pytest.approx(summed.predicted)
    assert shipped.predicted == pytest.approx(plain.predicted)  # off unless switched on
    assert "128 launch gap" in summed.chosen["harness"] and "harness" not in plain.chosen


def test_only_profiler_harnesses_match():
    assert vk.PROFILER_SUMMED.search("Kineto kernel time in ms")
    assert vk.PROFILER_SUMMED.search("prof.key_averages().total_average().device_time_total")
    assert not vk.PROFILER_SUMMED.search("the profiler-timed one of @d48a60e")
    assert not vk.PROFILER_SUMMED.search("triton.testing.do_bench")
