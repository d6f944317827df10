"""NeMo 25.04's Transformer Engine on Blackwell (61st session, bwfp861): the container's pinned
TE@bee4649c (2.2.0.dev0) casts per-tensor fp8 (delayed and current scaling) without a
transposed copy where the GEMMs take any layout (pytorch/csrc/extensions/quantizer.cpp L106,
L220; csrc/extensions/util.cpp L11-14, sm >= 100), so the nemo profile's
``fp8_non_tn_layouts`` holds from 25.04; NeMo 25.02's TE is not recorded and keeps its
transposes. And ``benchmarks/bwfp861.py``'s split of the GB200 twin rows' fp8 deficit."""

from __future__ import annotations

import csv
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from trainsim.catalog.frameworks import framework_supports
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload import te_weight_cache
from trainsim.workload.fp8_casts import FP8_CAST_BYTES, FP8_CAST_TRANSPOSE_BYTES
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Elementwise
from trainsim.workload.shard import shard_of

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _row(file: str, row_id: str) -> dict[str, str]:
    with open(BENCH / f"training_{file}.csv", newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == row_id)


def _cfg(file: str, row_id: str):
    row = _row(file, row_id)
    return row_config(row, predict_training_row(row).chosen)


def test_non_tn_layouts_from_nemo_25_04():
    for version, expected in (("24.12", False), ("25.02", False), ("25.04", True),
                              ("25.07", True), ("25.09", True)):
        assert bool(framework_supports("nemo", version, "fp8_non_tn_layouts")) is expected, \
            version


@pytest.mark.parametrize("file, row_id, tn_only", [
    ("dgxc2505", "dgxc2505-llama3.1-405b-fp8-gb200-128", False),   # delayed, 25.04
    ("nemo_perf", "nemo2504-llama3-8b-gb200-8", False),             # current scaling, 25.04
    ("dgxc2505", "dgxc2505-nemotron4-340b-fp8-h100-256", True),    # Hopper: TN only
    ("nemo_perf", "nemo2502-llama3-8b-b200-8", True),               # 25.02: TE not recorded
])
def test_nemo_blackwell_fp8_casts_write_no_transpose(file, row_id, tn_only):
    cfg = _cfg(file, row_id)
    sh = shard_of(cfg)
    assert sh.fp8_tn_only is tn_only
    extra = sh.fp8_cast_bytes - (FP8_CAST_TRANSPOSE_BYTES if tn_only else FP8_CAST_BYTES)
    assert 0 <= extra <= 2  # the recipe's own addition (current scaling's amax read)
    # the fp8 parameters' once-a-step transposes go with the layout (25.02 keeps 16-bit weights)
    assert te_weight_cache.transposes(cfg) is (tn_only and cfg.training.fp8_param_gather)
    fwd = layer_forward(cfg, sh)
    kernels = {op.kernel for op in fwd + backward_of(fwd, sh) if isinstance(op, Elementwise)}
    if not tn_only:
        assert "fp8_transpose" not in kernels


def test_gb200_405b_fp8_layer_is_cheaper_without_transposes():
    from trainsim.pricing import Pricer
    cfg = _cfg("dgxc2505", "dgxc2505-llama3.1-405b-fp8-gb200-128")
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    model = Pricer(cfg).compute
    fp8 = [op for op in fwd + backward_of(fwd, sh) if isinstance(op, Elementwise)
           and op.kernel.startswith("fp8_")]
    assert fp8 and all(op.kernel != "fp8_transpose" for op in fp8)
    assert sh.fp8_cast_bytes == FP8_CAST_BYTES  # delayed scaling: read 16 bits, write 8
    # the same layer on the TN-only path (main before this session) prices more cast time
    tn = replace(sh, fp8_tn_only=True)
    fwd_tn = layer_forward(cfg, tn)
    fp8_tn = [op for op in fwd_tn + backward_of(fwd_tn, tn) if isinstance(op, Elementwise)
              and op.kernel.startswith("fp8_")]
    assert sum(map(model.time, fp8)) < sum(map(model.time, fp8_tn))


def test_carried_error_arithmetic():
    sys.path.insert(0, str(BENCH))
    try:
        from bwfp861 import carried
    finally:
        sys.path.remove(str(BENCH))
    # bf16 misses 1 s of 10; the fp8 step of 5 s missing the same 1 s is -20 %, own 0
    car, own = carried(9.0, 10.0, 4.0, 5.0)
    assert car == pytest.approx(-20.0) and own == pytest.approx(0.0)
    # the fp8 row missing 0.5 s more than its twin: that is fp8's own
    car, own = carried(9.0, 10.0, 3.5, 5.0)
    assert car == pytest.approx(-20.0) and own == pytest.approx(0.5)


def test_diagnostic_pairs_gb200_twins():
    sys.path.insert(0, str(BENCH))
    try:
        from bwfp861 import pairs
    finally:
        sys.path.remove(str(BENCH))
    found = pairs(["dgxc2505"], "gb200")
    ids = {f["id"] for _, _, f in found}
    assert "dgxc2505-llama3.1-405b-fp8-gb200-512" in ids
    assert all(b["id"] == f["id"].replace("-fp8-", "-bf16-") and b["gpu"] == "gb200"
               for _, b, f in found)
    assert not any("h100" in i for i in ids)
