"""fuzz45 (edge45's harness, benchmarks/fuzz_inputs45.py): FlashAttention-4 on a 12.x GPU file,
kernel-validation attention rows over implementation x dtype x GPU x head x direction, a
sliding window on heads Transformer Engine runs unfused, and the parallel-size edges on 1, 8 and
131,072 GPUs. On main before edge45 it finds 3 classes (rows priced that their kernel's source
refuses, flash4 heads past 12.x shared memory priced, a window refusal suggesting kernels that
refuse the heads); the fast tests run one surface's sample, the whole run is under -m slow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_the_sm120_and_window_surfaces_find_no_failure_class():
    import fuzz_inputs45
    assert fuzz_inputs45.main(["--only", "sm120,window"]) == 0


def test_the_oracle_flags_a_priced_fp8_row():
    import fuzz_inputs45
    assert fuzz_inputs45.refused_by_source("flash3", "fp8", 128, 90, False)
    assert not fuzz_inputs45.refused_by_source("flash3", "bf16", 128, 90, True)


@pytest.mark.slow
def test_the_whole_fuzz45_run_finds_no_failure_class():
    import fuzz_inputs45
    assert fuzz_inputs45.main([]) == 0
