"""Transformer Engine 1.2-1.13 under sequence parallelism casts a row-parallel linear's fp8 input
without its transpose and transposes it in the backward before the wgrad GEMM
(TransformerEngine v1.10 module/linear.py: ``fp8_cast_transpose_fused`` only ``and not
sequence_parallel``, else ``cast_to_fp8``; backward ``tex.fp8_transpose(inputmat_total)``);
from TE 2.0 the input is quantized with both usages in one pass. And the bf16 / fp8 twin table
(benchmarks/fp8pair60.py) pairs only rows that differ in their dtype cells."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import FP8_SLICE, fp8_slice_cfg, layer_ops, load_script

from trainsim.workload.shard import shard_of, te_row_cast_only

H, F, T, TP = FP8_SLICE
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("framework,version,expected", [
    ("nemo", "24.09", True),            # TE 1.10
    ("megatron-core", "0.7", True),     # TE 1.6
    ("mlperf-nemo", "4.0", True),       # TE v1.6rc1
    ("mlperf-nemo", "3.1", False),      # TE 09ba842, before d76118d9 (v1.2)
    ("megatron-core", "0.12", False),   # TE 2.2
    ("megatron-core", "0.10", False),   # te_version not recorded
    (None, None, False),
])
def test_which_releases_cast_the_row_parallel_input_alone(framework, version, expected):
    """The rule reads the profile's recorded ``te_version``: 1.2 <= TE < 2.0."""
    cfg = fp8_slice_cfg(framework=framework, version=version)
    assert te_row_cast_only(cfg) is expected
    assert shard_of(cfg).fp8_row_cast_only is expected


def test_only_fp8_with_sequence_parallel():
    """Without SP the input is cast and transposed in one kernel (``not sequence_parallel``
    holds); a bf16 run casts nothing."""
    assert not te_row_cast_only(fp8_slice_cfg(framework="nemo", version="24.09", sp=False))
    assert not te_row_cast_only(fp8_slice_cfg(framework="nemo", version="24.09", dtype="bf16"))


def test_forward_casts_and_backward_transposes_the_row_parallel_inputs():
    """out_proj's (2048 x 1024) and fc2's (2048 x 4096) inputs: a cast reading 2 and writing 1
    byte an element in the forward, a transpose reading and writing 1 byte in the backward,
    after the dgrad and before the wgrad; the column-parallel inputs are untouched."""
    fwd, bwd = layer_ops(fp8_slice_cfg(framework="nemo", version="24.09"))
    assert "out_proj.cast_transpose" not in fwd and "fc2.cast_transpose" not in fwd
    assert fwd["out_proj.fp8_cast"].bytes == T * (H // TP) * 3
    assert fwd["fc2.fp8_cast"].bytes == T * (F // TP) * 3
    assert fwd["fc2.fp8_cast"].kernels == 1
    names = [op.name for op in bwd]
    by = {op.name: op for op in bwd}
    for gemm, k in (("out_proj", H // TP), ("fc2", F // TP)):
        at = names.index(f"{gemm}.input_fp8_transpose")
        assert names.index(f"{gemm}.dgrad") < at < names.index(f"{gemm}.wgrad")
        assert by[f"{gemm}.input_fp8_transpose"].bytes == T * k * 2
    assert "fc1.fp8_cast" not in fwd  # the gathered input: the norm wrote fp8, as before


def test_the_split_costs_more_than_the_fused_cast_transpose():
    """Forward cast plus backward transpose move 5 bytes an element against the fused 4, in
    two kernels: the TE 1.x fp8 layer is slower than the same layer priced as TE 2.x does."""
    from trainsim.pricing import Pricer
    from trainsim.workload.layers import backward_of, layer_forward
    cfg = fp8_slice_cfg(framework="nemo", version="24.09")
    fused = replace(shard_of(cfg), fp8_row_cast_only=False)
    split = shard_of(cfg)
    model = Pricer(cfg).compute

    def kernel_s(sh) -> float:
        fwd = layer_forward(cfg, sh)
        return sum(model.time(op) for op in fwd + backward_of(fwd, sh)
                   if "cast" in op.name or "transpose" in op.name)
    assert kernel_s(split) > kernel_s(fused)


def test_twins_differ_only_in_their_dtype_cells():
    """Every pair the script finds in the dgxc check file is one bf16 and one fp8 row whose
    other cells (model, GPUs, layout, batch, release, options) are equal."""
    fp8pair60 = load_script(ROOT / "benchmarks" / "fp8pair60.py")
    pairs = fp8pair60.twins(["dgxc"])
    assert len(pairs) >= 10
    for _, b, f in pairs:
        assert b["dtype"] == "bf16" and f["dtype"] == "fp8"
        assert {k for k in b if b[k] != f[k]} <= set(fp8pair60.DTYPE_CELLS)
