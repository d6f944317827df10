"""GPUs published runs train on beyond the first catalog: V100, A100 PCIe, A800, H20, H100 NVL,
L40S, MI250X (per GCD), MI325X, MI350X, MI355X, B300, GB300. Each file's numbers equal the datasheet
it cites, each simulates a run, and the speeds order as the hardware does."""

from __future__ import annotations

import pytest

import trainsim
from trainsim import ConfigError, catalog
from trainsim.config.gpu_rules import ATTENTION_MIN_ARCH, attention_problem, dtype_problem

GiB = 2**30
EXAMPLE = "examples/llama3-8b-h100.yaml"

# name: (compute capability, dense peaks in TFLOP/s, HBM GB/s, NVLink GB/s one way, SMs/CUs,
# TDP W), as the datasheet each YAML file cites gives them (sparse figures halved)
DATASHEET = {
    "v100-sxm-16gb": (70, {"fp32": 15.7, "fp16": 125}, 900, 150, 80, 300),
    "v100-sxm-32gb": (70, {"fp32": 15.7, "fp16": 125}, 900, 150, 80, 300),
    "a100-pcie-40gb": (80, {"fp32": 19.5, "tf32": 156, "bf16": 312}, 1555, 32, 108, 250),
    "a100-pcie-80gb": (80, {"fp32": 19.5, "tf32": 156, "bf16": 312}, 1935, 32, 108, 300),
    "a800-sxm-80gb": (80, {"fp32": 19.5, "tf32": 156, "bf16": 312}, 2039, 200, 108, 400),
    "h20-sxm-96gb": (90, {"fp32": 44, "tf32": 74, "bf16": 148, "fp8": 296}, 4000, 450, 78, 400),
    "h100-nvl-94gb": (90, {"fp32": 60, "tf32": 835 / 2, "bf16": 1671 / 2, "fp8": 3341 / 2},
                      3900, 64, 132, 400),
    "l40s-pcie-48gb": (89, {"fp32": 91.6, "tf32": 183, "bf16": 362.05, "fp8": 733}, 864, 32,
                       142, 350),
    "mi250x-gcd": (None, {"fp32": 47.9 / 2, "bf16": 383 / 2}, 3200 / 2, 350, 220 // 2, 560 / 2),
    "mi325x": (None, {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp8": 2614.9}, 6000, 448,
               304, 1000),
    "mi355x": (None, {"fp32": 157.3, "bf16": 2516.6, "fp8": 5033.2, "fp4": 10066.3}, 8000,
               1075.2 / 2, 256, 1400),
    # AMD Instinct MI350X datasheet: the same die at 2.2 GHz and 1000 W
    "mi350x": (None, {"fp64": 72.1, "fp32": 144.2, "bf16": 2306.9, "fp8": 4613.7,
                      "fp4": 9227.5}, 8000, 1075.2 / 2, 256, 1000),
    "b300-sxm-288gb": (103, {"fp64": 10 / 8, "fp32": 600 / 8, "tf32": 18e3 / 8 / 2,
                             "bf16": 36e3 / 8 / 2, "fp8": 72e3 / 8 / 2, "fp4": 108e3 / 8},
                       8000, 900, 148, 1100),
    "gb300": (103, {"tf32": 180e3 / 72 / 2, "bf16": 360e3 / 72 / 2, "fp8": 720e3 / 72 / 2,
                    "fp4": 1080e3 / 72}, 576e3 / 72, 900, 152, 1400),
}
NOMINAL_GB = {"v100-sxm-16gb": 16, "v100-sxm-32gb": 32, "a100-pcie-40gb": 40,
              "a100-pcie-80gb": 80, "a800-sxm-80gb": 80, "h20-sxm-96gb": 96,
              "h100-nvl-94gb": 94, "l40s-pcie-48gb": 48, "mi250x-gcd": 64, "mi325x": 256,
              "mi355x": 288, "mi350x": 288, "b300-sxm-288gb": 288, "gb300": 288}


@pytest.mark.parametrize("name", sorted(DATASHEET))
def test_spec_is_the_datasheet(name):
    """Peaks, HBM and link bandwidth, SMs and power are the cited datasheet's, in SI units."""
    cc, peaks, hbm, link, sms, tdp = DATASHEET[name]
    g = catalog.gpu(name)
    assert g.compute_capability == cc
    for dtype, tflops in peaks.items():
        assert g.peak_flops[dtype] == pytest.approx(tflops * 1e12, rel=2e-3), dtype
    assert g.hbm_bw_Bps == pytest.approx(hbm * 1e9)
    assert g.nvlink_bw_Bps == pytest.approx(link * 1e9)
    assert g.num_sms == sms
    assert g.tdp_w == pytest.approx(tdp)
    nominal = NOMINAL_GB[name]
    assert 0.92 * nominal * 1e9 <= g.hbm_bytes <= 1.0 * nominal * GiB


MiB = 2**20
DRIVER_BYTES = {
    # nvidia-smi's memory total (public nvidia-smi logs of each part, e.g. ModelCloud/GPTQModel
    # issue #2898 for the H100 SXM); rocm-smi --showmeminfo vram / KFD size_in_bytes for AMD
    "v100-sxm-32gb": 32768 * MiB, "a100-sxm-40gb": 40960 * MiB, "a100-pcie-40gb": 40960 * MiB,
    "a100-sxm-80gb": 81920 * MiB, "a100-pcie-80gb": 81920 * MiB, "a800-sxm-80gb": 81920 * MiB,
    "h100-sxm-80gb": 81559 * MiB, "h100-pcie-80gb": 81559 * MiB, "h800-sxm-80gb": 81559 * MiB,
    "h100-nvl-94gb": 95830 * MiB, "h20-sxm-96gb": 97871 * MiB, "l40s-pcie-48gb": 46068 * MiB,
    "h200-sxm-141gb": 143771 * MiB, "b200-sxm-180gb": 183359 * MiB, "gb200": 189471 * MiB,
    "b300-sxm-288gb": 275040 * MiB, "gb300": 284208 * MiB, "mi250x-gcd": 68702699520,
    "mi300x": 205822885888, "mi355x": 309220868096,
}
"""Memory as the driver reports it, the allocator's ceiling: the catalog's ``hbm_gib`` where
such a figure is public (A100 40 GB: drivers of its day; later ones print 40536 MiB)."""


@pytest.mark.parametrize("name", sorted(DRIVER_BYTES))
def test_hbm_is_what_the_driver_reports(name):
    """Never above the driver's total, and within 3 MiB of it (the YAML's GiB rounded down)."""
    hbm = catalog.gpu(name).hbm_bytes
    assert DRIVER_BYTES[name] - 3 * MiB <= hbm <= DRIVER_BYTES[name]


def test_tensor_core_generations():
    """What each generation's tensor cores take: V100 fp16 only; fp8 from Ada (sm89) and
    Hopper; fp4 and MX block scales from Blackwell and CDNA 4; MI250X neither fp8 nor tf32."""
    v100 = catalog.gpu("v100-sxm-32gb")
    assert set(v100.peak_flops) == {"fp64", "fp32", "fp16"}
    assert "fp8" in catalog.gpu("l40s-pcie-48gb").peak_flops
    assert not catalog.gpu("l40s-pcie-48gb").block_scaled_mma
    for name in ("b300-sxm-288gb", "gb300", "mi355x", "mi350x"):
        assert catalog.gpu(name).block_scaled_mma, name
    assert {"fp8", "tf32"}.isdisjoint(catalog.gpu("mi250x-gcd").peak_flops)
    # Blackwell Ultra: dense fp4 1.5x B200's at the same fp8, FP64 cut from 37 to 1.25 TF
    b200, b300 = catalog.gpu("b200-sxm-180gb"), catalog.gpu("b300-sxm-288gb")
    assert b300.flops("fp4") == pytest.approx(1.5 * b200.flops("fp4"))
    assert b300.flops("fp8") == b200.flops("fp8")
    assert b300.peak_flops["fp64"] < 2e12
    assert b300.sm_arch == 103 and b300.fp8_any_layout


def test_mi250x_is_one_gcd():
    """One catalog MI250X 'GPU' is one GCD: half the OAM's 383 TFLOP/s and 128 GB (of each
    GCD's 64 GiB the driver reports 68702699520 B: 16 MiB kept back)."""
    g = catalog.gpu("mi250x-gcd")
    assert 2 * g.flops("bf16") == pytest.approx(383e12)
    assert 2 * g.hbm_bytes == pytest.approx(128 * GiB, rel=1e-3)


def test_bf16_on_v100_is_refused_in_one_line():
    """V100 has fp16 tensor cores only: a bf16 run is one error line that names fp16."""
    with pytest.raises(ConfigError) as info:
        trainsim.load_run_config(EXAMPLE, ["cluster.gpu=v100-sxm-32gb"])
    text = str(info.value)
    assert "\n" not in text and "training.dtype=bf16" in text and "fp16" in text
    assert dtype_problem("fp16", "delayed", catalog.gpu("v100-sxm-32gb")) is None


@pytest.mark.parametrize("gpu,attention,refused", [
    ("v100-sxm-32gb", "flash2", True), ("v100-sxm-32gb", "flash1", True),
    ("v100-sxm-32gb", "cudnn", True), ("v100-sxm-32gb", "unfused", False),
    ("v100-sxm-32gb", "sdpa", False), ("v100-sxm-32gb", "mem_efficient", False),
    ("l40s-pcie-48gb", "flash2", False), ("l40s-pcie-48gb", "cudnn", False),
    ("l40s-pcie-48gb", "flash3", True), ("a100-sxm-80gb", "flash3", True),
    ("h100-sxm-80gb", "flash3", False), ("b300-sxm-288gb", "flash4", False),
    ("mi250x-gcd", "flash2", False),
])
def test_attention_kernels_by_architecture(gpu, attention, refused):
    """A fused attention kernel older GPUs lack is refused there (ATTENTION_MIN_ARCH)."""
    problem = attention_problem(attention, catalog.gpu(gpu))
    assert (problem is not None) == refused
    if refused:
        assert f"training.attention={attention}" in problem and "unfused" in problem


def test_attention_min_arch_names_real_kernels():
    """Every kernel the table names is a training.attention value."""
    from typing import get_args, get_type_hints

    from trainsim.config import TrainingConfig
    known = set(get_args(get_type_hints(TrainingConfig)["attention"]))
    assert set(ATTENTION_MIN_ARCH) <= known


def test_fp8_blockwise_needs_hopper():
    """Transformer Engine's blockwise fp8 needs compute capability 9.0: refused on L40S (8.9)."""
    assert "blockwise" in dtype_problem("fp8", "blockwise", catalog.gpu("l40s-pcie-48gb"))
    assert dtype_problem("fp8", "blockwise", catalog.gpu("h20-sxm-96gb")) is None
    assert dtype_problem("fp8", "delayed", catalog.gpu("l40s-pcie-48gb")) is None


def _step(gpu: str, *sets: str) -> float:
    cfg = trainsim.load_run_config(EXAMPLE, [f"cluster.gpu={gpu}",
                                             "training.global_batch_size=16", *sets])
    return trainsim.simulate(cfg).iteration_time_s


V100_RUNS = ("training.dtype=fp16", "training.attention=unfused")


@pytest.mark.parametrize("name", sorted(DATASHEET))
def test_every_new_gpu_simulates_the_example(name):
    """examples/llama3-8b-h100.yaml runs on each (fp16 and unfused attention on V100)."""
    sets = V100_RUNS if name.startswith("v100") else ()
    step = _step(name, *sets)
    assert 0 < step < 1e4


def test_speeds_order_as_the_hardware():
    """Faster hardware never gives a slower step: B300 <= B200 in fp8, GB300 <= GB200, V100
    slower than A100 (both fp16, unfused), H20 slower than H100, A800 (less NVLink) not faster
    than A100, MI355X faster than MI300X, MI325X not slower than MI300X."""
    fp8 = ("training.dtype=fp8",)
    assert _step("b300-sxm-288gb", *fp8) <= _step("b200-sxm-180gb", *fp8)
    assert _step("gb300", *fp8) <= _step("gb200", *fp8)
    assert _step("v100-sxm-32gb", *V100_RUNS) > 1.5 * _step("a100-sxm-80gb", *V100_RUNS)
    assert _step("h20-sxm-96gb") > 2 * _step("h100-sxm-80gb")
    assert _step("a800-sxm-80gb") >= _step("a100-sxm-80gb")
    assert _step("mi355x") < _step("mi300x")
    assert _step("mi325x") <= _step("mi300x")


def test_mi350x_is_the_mi355x_die_at_1000_w():
    """MI350X: each peak MI355X's x 2.2 / 2.4 GHz (AMD datasheets), and its sustained GEMM rate
    the MI355X's under the catalog's power law (POWER_EXPONENT) at 1000 of 1400 W: the
    mamf_fractions in mi350x.yaml are that hand calculation, to the file's 3 decimals."""
    from trainsim.config.cluster import power_limited_rate

    m350, m355 = catalog.gpu("mi350x"), catalog.gpu("mi355x")
    for dtype in ("fp32", "bf16", "fp8", "fp4"):
        assert m350.peak_flops[dtype] / m355.peak_flops[dtype] == pytest.approx(2.2 / 2.4, rel=1e-3)
    power = power_limited_rate(1000, 1400)
    assert power == pytest.approx(0.8172, abs=1e-4)
    sustained_355 = m355.mamf_fraction * m355.peak_flops["bf16"]
    assert m350.mamf_fraction * m350.peak_flops["bf16"] == \
        pytest.approx(sustained_355 * power, rel=2e-3)
    sustained_355 = m355.mamf_fraction_fp8 * m355.peak_flops["fp8"]
    assert m350.mamf_fraction_fp8 * m350.peak_flops["fp8"] == \
        pytest.approx(sustained_355 * power, rel=2e-3)
    assert m350.hbm_bw_Bps == m355.hbm_bw_Bps and m350.hbm_bytes == m355.hbm_bytes
