"""Hugging Face eager attention (attention=unfused under the pytorch profile): the s x s
probabilities it keeps and the score passes it runs, against a hand count of
``eager_attention_forward`` and the H200 step measurements (benchmarks/training_h200_steps.csv)."""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.workload.hf_eager_attention import hf_eager_score_ops

STEPS = Path(__file__).resolve().parents[1] / "benchmarks" / "training_h200_steps.csv"
GIB = 2 ** 30


def _row(row_id: str) -> dict[str, str]:
    with open(STEPS, newline="") as f:
        return next(r for r in csv.DictReader(f) if r["id"] == row_id)


def test_the_score_passes_beyond_the_core_are_24_bytes_forward_and_22_backward():
    ops = hf_eager_score_ops(1.0)
    assert sum(op.bytes for op in ops) == 4 + 10 + 4 + 6
    assert sum(op.bwd_bytes for op in ops) == 4 + 6 + 6 + 6
    assert sum(op.kernels for op in ops) == 3 and sum(op.bwd_kernels for op in ops) == 3
    assert [op.impl for op in ops if op.bytes == 10] == ["eager_broadcast"]


def test_an_eager_layer_keeps_six_bytes_a_score_beyond_sdpa():
    """fp32 softmax output (4) and the bf16 probabilities (2) per score, per head; and the
    16-bit K and V copied to all 32 query heads (2 x 2 x (2048 - 512) bytes a token), which the
    SDPA row does not make (transformers 5.17 passes enable_gqa: the row states it)."""
    from trainsim.validate.training import row_config

    eager = row_config(_row("h200step-llama3.2-1b-s4096-mb1-none-eager"))
    sdpa = row_config(_row("h200step-llama3.2-1b-s4096-mb1-none-sdpa"))
    extra = activation_bytes_per_layer(eager) - activation_bytes_per_layer(sdpa)
    assert extra == 6 * 32 * 4096 * 4096 + 4 * (2048 - 512) * 4096


def test_eager_peak_memory_over_sdpa_matches_the_h200():
    """Measured: 78.379 GiB eager against 30.010 GiB SDPA (1B, s 4096, micro-batch 1): 48.37
    GiB more, 16 layers x 32 heads x 4096^2 scores x 6 bytes = 48.0 GiB."""
    from trainsim import simulate
    from trainsim.validate.training import row_config

    rows = [_row("h200step-llama3.2-1b-s4096-mb1-none-eager"),
            _row("h200step-llama3.2-1b-s4096-mb1-none-sdpa")]
    peaks = [simulate(row_config(r)).peak_memory_bytes for r in rows]
    measured = [float(r["measured_peak_memory_gib"]) * GIB for r in rows]
    assert abs((peaks[0] - peaks[1]) / (measured[0] - measured[1]) - 1) < 0.02


def test_eager_attention_costs_the_time_the_h200_shows_within_a_fifth():
    """Measured 334.9 ms eager against 126.1 ms SDPA (1B, s 4096); priced as Megatron's fused
    softmax the eager step was 169 ms (-50 %)."""
    from trainsim import simulate
    from trainsim.validate.training import row_config

    row = _row("h200step-llama3.2-1b-s4096-mb1-none-eager")
    predicted = simulate(row_config(row)).iteration_time_s
    assert abs(predicted / float(row["measured_iteration_s"]) - 1) < 0.2
