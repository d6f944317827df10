"""trainsim profile without PyTorch: the command's errors, the sweep's shapes, the DB schema."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from trainsim.profile.cli import profile
from trainsim.profile.schema import FORMAT, ProfileError, merge, validate_db
from trainsim.profile.shapes import (
    PROFILED_ATTENTION,
    distinct_cases,
    kernel_name,
    layer_cases,
    simulator_ops,
    sweep_configs,
)
from trainsim.workload.elementwise import bytes_relative_to_fused
from trainsim.workload.ops import Attention, Elementwise, Gemm


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _db(**over):
    db = {"format": FORMAT, "gpu": "h100-sxm-80gb", "device_name": "x", "driver": None,
          "torch": "2", "cuda": None, "created": "2025-01-01", "command": "trainsim profile",
          "compile": False,
          "kernels": [{"op": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "bf16", "batch": 1,
                       "time_s": 1e-5, "repeats": 3}],
          "layers": []}
    db.update(over)
    return db


def test_importing_the_command_does_not_import_torch():
    """The CLI module stays light: torch is imported only when a profile runs."""
    code = "import sys, trainsim, trainsim.profile.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(_cuda(), reason="this machine has a CUDA GPU")
def test_without_cuda_it_exits_with_one_line(tmp_path):
    """Without a GPU (and without --device cpu) the command fails with one line, no traceback."""
    r = CliRunner().invoke(profile, ["--gpu", "h100-sxm-80gb", "--out", str(tmp_path / "d.json")])
    assert r.exit_code == 2
    assert "needs a CUDA GPU and PyTorch; use --device cpu to dry-run" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "d.json").exists()


def test_bad_option_values_are_usage_errors(tmp_path):
    """--tp takes positive integers."""
    r = CliRunner().invoke(profile, ["--gpu", "h100-sxm-80gb", "--out", str(tmp_path / "d.json"),
                                     "--device", "cpu", "--tp", "two"])
    assert r.exit_code == 2 and "--tp" in r.output


def test_every_compute_op_of_a_config_is_a_measured_case():
    """The sweep covers every GEMM, attention and elementwise op the simulator prices."""
    cfgs = sweep_configs(["llama3-8b"], [2], [4096], "h100-sxm-80gb", dtypes=("bf16", "fp8"))
    records = [r for c in distinct_cases(cfgs) for r in c.records]
    gemms = {(r["m"], r["n"], r["k"], r["dtype"]) for r in records if r["op"] == "gemm"}
    attn = {(r["q_len"], r["kv_len"], r["heads"], r["backward"]) for r in records
            if r["op"] == "attention"}
    # elementwise records are keyed by kernel family and bytes (the op's name is not a key:
    # attn_norm and mlp_norm of one shape are one record), in the profiled implementation's
    # bytes
    elem = {(r["kernel"], round(r["bytes"] / bytes_relative_to_fused(r["kernel"], r["impl"])))
            for r in records if r["op"] == "elementwise"}
    for cfg in cfgs:
        for op in simulator_ops(cfg):
            if isinstance(op, Gemm):
                assert (op.m, op.n, op.k, op.dtype) in gemms, op
            elif isinstance(op, Attention):
                assert (op.q_len, op.kv_len, op.heads, op.backward) in attn, op
            elif isinstance(op, Elementwise) and op.kernel and op.kernel != "residual_add.bwd":
                # no dropout here: the residual's gradient passes through without a kernel; an
                # op of no kernel family (the embedding gradient's zero fill) no record prices
                assert (op.kernel, round(op.bytes)) in elem, op


def test_tp_slices_shrink_heads_and_ffn_and_sp_shrinks_norms():
    """At TP 8 Llama-3-70B has 8 query heads and 1 KV head per rank; SP divides norm tokens."""
    cfgs = sweep_configs(["llama3-70b"], [8], [4096], "h100-sxm-80gb")
    cases = distinct_cases(cfgs)
    attn = [c.kernel.size for c in cases if c.kernel.kind == "attention"]
    assert {(a["heads"], a["kv_heads"], a["head_dim"]) for a in attn} == {(8, 1, 128)}
    norm_rows = {c.kernel.size["rows"] for c in cases if c.kernel.kind == "rmsnorm"}
    assert norm_rows == {4096, 4096 // 8}  # without and with sequence parallelism
    fc1 = [r for c in cases for r in c.records if r["op"] == "gemm" and r["n"] == 2 * 28672 // 8]
    assert fc1 and fc1[0]["k"] == 8192


def test_context_parallel_attention_is_a_ring_of_blocks():
    """A CP rank's attention op (s/cp queries over s keys) is measured as a ring of cp blocks:
    the profiler's runs name no framework, so their CP is the generic one (not Transformer
    Engine's cp calls, which only a framework with ``cp_te_ring`` runs)."""
    cfgs = sweep_configs(["llama3-8b"], [1], [8192], "h100-sxm-80gb", cps=(2,))
    attn = [c for c in distinct_cases(cfgs) if c.kernel.kind == "attention"]
    assert attn and all(c.kernel.size["ring"] == 2 and c.records[0]["q_len"] == 4096
                        and c.records[0]["kv_len"] == 8192 for c in attn)
    assert layer_cases(cfgs) == []  # layers are measured without CP


