"""benchmarks/host52_expert_audit.py: host time per expert of TE's GroupedLinear as trainsim
charges it against the code's C++ loops, allocations and views."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import host52_expert_audit as audit

from trainsim.compute import host


def test_the_measured_costs_are_built_from_their_sources():
    assert audit.CPP_ALLOC_S == pytest.approx(1.15e-6)
    assert audit.CPP_VIEW_S == pytest.approx(host.PY_VIEW_S - host.PY_BINDING_S)
    assert audit.GB200_EXPERT_S == pytest.approx(10e-6)


def test_per_split_counts_follow_the_recipe():
    """Per-tensor fp8 allocates data, scale inverse and (TN-only) transpose per expert each
    way, beside the output slice; MXFP8 views a bulk buffer; bf16 splits and slices."""
    assert audit.per_split("current", True, "fp8") == ((3, 1), (3, 1))
    assert audit.per_split("delayed", False, "fp8") == ((2, 1), (2, 1))
    assert audit.per_split("mxfp8", False, "fp8") == ((0, 5), (0, 5))
    assert audit.per_split("current", True, "bf16") == ((0, 2), (0, 2))


@pytest.mark.skipif(not audit.PUBLIC.exists(), reason="needs the public training file")
def test_trainsim_charges_the_experts_more_than_the_code_issues():
    """Bridge 25.11's Qwen3-30B-A3B layer (16 local experts, fp8 current scaling on H100): 18
    launches an expert (three casts and a GEMM forward, three casts, dgrad and wgrad back, for
    fc1 and fc2), charged ~3x what the C++ loops, allocations and views cost."""
    a = audit.audit_row("bridge2511-qwen3-30b-a3b-16")
    assert a["local"] == 16 and a["launches"] == 18
    assert (a["allocs"], a["views"]) == (12, 4)
    code = a["cpp_launch_us"] + a["alloc_view_us"]
    assert 2.0 < a["trainsim_us"] / code < 5.0
