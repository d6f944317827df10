"""trainsim validate on kernels files: every kind priced by the compute model, units, groups."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import KERNELS_PUBLISHED, kernels_published_validated

from trainsim.catalog import gpu
from trainsim.cli import main
from trainsim.compute import RooflineModel, compute_model_for
from trainsim.compute.roofline import HBM_EFFICIENCY, LAUNCH_S
from trainsim.validate import read_rows, summarize, summary_line, validate_file
from trainsim.workload.ops import Attention, Gemm

SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation"
HEADER = ("id,source,gpu,kind,implementation,dtype,m,n,k,groups,batch,seq_len,heads,kv_heads,"
          "head_dim,causal,tokens,hidden,ffn,experts,top_k,bytes,measured_value,measured_unit,note")
ROWS = {
    "gemm-rate": "h100-sxm-80gb,gemm,cublas,bf16,4096,4096,4096,,,,,,,,,,,,,,600,TFLOP/s,",
    "gemm-ms": "h100-sxm-80gb,gemm,cublas,bf16,4096,4096,4096,,,,,,,,,,,,,,0.25,ms,",
    "grouped": ("h800-sxm-80gb,gemm_grouped,deepgemm,fp8,32768,4096,7168,4,,,,,,,,,,,,,1300,"
                "TFLOP/s,"),
    "fwd": "h100-sxm-80gb,attention_fwd,flash3,bf16,,,,,8,2048,16,16,128,1,,,,,,,500,TFLOP/s,",
    "bwd": "h100-sxm-80gb,attention_bwd,flash3,bf16,,,,,8,2048,16,16,128,1,,,,,,,400,TFLOP/s,",
    "fwdbwd": ("h100-sxm-80gb,attention_fwd_bwd,flash3,bf16,,,,,8,2048,16,16,128,1,,,,,,,420,"
               "TFLOP/s,"),
    "fa2": "h100-sxm-80gb,attention_fwd,flash2,bf16,,,,,8,2048,16,16,128,1,,,,,,,300,TFLOP/s,",
    "cudnn": "h100-sxm-80gb,attention_fwd,cudnn,bf16,,,,,8,2048,16,16,128,1,,,,,,,450,TFLOP/s,",
    "mem": "a100-sxm-80gb,memory_bound,liger,bf16,,,,,,,,,,,4096,4096,,,,67108864,0.05,ms,",
    "moe": "h100-sxm-80gb,moe_block,triton,bf16,,,,,,,,,,,4096,2048,768,128,8,,1.3,ms,",
}


def write(tmp_path, rows=ROWS):
    p = tmp_path / "kernels.csv"
    lines = [HEADER] + [f"{name},test,{cells}" for name, cells in rows.items()]
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.fixture
def results(tmp_path):
    kind, res = validate_file(write(tmp_path))
    assert kind == "kernels"
    return {r.id: r for r in res}


def test_every_kind_is_priced(results):
    """One row of each kind gets a prediction and carries its groups in extra."""
    for r in results.values():
        assert r.predicted is not None and r.predicted > 0, (r.id, r.error)
        assert {"kind", "implementation", "gpu", "dtype", "source_key"} <= set(r.extra)


def test_gemm_rate_and_time_rows_agree(results):
    """The same GEMM in TFLOP/s and in ms: the rate is 2mnk over the predicted time."""
    rate, ms = results["gemm-rate"].predicted, results["gemm-ms"].predicted
    assert rate == pytest.approx(2 * 4096**3 / (ms * 1e-3) / 1e12)
    assert results["gemm-ms"].extra["time_s"] == pytest.approx(ms * 1e-3)


def test_grouped_gemm_is_priced_as_equal_groups(results):
    """m rows over 4 groups is one grouped GEMM of m/4 rows, 4 times (2mnk FLOPs in all), by
    the row's implementation (DeepGEMM), on one GPU benchmarked alone (burst clock, falling
    toward the sustained one over the benchmark's loop: ``roofline.loop_clock_factor``)."""
    op = Gemm("g", 32768 // 4, 4096, 7168, "fp8", batch=4, grouped="deepgemm")
    h800 = gpu("h800-sxm-80gb")
    alone = dataclasses.replace(h800, sustained_of_burst=1.0)
    t = compute_model_for(alone, "auto", gpu, h800.sustained_of_burst).time(op)
    assert t > compute_model_for(alone, "auto", gpu).time(op)
    assert results["grouped"].predicted == pytest.approx(2 * 32768 * 4096 * 7168 / t / 1e12)


def test_attention_rates_use_the_source_flop_convention(results):
    """Causal forward counts 4*b*s^2*h*d / 2 FLOPs, backward 2.5x that, both 3.5x."""
    fwd = 4 * 8 * 2048**2 * 16 * 128 / 2
    t_f, t_b = results["fwd"].extra["time_s"], results["bwd"].extra["time_s"]
    assert results["fwd"].predicted == pytest.approx(fwd / t_f / 1e12)
    assert results["bwd"].predicted == pytest.approx(2.5 * fwd / t_b / 1e12)
    assert results["fwdbwd"].extra["time_s"] == pytest.approx(t_f + t_b)
    assert results["fwdbwd"].predicted == pytest.approx(3.5 * fwd / (t_f + t_b) / 1e12)


def test_attention_implementations_are_priced_apart(results):
    """On H100, FA3 and cuDNN run faster than FA2 on the same shape."""
    fa2, fa3, cudnn = (results[k].extra["time_s"] for k in ("fa2", "fwd", "cudnn"))
    assert fa3 < fa2 and cudnn < fa2
    assert results["fa2"].chosen["attention"] == "flash2"


def test_memory_bound_row_is_its_bytes_at_hbm_speed(results):
    """A memory-bound row moves its bytes at the achievable HBM bandwidth plus one launch."""
    bw = gpu("a100-sxm-80gb").hbm_bw_Bps * HBM_EFFICIENCY
    assert results["mem"].predicted == pytest.approx((67108864 / bw + LAUNCH_S) * 1e3)


def test_moe_block_leaves_the_router_out(results):
    """The MoE block is permute, grouped GEMMs, activation and unpermute, without the router."""
    from trainsim.validate.kernels import kernel_ops

    row = dict(zip(HEADER.split(","), ["moe", "test", *ROWS["moe"].split(",")], strict=True))
    ops, flops = kernel_ops(row)
    names = [op.name for op in ops]
    assert "router" not in names and {"permute", "unpermute"} <= set(names)
    gemms = [op for op in ops if isinstance(op, Gemm)]
    assert [g.batch for g in gemms] == [128, 128]  # up (gate+up) and down, one group per expert
    assert flops == pytest.approx(2 * 4096 * 8 * 3 * 2048 * 768)  # SwiGLU: 3 matrices
    assert results["moe"].extra["time_s"] > sum(RooflineModel(gpu("h100-sxm-80gb")).time(g)
                                               for g in gemms)


def test_a_torch_grouped_mm_moe_block_runs_torchtitans_eager_experts(tmp_path):
    """A block whose note names torch._grouped_mm pads the groups by a second permutation,
    runs gate and up as two grouped GEMMs of ffn columns and SwiGLU in two kernels: the same
    FLOPs as the fused block, more bytes, more time."""
    from trainsim.validate.kernels import kernel_ops

    note = "torch._grouped_mm; uniform routing"
    cells = {"fused": ROWS["moe"].replace(",triton,", ",cutlass,"),
             "eager": ROWS["moe"].replace(",triton,", ",cutlass,").rstrip(",") + "," + note}
    ops = {}
    for name, c in cells.items():
        row = dict(zip(HEADER.split(","), [name, "test", *c.split(",")], strict=True))
        ops[name] = kernel_ops(row)
    (fused, f_flops), (eager, e_flops) = ops["fused"], ops["eager"]
    assert e_flops == pytest.approx(f_flops)
    names = [op.name for op in eager]
    assert {"expert_pad_permute", "expert_fc3", "expert_pad_unpermute"} <= set(names)
    combine = next(op for op in eager if op.name == "unpermute")  # zeros, index-put, sum
    assert combine.atomic_adds == 0 and combine.kernels == 3
    assert [g.n for g in eager if isinstance(g, Gemm)] == [768, 768, 2048]
    assert [g.n for g in fused if isinstance(g, Gemm)] == [1536, 2048]
    _, res = validate_file(write(tmp_path, cells))
    assert res[1].extra["time_s"] > res[0].extra["time_s"]


def test_a_note_names_the_kernel_of_a_comparison_figure(tmp_path):
    """'impl=fa1' in the note prices the first FlashAttention, grouped under fa1."""
    rows = {"paper-fa2": ROWS["fa2"], "paper-fa1": ROWS["fa2"].rstrip(",") + ",impl=fa1; figure"}
    _, res = validate_file(write(tmp_path, rows))
    fa2, fa1 = res
    assert fa1.chosen["attention"] == "flash1" and fa1.extra["source_key"] == "fa1"
    assert fa1.predicted < fa2.predicted


def test_by_source_and_by_kind_group_the_rows(results):
    """by_source groups by implementation, by_kind by kind/implementation/dtype; errors are
    fractions, signed as (pred - meas) / meas."""
    s = summarize(list(results.values()))
    assert s["failed"] == 0
    assert s["by_source"]["cublas"]["n"] == 2
    assert set(s["by_source"]) == {"cublas", "deepgemm", "flash3", "flash2", "cudnn", "liger",
                                   "triton"}
    g = s["by_kind"]["gemm/cublas/bf16"]
    pair = (results["gemm-rate"], results["gemm-ms"])
    errs = [(r.predicted - r.measured) / r.measured for r in pair]
    assert g["mean_signed_error"] == pytest.approx(sum(errs) / 2)
    assert g["mape"] == pytest.approx(sum(abs(e) for e in errs) / 2)


def test_bad_rows_fail_alone(tmp_path):
    """An unknown unit or kind fails its row with the reason; the others are priced."""
    rows = {"ok": ROWS["gemm-ms"], "unit": ROWS["gemm-ms"].replace(",ms,", ",min,"),
            "kind": ROWS["gemm-ms"].replace(",gemm,", ",conv,"),
            "impl": ROWS["fa2"].replace(",flash2,", ",nosuch,")}
    _, res = validate_file(write(tmp_path, rows))
    ok, unit, kind, impl = res
    assert ok.predicted is not None
    assert "measured_unit" in unit.error and "conv" in kind.error and "nosuch" in impl.error
    assert summarize(res)["failed"] == 3


def test_kernels_file_is_detected_by_its_columns(tmp_path):
    """measured_unit and kind make a kernels file; missing required columns are named."""
    p = tmp_path / "k.csv"
    p.write_text("id,kind,measured_value,measured_unit\nx,gemm,1,ms\n")
    from trainsim.errors import ConfigError

    with pytest.raises(ConfigError, match="missing column.*gpu"):
        read_rows(p)


def test_table_output_ends_with_the_summary_line(tmp_path):
    """The table lists the rows, then the error by source; the last line is the summary."""
    p = write(tmp_path)
    r = CliRunner().invoke(main, ["validate", str(p)])
    assert r.exit_code == 0, r.output
    assert "error by source" in r.output
    _, res = validate_file(p)
    assert r.output.rstrip("\n").splitlines()[-1] == summary_line(summarize(res))


@pytest.mark.parametrize("name", ["kernels_published.csv", "kernels_h100_measured.csv"])
def test_shared_kernel_files_are_all_priced(name):
    """Every row of the shared kernels files gets a prediction (issue 15); the published file's
    rows are the session's one run of it (``helpers.kernels_published_validated``)."""
    if not (SHARED / name).exists():
        pytest.skip("no shared/validation")
    if name == "kernels_published.csv":
        assert KERNELS_PUBLISHED == SHARED / name
        kind, res, _ = kernels_published_validated()
    else:
        kind, res = validate_file(SHARED / name)
    assert kind == "kernels"
    assert [r.id for r in res if r.predicted is None] == []


def test_attention_op_of_a_row_matches_the_simulator_record():
    """An attention row becomes the simulator's own Attention record (GQA kept)."""
    from trainsim.validate.kernels import kernel_ops

    row = dict(zip(HEADER.split(","), ["fwd", "test", *ROWS["fwd"].replace(",16,16,", ",16,4,")
                                      .split(",")], strict=True))
    (op,), _ = kernel_ops(row)
    assert op == Attention("attn", 8, 16, 4, 2048, 2048, 128, causal=True, impl="flash3")


def test_a_power_saturated_row_is_priced_at_the_sustained_rate(tmp_path):
    """A row whose note names MSMF (the GEMM run until the board sits at its power limit) is
    priced at the catalog's sustained rate; the same row without it at the burst clock."""
    cells = "b200-sxm-180gb,gemm,cublas,bf16,8192,8192,16384,,,,,,,,,,,,,,1500,TFLOP/s,"
    _, res = validate_file(write(tmp_path, {"burst": cells + "MAMF", "msmf": cells + "MSMF"}))
    by = {r.id: r.predicted for r in res}
    assert by["msmf"] == pytest.approx(by["burst"] * gpu("b200-sxm-180gb").sustained_of_burst,
                                       rel=0.01)


def test_a_compiled_rms_norm_over_long_rows_reads_them_twice():
    """Inductor reduces rows of up to 1,024 elements in one persistent pass and longer rows
    in a loop that loads the row again for the output: a compiled RMSNorm of 8,192 columns is
    the two-pass kernel (1.5x a fused pass's bytes), one of 1,024 columns a fused pass."""
    from trainsim.validate.kernels import kernel_ops

    header = HEADER.split(",")

    def row(hidden: int) -> dict[str, str]:
        r = dict.fromkeys(header, "")
        r.update(id=f"m-rmsnorm-compiled-h{hidden}", source="test", gpu="h100-sxm-80gb",
                 kind="memory_bound", implementation="torch", dtype="bf16", tokens="4096",
                 hidden=str(hidden), bytes=str(4 * 4096 * hidden), measured_value="0.1",
                 measured_unit="ms", note="rmsnorm-compiled")
        return r

    (long_op,), _ = kernel_ops(row(8192))
    (short_op,), _ = kernel_ops(row(1024))
    assert long_op.impl == "two_pass" and long_op.bytes == pytest.approx(6 * 4096 * 8192)
    assert short_op.impl == "fused" and short_op.bytes == pytest.approx(4 * 4096 * 1024)