def test_kernel_names_map_simulator_ops_to_families():
    """attn_norm.bwd is an RMSNorm backward on Llama; unknown MoE ops are not measured."""
    m = sweep_configs(["llama3-8b"], [1], [4096], "h100-sxm-80gb")[0].model
    assert kernel_name("attn_norm.bwd", m) == "rmsnorm.bwd"
    assert kernel_name("fc1.grad_cast_transpose", m) == "fp8_cast_transpose"
    assert kernel_name("mlp_bias_dropout_add", m) == "residual_add"
    assert kernel_name("permute", m) is None


def test_bad_grid_is_a_profile_error():
    """A TP that does not divide the heads names the model and the fields."""
    with pytest.raises(ProfileError, match="tp=3"):
        sweep_configs(["llama3-8b"], [3], [4096], "h100-sxm-80gb")
    with pytest.raises(ProfileError, match="unknown model"):
        sweep_configs(["llama9"], [1], [4096], "h100-sxm-80gb")


def test_schema_validation_names_the_problem():
    """A valid database has no errors; missing keys, bad times and a wrong format are named."""
    assert validate_db(_db()) == []
    bad = _db(format="x", kernels=[{"op": "gemm", "m": 1, "time_s": 0}])
    del bad["torch"]
    errors = " | ".join(validate_db(bad))
    assert "format" in errors and "'torch'" in errors and "lacks 'n'" in errors
    assert "time_s=0" in errors


def test_merge_keeps_records_not_remeasured_and_refuses_other_gpus():
    """--merge replaces re-measured kernels, keeps the rest, and will not mix GPUs."""
    old = _db(kernels=[{"op": "gemm", "m": 8, "n": 8, "k": 8, "dtype": "bf16", "batch": 1,
                        "time_s": 9.0},
                       {"op": "gemm", "m": 16, "n": 8, "k": 8, "dtype": "bf16", "batch": 1,
                        "time_s": 2e-5}])
    merged = merge(old, _db(command="trainsim profile --tp 2"))
    times = sorted(k["time_s"] for k in merged["kernels"])
    assert times == [1e-5, 2e-5]
    assert merged["command"] == "trainsim profile && trainsim profile --tp 2"
    with pytest.raises(ProfileError, match="gpu"):
        merge(old, _db(gpu="h200-sxm-141gb"))


def test_profiler_names_the_memory_efficient_backend_mem_efficient():
    """SDPA's EFFICIENT_ATTENTION is recorded as ``mem_efficient`` (no SDPA backend runs the
    first FlashAttention); a format-2 database's ``flash1`` records are renamed on merge."""
    pytest.importorskip("torch")
    from trainsim.profile.kernels import SDPA_BACKENDS

    assert SDPA_BACKENDS["mem_efficient"] == "EFFICIENT_ATTENTION" and "flash1" not in SDPA_BACKENDS
    assert "mem_efficient" in PROFILED_ATTENTION and "flash1" not in PROFILED_ATTENTION
    rec = {"op": "attention", "impl": "flash1", "batch": 1, "heads": 8, "kv_heads": 8,
           "q_len": 512, "kv_len": 512, "head_dim": 64, "causal": True, "backward": False,
           "time_s": 1e-4}
    merged = merge(_db(format="trainsim-kernel-db/2", kernels=[rec]), _db())
    assert merged["format"] == FORMAT == "trainsim-kernel-db/3"
    assert [k["impl"] for k in merged["kernels"] if k["op"] == "attention"] == ["mem_efficient"]
