"""Catalog entries of GitHub issue 15: GB200 NVL72, the power-limited H100, refreshed MAMF
fractions, and the model presets of the published-runs file."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import re
from pathlib import Path

import pytest
import yaml

import trainsim
from trainsim import ConfigError, catalog, run_config_from_dict
from trainsim.catalog import gpu_from_dict
from trainsim.compute.roofline import RooflineModel
from trainsim.config.cluster import POWER_EXPONENT, power_limited_rate
from trainsim.model import embedding_params, output_layer_params, total_params
from trainsim.workload.ops import Elementwise, Gemm

NEW_GPUS = ["gb200", "h100-sxm-96gb-500w"]
NEW_NODES = ["gb200-nvl72"]
MPT_NUMPARAMS = {  # NumParams at sequence 2048, mosaicml/llm-foundry
    # scripts/train/benchmarking/README.md @8c8dd48f
    "mpt-125m": 125_311_488, "mpt-760m": 760_470_528, "mpt-1b": 1_315_950_592,
    "mpt-3b": 2_651_837_440, "mpt-7b": 6_658_859_008, "mpt-13b": 12_853_954_560,
    "mpt-30b": 29_975_214_080, "mpt-70b": 64_862_437_376}
MCORE = [f"mcore-gpt-{s}-v131k" for s in
         ("1.7b", "7.1b", "16b", "32b", "70b", "119b", "177b", "314b", "462b")]
NEW_MODELS = [*MPT_NUMPARAMS, *MCORE, "bloom-181b", "bloom-196b", "gpt-174.6b",
              "nemotron4-15b", "nemotron4-340b"]


def _size(name: str) -> float:
    """The size in a preset name: 'mcore-gpt-7.1b-v131k' -> 7.1e9."""
    num, unit = re.search(r"-(\d+(?:\.\d+)?)([mb])(?:-|$)", name).groups()
    return float(num) * (1e6 if unit == "m" else 1e9)


# ------------------------------------------------------------------ every new entry loads

@pytest.mark.parametrize("name", NEW_GPUS)
def test_new_gpu_loads(name):
    """Each new GPU YAML builds a GPUSpec named after its file."""
    g = catalog.gpu(name)
    assert g.name == name
    assert g.flops("bf16") > 1e14 and g.hbm_bytes > 80e9


@pytest.mark.parametrize("name", NEW_NODES)
def test_new_node_loads(name):
    """The new node preset names a catalog GPU."""
    n = catalog.node(name)
    assert n["name"] == name and n["gpu"] in catalog.names("gpus")


@pytest.mark.parametrize("name", NEW_MODELS)
def test_new_model_loads(name):
    """Each new model preset builds a ModelConfig named after its file."""
    m = catalog.model(name)
    assert m.name == name
    assert total_params(m) > 1e8


def test_every_published_run_has_a_preset():
    """Every model the published training runs name is a catalog preset."""
    path = Path("/work/shared/validation/training_public.csv")
    if not path.exists():
        pytest.skip("shared validation file not mounted")
    with path.open() as f:
        used = {row["model"] for row in csv.DictReader(f)}
    assert used <= set(catalog.names("models"))


# ------------------------------------------------------------------ GB200

@pytest.mark.parametrize("name, mib", [
    ("h200-sxm-141gb", 143771), ("b200-sxm-180gb", 183359), ("gb200", 189471),
])
def test_hbm_capacity_is_what_the_driver_reports(name, mib):
    """A GPU's memory is what nvidia-smi reports (the allocator's ceiling), not the marketing
    figure read as 1e9 bytes: H200 '141 GB' is 143771 MiB, B200 '180 GB' is 183359 MiB."""
    assert catalog.gpu(name).hbm_bytes == pytest.approx(mib * 2**20, rel=2e-4)


def test_gb200_datasheet_numbers():
    """GB200: per-GPU dense peaks of the NVL72 sheet (rack / 72 / 2), 8 TB/s, NVLink 5 at
    900 GB/s a direction, 152 SMs, 1200 W, NVLS at NCCL's Blackwell efficiency."""
    g = catalog.gpu("gb200")
    assert g.flops("bf16") == pytest.approx(360e15 / 72 / 2)
    assert g.flops("fp16") == pytest.approx(2.5e15)
    assert g.flops("fp8") == pytest.approx(720e15 / 72 / 2)
    assert g.flops("fp4") == pytest.approx(1440e15 / 72 / 2)
    assert g.flops("tf32") == pytest.approx(180e15 / 72 / 2)
    assert g.flops("fp32") == pytest.approx(5760e12 / 72)
    assert g.hbm_bw_Bps == pytest.approx(576e12 / 72)
    assert 186e9 <= g.hbm_bytes <= 186 * 2**30        # 186 GB spec, 189471 MiB reported
    assert g.nvlink_bw_Bps == pytest.approx(900e9)
    assert (g.num_sms, g.tdp_w, g.nvls, g.nvls_efficiency) == (152, 1200, True, 0.74)
    assert g.l2_bytes == 126 * 2**20


