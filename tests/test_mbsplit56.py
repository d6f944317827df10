"""MLPerf GPT-3 micro-batch split (56th session, mbsplit56): the v3.1 profile's once-per-step fp8
weight cast (``te_weight_cache``) and ``benchmarks/mbsplit56_parts.py``'s arithmetic."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from trainsim.catalog.frameworks import framework_supports
from trainsim.simulator import simulate
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload import te_weight_cache
from trainsim.workload.te_weight_cache import WEIGHT_QUANTIZE, weight_quantization

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import mbsplit56_parts as mp

PUBLIC = BUNDLED_DIR / "training_public.csv"
PARTNERS = Path(__file__).resolve().parents[1] / "benchmarks" / "training_mlperf_partners.csv"


def _row(path: Path, row_id: str) -> dict[str, str]:
    with open(path, newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == row_id)


def _cfg(row_id: str):
    row = _row(PUBLIC, row_id)
    return row_config(row, predict_training_row(row).chosen)


def test_profile_caches_fp8_weights_from_3_1() -> None:
    # NeMo@bd0b818 passes is_first_microbatch to TE's layers (the 4.0+ stacks' fp8 parameters
    # on Megatron-core: tests/test_tecache56.py)
    assert framework_supports("mlperf-nemo", "3.1", "te_weight_cache")


def test_v3_1_casts_one_layer_of_weights_per_chunk() -> None:
    cfg = _cfg("mlperf31-gpt3-175b-512")
    # 8 stages x 12 chunks of one layer each
    assert len(cfg.virtual_ranges) == 96 and all(len(r) == 1 for r in cfg.virtual_ranges)
    (op,) = weight_quantization(cfg, cfg.virtual_ranges[0])
    h = 12288
    # qkv 3h x h, proj h x h, fc1 4h x h, fc2 h x 4h over TP 4: 3 h^2 elements, each read in
    # 16 bits and written as fp8 and as its fp8 transpose (4 bytes); one kernel a tensor
    assert op.name == WEIGHT_QUANTIZE
    assert op.bytes == pytest.approx(3 * h * h * 4)
    assert op.kernels == 4


def test_v4_stacks_cast_no_16bit_weights() -> None:
    # fp8 parameters: transposed (tecache56), never cast from 16 bits
    cfg = _cfg("mlperf41-gpt3-175b-h100-512")
    assert all(op.name != WEIGHT_QUANTIZE for op in weight_quantization(cfg, cfg.virtual_ranges[0]))


def test_the_casts_lie_on_the_warm_up_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    # the first micro-batch crosses all pp x vpp chunks in turn, each casting its weights first
    cfg = _cfg("mlperf31-gpt3-175b-4096")
    from trainsim.pricing import Pricer

    cast_s = Pricer(cfg).price(weight_quantization(cfg, cfg.virtual_ranges[0])).duration_s
    on = simulate(cfg).iteration_time_s
    monkeypatch.setattr(te_weight_cache, "applies", lambda c: False)
    off = simulate(cfg).iteration_time_s
    chain = cfg.parallel.pp * cfg.parallel.vpp * cast_s
    assert on - off == pytest.approx(chain, rel=0.05)
    assert 0.05 < on - off < 0.07  # 96 chunks x ~0.65 ms


def test_per_sample_and_passes() -> None:
    # mlperf31 512: 11.0718 s a step, DP 16, GBS 2048: 128 sequences a pipeline
    assert mp.per_sample_ms(11.0718, 16, 2048) == pytest.approx(86.499, abs=1e-3)
    assert mp.passes_per_sample(12, 1) == 24
    assert mp.passes_per_sample(4, 2) == 4
    assert mp.passes_per_sample(6, 2) == 6
    assert mp.change(86.5, 76.27) == pytest.approx(-11.83, abs=0.01)
    assert mp.with_mbs({"micro_batch_size": "1", "vpp": "12"}, 2) == \
        {"micro_batch_size": "2", "vpp": "12"}


def test_measured_vpp_contrast() -> None:
    # SMC ran NVIDIA's v4.0 code at vpp 12 (GBS 2048), NVIDIA at vpp 4 (GBS 2304), both
    # micro-batch 2 on 512 H100: 9.3 % less time per sequence at vpp 4
    smc = _row(PARTNERS, "mlperf40-smc-gpt3-175b-512")
    nv = _row(PUBLIC, "mlperf40-gpt3-175b-512")
    assert (smc["micro_batch_size"], smc["vpp"], nv["micro_batch_size"], nv["vpp"]) == \
        ("2", "12", "2", "4")
    a = mp.per_sample_ms(float(smc["measured_iteration_s"]), 16, 2048)
    b = mp.per_sample_ms(float(nv["measured_iteration_s"]), 16, 2304)
    assert mp.change(a, b) == pytest.approx(-9.3, abs=0.1)


@pytest.mark.slow
def test_priced_contrasts() -> None:
    rows = {("v4.0 SMC", 2): _row(PARTNERS, "mlperf40-smc-gpt3-175b-512"),
            ("v4.0 NVIDIA", 2): _row(PUBLIC, "mlperf40-gpt3-175b-512")}
    got = {k: mp.priced_case(r) for k, r in rows.items()}
    lines = mp.contrast_table(got, {"v4.0 SMC": 2, "v4.0 NVIDIA": 2})
    (vpp_line,) = [x for x in lines if x.startswith("| vpp 12 -> 4")]
    assert "-9.3 %" in vpp_line  # measured
    priced = [g["per_sample"]["predicted"] for g in got.values()]
    assert abs(mp.change(*priced)) < 2.0  # trainsim prices no vpp cost of this size


def test_device_check_shapes_and_plan(capsys: pytest.CaptureFixture[str]) -> None:
    import device_checks56 as dc

    # one TP-4 rank of GPT-3 175B: qkv 12288 -> 3 x 24 x 128, fc1 12288 -> 49152 / 4
    assert dc.gemm_shape("qkv", "fwd", 2048) == (2048, 9216, 12288)
    assert dc.gemm_shape("proj", "dgrad", 4096) == (4096, 3072, 12288)
    assert dc.gemm_shape("fc2", "wgrad", 2048) == (12288, 12288, 2048)
    assert dc.per_sample_ratio(10.0, 18.6) == pytest.approx(0.93)
    assert dc.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(s in out for s in ("gemm_tokens", "gemm_chunks", "te_chunk"))
