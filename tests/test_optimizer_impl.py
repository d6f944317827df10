"""The optimizer step as each framework's Adam runs it (profile ``optimizer_impl``) and the
clipping frame, against hand counts of torch.optim's passes and the H200 step measurements
(benchmarks/training_h200_steps.csv: the optimizer phase of benchmarks/step_probe.py)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from trainsim.catalog.frameworks import framework_feature
from trainsim.workload.elementwise import (
    CLIP_BYTES,
    OPTIMIZER_BYTES_PER_PARAM,
    optimizer_step,
)
from trainsim.workload.optimizer_impl import optimizer_impl

STEPS = Path(__file__).resolve().parents[1] / "benchmarks" / "training_h200_steps.csv"


def _rows() -> list[dict[str, str]]:
    with open(STEPS, newline="") as f:
        return list(csv.DictReader(f))


def test_foreach_adam_moves_eighty_bytes_a_parameter_in_eight_kernels():
    # torch _multi_tensor_adam: mul_ 8, lerp_ 12, mul_ 8, addcmul_ 12, sqrt 8, div_ 8, add_ 8,
    # addcdiv_ 16 = 80 bytes per fp32 parameter; the plain loop's frame clips (4 + 8)
    step = optimizer_step(1.0, "adam", master_weights=False, impl="foreach")
    assert step.bytes == 80 + 12
    assert step.kernels == 8 and step.impl == "foreach" and step.kernel == "adamw"
    assert optimizer_step(1.0, "adam", master_weights=False, impl="foreach",
                          clip=False).bytes == 80


def test_the_for_loop_issues_the_same_passes_per_tensor():
    loop = optimizer_step(1e6, "adam", master_weights=False, impl="for_loop", tensors=147)
    assert loop.bytes == optimizer_step(1e6, "adam", master_weights=False,
                                        impl="foreach").bytes
    assert loop.kernels == 8 * 147


def test_fused_is_unchanged_and_clipping_is_twelve_bytes():
    assert optimizer_step(1.0, "adam").bytes == OPTIMIZER_BYTES_PER_PARAM["adam"] == 50
    assert optimizer_step(1.0, "adam", clip=False).bytes == 50 - CLIP_BYTES
    assert optimizer_step(1.0, "lamb", impl="foreach").kernel == "lamb"  # Adam only


def test_an_unknown_implementation_is_refused():
    with pytest.raises(ValueError, match="optimizer_impl"):
        optimizer_step(1.0, "adam", impl="apex")


def test_profiles_say_which_adam_runs():
    assert framework_feature("pytorch", "2.11", "optimizer_impl") == "foreach"
    assert framework_feature("pytorch", "2.3", "optimizer_impl") == "foreach"
    assert framework_feature("pytorch", "1.13", "optimizer_impl") == "for_loop"
    assert framework_feature("megatron-core", None, "optimizer_impl") is None  # fused


def test_the_h200_optimizer_phase_is_priced_as_foreach():
    """Measured: 27.0 ms (1B) and 70.0 ms (3B) for torch.optim.AdamW's default step in a loop
    that clips nothing; priced as a fused step it was 12.1 ms (1B) and 31.5 ms (3B)."""
    from trainsim import simulate
    from trainsim.validate.training import row_config

    seen = set()
    for row in _rows():
        if row["model"] in seen or row["attention"] != "sdpa":
            continue
        seen.add(row["model"])
        cfg = row_config(row)
        assert optimizer_impl(cfg) == "foreach" and cfg.training.no_grad_clip
        measured = float(re.search(r"optimizer ([\d.]+) ms", row["note"]).group(1)) / 1e3
        step = simulate(cfg).breakdown["optimizer_s"]
        assert abs(step / measured - 1) < 0.15, (row["model"], step, measured)
    assert seen == {"llama3.2-1b", "llama3.2-3b"}


def test_clipping_costs_twelve_bytes_a_parameter_as_the_h200_shows():
    """The same 1B/3B steps run with ``clip_grad_norm_(1.0)`` (training_h200_steps_clip.csv):
    the optimizer phase grew 27.0 -> 31.3 ms (1B) and 70.0 -> 81.1 ms (3B), 12 bytes a
    parameter at the H200's rate; the frame's ``CLIP_BYTES`` price the same difference."""
    from trainsim import simulate
    from trainsim.validate.training import row_config

    with open(STEPS.with_name("training_h200_steps_clip.csv"), newline="") as f:
        clipped = {r["id"].removesuffix("-clip"): r for r in csv.DictReader(f)}
    for row in _rows():
        if row["id"] not in ("h200step-llama3.2-1b-s4096-mb1-none-sdpa",
                             "h200step-llama3.2-3b-s4096-mb1-none-sdpa"):
            continue
        other = clipped[row["id"]]
        assert not row_config(other).training.no_grad_clip
        phase = [float(re.search(r"optimizer ([\d.]+) ms", r["note"]).group(1)) / 1e3
                 for r in (row, other)]
        priced = [simulate(row_config(r)).breakdown["optimizer_s"] for r in (row, other)]
        assert abs((priced[1] - priced[0]) / (phase[1] - phase[0]) - 1) < 0.3