def test_gb200_mamf_from_published_measurement():
    """GB200 MAMF 1822.0 bf16 and 3615.6 fp8 TFLOP/s (ml-engineering table) set its ceiling,
    at Blackwell's sustained 0.82 of that burst (B200's all-8-busy MSMF/MAMF; Azure's sustained
    GB200 cuBLASLt fp8, 2973.3 TFLOP/s at 32768^3, over the fp8 MAMF: 0.822)."""
    g = catalog.gpu("gb200")
    assert g.flops("bf16") * g.mamf_fraction == pytest.approx(1822.0e12, rel=1e-3)
    assert g.flops("fp8") * g.mamf_fraction_fp8 == pytest.approx(3615.6e12, rel=1e-3)
    assert g.sustained_of_burst == pytest.approx(2973.3 / 3615.6, abs=0.005)
    assert g.gemm_ceiling("bf16") == pytest.approx(1822.0e12 * 0.82, rel=1e-3)


def test_gb200_is_faster_than_b200_per_gpu():
    """A GB200 GPU has a higher sustained matmul rate and more memory than a B200."""
    gb, b = catalog.gpu("gb200"), catalog.gpu("b200-sxm-180gb")
    assert gb.gemm_ceiling("bf16") > b.gemm_ceiling("bf16")
    assert gb.hbm_bytes > b.hbm_bytes


def test_gb200_nvl72_node_is_one_nvlink_domain():
    """gb200-nvl72: 72 GPUs per NVLink domain, one 400 Gb/s ConnectX-7 per GPU."""
    n = catalog.node("gb200-nvl72")
    assert (n["gpu"], n["gpus_per_node"], n["nic_gbit_s_per_gpu"]) == ("gb200", 72, 400)


def test_gb200_nvl72_rack_simulates():
    """A run on one GB200 NVL72 rack (cluster.node: gb200-nvl72, 72 GPUs) simulates."""
    cfg = run_config_from_dict({
        "model": "llama3-70b",
        "parallel": {"tp": 8, "pp": 1, "sequence_parallel": True},
        "training": {"global_batch_size": 72, "micro_batch_size": 1, "seq_length": 4096},
        "cluster": {"node": "gb200-nvl72", "num_gpus": 72}})
    assert cfg.cluster.gpu.name == "gb200"
    assert (cfg.cluster.gpus_per_node, cfg.cluster.num_nodes) == (72, 1)
    r = trainsim.simulate(cfg)
    assert r.iteration_time_s > 0
    assert 0 < r.mfu < 1


def test_gb200_run_config_from_yaml_file(tmp_path):
    """The same rack loads from a YAML run config through load_run_config."""
    path = tmp_path / "gb200.yaml"
    path.write_text(yaml.safe_dump({
        "model": "llama3-8b", "parallel": {"tp": 1, "pp": 1},
        "training": {"global_batch_size": 144, "micro_batch_size": 1, "seq_length": 4096},
        "cluster": {"node": "gb200-nvl72", "num_gpus": 144}}))
    cfg = trainsim.load_run_config(path)
    assert cfg.cluster.num_nodes == 2
    assert trainsim.simulate(cfg).tokens_per_s > 0


