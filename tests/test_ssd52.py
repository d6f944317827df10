"""The fused conv1d + SSD function's backward launches what mamba_ssm's code launches (its small
torch and pre-hook kernels, its fp32 recomputed states), and the audit of the SSD kernels'
pricing (benchmarks/ssd52_audit.py) reads the published measurements as it says."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

import trainsim
from trainsim.compute.host import HOST_S_PER_KERNEL, PY_LAUNCH_S, launches, loop_host_s
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.mamba_block import (
    SPLIT_SUMS,
    SSD,
    STATE_BYTES,
    WORKSPACE_KERNELS,
    mamba_forward,
    scan_backward,
)
from trainsim.workload.ops import Elementwise, Gemm
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]


def run(model="nemotron-h-8b", tp=1, mbs=1, seq=8192):
    return trainsim.run_config_from_dict({
        "model": model,
        "training": {"global_batch_size": 8 * mbs, "micro_batch_size": mbs,
                     "seq_length": seq, "dtype": "bf16", "framework": "megatron-core"},
        "parallel": {"tp": tp, "sequence_parallel": tp > 1},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})


def audit():
    spec = importlib.util.spec_from_file_location("ssd52_audit",
                                                  ROOT / "benchmarks" / "ssd52_audit.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass resolves its annotations through it
    spec.loader.exec_module(mod)
    return mod


def test_scan_backward_launches_the_small_kernels_of_its_code():
    """The backward issues, beside its 16 Triton and conv1d kernels and its 6 torch ops on ddA,
    the clone of dt, 3 sums of split partials and 13 zeroings, cumsums, partial sums (mamba_ssm
    @e9594ce1): 23 more launches than before, each a bare tensor method (host PY_LAUNCH_S, not an
    eager module's HOST_S_PER_KERNEL)."""
    cfg = run()
    bwd = scan_backward(mamba_forward(cfg, shard_of(cfg)))
    by = {op.name: op for op in bwd}
    small = [by[SSD + n] for n in ("dt_clone", "split_sums", "workspace", "ddA_reverse_cumsum")]
    assert [op.kernels for op in small] == [1, SPLIT_SUMS, WORKSPACE_KERNELS, 6] == [1, 3, 13, 6]
    for op in small:
        assert isinstance(op, Elementwise) and op.py_kernels == op.kernels
        assert launches(op) == 0 and loop_host_s(op) == pytest.approx(op.kernels * PY_LAUNCH_S)
    assert PY_LAUNCH_S < HOST_S_PER_KERNEL
    names = [op.name for op in bwd]
    assert names.index(SSD + "conv1d.recompute") < names.index(SSD + "dt_clone") \
        < names.index(SSD + "chunk_cumsum.recompute")
    assert sum(isinstance(op, Gemm) for op in bwd) == 10  # 8 gradients, C B^T and states again


def test_recomputed_states_pass_in_fp32_both_ways():
    """The backward's ``_state_passing_fwd`` has no ``out_dtype``: it reads and writes the fp32
    states (8 bytes an element), where the forward's writes them in 16 bits (6 bytes)."""
    cfg = run()
    fwd = mamba_forward(cfg, shard_of(cfg))
    by_f = {op.name: op for op in fwd}
    by_b = {op.name: op for op in scan_backward(fwd)}
    state = by_f[SSD + "chunk_state"]
    elems = state.batch * state.m * state.n  # (sequence, chunk, head) x N x P
    assert by_f[SSD + "state_passing"].bytes == elems * (STATE_BYTES + 2)
    assert by_b[SSD + "state_passing.recompute"].bytes == elems * 2 * STATE_BYTES


def test_workspace_bytes_by_hand():
    """nemotron-h-8b at tp 1, one sequence of 8192: 128 heads, 8 groups, chunk 128, state 128.
    Split sums: dB and dC partials (T G N fp32) read and summed into fp32, dcb (chunks G Q Q fp32)
    likewise; workspace: 3 zeroed T H fp32 buffers, a cumsum of one (read + write), the ddA
    partial sum reading Q / 32 rows and writing one."""
    cfg = run()
    m = cfg.model
    bwd = {op.name: op for op in scan_backward(mamba_forward(cfg, shard_of(cfg)))}
    T, H, G, N, Q = 8192, 128, m.mamba_num_groups, m.mamba_state_dim, m.mamba_chunk_size
    assert (G, N, Q) == (8, 128, 128)
    chunks = T // Q
    assert bwd[SSD + "split_sums"].bytes == 2 * 2 * T * G * N * 4 + 2 * chunks * G * Q * Q * 4
    assert bwd[SSD + "workspace"].bytes == T * H * 4 * (3 + 2 + Q // 32 + 1)
    assert bwd[SSD + "dt_clone"].bytes == 2 * T * H * 2


def test_hybrid_layer_backward_carries_the_new_kernels_once():
    """A whole Mamba layer's backward (workload.layers.backward_of) holds each small-kernel op
    once, after the conv1d backward, and still no dgrad / wgrad of an SSD op."""
    cfg = run(tp=2)
    sh = shard_of(cfg)
    names = [op.name for op in backward_of(layer_forward(cfg, sh, "M"), sh)]
    for n in ("dt_clone", "split_sums", "workspace"):
        assert names.count(SSD + n) == 1
    assert names.index(SSD + "conv1d.bwd") < names.index(SSD + "split_sums")
    assert not any(n.startswith(SSD) and n.endswith((".dgrad", ".wgrad")) for n in names)


def test_audit_tilelang_bytes_and_rate():
    """The benchmarked Triton chunk scan (fp16, no z) at seq 8192 moves 1.749 GB at least:
    C B^T 33.6 MB, x and out 671 MB each, C 16.8 MB, states 335.5 MB, dt and dA 21.0 MB; the
    simulator prices it by 3.26x as many bytes (each head re-reading its group's operand), and
    the published 1.89 ms puts the kernel at 0.28 of the H800's HBM bandwidth."""
    mod = audit()
    s = mod.SsdShape(8, 8192, 80, 1, 64, 128, 256)
    assert mod.tilelang_chunk_scan_bytes(s) == pytest.approx(
        33_554_432 + 2 * 671_088_640 + 16_777_216 + 335_544_320 + 20_971_520)
    rows = {r["seq"]: r for r in mod.chunk_scan_rows()}
    assert sorted(rows) == [1024, 2048, 4096, 8192, 16384, 32768]
    r = rows[8192]
    assert r["moved_bytes"] == pytest.approx(1.749e9, rel=1e-3)
    assert r["priced_bytes"] / r["moved_bytes"] == pytest.approx(3.26, abs=0.01)
    assert r["hbm_share"] == pytest.approx(0.276, abs=0.002)
    for row in rows.values():  # the rows' achieved rate: 0.2-0.25 of the bf16 GEMM ceiling
        assert 0.19 < row["peak_share"] < 0.25


def test_audit_nsplits_and_moved_bytes_shapes():
    """``nsplits`` as the split kernels compute it: Nemotron-H 56B at tp 8 (32 heads, 1 group,
    64 chunks) on 132 SMs runs 16 heads a program, 2 splits; Nemotron 3 Nano (64 heads in 8
    groups) 1. The forward's chunk state writes the fp32 states; the backward's recomputed
    state passing moves them in fp32 both ways."""
    mod = audit()
    h56 = mod.SsdShape(1, 8192, 32, 1, 64, 256, 128)
    nano = mod.SsdShape(1, 8192, 64, 8, 64, 128, 128)
    assert mod.nsplits(h56, 132) == 2 and mod.nsplits(nano, 132) == 1
    moved = mod.moved_bytes(h56, 132)
    states = 64 * 32 * 64 * 256
    assert moved["ssd.state_passing.recompute"] == states * 8
    assert moved["ssd.state_passing"] == states * 6
    assert moved["ssd.chunk_state"] - states * 4 == pytest.approx(
        8192 * 256 * 2 + 8192 * 32 * 64 * 2 + 2 * 8192 * 32 * 4)


def test_audit_conv1d_rows_are_hbm_bound():
    """causal-conv1d PR #88's backward times at seqlen >= 4096 move x, dout and dx at 0.82-0.84
    of the RTX PRO 6000's 1792 GB/s: memory-bound, as the simulator prices conv1d
    (HBM_EFFICIENCY 0.85); the 2048 row, 203 MB against a 128 MB L2, reads faster."""
    from trainsim.compute.roofline import HBM_EFFICIENCY

    rows = {L: share for L, _, share in audit().conv1d_rows()}
    assert set(rows) == {2048, 4096, 16384}
    for L in (4096, 16384):
        assert 0.80 < rows[L] < HBM_EFFICIENCY
    assert rows[2048] > 0.9
    assert math.isclose(audit().conv1d_rows()[0][1], 3 * 4 * 4128 * 2048 * 2)


def test_conv1d_backward_rows_price_as_memory_bound():
    """benchmarks/kernels_ssd.csv's causal-conv1d rows (PR #88, RTX PRO 6000 Blackwell): the
    two HBM figures (seqlen 4096, 16384) are priced within 3 % by the bytes the backward moves at
    HBM_EFFICIENCY; the 2048 row (203 MB, a 128 MB L2) is priced but left out as L2-resident."""
    import csv

    from trainsim.validate.kernels import predict_kernel_row

    rows = [r for r in csv.DictReader((ROOT / "benchmarks" / "kernels_ssd.csv").open())
            if r["implementation"] == "causal_conv1d"]
    assert [r["id"][-6:] for r in rows] == ["-s2048", "-s4096", "s16384"]
    for row in rows:
        res = predict_kernel_row(row, compute_db=None)
        assert res.error is None
        if row["id"].endswith("s2048"):
            assert "L2-resident" in res.extra["excluded"]
            continue
        assert "excluded" not in res.extra
        assert abs(res.predicted / res.measured - 1) < 0.03, row["id"]
