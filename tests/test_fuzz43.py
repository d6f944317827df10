"""Input robustness, twenty-fourth round (benchmarks/fuzz_inputs43.py): the features landed in
sessions 36-43. One test per class found; each fails on the previous src."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import cli, one_error_line

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.limits import DEFAULTS, WorkLimitError, replay_tasks
from trainsim.simulator import simulate
from trainsim.summary import critical_stage
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.kernels import predict_kernel_row

ROOT = Path(__file__).resolve().parents[1]
DB = ROOT / "src/trainsim/data/kernels/h100-sxm-80gb.json"
TINY = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {}, "training": {"global_batch_size": 16, "seq_length": 512},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}
PLAIN = {"model": {"hidden_size": 2048, "num_layers": 16, "num_attention_heads": 16,
                   "num_kv_heads": 4, "ffn_hidden_size": 8192, "vocab_size": 32000,
                   "activation": "swiglu", "normalization": "rmsnorm",
                   "position_embedding": "rope"},
         "parallel": {}, "training": {"global_batch_size": 4, "micro_batch_size": 4,
                                      "seq_length": 2048, "framework": "pytorch"},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 1, "gpus_per_node": 1}}
"""A plain PyTorch loop on one GPU: its memory replays the caching allocator."""


def _cfg(base: dict, **sections: dict):
    d = {k: dict(v) for k, v in base.items()}
    for section, fields in sections.items():
        d[section].update(fields)
    return run_config_from_dict(d)


def test_kernel_database_record_past_a_float_is_one_error_not_a_crash(tmp_path):
    # a GEMM record of 1e308 s: its time summed twice is inf, and the critical stage of a
    # timeline of inf and NaN was max() of nothing (ValueError)
    data = json.loads(DB.read_text())
    first = next(i for i, r in enumerate(data["kernels"]) if r["op"] == "gemm")
    data["kernels"][first]["time_s"] = 1e308
    path = tmp_path / "db.json"
    path.write_text(json.dumps(data))
    cfg_path = tmp_path / "run.yaml"
    cfg_path.write_text(yaml.safe_dump(
        {**TINY, "cluster": {**TINY["cluster"], "compute_db": str(path)}}))
    with pytest.raises(ConfigError, match="not a finite number of seconds"):
        simulate(run_config_from_dict(yaml.safe_load(cfg_path.read_text())))
    assert "kernel database" in one_error_line(cli("simulate", str(cfg_path)))


def test_critical_stage_of_non_finite_work_names_the_cause():
    with pytest.raises(ConfigError, match="past what a float holds"):
        critical_stage([math.inf, 1.0], [math.inf, 2.0])
    with pytest.raises(ConfigError):
        critical_stage([math.nan], [1.0])
    assert critical_stage([1.0, 2.0], [3.0, 3.0]) == 1


def test_plain_loop_replay_of_thousands_of_layers_is_refused_at_once():
    # 2,000 layers replayed through the caching allocator took 28 s of CPU (a hang)
    cfg = _cfg(PLAIN, model={"num_layers": 2000})
    start = time.process_time()
    with pytest.raises(WorkLimitError, match="caching-allocator replay"):
        simulate(cfg)
    assert time.process_time() - start < 5


def test_plain_loop_replay_limit_leaves_real_models_and_is_raised_by_the_flag(tmp_path):
    limit = DEFAULTS["TRAINSIM_MAX_TASKS"]
    assert replay_tasks(126, 8) < limit / 10  # Llama 3 405B's layers replay in ~1 s
    assert replay_tasks(1000, 8) < limit < replay_tasks(2000, 8)
    result = simulate(_cfg(PLAIN))
    assert result.iteration_time_s > 0 and result.peak_memory_bytes > 0
    path = tmp_path / "plain.yaml"
    path.write_text(yaml.safe_dump({**PLAIN, "model": {**PLAIN["model"], "num_layers": 1500}}))
    line = one_error_line(cli("simulate", str(path)))
    assert "--max-tasks" in line and "replay" in line


def _published(kind: str) -> dict:
    with open(Path(BUNDLED_DIR) / "kernels_published.csv", newline="") as f:
        return next(r for r in csv.DictReader(f) if r["kind"] == kind)


@pytest.mark.parametrize("kind, edit, reason", [
    ("attention_fwd", {"heads": "16", "kv_heads": "3"}, "must divide heads=16"),
    ("attention_fwd", {"heads": "16", "kv_heads": "64"}, "must divide heads=16"),
    ("attention_fwd_bwd", {"note": "dropout 2"}, "not a probability"),
    ("gemm_grouped", {"m": "1024", "groups": "1000000"}, "more than m=1024"),
])
def test_kernel_row_stating_no_runnable_kernel_fails_naming_why(kind, edit, reason):
    result = predict_kernel_row(dict(_published(kind), **edit), compute_db=None)
    assert result.predicted is None and reason in result.error


@pytest.mark.parametrize("kind, edit", [
    ("attention_fwd", {"heads": "16", "kv_heads": "4"}),
    ("attention_fwd_bwd", {"note": "dropout 0.1"}),
    ("gemm_grouped", {"m": "1024", "groups": "1024"}),
])
def test_kernel_row_edits_that_run_are_still_predicted(kind, edit):
    result = predict_kernel_row(dict(_published(kind), **edit), compute_db=None)
    assert result.error is None and result.predicted > 0


@pytest.mark.slow
def test_fuzz_inputs43_finds_no_failure():
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fuzz_inputs43.py")],
                         check=False, capture_output=True, text=True, timeout=7200)
    assert run.returncode == 0, run.stdout[-3000:]