# ------------------------------------------------------------------ power limit

def test_power_limit_at_tdp_changes_nothing():
    """700 W on a 700 W H100 gives exactly the GEMM ceiling of no limit at all."""
    h100 = catalog.gpu("h100-sxm-80gb")
    capped = dataclasses.replace(h100, power_limit_w=700.0)
    for dtype in ("bf16", "fp8", "tf32"):
        assert capped.gemm_ceiling(dtype) == h100.gemm_ceiling(dtype)
    assert power_limited_rate(None, 700.0) == power_limited_rate(700.0, 700.0) == 1.0


def test_lower_power_limit_never_speeds_a_gemm():
    """Sweeping the limit from the TDP down, the sustained GEMM rate never rises."""
    h100 = catalog.gpu("h100-sxm-80gb")
    rates = [dataclasses.replace(h100, power_limit_w=w).gemm_ceiling("bf16")
             for w in range(700, 99, -25)]
    assert all(a >= b for a, b in itertools.pairwise(rates))
    assert rates[-1] < rates[0]
    gemm = Gemm("fc1", 8192, 8192, 8192)
    times = [RooflineModel(dataclasses.replace(h100, power_limit_w=w)).time(gemm)
             for w in (700, 600, 500, 400)]
    assert times == sorted(times)


def test_power_limit_leaves_memory_bound_kernels_alone():
    """A power limit slows a large GEMM but not a memory-bound kernel (HBM clock is fixed)."""
    h100 = catalog.gpu("h100-sxm-80gb")
    capped = dataclasses.replace(h100, power_limit_w=500.0)
    norm = Elementwise("norm", bytes=1e9)
    assert RooflineModel(capped).time(norm) == RooflineModel(h100).time(norm)
    gemm = Gemm("fc1", 8192, 8192, 8192)
    assert RooflineModel(capped).time(gemm) > RooflineModel(h100).time(gemm)


def test_h100_96gb_500w_entry():
    """h100-sxm-96gb-500w: H100 SXM compute, 2.4 TB/s HBM2e, 500 W of 700 W, which leaves
    (500/700)^0.6 = 0.82 of the H100 SXM's sustained matmul rate."""
    g, h100 = catalog.gpu("h100-sxm-96gb-500w"), catalog.gpu("h100-sxm-80gb")
    assert (g.tdp_w, g.power_limit_w, g.board_power_w) == (700, 500, 500)
    assert g.hbm_bw_Bps == pytest.approx(2.4e12)
    assert 94 * 2**30 <= g.hbm_bytes <= 96 * 2**30
    assert g.flops("bf16") == h100.flops("bf16")
    assert g.power_scale == pytest.approx((500 / 700) ** POWER_EXPONENT)
    assert g.power_scale == pytest.approx(0.817, abs=0.002)
    assert g.gemm_ceiling("bf16") < h100.gemm_ceiling("bf16")


def test_power_exponent_reproduces_its_data():
    """The exponent predicts AMD's MI325X (1000 W) MAF from MI300X's (750 W) within 4 %."""
    for at_750, at_1000 in ((708, 843), (654, 794), (1273, 1519), (668.4, 784.9)):
        predicted = at_750 / power_limited_rate(750.0, 1000.0)
        assert predicted == pytest.approx(at_1000, rel=0.04)


def test_power_limit_above_tdp_is_an_error():
    """A power limit above the TDP is a ConfigError naming both fields."""
    with pytest.raises(ConfigError, match="power_limit_w.*tdp_w"):
        dataclasses.replace(catalog.gpu("h100-sxm-80gb"), power_limit_w=800.0)
    with pytest.raises(ConfigError, match="power_limit_w"):
        gpu_from_dict({**dataclasses.asdict(catalog.gpu("h100-sxm-80gb")), "power_limit_w": -1})


