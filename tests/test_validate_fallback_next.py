"""A row on a framework with no profile whose chosen profile refuses one of its cells is
predicted with the next profile of catalog.fallback.fallback_order that accepts it; it fails,
with the first refusal, only where none does."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.catalog.fallback import (
    APEX_ADAM_PROFILE,
    FALLBACK_PROFILES,
    fallback_framework,
    fallback_order,
)
from trainsim.catalog.frameworks import framework_entries, framework_profile
from trainsim.validate.training import predict_training_row

DGXC = Path(__file__).resolve().parents[1] / "benchmarks" / "training_dgxc.csv"


def _dgxc_row(row_id: str, **cells: str) -> dict[str, str]:
    with open(DGXC, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return {**row, "framework": "otherfw", "framework_version": "", **cells}


@pytest.mark.parametrize("first", sorted(set(FALLBACK_PROFILES.values())))
def test_the_order_starts_at_the_rule_choice_and_tries_each_profile_once(first):
    order = fallback_order(first)
    names = [p for p, _ in order]
    assert names[0] == first and len(names) == len(set(names))
    assert set(FALLBACK_PROFILES.values()) <= set(names)
    assert all(v == "" for p, v in order if p in FALLBACK_PROFILES.values())


def test_the_last_is_the_newest_entry_that_runs_apex_distributed_fused_adam():
    name, version = fallback_order("megatron-core")[-1]
    entries = framework_entries(name)
    assert name == APEX_ADAM_PROFILE and version in entries
    assert framework_profile(name, version).supports("apex_distributed_adam") is True
    later = entries[entries.index(version) + 1:]
    assert all(framework_profile(name, v).supports("apex_distributed_adam") is not True
               for v in later)


def test_a_row_the_chosen_profile_refuses_takes_the_next_that_accepts_it():
    """NVIDIA/dgxc-benchmarking nemotron/README_340b.md @ 35a9aecc8d line 54: Nemotron-4 340B on
    128 H100, 4.61 s a step, Apex DistributedFusedAdam with bf16 state (optimizer_dtype=bf16,
    benchmarks/training_dgxc.csv). Named 'otherfw' it failed: megatron-core, which its cells
    select, refuses that optimizer's dtype."""
    assert fallback_framework("", "1", False)[0] == "megatron-core"
    got = predict_training_row(_dgxc_row("dgxc2411-nemotron4-340b-bf16-128"))
    assert got.error is None, got.error
    note = got.extra["read_as"]["framework"]
    assert note.startswith("otherfw -> nemo ") and "megatron-core refuses" in note
    assert "optimizer_dtype=bf16" in note and "torchtitan, pytorch" in note
    assert abs(got.predicted / 4.61 - 1) < 0.15


def test_a_row_no_profile_accepts_fails_with_the_first_refusal():
    # ZeRO-3 selects torchtitan, whose optimizer is not Apex's; nemo's Apex entry has no ZeRO-3
    # (the row's stated flash2 attention, configure.sh's NVTE_FUSED_ATTN=0, would select another)
    got = predict_training_row(_dgxc_row("dgxc2411-nemotron4-340b-bf16-128", zero_stage="3",
                                         distributed_optimizer="", attention=""))
    assert got.predicted is None and got.error
    assert "optimizer_dtype=bf16" in got.error and "torchtitan" in got.error


def test_a_row_the_chosen_profile_accepts_keeps_it():
    got = predict_training_row(_dgxc_row("dgxc2411-nemotron4-340b-bf16-128", optimizer_dtype=""))
    assert got.error is None and got.extra["read_as"]["framework"].startswith(
        "otherfw -> megatron-core ")
