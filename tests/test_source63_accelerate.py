"""benchmarks/training_accelerate.csv: Hugging Face accelerate's own tokens/s per device for its FSDP2
example (Llama 3.1 8B on 8 H100 SXM, sequence 8192, bf16 and torchao fp8), the first check file of
an accelerate run; and benchmarks/training_tinyllama.csv, jzhang38/TinyLlama's 24k tokens/s per
A100-40G (lit-gpt on Lightning Fabric FSDP), the first of a lit-gpt run. Neither has a profile: the
rows go through the no-profile path. The generic checks are their rows in test_training_files.py;
here what the rows mean and how they are read. Also benchmarks/training_awsome_torchtitan.csv, AWS's
torchtitan test case (Llama 3 8B on 32 H100, torchtitan's own llama3_8b.toml), read by the
torchtitan profile."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import training_rows

from trainsim.validate.training import predict_training_row

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "training_accelerate.csv"
TINYLLAMA = PATH.with_name("training_tinyllama.csv")
AWS_TT = PATH.with_name("training_awsome_torchtitan.csv")


def test_each_row_is_the_readme_figure_over_one_sequence_a_rank():
    """A step is one 8192-token sequence a rank (DataLoader batch 1, no accumulation) over the
    published tokens/s per device; FSDP2 (ZeRO-3) on one node of 8, no recompute, compiled, bf16
    reductions, the fp8 row torchao's tensorwise (current) scaling."""
    rows = {r["id"]: r for r in training_rows(PATH)}
    assert set(rows) == {"accel2506-llama31-8b-h100-8-bf16", "accel2506-llama31-8b-h100-8-fp8"}
    for r in rows.values():
        tps = float(re.search(r"published '~(\d+) tokens per second'", r["note"]).group(1))
        seq, n = int(r["seq_length"]), int(r["num_gpus"])
        assert (seq, n, r["micro_batch_size"], r["global_batch_size"]) == (8192, 8, "1", "8")
        assert abs(float(r["measured_iteration_s"]) - seq / tps) < 1e-3, r["id"]
        assert (r["zero_stage"], r["recompute"], r["options"], r["grad_reduce_dtype"],
                r["framework"], r["gpu"]) == (
            "3", "none", "compile", "bf16", "accelerate", "h100-sxm-80gb"), r["id"]
    assert rows["accel2506-llama31-8b-h100-8-bf16"]["dtype"] == "bf16"
    fp8 = rows["accel2506-llama31-8b-h100-8-fp8"]
    assert (fp8["dtype"], fp8["fp8_recipe"]) == ("fp8", "current")


def test_no_profile_path_reads_the_rows_as_fsdp2_at_the_run_date():
    """First prediction (source63): accelerate has no profile, the ZeRO-3 rows are read as
    torchtitan's FSDP2 mechanisms at its entry of the row's date: bf16 -5.6 %, fp8 -7.5 % (the
    text rounds its figures: "~8000", "~10000"); fp8 is faster than bf16 as measured (0.80)."""
    err, pred = {}, {}
    for row in training_rows(PATH):
        res = predict_training_row(row)
        assert res.error is None, res.error
        assert res.chosen["framework"] == "torchtitan", res.chosen
        assert "accelerate -> torchtitan" in res.extra["read_as"]["framework"], res.extra
        err[row["dtype"]] = res.predicted / res.measured - 1
        pred[row["dtype"]] = res.predicted
    assert -0.10 < err["bf16"] < 0.0, err
    assert -0.12 < err["fp8"] < 0.0, err
    assert 0.70 < pred["fp8"] / pred["bf16"] < 0.88, pred


def test_tinyllama_row_is_the_readme_rate_over_its_batch():
    """A step is the README's 2048 x 1024 tokens over 24,000 tokens/s on each of 16 A100-40G;
    micro-batch 8 (16k tokens a GPU), FSDP, flash-attention 2, no recompute; the lit-gpt row is
    read, as of its 2023 date, as the plain PyTorch loop's FSDP (DeepSpeed runs no flash2), +1.2 %."""
    (row,) = training_rows(TINYLLAMA)
    gbs, seq, n = (int(row[k]) for k in ("global_batch_size", "seq_length", "num_gpus"))
    assert (gbs, seq, n, row["micro_batch_size"], row["gpu"]) == (
        1024, 2048, 16, "8", "a100-sxm-40gb")
    assert abs(float(row["measured_iteration_s"]) - gbs * seq / (24000 * n)) < 1e-3
    assert (row["zero_stage"], row["recompute"], row["attention"], row["framework"]) == (
        "3", "none", "flash2", "lit-gpt")
    res = predict_training_row(row)
    assert res.error is None, res.error
    assert res.chosen["framework"] == "pytorch", res.chosen
    assert "before torchtitan's first entry" in res.extra["read_as"]["framework"]
    assert -0.06 < res.predicted / res.measured - 1 < 0.06
    assert res.predicted_memory_gib < 40


def test_awsome_torchtitan_rows_are_the_log_lines_and_compile_reads_as_bf16():
    """A step is 8192 tokens over torchtitan's per-rank tps; FSDP over all 32 GPUs, per-op SAC,
    batch 1; the 'optimized' line is bf16 with compile (its [float8] enable_float8_linear key no
    longer existed in torchtitan then); predicted +5.9 % / +1.7 %, compile faster as measured;
    the published reserved memory (68.57 / 63.48 GiB) is far above the prediction (~39 / 37)."""
    rows = {r["id"]: r for r in training_rows(AWS_TT)}
    assert set(rows) == {"awstt2503-llama3-8b-h100-32-default", "awstt2503-llama3-8b-h100-32-compile"}
    pred, mem = {}, {}
    for rid, r in rows.items():
        tps = float(re.search(r"published 'tps: ([\d,]+)'", r["note"]).group(1).replace(",", ""))
        assert abs(float(r["measured_iteration_s"]) - 8192 / tps) < 1e-3, rid
        assert (r["num_gpus"], r["zero_stage"], r["recompute"], r["dtype"], r["framework"]) == (
            "32", "3", "selective", "bf16", "torchtitan"), rid
        res = predict_training_row(r)
        assert res.error is None, res.error
        pred[rid.rsplit("-", 1)[1]] = res.predicted / res.measured - 1
        mem[rid.rsplit("-", 1)[1]] = res.predicted_memory_gib / res.measured_memory_gib - 1
    assert rows["awstt2503-llama3-8b-h100-32-compile"]["options"] == "compile"
    assert "enable_float8_linear" in rows["awstt2503-llama3-8b-h100-32-compile"]["note"]
    assert 0.0 < pred["default"] < 0.10 and -0.03 < pred["compile"] < 0.06, pred
    assert all(-0.50 < m < -0.30 for m in mem.values()), mem
