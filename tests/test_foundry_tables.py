"""benchmarks/foundry_tables.py: llm-foundry's README table lines read as training rows."""

from __future__ import annotations

from pathlib import Path

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
