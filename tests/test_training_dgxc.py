"""Two held-out sources added by newsrc6 (2026-11-26), neither used anywhere before:

- benchmarks/training_dgxc.csv: NVIDIA/dgxc-benchmarking @ 35a9aecc8d (release v24.11.1), the
  'Expected Performance' tables of the NeMo 24.09 / 24.05 Launcher recipes on DGX H100
  (Nemotron-4 15B and 340B, Llama 3.1 8B / 70B / 405B, GPT-3 175B; BF16 and FP8; the smallest
  and the largest published scale of each table), and @ 741c886025 (release v25.04) the Llama
  3.1 and Nemotron-4 tables of the NeMo 2.0 performance scripts in the 25.02.01 container;
- benchmarks/training_nemotron4.csv: the Nemotron-4 15B Technical Report (arXiv:2402.16819)
  Table 2, the production run's three batch-ramp stages on 768-2,304 H100s.

The rows re-derived from the published figures (tokens/s, MFU) and bounds on today's
first-prediction error that can fail (the generic checks: tests/test_training_files.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import training_rows, validated

ROOT = Path(__file__).resolve().parents[1]
DGXC = ROOT / "benchmarks" / "training_dgxc.csv"
NEMOTRON4 = ROOT / "benchmarks" / "training_nemotron4.csv"

# id -> (published step time s, published tokens/s) from the README tables @ 35a9aecc8d
DGXC_PUBLISHED = {
    "dgxc2411-nemotron4-15b-bf16-16": (2.83, 92630), "dgxc2411-nemotron4-15b-bf16-2048": (2.96, 11335957),
    "dgxc2411-nemotron4-15b-fp8-16": (2.08, 126031), "dgxc2411-nemotron4-15b-fp8-2048": (2.18, 15391941),
    "dgxc2411-nemotron4-340b-bf16-128": (4.61, 28432), "dgxc2411-nemotron4-340b-bf16-2048": (4.84, 433296),
    "dgxc2411-nemotron4-340b-fp8-128": (3.16, 41478), "dgxc2411-nemotron4-340b-fp8-2048": (3.49, 600903),
    "dgxc2411-llama3.1-8b-bf16-8": (12.91, 81222), "dgxc2411-llama3.1-8b-bf16-128": (13.10, 1280704),
    "dgxc2411-llama3.1-8b-fp8-8": (9.67, 108436), "dgxc2411-llama3.1-8b-fp8-128": (9.82, 1708474),
    "dgxc2411-llama3.1-70b-bf16-64": (14.72, 71235), "dgxc2411-llama3.1-70b-bf16-2048": (14.98, 2248957),
    "dgxc2411-llama3.1-70b-fp8-64": (11.01, 95239), "dgxc2411-llama3.1-70b-fp8-2048": (11.39, 2945955),
    "dgxc2411-llama3.1-405b-bf16-576": (17.20, 120022), "dgxc2411-llama3.1-405b-bf16-2304": (17.62, 468646),
    "dgxc2411-llama3.1-405b-fp8-576": (11.24, 183664), "dgxc2411-llama3.1-405b-fp8-2304": (12.35, 668626),
    "dgxc2411-gpt3-175b-bf16-128": (8.91, 58843), "dgxc2411-gpt3-175b-bf16-2048": (9.02, 930001),
    "dgxc2411-gpt3-175b-fp8-128": (5.92, 88562), "dgxc2411-gpt3-175b-fp8-2048": (6.24, 1344328),
    # llama3.1/README.md @ 741c886025 (release v25.04: NeMo 2.0, container 25.02.01)
    "dgxc2504-llama3.1-8b-bf16-8": (12.27, 85459), "dgxc2504-llama3.1-8b-bf16-128": (12.33, 1360683),
    "dgxc2504-llama3.1-8b-fp8-8": (9.33, 112388), "dgxc2504-llama3.1-8b-fp8-128": (9.54, 1758618),
    "dgxc2504-llama3.1-70b-bf16-64": (14.66, 71526), "dgxc2504-llama3.1-70b-bf16-2048": (14.66, 2288843),
    "dgxc2504-llama3.1-70b-fp8-64": (9.86, 106346), "dgxc2504-llama3.1-70b-fp8-2048": (10.15, 3305855),
    "dgxc2504-llama3.1-405b-bf16-512": (19.78, 106024), "dgxc2504-llama3.1-405b-bf16-2048": (19.87, 422175),
    "dgxc2504-llama3.1-405b-fp8-512": (12.37, 169535), "dgxc2504-llama3.1-405b-fp8-2048": (12.56, 667883),
    # nemotron/README.md @ 741c886025 (same release, NeMo d2b21556f2's pretrain_nemotron4_*.py)
    "dgxc2504-nemotron4-15b-bf16-16": (2.66, 98550), "dgxc2504-nemotron4-15b-bf16-2048": (2.78, 12069940),
    "dgxc2504-nemotron4-15b-fp8-16": (1.98, 132396), "dgxc2504-nemotron4-15b-fp8-2048": (2.09, 16054752),
    "dgxc2504-nemotron4-340b-bf16-256": (4.36, 60125), "dgxc2504-nemotron4-340b-bf16-2048": (4.43, 473398),
    "dgxc2504-nemotron4-340b-fp8-256": (2.93, 89469), "dgxc2504-nemotron4-340b-fp8-2048": (3.05, 687591),
}
RELEASE = {"dgxc2411": ("@ 35a9aecc8d", "24."), "dgxc2504": ("@ 741c886025", "25.02")}
# the one column whose tokens/s and MFU are another column's: Llama 3.1 70B BF16 at 2,048 GPUs
# publishes 14.98 s but 2,248,957 tokens/s and 53.38 % MFU, the 1,024-GPU column's 14.92 s
OFF_BY_A_COLUMN = {"dgxc2411-llama3.1-70b-bf16-2048": 14.92}
# Nemotron-4 15B report Table 2: data-parallel size -> (GPUs, iteration s, MFU %, batch size)
NEMOTRON4_TABLE2 = {96: (768, 0.57, 34.3, 384), 192: (1536, 0.58, 33.3, 768), 288: (2304, 0.64, 30.5, 1152)}


def test_dgxc_file_is_the_published_tables():
    rows = training_rows(DGXC)
    assert {r["id"] for r in rows} == set(DGXC_PUBLISHED)
    for r in rows:
        t, tps = DGXC_PUBLISHED[r["id"]]
        assert float(r["measured_iteration_s"]) == t, r["id"]
        commit, version = RELEASE[r["id"].split("-", 1)[0]]
        assert "NVIDIA/dgxc-benchmarking" in r["source"] and commit in r["source"], r["id"]
        assert r["framework_version"].startswith(version), r["id"]
        assert r["framework"] == "nemo" and r["gpu"] == "h100-sxm-80gb", r["id"]
        assert r["dtype"] in r["id"] and f"published {t} s per step" in r["note"], r["id"]
        # the table's own tokens/s is sequence x global batch / step time (to its rounding)
        tokens = int(r["seq_length"]) * int(r["global_batch_size"])
        assert tokens / OFF_BY_A_COLUMN.get(r["id"], t) == pytest.approx(tps, rel=2e-3), r["id"]
        if r["id"] in OFF_BY_A_COLUMN:
            assert "14.98 s is kept" in r["note"]
        # the recipes' layouts: GBS a whole number of micro-batches on every data-parallel rank
        dp = int(r["num_gpus"]) // (int(r["tp"]) * int(r["pp"]) * int(r["cp"]))
        assert int(r["global_batch_size"]) % (dp * int(r["micro_batch_size"])) == 0, r["id"]


def test_nemotron4_rows_are_table_2_and_its_mfu():
    rows = training_rows(NEMOTRON4)
    for r in rows:
        dp = int(r["id"].rsplit("dp", 1)[1])
        gpus, t, mfu, gbs = NEMOTRON4_TABLE2[dp]
        assert (int(r["num_gpus"]), float(r["measured_iteration_s"]), int(r["global_batch_size"])) == (gpus, t, gbs)
        assert int(r["num_gpus"]) // int(r["tp"]) == dp and r["tp"] == "8" and r["pp"] == "1"
        # MFU as the report takes it: 6 x 15.7e9 parameters x tokens / (time x GPUs x 989 TFLOP/s)
        flops = 6 * (3.2e9 + 12.5e9) * 4096 * gbs
        assert 100 * flops / (t * gpus * 989e12) == pytest.approx(mfu, abs=1.0), r["id"]


def test_dgxc_error_stays_under_todays_bound():
    """2026-11-26 first predictions, nothing fitted or changed for them: the v24.11.1 rows (NeMo
    24.09 / 24.05) 24 rows MAPE 4.6 %, max 11.7 % (llama3.1-70b fp8 at 2,048 GPUs -11.7 %, GPT-3
    175B fp8 -8.7/-11.6 %: too fast), signed -3.4 % (4.5 % after rebasing on 1f4e19f); the
    v25.04 rows (NeMo 25.02) 20 rows MAPE 2.5 %, max 6.5 % (Llama 70B fp8 at 64 GPUs +6.5 %,
    Nemotron-4 15B bf16 at 16 GPUs +6.2 %: slow), signed +1.1 % (the 12 Llama rows alone 2.1 %,
    the 8 Nemotron rows 3.0 %). Bounds: those plus a margin."""
    _, res = validated(DGXC)
    for prefix, mape, worst in (("dgxc2411", 0.055, 0.135), ("dgxc2504", 0.035, 0.08)):
        apes = [r.ape for r in res if r.id.startswith(prefix)]
        assert len(apes) == (24 if prefix == "dgxc2411" else 20)
        assert sum(apes) / len(apes) <= mape and max(apes) <= worst, prefix


def test_nemotron4_report_miss_is_todays():
    """2026-11-26 first prediction: all three rows +56 to +67 % (too slow), the megatron-lm
    2023-12 profile filling the empty options cell with that release's defaults (no overlap).
    Since the blankopts change the switches Megatron-LM leaves to its user are tuned:
    --overlap-grad-reduce with --overlap-param-gather is chosen on every row, +28.6 / +27.7 /
    +16.8 % (MAPE 24.4 %). Since nemo31 the parameters are gathered bucket by bucket under the
    forward as that release's DDP and distributed optimizer do (profile 2023-10-24
    ``dp_buckets: first_chunk``): +13.1 / +12.9 / +3.3 % (MAPE 9.8 %). What is left is the
    release's local transformer (unfused attention, Transformer Engine the default only from
    2024-04), a choice the tool does not tune. A lead, not a fit (RESULTS.md, newsrc6,
    blankopts, nemo31); the bound keeps it from growing unnoticed."""
    _, res = validated(NEMOTRON4)
    assert len(res) == len(training_rows(NEMOTRON4)) == 3
    assert all(0 < r.predicted / r.measured - 1 <= 0.16 for r in res)
    assert all(r.chosen.get("dp_overlap") is True for r in res)
