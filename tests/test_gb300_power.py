"""GB300's sustained matmul rate: GB200's measured one raised to GB300's board power by the
catalog's power law (catalog/gpus/gb300.yaml; benchmarks/gb300_power.py, the 50th session's gb300
diagnostic), and the Megatron-Bridge GB300 / GB200 pairs it is checked on (never fitted)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

from trainsim.catalog import gpu
from trainsim.config.cluster import POWER_EXPONENT
from trainsim.validate.training import predict_training_row

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "gb300_power.py")


def test_gb300_and_gb200_differ_for_matmuls_only_in_board_power():
    """The derivation's premise, as the catalog states it: the same dense bf16 / fp8 peaks, SM
    count and MAMF fractions, a higher board power."""
    g3, g2 = gpu("gb300"), gpu("gb200")
    for dtype in ("bf16", "fp8"):
        assert g3.flops(dtype) == g2.flops(dtype)
    assert (g3.num_sms, g3.mamf_fraction, g3.mamf_fraction_fp8) == \
        (g2.num_sms, g2.mamf_fraction, g2.mamf_fraction_fp8)
    assert (g3.tdp_w, g2.tdp_w) == (1400, 1200)


def test_gb300_sustained_rate_is_gb200s_at_1400_w():
    """0.82 x (1400 / 1200)^0.6 = 0.8995: the sustained GEMM ceiling 1.097x GB200's, where the
    0.85 default had given 1.037x."""
    g3, g2 = gpu("gb300"), gpu("gb200")
    assert g3.sustained_of_burst == pytest.approx(SCRIPT.derived_sustained(), abs=5e-4)
    assert g3.sustained_of_burst < 1.0
    for dtype in ("bf16", "fp8"):
        ratio = g3.gemm_ceiling(dtype) / g2.gemm_ceiling(dtype)
        assert ratio == pytest.approx((1400 / 1200) ** POWER_EXPONENT, rel=1e-3)


def test_pairs_hold_one_gpu_against_the_other():
    """The diagnostic pairs rows whose ids differ only in the GPU: 13 archive pairs and
    MLPerf 5.1's two Llama 3.1 8B pairs, each GB300 row with its GB200 row."""
    pairs = SCRIPT.pairs()
    assert len(pairs) == 15
    for fast, slow in pairs:
        assert (fast["gpu"], slow["gpu"]) == ("gb300", "gb200")
        assert fast["id"].replace("-gb300-", "-gb200-") == slow["id"]
        for key in ("model", "dtype", "num_gpus", "global_batch_size", "framework_version"):
            assert fast[key] == slow[key], (fast["id"], key)


def test_llama3_8b_pair_ratio_follows_the_power():
    """Bridge 25.11 Llama 3 8B FP8-CS on 8 GPUs, the same recipe on both (TP1 PP1 MBS 2):
    measured GB200 / GB300 time 4.16 / 3.49 = 1.19. Priced 1.074 with the 0.85 default; with the
    power-derived rate it must land between 1.10 and 1.25."""
    fast_id = "bridgearch2511-llama3-8b-gb300-8-fp8cs"
    pair = next((f, s) for f, s in SCRIPT.pairs() if f["id"] == fast_id)
    times = [predict_training_row(r) for r in pair]
    assert all(r.error is None for r in times)
    assert 1.10 < times[1].predicted / times[0].predicted < 1.25
