"""OLMo-core's published H100 throughput (benchmarks/training_olmo_core.csv, issue 17): a held-out
source, allenai/OLMo-core README.md @ e27ba7455 (2024-11-05), 1B/7B/13B OLMo and Llama 8B in BF16
and FP8 with the official scripts. The file's shapes and TPS -> seconds conversion re-derived from
the source, the olmo-core profile's source-read choices, and a bound on today's error that can fail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import check_extra_training_file, training_rows

ROOT = Path(__file__).resolve().parents[1]
OLMO = ROOT / "benchmarks" / "training_olmo_core.csv"

# README.md @ e27ba7455 'Official training scripts' table: (model size, precision) -> TPS/device
PUBLISHED = {("olmo-1b", "bf16"): 55_000, ("olmo-1b", "fp8"): 65_000,
             ("olmo-7b", "bf16"): 10_000, ("olmo-7b", "fp8"): 13_000,
             ("llama-8b", "bf16"): 9_500, ("llama-8b", "fp8"): 12_500,
             ("olmo-13b", "bf16"): 4_600, ("olmo-13b", "fp8"): 5_500}


def olmo_core_ffn(d_model: int, multiplier: float | None = None, multiple_of: int = 256) -> int:
    """olmo_core/nn/transformer/config.py llama_like @ e27ba7455: int(8 d / 3), times the
    multiplier if any, rounded up to a multiple of ``multiple_of``."""
    hidden = int(8 * d_model / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


@pytest.fixture(scope="module")
def results():
    from trainsim.validate import validate_file

    _, res = validate_file(OLMO)
    return res


def test_file_has_the_public_header_and_the_published_table():
    rows = check_extra_training_file(OLMO, min_rows=8)
    assert len(rows) == 8
    for r in rows:
        name, dtype = re.match(r"olmocore-(.+)-(bf16|fp8)$", r["id"]).groups()
        assert r["dtype"] == dtype and r["framework"] == "olmo-core", r["id"]
        assert "README.md @ e27ba74550f12a685b95aded46c88f845a7e2d6d" in r["source"], r["id"]
        assert f"published {PUBLISHED[(name, dtype)]:,} TPS per device" in r["note"], r["id"]
        # every official script: 4096-token sequences, the dolma2 tokenizer padded to 128
        assert r["seq_length"] == "4096" and int(r["vocab_size"]) == 128 * -(-100278 // 128)
        assert r["options"] == "compile" and r["recompute"] == "none", r["id"]


def test_shapes_follow_olmo_core_llama_like():
    shape = {r["id"].rsplit("-", 1)[0]: (int(r["hidden_size"]), int(r["num_layers"]),
                                         int(r["ffn_hidden_size"])) for r in training_rows(OLMO)}
    assert shape["olmocore-olmo-1b"] == (2048, 18, olmo_core_ffn(2048)) == (2048, 18, 5632)
    assert shape["olmocore-olmo-7b"] == (4096, 32, olmo_core_ffn(4096)) == (4096, 32, 11008)
    assert shape["olmocore-olmo-13b"] == (5120, 40, olmo_core_ffn(5120)) == (5120, 40, 13824)
    assert shape["olmocore-llama-8b"] == (4096, 32, olmo_core_ffn(4096, 1.3, 1024)) \
        == (4096, 32, 14336)


def test_iteration_time_is_global_tokens_over_tps_times_gpus():
    """E.g. 7B BF16: 1024 x 4096 tokens / (10,000 TPS x 8 GPUs) = 52.4288 s."""
    for r in training_rows(OLMO):
        name, dtype = re.match(r"olmocore-(.+)-(bf16|fp8)$", r["id"]).groups()
        t = int(r["global_batch_size"]) * 4096 / (PUBLISHED[(name, dtype)] * int(r["num_gpus"]))
        assert abs(float(r["measured_iteration_s"]) - t) < 1e-4, r["id"]
    row = {r["id"]: r for r in training_rows(OLMO)}["olmocore-olmo-7b-bf16"]
    assert abs(float(row["measured_iteration_s"]) - 52.4288) < 1e-4


def test_olmo_core_profile_reads_the_source_choices():
    from trainsim.catalog.frameworks import framework_profile

    p = framework_profile("olmo-core", "2024-11")
    # compile=True -> use_flash False -> SDPA; reduce_dtype fp32; fully_shard reshard_after_forward
    assert p.defaults["attention"] == "sdpa" and p.defaults["zero_stage"] == 3
    assert p.defaults["grad_reduce_dtype"]["bf16"] == "fp32"
    # torchao Float8Linear: dynamic (current) scaling, fp8 FSDP all-gather on by default
    assert p.defaults["fp8_recipe"] == "current" and p.defaults["fp8_param_gather"] is True
    assert p.features["complex_rope"] is False and p.features["compiled_loss"] is True


def test_olmo_core_file_validates_with_no_failed_row(results):
    import math

    assert len(results) == 8
    assert all(r.predicted is not None and math.isfinite(r.predicted) and r.predicted > 0
               for r in results)


def test_olmo_core_error_stays_under_todays_bound(results):
    """2026-11-25 (newsrc4, nothing fitted): MAPE 6.8 %, signed -3.7 %; 1B +5.0/+7.5 %, 7B
    -2.7/-1.7 %, 8B -2.7/-3.2 %, 13B -11.3/-20.3 % (fast: the 13B's micro-batch of one sequence
    and its small measured FP8 gain, 1.20x against 1.30x at 7B). Bounds: those plus a margin."""
    apes = {r.id: r.ape for r in results}
    assert sum(apes.values()) / len(apes) <= 0.085
    assert max(apes.values()) <= 0.24
    assert all(a <= 0.10 for i, a in apes.items() if "-13b-" not in i)
