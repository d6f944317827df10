"""OLMo-core's published H100 throughput (benchmarks/training_olmo_core.csv, issue 17): a held-out
source, allenai/OLMo-core README.md @ e27ba7455 (2024-11-05), 1B/7B/13B OLMo and Llama 8B in BF16
and FP8 with the official scripts, and the 1B pair of the README @ 8c03ca8a2 (2024-09-26: micro-batch
4, loss eager on fp32 logits). The file's shapes and TPS -> seconds conversion re-derived from
the source, the olmo-core profile's source-read choices, and bounds on today's error by model
that can fail (the generic checks and the file's bound: tests/test_training_files.py)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import dgx_h100_run, training_rows, validated

ROOT = Path(__file__).resolve().parents[1]
OLMO = ROOT / "benchmarks" / "training_olmo_core.csv"

# README.md @ e27ba7455 'Official training scripts' table and @ 8c03ca8a2 (suffix -2409):
# (model size, precision, era) -> TPS/device
PUBLISHED = {("olmo-1b", "bf16", ""): 55_000, ("olmo-1b", "fp8", ""): 65_000,
             ("olmo-7b", "bf16", ""): 10_000, ("olmo-7b", "fp8", ""): 13_000,
             ("llama-8b", "bf16", ""): 9_500, ("llama-8b", "fp8", ""): 12_500,
             ("olmo-13b", "bf16", ""): 4_600, ("olmo-13b", "fp8", ""): 5_500,
             ("olmo-1b", "bf16", "-2409"): 44_000, ("olmo-1b", "fp8", "-2409"): 51_000}
README_AT = {"": ("e27ba74550f12a685b95aded46c88f845a7e2d6d", "2024-11", 8),
             "-2409": ("8c03ca8a2103d7f5d92feb045eb8811fd919d109", "2024-09", 4)}
# The e27ba7455 table (#81) re-measured the 1B pair only; its other figures stand from the README
# commit that first gave them, whose code had no compile_loss (00d34f693, 2024-11-01 12:31 -0700;
# Llama 8B's came at 41400c46f, 10:38 the same day): the version whose profile entry lacks it.
FIRST_PUBLISHED = {("olmo-7b", "bf16"): ("8c03ca8a2", "2024-09"),
                   ("olmo-7b", "fp8"): ("8c03ca8a2", "2024-09"),
                   ("olmo-13b", "bf16"): ("8c03ca8a2", "2024-09"),
                   ("olmo-13b", "fp8"): ("310866e45", "2024-10"),
                   ("llama-8b", "bf16"): ("41400c46f", "2024-10"),
                   ("llama-8b", "fp8"): ("41400c46f", "2024-10")}


def _key(row_id: str) -> tuple[str, str, str]:
    name, dtype, era = re.match(r"olmocore-(.+)-(bf16|fp8)(-2409)?$", row_id).groups()
    return name, dtype, era or ""


def olmo_core_ffn(d_model: int, multiplier: float | None = None, multiple_of: int = 256) -> int:
    """olmo_core/nn/transformer/config.py llama_like @ e27ba7455: int(8 d / 3), times the
    multiplier if any, rounded up to a multiple of ``multiple_of``."""
    hidden = int(8 * d_model / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def test_file_is_the_published_table():
    rows = training_rows(OLMO)
    assert {_key(r["id"]) for r in rows} == set(PUBLISHED)
    for r in rows:
        name, dtype, era = _key(r["id"])
        commit, version, _ = README_AT[era]
        assert r["dtype"] == dtype and r["framework"] == "olmo-core", r["id"]
        assert f"README.md @ {commit}" in r["source"], r["id"]
        first = FIRST_PUBLISHED.get((name, dtype)) if not era else None
        if first is not None:
            assert f"first published at README.md @ {first[0]}" in r["source"], r["id"]
            assert "the loss eager on the fp32 logits" in r["note"], r["id"]
            version = first[1]
        assert r["framework_version"] == version, r["id"]
        assert f"published {PUBLISHED[(name, dtype, era)]:,} TPS per device" in r["note"], r["id"]
        # every official script: 4096-token sequences, the dolma2 tokenizer padded to 128
        assert r["seq_length"] == "4096" and int(r["vocab_size"]) == 128 * -(-100278 // 128)
        assert r["options"] == "compile" and r["recompute"] == "none", r["id"]


def test_shapes_follow_olmo_core_llama_like():
    shape = {}
    for r in training_rows(OLMO):
        s = (int(r["hidden_size"]), int(r["num_layers"]), int(r["ffn_hidden_size"]))
        assert shape.setdefault(_key(r["id"])[0], s) == s, r["id"]  # one shape per model, any era
    assert shape["olmo-1b"] == (2048, 18, olmo_core_ffn(2048)) == (2048, 18, 5632)
    assert shape["olmo-7b"] == (4096, 32, olmo_core_ffn(4096)) == (4096, 32, 11008)
    assert shape["olmo-13b"] == (5120, 40, olmo_core_ffn(5120)) == (5120, 40, 13824)
    assert shape["llama-8b"] == (4096, 32, olmo_core_ffn(4096, 1.3, 1024)) == (4096, 32, 14336)


def test_iteration_time_is_global_tokens_over_tps_times_gpus():
    """E.g. 7B BF16: 1024 x 4096 tokens / (10,000 TPS x 8 GPUs) = 52.4288 s."""
    for r in training_rows(OLMO):
        key = _key(r["id"])
        t = int(r["global_batch_size"]) * 4096 / (PUBLISHED[key] * int(r["num_gpus"]))
        assert abs(float(r["measured_iteration_s"]) - t) < 1e-4, r["id"]
        # the 1B script's micro-batch: 4 sequences at 8c03ca8a2, 8 from e27ba7455
        if key[0] == "olmo-1b":
            assert int(r["micro_batch_size"]) == README_AT[key[2]][2], r["id"]
    row = {r["id"]: r for r in training_rows(OLMO)}["olmocore-olmo-7b-bf16"]
    assert abs(float(row["measured_iteration_s"]) - 52.4288) < 1e-4


def test_olmo_core_profile_reads_the_source_choices():
    from trainsim.catalog.frameworks import framework_profile

    p = framework_profile("olmo-core", "2024-11")
    # compile_loss (00d34f693, 2024-11-01); before it the model cast the logits to fp32
    assert framework_profile("olmo-core", "2024-09").features["compiled_loss"] is False
    # compile=True -> use_flash False -> SDPA; reduce_dtype fp32; fully_shard reshard_after_forward
    assert p.defaults["attention"] == "sdpa" and p.defaults["zero_stage"] == 3
    assert p.defaults["grad_reduce_dtype"]["bf16"] == "fp32"
    # torchao Float8Linear: dynamic (current) scaling, fp8 FSDP all-gather on by default
    assert p.defaults["fp8_recipe"] == "current" and p.defaults["fp8_param_gather"] is True
    assert p.features["complex_rope"] is False and p.features["compiled_loss"] is True


def test_olmo_core_error_by_model_stays_under_todays_bound():
    """2026-11-25, nothing fitted (newsrc4; review: the 8B's K/V repeat before SDPA, the loss
    eager on fp32 logits before compile_loss); 2026-11-26 (torch34) the trainer's shifted-logits
    copy: MAPE 6.0 %, signed -3.4 %; 1B +5.3/+7.7 %, 7B -1.4/-0.5 %, 8B -1.6/-1.8 %, 13B
    -10.5/-19.8 % (fast: the 13B's micro-batch of one sequence and its small measured FP8 gain,
    1.20x against 1.30x at 7B); the 2024-09 1B pair -6.9/-4.6 % (measured 25 % slower than the
    2024-11 1B, predicted 10 %: micro-batch 4 and the eager loss on fp32 logits). Bounds: those
    plus a margin (the file's MAPE 7.5 % and max 23 %: tests/test_training_files.py)."""
    apes = {r.id: r.ape for r in validated(OLMO)[1]}
    assert all(a <= 0.09 for i, a in apes.items() if "-13b-" not in i and "-2409" not in i)
    assert all(a <= 0.09 for i, a in apes.items() if "-2409" in i)


@pytest.mark.parametrize(("version", "key", "size", "refused"), [
    ("2024-11", "tp", 2, "tensor parallelism"),
    ("2024-11", "tensor_model_parallel_size", 2, "tensor parallelism"),
    ("2024-11", "cp", 2, "context parallelism"),
    ("2024-11", "context_parallel_size", 4, "context parallelism"),
    ("2024-11", "tp", 1, None), ("2024-11", "cp", 1, None),
    ("2024-12", "tp", 2, None), ("2024-12", "cp", 2, "context parallelism"),
    ("2025-03", "cp", 2, None)])
def test_olmo_core_refuses_tp_and_cp_before_its_code_had_them(version, key, size, refused):
    """allenai/OLMo-core had data parallelism only (distributed/parallel/data_parallel.py @
    e27ba7455) until tensor parallelism in d6981b34c (2024-12-03) and context parallelism in
    7f7c4894d (2025-03-02): a size above 1 before those is a one-line ConfigError naming the
    field and the commit that brought it."""
    from trainsim.catalog.defaults import apply_framework
    from trainsim.errors import ConfigError

    training = {"framework": "olmo-core", "framework_version": version}
    if refused is None:
        apply_framework({key: size}, dict(training))
        return
    with pytest.raises(ConfigError) as err:
        apply_framework({key: size}, dict(training))
    msg = str(err.value)
    assert f"={size} but olmo-core {version} has no {refused}" in msg and "\n" not in msg
    assert ("d6981b34c" if refused.startswith("tensor") else "7f7c4894d") in msg
    apply_framework({key: size}, {"framework": "megatron-lm"})  # a profile that has them


def test_gqa_rows_copy_k_and_v_to_every_query_head_before_sdpa():
    """OLMo-core's Attention.forward (nn/attention.py @ e27ba7455 L249-259) repeat_interleave's K
    and V to every query head before F.scaled_dot_product_attention ("PyTorch's SDPA doesn't
    support GQA"): Llama 8B (8 KV of 32 heads) has the copy, the MHA OLMo rows have none."""
    from helpers import layer_ops

    from trainsim.validate.training import row_config

    rows = {r["id"]: r for r in training_rows(OLMO)}
    fwd, _ = layer_ops(row_config(rows["olmocore-llama-8b-bf16"], compute_db=None))
    rep = fwd["attn_core.repeat_kv"]
    # compiled blocks: one kernel writing K and V at every query head, micro-batch 2 x 4096 tokens
    assert rep.kernels == 1 and rep.bytes == pytest.approx(2 * 4096 * 128 * 2 * 2 * 32)
    fwd, _ = layer_ops(row_config(rows["olmocore-olmo-7b-bf16"], compute_db=None))
    assert "attn_core.repeat_kv" not in fwd


def test_the_loss_runs_eager_on_fp32_logits_before_compile_loss():
    """Before 00d34f693 (2024-11-01) OLMo-core compiled each block but not the loss: the model
    cast the logits to fp32 (nn/transformer/model.py @ 8c03ca8a2 L705 ``self.w_out(h).float()``)
    and F.cross_entropy ran eagerly on them; from 2024-11 the scripts' compile_loss=True fuses
    it. A profile that does not state the feature (torchtitan before 2025-04) keeps the
    configured kernel."""
    from trainsim.validate.training import row_config
    from trainsim.workload.head import cross_entropy_impl

    rows = {r["id"]: r for r in training_rows(OLMO)}
    old = row_config(rows["olmocore-olmo-1b-bf16-2409"], compute_db=None)
    new = row_config(rows["olmocore-olmo-1b-bf16"], compute_db=None)
    assert old.training.compile and new.training.compile
    assert cross_entropy_impl(old) == "eager" and cross_entropy_impl(new) == "fused"
    titan = dgx_h100_run("torchtitan", name="llama3-8b")
    titan = replace(titan, training=replace(titan.training, framework_version="2024-10",
                                            compile=True))
    assert titan.training.modules == "eager" and cross_entropy_impl(titan) == "fused"


def test_the_trainer_copies_the_shifted_logits_before_the_loss():
    """OLMo-core's Trainer._model_forward (train/trainer.py @ 8c03ca8a2 and e27ba7455) passes
    ``logits[..., :-1, :].contiguous()`` to the loss: a forward copy of the logits (none at a
    micro-batch of one sequence, whose slice is contiguous) and the slice's backward (zero-fill
    and copy, 3 x the bytes); fp32 while the model cast the logits (before compile_loss), 16-bit
    after. Other frameworks' profiles do not state it: no op."""
    from trainsim.validate.training import row_config
    from trainsim.workload.head import head_backward, head_forward
    from trainsim.workload.shard import shard_of

    def shift_bytes(cfg):
        sh = shard_of(cfg)
        fwd = head_forward(cfg, sh)
        ops = {op.name: op for op in [*fwd, *head_backward(cfg, sh, fwd)]}
        return tuple(ops[n].bytes if n in ops else None for n in ("logits_shift",
                                                                   "logits_shift.bwd"))

    rows = {r["id"]: r for r in training_rows(OLMO)}
    logits = 4096 * 100352
    old = row_config(rows["olmocore-olmo-1b-bf16-2409"], compute_db=None)  # 4 sequences, fp32
    assert shift_bytes(old) == (2 * 4 * logits * 4, 3 * 4 * logits * 4)
    new = row_config(rows["olmocore-olmo-1b-bf16"], compute_db=None)  # 8 sequences, bf16
    assert shift_bytes(new) == (2 * 8 * logits * 2, 3 * 8 * logits * 2)
    one = row_config(rows["olmocore-olmo-13b-bf16"], compute_db=None)  # one sequence: a view
    assert shift_bytes(one) == (None, 3 * logits * 4)
    assert shift_bytes(dgx_h100_run("torchtitan", name="llama3-8b")) == (None, None)
