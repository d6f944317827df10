"""benchmarks/mlm_weak_audit.py: the public mlm-weak rows read back against Megatron-LM's
README table (f2e5db40) and Megatron's own FLOP count (core_v0.8.0 training.py)."""

from pathlib import Path

import pytest
from helpers import load_script

wa = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "mlm_weak_audit.py")


def test_flop_count_by_hand():
    # 32B row: 12 B s L h^2 (6 + s/h + V / (2 L h)) with ffn = 4h; 459.6 TFLOP/s on 384 GPUs
    f = wa.megatron_flops(192, 48, 7168, 4 * 7168)
    assert f == pytest.approx(12 * 192 * 4096 * 48 * 7168**2 * (6 + 4096 / 7168
                                                                   + 131072 / (2 * 48 * 7168)))
    assert f / (459.6e12 * 384) == pytest.approx(0.8917, abs=5e-5)


def test_every_public_row_reads_as_published():
    rows = wa.weak_rows()
    assert len(rows) == len(wa.TABLE) == 9
    assert all(not bad for _, bad in wa.reading(rows))


def test_a_misread_cell_is_caught():
    rows = [dict(r) for r in wa.weak_rows()]
    rows[3]["pp"] = "2"  # the 32B row read as two stages
    rows[0]["measured_iteration_s"] = "0.4070"  # the 1.7B row at trainsim's prediction
    bad = dict(wa.reading(rows))
    assert any(b.startswith("pp 2") for b in bad["mlm-weak-32b-384"])
    assert any(b.startswith("iteration") for b in bad["mlm-weak-1.7b-48"])


def test_the_table_is_bf16():
    # MFU column = TFLOP/s / 989 (dense 16-bit peak) rounded half-up, in every row
    assert all(int(100 * t[8] / 989 + 0.5) == t[9] for t in wa.TABLE)
    assert all(int(100 * t[8] / 1979 + 0.5) < 26 for t in wa.TABLE)


def test_cross_pairs_are_the_same_pipeline_work():
    # each (2021, 2022) pair: one model, one pipeline depth and interleaving (errata applied),
    # and the same micro-batches a pipeline (global batch / data-parallel size, micro-batch 1)
    rows = wa._errata_rows()
    for old, new in wa.CROSS:
        a, b = rows[old], rows[new]
        assert (a["hidden_size"], a["num_layers"], a["pp"], a["vpp"]) == \
            (b["hidden_size"], b["num_layers"], b["pp"], b["vpp"])
        per_pipe = [int(r["global_batch_size"]) * int(r["tp"]) * int(r["pp"])
                    // int(r["num_gpus"]) // int(r["micro_batch_size"] or 1) for r in (a, b)]
        assert per_pipe[0] == per_pipe[1]
