"""MLPerf Training v5.0/v5.1 Llama 3.1 405B and 8B runs (benchmarks/training_mlperf5.csv,
issue 17), the mlperf-nemo profile's 5.0 and 5.1 entries they run on, and the 5.x log formats
of benchmarks/mlperf_step_time.py (the generic checks: tests/test_training_files.py)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import load_script, training_rows

from trainsim.catalog.frameworks import framework_profile
from trainsim.config.layout import parse_layout

ROOT = Path(__file__).resolve().parents[1]
MLPERF5 = ROOT / "benchmarks" / "training_mlperf5.csv"
SCRIPT = ROOT / "benchmarks" / "mlperf_step_time.py"


def _rows() -> list[dict[str, str]]:
    return training_rows(MLPERF5)


def test_mlperf5_rows_are_the_round_5_llama_submissions():
    for r in _rows():
        assert r["id"].startswith(("mlperf50-", "mlperf51-")), r["id"]
        assert r["framework"] == "mlperf-nemo" and r["framework_version"] in ("5.0", "5.1")
        assert "mlcommons/training_results_v5." in r["source"] and "/results/" in r["source"]
        assert r["model"] in ("llama3.1-405b", "llama3-8b") and r["dtype"] == "fp8", r["id"]


def test_405b_rows_count_embedding_and_loss_as_pipeline_slots():
    """ASYM_PP_EMBED / ASYM_PP_LOSS: 126 layers + embedding + loss = 128 slots, two per
    virtual stage over PP 8 x VPP 8; the first stage holds the embedding and one layer, the
    last one layer and the loss."""
    rows = [r for r in _rows() if r["model"] == "llama3.1-405b"]
    assert rows
    for r in rows:
        stages = parse_layout(r["pipeline_layout"])
        assert len(stages) == int(r["pp"]) * int(r["vpp"]) == 64, r["id"]
        assert stages[0] == "Et" and stages[-1] == "tL" and set(stages[1:-1]) == {"tt"}
        assert sum(s.count("t") for s in stages) == 126


def test_profile_rounds_five():
    """5.0: Megatron-core DDP (buckets on pipeline rank 0's first chunk, BUCKET_SIZE 200
    parameters), unbatched p2p, delayed scaling, fp8 weights gathered; 5.1: tensorwise
    (current) scaling, no NaN check, 134217728-parameter buckets; 4.1 unchanged."""
    v41, v50, v51 = (framework_profile("mlperf-nemo", v) for v in ("4.1", "5.0", "5.1"))
    assert v41.features["batched_p2p"] is True and v41.defaults["dp_buckets"] == "fixed"
    assert v41.defaults["fp8_recipe"] == "delayed"
    assert v50.features["batched_p2p"] is False and v50.defaults["dp_buckets"] == "first_chunk"
    assert v50.defaults["ddp_bucket_size"] == 200 and v50.defaults["fp8_param_gather"] is True
    assert v50.defaults["fp8_recipe"] == "delayed" and v50.features["ddp_nan_check"] is True
    assert v50.supports("uneven_pipeline") and v50.defaults["attention"] == "cudnn"
    assert v51.defaults["fp8_recipe"] == "current" and v51.features["ddp_nan_check"] is False
    assert v51.defaults["ddp_bucket_size"] == 134_217_728


def _script():
    return load_script(SCRIPT)


def _log(fmt: str, gbs: int, step_s: float, blocks: int, steps: int, every: int = 1) -> str:
    """A 5.x result file: ``fmt`` 5.0 (block_start samples_count = samples so far, the block
    runs to the next eval_start's; tracked_stats step = samples) or 5.1 (block_start/stop step
    = optimizer steps, tracked_stats samples_count = samples so far), a tracked_stats every
    ``every`` steps and a per-block throughput summary that is not a step."""
    lines, t = [], 1_000_000

    def log(key, value=None, **meta):
        lines.append(":::MLLOG " + json.dumps(
            {"time_ms": t, "event_type": "POINT_IN_TIME", "key": key, "value": value,
             "metadata": meta}))

    log("global_batch_size", gbs)
    log("max_sequence_length", 8192)
    done = 0
    for b in range(blocks):
        if fmt == "5.0":
            log("block_start", samples_count=done * gbs)
        else:
            log("block_start", samples_count=steps * gbs, step=done)
        t += 20_000 if b == 0 else 0   # the first block's warm-up, left out
        for i in range(steps):
            t += round(step_s * 1000)
            done += 1
            if done % every == 0:
                meta = {"step": done * gbs} if fmt == "5.0" else \
                    {"step": float(done - 1), "samples_count": float(done * gbs)}
                log("tracked_stats", {"train_step_time": step_s - 0.01}, **meta)
        log("tracked_stats", {"throughput": 1.0, "train_step_time": 99.0}, step=done * gbs)
        if fmt == "5.0":
            log("block_stop", samples_count=0)
        else:
            log("block_stop", samples_count=steps * gbs, step=done)
        log("eval_start", samples_count=done * gbs)
        t += 30_000
        log("eval_stop", samples_count=done * gbs)
    return "\n".join(lines)


def test_step_time_reader_on_5x_logs():
    mod = _script()
    for fmt, every in (("5.0", 1), ("5.1", 1), ("5.1", 4)):
        r = mod.run_times(_log(fmt, gbs=1152, step_s=2.5, blocks=3, steps=8, every=every))
        assert r["blocks"] == 3 and r["gbs"] == 1152, fmt
        assert abs(r["block"] - 2.5) < 1e-6, fmt          # warm-up block left out
        assert abs(r["delta"] - 2.5) < 1e-6, fmt          # gaps across evals left out
        assert abs(r["step_timing"] - 2.49) < 1e-6, fmt   # the summary is no step


def test_8b_bucket_size_as_the_configs_set_it():
    """NVIDIA's v5.1 8B configs source config_common_8b.sh (BUCKET_SIZE=768000000, custom.yaml
    L165 -> Megatron-core DistributedDataParallelConfig.bucket_size, parameters per bucket);
    University of Florida's b200_nemo/config_common_8b.sh sets none and the 405B configs take
    custom.yaml's default (the profile's): their cells stay empty."""
    from trainsim.validate.training import row_config
    from trainsim.workload.sharding import dp_bucket_count

    for r in _rows():
        want = "768000000" if r["id"].startswith("mlperf51-nvidia-llama3.1-8b") else ""
        assert r["ddp_bucket_size"] == want, r["id"]
    row = next(r for r in _rows() if r["id"] == "mlperf51-nvidia-llama3.1-8b-gb200-512")
    cfg = row_config(row)
    assert cfg.parallel.ddp_bucket_size == 768_000_000
    # hand count: a TP 2 rank holds half of Llama 3 8B's 8.03e9 parameters, 4.015e9, in
    # ceil(4.015e9 / 7.68e8) = 6 buckets (the profile's 134217728 would make 30)
    half = 8_030_261_248 / 2
    assert dp_bucket_count(cfg, 32, half, 0, 0) == 6
    default = row_config({**row, "ddp_bucket_size": ""})
    assert default.parallel.ddp_bucket_size == 134_217_728
    assert dp_bucket_count(default, 32, half, 0, 0) == 30


def test_bad_bucket_size_cell_is_one_clear_error():
    """The column is a count like the others: '0' or 'big' fails the row with a message naming
    the column, never a traceback."""
    import pytest

    from trainsim.errors import ConfigError
    from trainsim.validate.training import row_config

    row = next(r for r in _rows() if r["id"] == "mlperf51-nvidia-llama3.1-8b-gb300-72")
    for bad in ("0", "big", "1.5"):
        with pytest.raises(ConfigError, match="ddp_bucket_size"):
            row_config({**row, "ddp_bucket_size": bad})
