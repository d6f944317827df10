"""mamba_ssm's Triton SSD kernels priced over the bytes they move (``compute.ssd``), the published
H200 rows of the chunked scan's forward (``benchmarks/kernels_ssd_h200.csv``) and the fit of the
one constant (``benchmarks/fit_ssd56.py``); the Megatron mixer's small ops around the fused call
(56th session, nemotron56)."""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import math
import sys
from pathlib import Path

import pytest

import trainsim
from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import ssd
from trainsim.compute.host import PY_LAUNCH_S, loop_host_s
from trainsim.compute.roofline import LAUNCH_S, RooflineModel
from trainsim.config.hybrid import mamba_heads
from trainsim.errors import ConfigError
from trainsim.validate.kernels import kernel_ops, predict_kernel_row
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.mamba_block import (
    NORM_DW_KERNELS,
    PARAM_PREP_BYTES,
    PARAM_PREP_KERNELS,
    SSD,
    SSD_IMPL,
    chunk_scan_forward,
    mamba_forward,
    nsplits,
    scan_backward,
)
from trainsim.workload.ops import Elementwise, Gemm
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # a dataclass resolves its annotations through it
    spec.loader.exec_module(mod)
    return mod


def _rows() -> list[dict[str, str]]:
    with open(ROOT / "benchmarks" / "kernels_ssd_h200.csv") as f:
        return list(csv.DictReader(f))


def run(model="nemotron-h-56b", tp=8, mbs=1, seq=8192, gpu="h100-sxm-80gb"):
    return trainsim.run_config_from_dict({
        "model": model,
        "training": {"global_batch_size": 8 * mbs, "micro_batch_size": mbs,
                     "seq_length": seq, "dtype": "bf16", "framework": "megatron-core"},
        "parallel": {"tp": tp, "sequence_parallel": tp > 1},
        "cluster": {"gpu": gpu, "num_gpus": 8, "gpus_per_node": 8}})


def test_rows_file_is_its_generator_output():
    gen = _load("kernels_ssd_h200_rows")
    assert _rows() == [{k: v for k, v in r.items()} for r in gen.rows()]
    assert len(_rows()) == 25
    assert {r["kind"] for r in _rows()} == {"ssd_fwd"}


