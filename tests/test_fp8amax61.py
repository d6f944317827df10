"""Transformer Engine >= 1.6 reduces one bulk amax buffer per ``fp8_autocast`` exit and per
first-module backward: the buffer holds every fp8 module of the rank (all its model chunks,
keyed by recipe and group only), ``torch.cat`` gathers it, the all_reduce runs, and one fused
kernel updates every module's history and scales (``workload.fp8_delayed.fp8_amax_reductions``
with ``bulk_update``; 61st session, fp8amax61)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers_configs import fp8_slice_cfg

from trainsim.chunks import chunks
from trainsim.compute.roofline import LAUNCH_S
from trainsim.config import RunConfig
from trainsim.pricing import Pricer
from trainsim.workload.fp8_delayed import (
    FP8_AMAX_BYTES_PER_LAYER,
    fp8_amax_bulk_kernels,
    fp8_amax_reductions,
)
from trainsim.workload.ops import Comm, Elementwise
from trainsim.workload.shard import shard_of


def _cfg(framework: str = "nemo", version: str | None = "24.09", vpp: int | None = 2,
         recipe: str = "delayed") -> RunConfig:
    """The ``FP8_SLICE`` model (8 layers) on 64 GPUs, TP 4 with SP, PP 2 and ``vpp`` chunks a
    stage: 4 layers a stage, 2 a chunk."""
    cfg = fp8_slice_cfg(recipe, framework=framework, version=version, gpus=64, pp=2, batch=32)
    return replace(cfg, parallel=replace(cfg.parallel,
                                         virtual_pipeline_model_parallel_size=vpp))


def _labels(cfg: RunConfig) -> tuple[list[str], list[str]]:
    """Labels of the first chunk's forward and backward segments of the per-pass amax work
    (not current scaling's per-tensor TP amax all-reduces inside the layers)."""
    ch = chunks(cfg, Pricer(cfg), shard_of(cfg))[0]
    return tuple([label for _, _, label in part.segments if label.startswith("fp8_amax")]
                 for part in (ch.fwd, ch.bwd))


def test_bulk_reduction_carries_every_chunk_of_the_stage():
    """TE 1.6+ keys the buffer by recipe and group, so a chunk's reduction carries the amaxes
    of the stage's 4 layers, not the chunk's 2; before 1.6 (no bulk) the chunk's own."""
    fwd, bwd = fp8_amax_reductions(2, "tp_dp_cp", 4, bulk_update=True)
    comms = [op for op in fwd + bwd if isinstance(op, Comm)]
    assert [c.bytes for c in comms] == [4.0 * b for b in FP8_AMAX_BYTES_PER_LAYER]
    old_f, old_b = fp8_amax_reductions(2, "tp_dp_cp", 4, bulk_update=False)
    assert [op.bytes for op in old_f + old_b] == [2.0 * b for b in FP8_AMAX_BYTES_PER_LAYER]
    assert all(isinstance(op, Comm) for op in old_f + old_b)


def test_cat_and_fused_update_around_each_all_reduce():
    """Each reduction is ``torch.cat``, the all_reduce, then the fused update, forward and
    backward alike, both kernels Python calls outside any module (``py_kernels``)."""
    for ops in fp8_amax_reductions(2, "tp_dp_cp", 4, bulk_update=True):
        assert [type(op) for op in ops] == [Elementwise, Comm, Elementwise]
        assert ops[0].name.startswith("fp8_amax_cat") and ops[2].name.startswith(
            "fp8_amax_update")
        assert all(op.py_kernels == op.kernels == 1 for op in (ops[0], ops[2]))


def test_cat_launches_one_kernel_per_128_modules():
    """PyTorch's CUDA cat copies 128 inputs a kernel: 42 layers (126 modules) one, 43 (129)
    two; the fused update takes up to 1,023 modules a kernel."""
    assert fp8_amax_bulk_kernels("fwd", 42, 1.0)[0][0].kernels == 1
    assert fp8_amax_bulk_kernels("fwd", 43, 1.0)[0][0].kernels == 2
    assert fp8_amax_bulk_kernels("fwd", 341, 1.0)[1][0].kernels == 1
    assert fp8_amax_bulk_kernels("fwd", 342, 1.0)[1][0].kernels == 2


def test_nemo_24_09_chunks_price_the_bulk_kernels():
    """NeMo 24.09 (TE 1.10): the chunk's forward ends with cat, all_reduce, update, and its
    backward's reduction the same; each kernel at least a launch."""
    cfg = _cfg()
    fwd, bwd = _labels(cfg)
    assert fwd == ["fp8_amax_cat.fwd", "fp8_amax_reduce.fwd", "fp8_amax_update.fwd"]
    assert bwd == ["fp8_amax_cat.bwd", "fp8_amax_reduce.bwd", "fp8_amax_update.bwd"]
    ch = chunks(cfg, Pricer(cfg), shard_of(cfg))[0]
    seg = {label: s for _, s, label in ch.fwd.segments}
    assert seg["fp8_amax_update.fwd"] >= LAUNCH_S and seg["fp8_amax_cat.fwd"] >= LAUNCH_S


def test_no_host_wait_for_the_bulk_calls():
    """The host has run ahead of the chunk's kernels: the three calls launch behind them, so
    the chunk's forward exposes no more host time than the same chunk without them."""
    cfg = _cfg()
    ch = chunks(cfg, Pricer(cfg), shard_of(cfg))[0]
    labels = [label for _, _, label in ch.fwd.segments]
    at = labels.index("fp8_amax_cat.fwd")
    assert "host_launch_wait" not in labels[at:]


@pytest.mark.parametrize("framework, version", [("nemo", "25.02"), ("mlperf-nemo", "3.1")])
def test_no_bulk_kernels_without_a_recorded_te_1_6(framework, version):
    """A release whose TE is not recorded (NeMo 25.02) keeps the bare all_reduce; MLPerf v3.1's
    TE 09ba842 (asynchronous TP-only reduction) prices none."""
    fwd, bwd = _labels(_cfg(framework, version))
    if version == "3.1":
        assert fwd == bwd == []
    else:
        assert fwd == ["fp8_amax_reduce.fwd"] and bwd == ["fp8_amax_reduce.bwd"]


def test_no_bulk_kernels_without_delayed_scaling():
    """Current scaling keeps no amax buffer (TE v2.2 fp8.py L439-448: the exit's reduction is
    a no-op for other recipes); its per-tensor TP amax all-reduces stay in the layers."""
    assert _labels(_cfg(recipe="current")) == ([], [])


def _reduce_s(cfg: RunConfig) -> float:
    """Seconds of the first chunk's forward amax all-reduce."""
    ch = chunks(cfg, Pricer(cfg), shard_of(cfg))[0]
    return next(s for _, s, label in ch.fwd.segments if label == "fp8_amax_reduce.fwd")


def test_tp_only_amax_red_narrows_the_group():
    """Megatron-core's ``tp_only_amax_red`` (NeMo's GPT-3 175B performance script sets it):
    the 4 TP ranks of one node reduce, not the stage's 32 ranks on 4 nodes."""
    cfg = _cfg()
    narrow = replace(cfg, training=replace(cfg.training, tp_only_amax_red=True))
    assert _reduce_s(narrow) < 0.5 * _reduce_s(cfg)


def test_options_cell_sets_tp_only_amax_red():
    """A row's ``tp_only_amax_red`` option turns the field on; without it the field is off."""
    import csv
    from pathlib import Path

    from trainsim.validate.training import row_config
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "training_nemo_perf.csv"
    with path.open(newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["fp8_recipe"] == "delayed")
    on = dict(row, options="tp_overlap;tp_only_amax_red")
    off = dict(row, options="tp_overlap")
    assert row_config(on).training.tp_only_amax_red
    assert not row_config(off).training.tp_only_amax_red
