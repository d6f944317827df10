"""benchmarks/foundry_tables.py: llm-foundry's README table lines read as training rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "foundry_tables.py"
HEAD = ("|  Model | SeqLen (T) | # GPUs | GPU | MFU | HFU | Model TFLOP | MicroBatchSize | "
        "GradAccum | GlobalBatchSize | Throughput (S/s) | Throughput (T/s) | Throughput (T/s/GPU) "
        "| GlobalBatchSize (T) | Precision | MP Mode | Sharding Strategy | Activation "
        "Checkpointing | Activation CPUOffload | NumParams |")
README = f"""## A100 40GB with 1600 Gbps node-node interconnect (RoCE)
{HEAD}
|  --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
|  7b | 8192 | 8 | a100_40gb | 49.04 | 65.38 | 153 | 3 | 4 | 96 | 2 | 23098 | 2887 | 786432 | bf16 | PURE | FULL_SHARD | True | False | 6684024832 |
|  350m | 2048 | 8 | a100_40gb | 49.17 | 49.17 | 153 | 16 | 4 | 512 | 218 | 447963 | 55995 | 1048576 | bf16 | PURE | FULL_SHARD | False | False | 355985408 |

## H100 80GB BF16 (Large Scale, >= 128 GPUs)
{HEAD}
|  3b | 2048 | 512 | h100_80gb | 39.24 | 39.24 | 388 | 8 | 1 | 4096 | 5416 | 11092218 | 21664 | 8388608 | amp_bf16 | DEFAULT | SHARD_GRAD_OP | False | False | 2651837440 |
"""


def test_a_table_line_sets_the_cells_it_gives_and_keeps_the_template_model(tmp_path):
    """Sequence, GPUs, batches, checkpointing, sharding and MP Mode come from the line, the
    model from the public file's row of that MPT size; a size with no preset (350m) is
    skipped; the time is the global batch's tokens over the throughput."""
    readme = tmp_path / "README.md"
    readme.write_text(README)
    rows = load_script(SCRIPT).readme_rows(readme, "triton")
    assert [r["model"] for r in rows] == ["mpt-7b", "mpt-3b"]
    seven, three = rows
    assert (seven["seq_length"], seven["gpu"], seven["num_gpus"]) == ("8192", "a100-sxm-40gb", "8")
    assert (seven["micro_batch_size"], seven["global_batch_size"]) == ("3", "96")
    assert (seven["recompute"], seven["zero_stage"], seven["grad_reduce_dtype"]) == \
        ("full", "3", "bf16")
    assert float(seven["measured_iteration_s"]) == round(786432 / 23098, 4)
    assert seven["attention"] == "triton" and seven["hidden_size"] == "4096"
    assert (three["recompute"], three["zero_stage"], three["grad_reduce_dtype"]) == \
        ("none", "2", "fp32")
    assert three["note"].startswith("H100 80GB BF16 (Large Scale")


OLD_HEAD = ("|  Model | SeqLen (T) | # GPUs | GPU | MFU | HFU | MicroBatchSize | GradAccum | "
            "GlobalBatchSize | Throughput (S/s) | Throughput (T/s) | Throughput (T/s/GPU) | "
            "GlobalBatchSize (T) | Precision | MP Mode | Sharding Strategy | Activation "
            "Checkpointing | Activation CPUOffload | NumParams |")
OLD = f"""## A100 80GB with 1600 Gbps node-node interconnect (RoCE)
{OLD_HEAD}
|  --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
|  30b | 2048 | 8 | a100_80gb | 47.57 | 63.43 | 3 | 21 | 504 | 3 | 6305 | 788 | 1032192 | bf16 | PURE | FULL_SHARD | True | False | 29975214080 |
|  30b | 1024 | 8 | a100_80gb | 51.69 | 68.92 | 6 | 21 | 1008 | 6 | 7010 | 876 | 1032192 | bf16 | PURE | FULL_SHARD | True | False | 29967874048 |
"""
NEW = f"""## A100 80GB with 1600 Gbps node-node interconnect (RoCE)
{HEAD}
|  30b | 2048 | 8 | a100_80gb | 55.3 | 73.74 | 172 | 3 | 21 | 504 | 3 | 7330 | 916 | 1032192 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 29975214080 |
|  30b | 1024 | 8 | a100_80gb | 51.69 | 68.92 | 161 | 6 | 21 | 1008 | 6 | 7010 | 876 | 1032192 | bf16 | PURE | FULL_SHARD | True | False | 29967874048 |
|  30b | 4096 | 8 | a100_80gb | 51.37 | 68.49 | 160 | 1 | 21 | 168 | 1 | 6513 | 814 | 688128 | amp_bf16 | DEFAULT | FULL_SHARD | True | False | 29989894144 |
"""


def test_older_readme_columns_are_read_by_name_and_remeasured_runs_pair(tmp_path):
    """The README before b2a43a14 has no "Model TFLOP" column: its cells are found by the
    header's names. ``pairs`` matches a launch both READMEs list with another time (the
    2048 line, remeasured with amp_bf16 / DEFAULT), not one they list alike (1024) or one
    only the newer lists (4096)."""
    script = load_script(SCRIPT)
    (tmp_path / "old.md").write_text(OLD)
    (tmp_path / "new.md").write_text(NEW)
    old = script.readme_rows(tmp_path / "old.md", "triton")
    new = script.readme_rows(tmp_path / "new.md", "triton")
    assert [r["seq_length"] for r in old] == ["2048", "1024"]
    assert (old[0]["micro_batch_size"], old[0]["global_batch_size"]) == ("3", "504")
    assert old[0]["grad_reduce_dtype"] == "bf16" and old[0]["recompute"] == "full"
    assert float(old[0]["measured_iteration_s"]) == pytest.approx(1032192 / 6305, rel=1e-5)
    matched = script.pairs(old, new)
    assert [(o["seq_length"], n["seq_length"]) for o, n in matched] == [("2048", "2048")]
    o, n = matched[0]
    assert (o["grad_reduce_dtype"], n["grad_reduce_dtype"]) == ("bf16", "fp32")
    assert float(o["measured_iteration_s"]) / float(n["measured_iteration_s"]) == \
        pytest.approx(7330 / 6305, rel=1e-3)


