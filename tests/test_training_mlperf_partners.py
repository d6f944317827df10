"""MLPerf Training GPT-3 175B runs by other submitters and rounds than the public file's
(benchmarks/training_mlperf_partners.csv, issue 17) and the log reader that derived their
seconds per global batch (benchmarks/mlperf_step_time.py); the generic checks:
tests/test_training_files.py."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import load_script, training_rows

ROOT = Path(__file__).resolve().parents[1]
PARTNERS = ROOT / "benchmarks" / "training_mlperf_partners.csv"
SCRIPT = ROOT / "benchmarks" / "mlperf_step_time.py"


def _rows() -> list[dict[str, str]]:
    return training_rows(PARTNERS)


def test_partner_rows_are_mlperf_nemo_results():
    for r in _rows():
        assert r["id"].startswith("mlperf") and r["framework"] == "mlperf-nemo", r["id"]
        assert "mlcommons/training_results_v" in r["source"] and "/results/" in r["source"]


def _script():
    return load_script(SCRIPT)


def _log(gbs: int, seq: int, step_s: float, host_s: float, blocks: int, steps: int) -> str:
    """A result file in the submissions' format: rank-prefixed MLLOG lines, blocks of
    ``steps`` optimizer steps with an eval between them, tracked_stats once per step
    (metadata step in tokens), train_step_timing shorter than the wall-clock gap by host_s."""
    lines, t = [], 1_000_000

    def log(key, value=None, **meta):
        lines.append("  0: :::MLLOG " + json.dumps(
            {"time_ms": t, "event_type": "POINT_IN_TIME", "key": key, "value": value,
             "metadata": meta}))

    log("global_batch_size", gbs)
    log("max_sequence_length", seq)
    tokens = 0
    for b in range(blocks):
        log("block_start", epoch_count=gbs * seq * steps, first_epoch_num=tokens)
        # the first block also pays a 30 s warm-up, which the block method leaves out
        t += 30_000 if b == 0 else 0
        for _ in range(steps):
            t += round((step_s + host_s) * 1000)
            tokens += gbs * seq
            log("tracked_stats", {"train_step_timing in s": step_s}, step=tokens)
        log("block_stop")
        log("eval_start")
        t += 60_000
        log("eval_stop")
    return "\n".join(lines)


def test_step_time_reader_methods_on_a_synthetic_log():
    mod = _script()
    r = mod.run_times(_log(gbs=2048, seq=2048, step_s=10.0, host_s=0.25, blocks=2, steps=12))
    assert r["blocks"] == 2 and r["gbs"] == 2048
    assert abs(r["block"] - 10.25) < 1e-6          # wall clock, first block left out
    assert abs(r["delta"] - 10.25) < 1e-6          # gaps across evals left out
    assert abs(r["step_timing"] - 10.0) < 1e-6     # the callback's own timing