def test_power_limit_as_a_gpu_override():
    """cluster.gpu_overrides.power_limit_w caps a catalog GPU in a run config."""
    cfg = run_config_from_dict({
        "model": "llama3-8b", "training": {"global_batch_size": 8},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8,
                    "gpu_overrides": {"power_limit_w": 450}}})
    assert cfg.cluster.gpu.power_limit_w == 450
    assert cfg.cluster.gpu.gemm_ceiling("bf16") < catalog.gpu("h100-sxm-80gb").gemm_ceiling("bf16")


# ------------------------------------------------------------------ refreshed MAMF

@pytest.mark.parametrize("name,bf16_tflops,fp8_tflops", [
    ("b200-sxm-180gb", 1745.0, 3432.5),   # ml-engineering MAMF table @744d01e1
    ("mi300x", 668.4, 1273.0)])           # ml-engineering bf16; AMD ROCm blog MAF fp8
def test_mamf_matches_published_measurement(name, bf16_tflops, fp8_tflops):
    """mamf_fraction x peak reproduces the published MAMF within 0.2 %."""
    g = catalog.gpu(name)
    assert g.flops("bf16") * g.mamf_fraction == pytest.approx(bf16_tflops * 1e12, rel=2e-3)
    assert g.flops("fp8") * g.mamf_fraction_fp8 == pytest.approx(fp8_tflops * 1e12, rel=2e-3)


# ------------------------------------------------------------------ model presets

@pytest.mark.parametrize("name,published", MPT_NUMPARAMS.items())
def test_mpt_matches_llm_foundry_numparams(name, published):
    """Each MPT preset has exactly the NumParams llm-foundry's benchmark tables list."""
    assert total_params(catalog.model(name)) == published


@pytest.mark.parametrize("name", ["mpt-125m", "mpt-760m", "mpt-7b", "mpt-13b", "mpt-30b"])
def test_mpt_matches_its_name(name):
    """MPT presets whose llm-foundry name is a true size are within 5 % of it (mpt-1b, -3b and
    -70b are 1.32B, 2.65B and 64.9B by llm-foundry's own count)."""
    assert total_params(catalog.model(name)) == pytest.approx(_size(name), rel=0.05)


def test_mpt_is_llm_foundry_default_architecture():
    """MPT presets: GELU 4h, LayerNorm, learned positions, biases, tied, no dropout."""
    for name in MPT_NUMPARAMS:
        m = catalog.model(name)
        assert (m.activation, m.normalization, m.position_embedding) == ("gelu", "layernorm",
                                                                         "learned")
        assert m.add_bias_linear and m.tied_embeddings
        assert m.ffn_size == 4 * m.hidden_size and m.vocab_size == 50368
        assert m.attention_dropout == m.hidden_dropout == 0.0


@pytest.mark.parametrize("name", [*MCORE, "bloom-181b", "bloom-196b", "gpt-174.6b"])
def test_preset_matches_its_name(name):
    """Megatron weak-scaling, BLOOM-prequel and Table-2 presets are within 4 % of their name
    (the weak-scaling table truncates: 1.754B is its "1.7B")."""
    assert total_params(catalog.model(name)) == pytest.approx(_size(name), rel=0.04)


@pytest.mark.parametrize("name,embedding,non_embedding", [
    ("nemotron4-15b", 3.2e9, 12.5e9),      # arXiv:2402.16819 §2
    ("nemotron4-340b", 9.4e9, 331.6e9)])   # arXiv:2406.11704 §2.1
def test_nemotron_parameter_split(name, embedding, non_embedding):
    """Nemotron-4 presets reproduce the papers' embedding / non-embedding parameter split."""
    m = catalog.model(name)
    emb = embedding_params(m) + output_layer_params(m) - 2 * m.hidden_size  # less final norm
    assert emb == pytest.approx(embedding, rel=0.03)
    assert total_params(m) - emb == pytest.approx(non_embedding, rel=0.02)
