"""SDPA on an AMD GPU priced as AOTriton's kernels (``compute.attention_rocm``; RESULTS.md,
45th session, rocm45)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainsim.catalog import gpu
from trainsim.compute import attention, attention_rocm
from trainsim.compute.roofline import RooflineModel
from trainsim.workload.ops import Attention

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def _time(gpu_name: str, impl: str, backward: bool) -> float:
    op = Attention("a", 1, 32, 8, 8192, 8192, 128, True, backward=backward, impl=impl)
    return RooflineModel(gpu(gpu_name))._time(op)


def test_share_only_for_sdpa_on_amd() -> None:
    fwd, bwd = attention_rocm.AOTRITON_OF_FLASH2
    assert attention_rocm.aotriton_share("sdpa", False, "amd") == fwd
    assert attention_rocm.aotriton_share("sdpa", True, "amd") == bwd
    for impl, vendor in (("sdpa", "nvidia"), ("ck", "amd"), ("flash2", "amd"),
                         ("mem_efficient", "amd")):
        for backward in (False, True):
            assert attention_rocm.aotriton_share(impl, backward, vendor) == 1.0


@pytest.mark.parametrize("backward", [False, True])
def test_sdpa_slower_than_ck_on_amd_only(backward: bool) -> None:
    # AMD: AOTriton's SDPA well below the CK/AITER-priced family; NVIDIA: SDPA's flash
    # backend is FlashAttention-2's kernel, priced as before
    assert _time("mi300x", "sdpa", backward) > 1.5 * _time("mi300x", "ck", backward)
    assert _time("mi355x", "sdpa", backward) > 1.5 * _time("mi355x", "ck", backward)
    assert _time("h100-sxm-80gb", "sdpa", backward) == pytest.approx(
        _time("h100-sxm-80gb", "flash2", backward))


def test_ck_untouched_by_the_aotriton_share(monkeypatch: pytest.MonkeyPatch) -> None:
    before = [_time("mi355x", "ck", b) for b in (False, True)]
    monkeypatch.setattr(attention_rocm, "AOTRITON_OF_FLASH2", (1.0, 1.0))
    assert [_time("mi355x", "ck", b) for b in (False, True)] == before
    assert attention.attention_fraction("sdpa", True, gpu("mi355x")) == \
        attention.attention_fraction("ck", True, gpu("mi355x"))


def test_shipped_share_is_the_scripts_fit() -> None:
    import rocm45_aotriton

    assert rocm45_aotriton.fit_aotriton() == attention_rocm.AOTRITON_OF_FLASH2
