"""An fp8 row on a framework with no profile here keeps none of its fallback stack's defaults
that the tuner keeps for a named framework wherever they fit (the gradient-reduce dtype): the
frameworks on that stack reduce fp8 runs' gradients in bf16 and their 16-bit runs' in fp32, so
an fp8 run's dtype is the authors' choice among what the stack offered at the row's entry
(catalog.fallback.keeps_stack_defaults)."""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.catalog.fallback import FALLBACK_MARK, keeps_stack_defaults, read_by_fallback
from trainsim.simulator import simulate
from trainsim.validate.training import predict_training_row, row_config
from trainsim.validate.vocab import normalized_training_row

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ROOT / "src" / "trainsim" / "data" / "validation" / "training_public.csv"
NEMOTRON4 = ROOT / "benchmarks" / "training_nemotron4.csv"


def _row(path: Path, row_id: str, **cells: str) -> dict[str, str]:
    with open(path, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return {**row, "framework": "otherfw", **cells}


def test_a_row_on_an_unknown_framework_is_marked_and_a_named_one_is_not():
    row = _row(PUBLIC, "mlperf40-gpt3-175b-11616")
    blind = normalized_training_row(row)[0]
    assert read_by_fallback(blind) and not keeps_stack_defaults(blind)
    named = normalized_training_row({**row, "framework": "mlperf-nemo"})[0]
    assert not read_by_fallback(named) and keeps_stack_defaults(named)
    # a file cannot set the mark: only the fallback rule writes it
    marked = normalized_training_row({**row, "framework": "mlperf-nemo", FALLBACK_MARK: "x"})[0]
    assert not read_by_fallback(marked)


def test_a_16_bit_row_on_an_unknown_framework_keeps_the_stacks_fp32_default():
    row = normalized_training_row(_row(PUBLIC, "mlperf40-gpt3-175b-11616", dtype="bf16",
                                       fp8_recipe=""))[0]
    assert read_by_fallback(row) and keeps_stack_defaults(row)


def test_an_unknown_framework_keeps_no_fp32_reduce_default():
    """MLPerf v4.0's GPT-3 175B on 11,616 H100s (NVIDIA's NeMo, which reduces in bf16): read
    blind as Megatron-core, whose --bf16 keeps fp32 gradients wherever they fit, it was +20.8 %
    (measured 3.4 s a step, mlperf40-gpt3-175b-11616)."""
    row = _row(PUBLIC, "mlperf40-gpt3-175b-11616")
    res = predict_training_row(row)
    assert res.chosen["framework"] == "megatron-core"
    assert res.chosen.get("grad_reduce_dtype") == "bf16"
    assert abs(res.predicted / res.measured - 1) < 0.10
    assert simulate(row_config(row, res.chosen)).iteration_time_s == res.predicted
    named = predict_training_row({**row, "framework": "megatron-core", "framework_version": ""})
    assert named.chosen.get("grad_reduce_dtype", "fp32") == "fp32"
    assert named.predicted > res.predicted


def test_a_stack_that_had_no_bf16_reduce_at_the_rows_date_keeps_fp32():
    """Nemotron-4 15B (Megatron-LM, 2023-12) read blind is Megatron-core at its 0.4 entry,
    whose --bf16 forces fp32 gradient reduction (no --grad-reduce-in-bf16 before
    core_v0.12.0): nothing to choose."""
    res = predict_training_row(_row(NEMOTRON4, "nemotron4-15b-report-dp96"))
    assert res.chosen["framework"] == "megatron-core"
    assert res.chosen["framework_version"] == "2023-12"
    assert "grad_reduce_dtype" not in res.chosen
    assert res.extra["settings"]["grad_reduce_in_fp32"] is True