def test_moved_bytes_of_the_ops_equal_the_audit_count():
    """The workload's bytes of each Triton SSD kernel (forward and backward) are the 52nd
    session's independent count (``ssd52_audit.moved_bytes``, one split of the dB / dC partials)
    at Nemotron-H 56B's and Nemotron 3 Nano's rank shapes."""
    audit = _load("ssd52_audit")
    for model, tp in (("nemotron-h-56b", 8), ("nemotron-3-nano-30b-a3b", 1)):
        cfg = run(model, tp)
        sh = shard_of(cfg)
        fwd = mamba_forward(cfg, sh)
        m = cfg.model
        s = audit.SsdShape(sh.batch, sh.q_len, mamba_heads(m) // tp, m.mamba_num_groups // tp,
                           m.mamba_head_dim, m.mamba_state_dim, m.mamba_chunk_size)
        for sms in (0, 132, 148):  # 0: the SMs unknown, one head split
            assert nsplits(s.chunks * s.H, s.H // s.G, sms) == audit.nsplits(s, sms or 1)
            ops = [op for op in fwd + scan_backward(fwd, sms) if op.name.startswith(SSD)]
            moved = audit.moved_bytes(s, sms or 1)
            triton = [op for op in ops if (isinstance(op, Gemm) and op.ssd_bytes)
                      or (isinstance(op, Elementwise) and op.impl == SSD_IMPL)]
            assert len(triton) == 5 + 4 + 11  # forward, recomputed, backward
            for op in triton + [o for o in ops if o.name == SSD + "split_sums"]:
                got = op.ssd_bytes if isinstance(op, Gemm) else op.bytes
                assert got == pytest.approx(moved[op.name], rel=1e-12), (op.name, sms)
    # Nemotron-H 56B's tp-8 rank on an H100's 132 SMs: two head splits; the run's own backward
    # carries its GPU's SMs (Shard.num_sms)
    cfg = run()
    sh = shard_of(cfg)
    assert sh.num_sms == 132
    bwd = {op.name: op for op in backward_of(layer_forward(cfg, sh, "M"), sh)}
    one = {op.name: op for op in scan_backward(mamba_forward(cfg, sh))}
    assert bwd[SSD + "chunk_state_bwd_db"].ssd_bytes > one[SSD + "chunk_state_bwd_db"].ssd_bytes


def test_ssd_kernel_rate_is_the_share_of_hbm():
    h100, h200 = catalog_gpu("h100-sxm-80gb"), catalog_gpu("h200-sxm-141gb")
    op = Gemm(SSD + "chunk_scan", m=128, n=64, k=384, batch=4096, grouped="triton",
              ssd_bytes=4e8)
    for g in (h100, h200):
        assert RooflineModel(g).time(op) == pytest.approx(
            4e8 / (g.hbm_bw_Bps * ssd.SSD_HBM_FRACTION) + LAUNCH_S)
    # a kernel whose FLOPs at the bf16 ceiling take longer is priced by them
    heavy = dataclasses.replace(op, ssd_bytes=1.0, batch=4096 * 10**4)
    assert RooflineModel(h100).time(heavy) == pytest.approx(
        heavy.flops / h100.gemm_ceiling("bf16") + LAUNCH_S)
    ew = Elementwise(SSD + "state_passing", bytes=3e8, kernel="ssd_state_passing", impl=SSD_IMPL)
    assert RooflineModel(h200).time(ew) == pytest.approx(
        3e8 / (h200.hbm_bw_Bps * ssd.SSD_HBM_FRACTION) + LAUNCH_S)
    # without ssd_bytes the same matmul is a grouped GEMM, as before
    plain = dataclasses.replace(op, ssd_bytes=0.0)
    assert RooflineModel(h100).time(plain) < RooflineModel(h100).time(op)


def test_fit_reproduces_the_shipped_fraction_and_the_rows_fall_where_reported():
    fit = _load("fit_ssd56")
    assert fit.fit() == ssd.SSD_HBM_FRACTION == 0.3
    rows = _rows()
    res = {r["id"]: predict_kernel_row(r) for r in rows}
    fit_errs = [res[r["id"]].predicted / res[r["id"]].measured - 1 for r in rows
                if r["id"].startswith(fit.FIT_PREFIX)]
    assert max(abs(e) for e in fit_errs) < 0.05
    # held out: the batch-1 and batch-8 rows of the other run within 30 % (the 2.7B batch-8
    # one -28 %, 1.39x the same shape's time in the fitted run), its larger shapes (configs
    # chosen at its smallest) 25-55 % under
    for r in rows:
        if not r["id"].startswith(fit.HELD_PREFIX):
            continue
        e = res[r["id"]].predicted / res[r["id"]].measured - 1
        if int(r["batch"]) <= 8 and int(r["seq_len"]) <= 2048:
            assert abs(e) < 0.30, r["id"]
        else:
            assert -0.55 < e < -0.25, r["id"]
    h8 = fit.h800_chunk_scan(ssd.SSD_HBM_FRACTION)
    assert len(h8) == 6 and all(abs(p / m - 1) < 0.13 for _, m, p in h8)


def test_ssd_fwd_rows_are_read_strictly():
    row = dict(_rows()[0])
    ops, flops = kernel_ops(row)
    assert flops is None and [op.name for op in ops] == [
        SSD + n for n in ("chunk_cumsum", "chunk_state", "state_passing", "bmm_chunk",
                          "chunk_scan")]
    # no z in the standalone call: the chunk scan writes one output
    assert ops[-1].ssd_bytes == chunk_scan_forward(1, 2048, 24, 1, 256, 64, 128, 4, False)[
        -1].ssd_bytes < chunk_scan_forward(1, 2048, 24, 1, 256, 64, 128, 4, True)[-1].ssd_bytes
    with pytest.raises(ConfigError, match="kv_heads"):
        kernel_ops(row | {"kv_heads": "5"})
    with pytest.raises(ConfigError, match="'k'"):
        kernel_ops(row | {"k": "64"})
    with pytest.raises(ConfigError, match="ssd_fwd implementation"):
        kernel_ops(row | {"implementation": "cutlass"})
    assert predict_kernel_row(row | {"measured_unit": "TFLOP/s"}).error


def test_mixer_param_ops_and_gated_norm_dw():
    """-exp(A_log.float()) and dt_bias.float(): four eager kernels and four backward ones; the
    gated norm's backward adds the dw partials' sum and cast, two bare tensor methods."""
    cfg = run()
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, "M")
    by = {op.name: op for op in fwd}
    prep = by["mamba_param_prep"]
    assert prep.kernels == PARAM_PREP_KERNELS == 4 and prep.impl == "eager"
    bwd = {op.name: op for op in backward_of(fwd, sh)}
    assert bwd["mamba_param_prep.bwd"].kernels == 4
    norm_bwd = bwd["ssm_norm.bwd"]
    assert norm_bwd.kernels == 1 + NORM_DW_KERNELS and norm_bwd.py_kernels == NORM_DW_KERNELS == 2
    assert loop_host_s(norm_bwd) == pytest.approx(2 * PY_LAUNCH_S)
    assert math.isclose(prep.bytes, mamba_heads(cfg.model) // 8 * PARAM_PREP_BYTES)