def test_microbatch_gap_counts_composer_micro_batches_and_mpt_block_parameters():
    """A GPU's share of the global batch in micro-batches of the given size and a remainder
    (Composer: 48 in micro-batches of 11 run as 11, 11, 11, 11, 4: five), the time missing
    per micro-batch, and that per block per billion parameters of one block (MPT-30B: Wqkv,
    out_proj 4 h^2 plus up_proj, down_proj 2 h f: 0.617 G)."""
    script = load_script(SCRIPT)
    row = {"num_gpus": "8", "micro_batch_size": "11", "global_batch_size": str(48 * 8),
           "hidden_size": "7168", "ffn_hidden_size": "28672", "num_layers": "48"}
    n, per_mb, per_gp = script.microbatch_gap(row, predicted=90.0, measured=100.0)
    assert n == 5
    assert per_mb == pytest.approx(2.0)
    block = (4 * 7168**2 + 2 * 7168 * 28672) / 1e9
    assert block == pytest.approx(0.6166, abs=1e-4)
    assert per_gp == pytest.approx(2.0 / 48 / block * 1e3)
    # a prediction too slow reads as a negative gap; an exact one as none
    assert script.microbatch_gap(row, 110.0, 100.0)[1] == pytest.approx(-2.0)
    assert script.microbatch_gap(dict(row, global_batch_size="88"), 1.0, 1.0) == (1, 0.0, 0.0)


def test_fp8_twins_pair_launches_by_run_and_compare_tokens_per_second():
    """An fp8 launch pairs with the bf16 one of the same model, sequence, GPU count and
    checkpointing (its micro and global batch may differ), not with one that checkpoints
    otherwise; the speed-up is tokens per second, each time over its global batch."""
    script = load_script(SCRIPT)
    base = {"model": "mpt-3b", "seq_length": "8192", "gpu": "h100-sxm-80gb", "num_gpus": "8",
            "recompute": "none", "zero_stage": "3"}
    bf16 = dict(base, id="b", dtype="bf16", global_batch_size="144")
    fp8 = dict(base, id="f", dtype="fp8", global_batch_size="72")
    other = dict(base, id="o", dtype="fp8", global_batch_size="72", recompute="full")
    assert script.fp8_twins([bf16, fp8, other]) == [(bf16, fp8)]
    # bf16: 144 sequences in 10 s (predicted 9 s); fp8: 72 in 4 s (predicted 4 s)
    times = {"b": (9.0, 10.0), "f": (4.0, 4.0)}
    meas, pred = script.twin_speedups(bf16, fp8, times)
    assert meas == pytest.approx((10 / 144) / (4 / 72))
    assert pred == pytest.approx((9 / 144) / (4 / 72))


def test_seq_slope_reads_the_attention_rate_off_the_step_in_sequence_length():
    """Two launches of one series, 2k and 4k tokens: a step time that is a per-token constant
    plus the causal attention FLOPs at R gives back R whatever the constant (the GEMMs'
    share); a launch of another series (other GPU count) or of the same length is not
    paired; a time per token that does not grow gives an infinite rate."""
    script = load_script(SCRIPT)
    base = {"note": "t", "model": "mpt-7b", "gpu": "h100-sxm-80gb", "num_gpus": "8",
            "recompute": "full", "dtype": "bf16", "hidden_size": "4096", "num_layers": "32",
            "global_batch_size": "16"}
    short = dict(base, id="s", seq_length="2048")
    long_ = dict(base, id="l", seq_length="4096")
    other = dict(base, id="o", seq_length="8192", num_gpus="16")
    same = dict(base, id="d", seq_length="2048", global_batch_size="32")
    # causal: 32 layers x 2 s h forward, x (1 + 2.5 backward + 1 recompute)
    assert script.attention_flops_per_token(short) == 32 * 2 * 2048 * 4096 * 4.5
    assert script.attention_flops_per_token(dict(short, recompute="none")) == \
        32 * 2 * 2048 * 4096 * 3.5

    def step(row, per_token, rate):
        tokens = int(row["global_batch_size"]) * int(row["seq_length"]) / int(row["num_gpus"])
        return tokens * (per_token + script.attention_flops_per_token(row) / rate)

    times = {r["id"]: (step(r, 2e-7, 150e12), step(r, 5e-7, 100e12))
             for r in (short, long_, other)}  # (predicted, measured)
    (a, b, meas, pred), = script.seq_slopes([short, long_, other], times)
    assert (a["id"], b["id"]) == ("s", "l")
    assert meas == pytest.approx(100e12) and pred == pytest.approx(150e12)
    times["d"] = times["s"]
    assert len(script.seq_slopes([short, same, long_], times)) == 1  # 2048 twice: one pair
    flat = {"s": (1.0, 1.0), "l": (2.0, 2.0)}  # the same time per token at both lengths
    assert script.seq_slopes([short, long_], flat)[0][2] == float("inf")
