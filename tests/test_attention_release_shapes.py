"""benchmarks/attention_release_shapes.py: the FA3 paper's cuDNN forward bars (cuDNN 9.1.1)
against the same shapes on the 36th session's H200 (cuDNN 9.19), FA2 as the harness
reference."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tables():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "attention_release_shapes", ROOT / "benchmarks" / "attention_release_shapes.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    out = {d: {(i, h, c): rest for i, h, c, *rest in mod.pairs(direction=d)}
           for d in ("fwd", "bwd")}
    yield out
    for name in ("attention_release_shapes", "h200_kernel_evidence"):
        sys.modules.pop(name, None)


def test_the_papers_cudnn_forward_is_its_release_not_the_harness(tables):
    """At every head dim and mask the paper's FA2 forward runs at least as fast as torch
    2.11's copy on the H200 (the harnesses and clocks favour the paper), while its cuDNN
    forward runs 6-16 % slower than cuDNN 9.19; cuDNN's backward, which the paper's release
    already had at today's speed, matches within 2 %."""
    fwd, bwd = tables["fwd"], tables["bwd"]
    assert len(fwd) == 12 and len(bwd) == 4
    for hd in (64, 128, 256):
        for causal in (0, 1):
            n_fa2, fa2 = fwd[("flash2", hd, causal)][:2]
            n_cudnn, cudnn = fwd[("cudnn", hd, causal)][:2]
            assert n_fa2 >= 5 and n_cudnn >= 5
            assert fa2 >= 1.0
            assert cudnn <= 0.95
            assert cudnn / fa2 <= 0.90
    for hd in (64, 128):
        assert bwd[("cudnn", hd, 0)][1] == pytest.approx(1.0, abs=0.02)


def test_todays_cudnn_forward_is_priced_where_the_papers_is_not(tables):
    """The shipped forward rate prices cuDNN 9.19 within 5 % at head dims 64 and 128 (geometric
    mean of priced over measured time), where the paper's cuDNN 9.1.1 bars come out 4-16 %
    too fast: the kernels_published cell's +18 % is that release."""
    for hd in (64, 128):
        for causal in (0, 1):
            _, _, paper, today = tables["fwd"][("cudnn", hd, causal)]
            assert today == pytest.approx(1.0, abs=0.05)
            assert paper < today - 0.03
