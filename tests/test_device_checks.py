"""benchmarks/device_checks.py without a GPU: its plan, and the kernels CSV it writes is one
``trainsim validate`` prices."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from trainsim.validate import validate_file

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "device_checks.py"


@pytest.fixture(scope="module")
def dc():
    spec = importlib.util.spec_from_file_location("device_checks", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_plans_every_section_without_torch(dc, capsys):
    """The dry run prints every section with its budget and total, exits 0 and imports no torch."""
    assert dc.main(["--dry-run", "--budget-s", "300"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in dc.SECTIONS)
    assert "budget 300 s" in out and "total ~" in out
    assert "torch" not in vars(dc)  # imported only when measuring


def test_unknown_section_is_refused(dc):
    """A section name the script does not know stops it before anything runs."""
    with pytest.raises(SystemExit):
        dc.main(["--dry-run", "--sections", "gemm_by_k,nope"])


def test_queue_depth_finds_the_jump(dc):
    """The queue depth is the first launch that costs a kernel's time; a flat series has none."""
    early, late = [4_000 + i % 7 * 100 for i in range(1000)], [150_000] * 2000
    assert dc.queue_depth(early + late, 150.0) == 1000
    assert dc.queue_depth(early * 3, 150.0) is None


def test_kernel_rows_validate(dc, tmp_path):
    """The script's rows are a kernels file validate prices, the cold harness and fp8 fast
    accum read from their notes."""
    src = "measured on NVIDIA H100 80GB HBM3, torch 2.11, CUDA events, benchmarks/device_checks.py"
    gemm = {"kind": "gemm", "implementation": "cublas", "dtype": "bf16", "m": 1024, "n": 8192,
            "k": 4096, "measured_value": "700.0", "measured_unit": "TFLOP/s"}
    attn = {"implementation": "cudnn", "dtype": "bf16", "batch": 4, "seq_len": 4096,
            "heads": 16, "kv_heads": 16, "head_dim": 128, "causal": 0,
            "measured_value": "550.0", "measured_unit": "TFLOP/s"}
    rows = [dc.kernel_row("h100-sxm-80gb", src, id="warm", note=dc.HARNESS["warm-graph"], **gemm),
            dc.kernel_row("h100-sxm-80gb", src, id="cold", note=dc.HARNESS["cold-eager"], **gemm),
            dc.kernel_row("h100-sxm-80gb", src, id="fwd", kind="attention_fwd", **attn),
            dc.kernel_row("h100-sxm-80gb", src, id="bwd", kind="attention_bwd", **attn),
            dc.kernel_row("h100-sxm-80gb", src, id="fp8", note="use_fast_accum=True",
                          **{**gemm, "dtype": "fp8", "m": 8192, "n": 32064, "k": 8192})]
    with pytest.raises(ValueError):
        dc.kernel_row("h100-sxm-80gb", src, id="x", flops=1)
    path = tmp_path / "kernels.csv"
    dc.write_kernels(path, rows)
    kind, results = validate_file(path, compute_db=None)
    assert kind == "kernels" and [r.id for r in results] == ["warm", "cold", "fwd", "bwd", "fp8"]
    assert all(r.error is None and r.predicted > 0 for r in results), results
    by = {r.id: r.predicted for r in results}
    assert by["cold"] < by["warm"]  # the cold harness's note is read as one call behind a flush
    assert by["fp8"] > 1.3 * by["warm"]


def test_run_sections_keeps_going_past_a_failure_and_skips_past_the_budget(dc):
    """A section that raises keeps its traceback and the next one runs; once the budget is
    spent the rest are skipped; the files are saved after each section that ran."""
    import types

    calls, saved = [], []
    spent = {"now": False}
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None))

    def ok(torch, ctx, res):
        calls.append("ok")
        ctx["rows"].append({})
        res["value"] = 1

    def boom(torch, ctx, res):
        calls.append("boom")
        spent["now"] = True
        raise RuntimeError("no such kernel")

    ctx = {"rows": [], "over": lambda: spent["now"]}
    sections: dict = {}
    dc.run_sections(fake_torch, ctx, ["first", "boom", "third"],
                    {"first": ok, "boom": boom, "third": ok}, sections,
                    lambda: saved.append(len(ctx["rows"])), after=lambda r: r.update(after=True))
    assert calls == ["ok", "boom"]
    assert sections["first"]["value"] == 1 and sections["first"]["after"]
    assert "no such kernel" in sections["boom"]["error"] and sections["boom"]["after"]
    assert sections["third"] == {"skipped": "budget spent"}
    assert saved == [1, 1]
