"""MLPerf's NeMo code on Blackwell (57th session, mlperf57): from TE v2.0 a per-tensor fp8
quantizer writes no transposed copy where the GEMMs take any layout (TransformerEngine@v2.2.1
pytorch/csrc/extensions/quantizer.cpp L106, L217; tensor/float8_tensor.py L435-441), and every
Blackwell submission of MLPerf 5.0 and 5.1 pins TE v2.2.1 or release_v2.8, so the profile's
``fp8_non_tn_layouts`` holds from 5.0; 4.1's B200 preview ran the 24.09 container's TE 1.x."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.catalog.frameworks import framework_default, framework_supports
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload import te_weight_cache
from trainsim.workload.shard import shard_of

MLPERF5 = Path(__file__).resolve().parents[1] / "benchmarks" / "training_mlperf5.csv"


def _row_cfg(row_id: str):
    with open(MLPERF5, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return row_config(row, predict_training_row(row).chosen)


def test_non_tn_layouts_from_the_te_2_rounds():
    for version, expected in (("3.1", False), ("4.0", False), ("4.1", False), ("5.0", True),
                              ("5.1", True)):
        assert bool(framework_supports("mlperf-nemo", version, "fp8_non_tn_layouts")) \
            is expected, version


@pytest.mark.parametrize("row_id, tn_only", [
    ("mlperf50-nvidia-llama3.1-405b-gb200-512", False),
    ("mlperf50-nvidia-llama3.1-405b-h100-512", True),   # Hopper: TN only whatever TE says
    ("mlperf51-uf-llama3.1-8b-b200-8", False),
])
def test_blackwell_rows_make_no_fp8_transposes(row_id, tn_only):
    cfg = _row_cfg(row_id)
    assert shard_of(cfg).fp8_tn_only is tn_only
    # the fp8 parameters' once-a-step transposes go with the layout
    assert te_weight_cache.transposes(cfg) is tn_only


def test_amax_group_by_megatron_release():
    # 4.0's core_v0.7.0.beta reduces amaxes over TP x DP x CP; 4.1's 24.09-alpha.rc0 over
    # TP x CP (2e429097dd, reverted after the tag); 5.0+ tp_only_amax_red True
    for version, expected in (("4.0", False), ("4.1", True), ("5.0", True), ("5.1", True)):
        assert bool(framework_supports("mlperf-nemo", version, "fp8_amax_tp_only")) \
            is expected, version



def test_nccl_communicator_config_from_v4_0():
    # v4.0 / v4.1 config_common.sh NCCL_CFG_PATH: dp and dp_cp max_ctas 8; v3.1 sets none
    assert framework_default("mlperf-nemo", "3.1", "dp_max_ctas") is None
    for version in ("4.0", "4.1", "5.0", "5.1"):
        assert framework_default("mlperf-nemo", version, "dp_max_ctas") == 8, version


def test_vpp_diagnostic_counts_per_sequence():
    import sys
    sys.path.insert(0, str(MLPERF5.parent))
    import mlperf57_vpp as mv

    base = {"vpp": "12", "micro_batch_size": "2", "tp": "4", "seq_length": "2048",
            "hidden_size": "12288", "framework_version": "4.0"}
    smc = mv.counts(base)
    # a pass per chunk forward and backward per micro-batch of 2 sequences
    assert smc["passes"] == 12 and smc["dp_barriers"] == 12
    # one [s/tp, mbs, h] bf16 send a pass: bytes per sequence do not depend on the micro-batch
    assert smc["p2p_MB"] == pytest.approx(12 * 512 * 2 * 12288 * 2 / 1e6)
    assert mv.counts({**base, "micro_batch_size": "1"})["p2p_MB"] == pytest.approx(smc["p2p_MB"])
    # v3.1 and v4.1 keep the amax reductions off the data-parallel replicas
    assert mv.counts({**base, "framework_version": "4.1"})["dp_barriers"] == 0
    assert mv.counts({**base, "vpp": "4"})["passes"] == 4
    assert mv.fit_one([1.0, 2.0], [2.0, 4.0]) == pytest.approx(2.0)
    assert mv.fit_one([0.0, 0.0], [1.0, 2.0]) == 0.0
