"""Measured-kernel database: exact hits, interpolation, cross-GPU scaling, the model chain.

These tests check the mechanism on databases written here; the fidelity of measured data is
checked when a GPU session commits one (see issue 4)."""

from __future__ import annotations

import json

import pytest

from trainsim import run_config_from_dict, simulate
from trainsim.catalog import gpu
from trainsim.compute import ChainModel, KernelDatabase, cross_gpu_scale
from trainsim.errors import ConfigError
from trainsim.workload.ops import Elementwise, Gemm


def write_db(tmp_path, gpu_name="a100-sxm-80gb", kernels=None):
    p = tmp_path / "db.json"
    p.write_text(json.dumps({"format": "trainsim-kernel-db/1", "gpu": gpu_name, "kernels": kernels or [
        {"op": "gemm", "m": 1024, "n": 1024, "k": 1024, "dtype": "bf16", "batch": 1, "time_s": 2e-5},
        {"op": "gemm", "m": 8192, "n": 8192, "k": 8192, "dtype": "bf16", "batch": 1, "time_s": 4.5e-3},
        {"op": "elementwise", "name": "rmsnorm", "bytes": 1e8, "time_s": 7e-5},
    ]}))
    return p


def test_exact_hit_returns_the_measured_time(tmp_path):
    """An op measured in the database is priced at its measured time."""
    chain = ChainModel(gpu("a100-sxm-80gb"), KernelDatabase.load(write_db(tmp_path)),
                       gpu("a100-sxm-80gb"))
    t, source = chain.explain(Gemm("x", 8192, 8192, 8192))
    assert t == 4.5e-3 and source == "database (exact)"


def test_interpolation_lies_between_measured_rates(tmp_path):
    """A GEMM between two measured sizes runs at a FLOP rate between theirs."""
    db = KernelDatabase.load(write_db(tmp_path))
    op = Gemm("x", 4096, 4096, 4096)
    t, how = db.lookup(op)
    small_rate, big_rate = 2 * 1024**3 / 2e-5, 2 * 8192**3 / 4.5e-3
    assert how == "interpolated"
    assert small_rate < op.flops / t < big_rate


def test_cross_gpu_scaling_uses_flops_or_bandwidth_ratio():
    """Compute-bound ops scale by sustained matmul FLOP/s, memory-bound ones by HBM bandwidth."""
    a100, h100 = gpu("a100-sxm-80gb"), gpu("h100-sxm-80gb")
    big = Gemm("x", 8192, 8192, 8192)
    norm = Elementwise("rmsnorm", 1e8)
    assert cross_gpu_scale(big, a100, h100) == pytest.approx(
        a100.gemm_ceiling("bf16") / h100.gemm_ceiling("bf16"))
    assert cross_gpu_scale(norm, a100, h100) == pytest.approx(a100.hbm_bw_Bps / h100.hbm_bw_Bps)


def test_unknown_ops_fall_back_to_the_roofline(tmp_path):
    """Attention, absent from this database, is priced by the roofline and says so."""
    from trainsim.workload.ops import Attention

    chain = ChainModel(gpu("a100-sxm-80gb"), KernelDatabase.load(write_db(tmp_path)),
                       gpu("a100-sxm-80gb"))
    _, source = chain.explain(Attention("a", 1, 8, 8, 2048, 2048, 128))
    assert source == "roofline"


def test_wrong_format_is_rejected(tmp_path):
    """A JSON file that is not a kernel database is a ConfigError."""
    p = tmp_path / "x.json"
    p.write_text('{"kernels": []}')
    with pytest.raises(ConfigError, match="kernel database"):
        KernelDatabase.load(p)


def test_simulate_reports_which_model_priced_the_kernels(tmp_path):
    """With a database configured, the result counts database-priced and roofline-priced kernels."""
    cfg = run_config_from_dict({"model": "llama3-8b", "parallel": {"tp": 1},
                                "training": {"global_batch_size": 8, "seq_length": 4096},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8,
                                            "compute_db": str(write_db(tmp_path))}})
    r = simulate(cfg)
    assert any(k.startswith("database") for k in r.compute_sources)
    assert "roofline" in r.compute_sources
