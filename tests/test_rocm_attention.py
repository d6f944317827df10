"""Attention on AMD GPUs as the frameworks run it (issue 17: runs never seen).

Transformer Engine's ROCm build (ROCm/TransformerEngine@ac80527d) never runs flash-attn
(``_NVTE_FLASH_ATTN = 0`` under ``IS_HIP_EXTENSION``, pytorch/attention.py L294-297) and its
FusedAttention takes AMD's Composable Kernel first (common/fused_attn_rocm/fused_attn.cpp
L69-116): ``ck``. A framework on TE run on an AMD GPU with no attention stated gets ``ck``, not a
refusal for cuDNN; ``ck`` is priced in the FlashAttention-2 family at the GPU's own rates; the
kernels of the other vendor are refused with one line when stated."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu, run_config_from_dict
from trainsim.catalog.defaults import gpu_arch
from trainsim.catalog.frameworks import framework_profile
from trainsim.compute.attention import (
    ATTN_BLOCK,
    attention_fraction,
    attention_tile,
    fused_attention_work,
    gqa_group_sum_bytes,
)
from trainsim.errors import ConfigError
from trainsim.workload.ops import Attention

# (framework, a version whose default attention on NVIDIA Hopper is cuDNN)
TE_FRAMEWORKS = [("megatron-core", "0.12"), ("megatron-lm", "2025-06"),
                 ("megatron-bridge", "25.11"), ("nemo", "25.04")]
AMD_GPUS = ["mi250x-gcd", "mi300x", "mi325x", "mi355x"]


def _cfg(gpu_name: str, **training):
    return run_config_from_dict({
        "model": "llama3-8b", "parallel": {"tp": 1, "pp": 1},
        "training": {"seq_length": 8192, "global_batch_size": 16, "micro_batch_size": 2,
                     **training},
        "cluster": {"gpu": gpu_name, "num_gpus": 8, "gpus_per_node": 8}})


def test_amd_gpus_select_kernels_by_vendor():
    assert {gpu_arch(g) for g in AMD_GPUS} == {"amd"}
    assert gpu_arch("h100-sxm-80gb") == "sm90" and gpu_arch("a100-sxm-80gb") == "sm80"


def _inline(catalog_name: str, **change) -> dict:
    """A catalog GPU's file as a cluster.gpu mapping, renamed (a GPU the catalog lacks)."""
    from pathlib import Path

    import yaml

    import trainsim.catalog

    path = Path(trainsim.catalog.__file__).parent / "gpus" / f"{catalog_name}.yaml"
    data = yaml.safe_load(path.read_text())
    data.pop("aliases", None)
    return {**data, **change}


def test_an_inline_gpu_selects_kernels_by_its_vendor_and_arch():
    """A GPU given as a mapping reads its vendor and architecture as a catalog one does: an
    inline AMD GPU under Megatron-core 0.12 runs ck (it was refused for cuDNN)."""
    mi400x = _inline("mi355x", name="mi400x")
    assert gpu_arch(mi400x) == "amd"
    assert gpu_arch({"name": "x", "vendor": "amd"}) == "amd"  # too incomplete to build
    assert gpu_arch(_inline("b200-sxm-180gb", name="b300x")) == "sm100"
    assert gpu_arch(_inline("h100-sxm-80gb", name="h100x")) == "sm90"
    cfg = _cfg(mi400x, framework="megatron-core", framework_version="0.12")
    assert cfg.training.attention == "ck"


@pytest.mark.parametrize("framework, version", TE_FRAMEWORKS)
def test_te_frameworks_run_ck_on_amd_and_keep_their_nvidia_choice(framework, version):
    profile = framework_profile(framework, version)
    assert profile.attention_for("amd") == "ck"
    assert profile.attention_for("sm90") == "cudnn"
    for g in AMD_GPUS:
        cfg = _cfg(g, framework=framework, framework_version=version)
        assert cfg.training.attention == "ck", (framework, g)
    assert _cfg("h100-sxm-80gb", framework=framework,
                framework_version=version).training.attention == "cudnn"


def test_frameworks_without_te_keep_their_kernel_on_amd():
    """PyTorch-native frameworks dispatch by their own kernel (SDPA, Triton, unfused): nothing
    here changes them."""
    for framework, version, kernel in (("torchtitan", "2025-04", "sdpa"),
                                       ("pytorch", "2.5", "sdpa"),
                                       ("deepspeed", "2024-06", "unfused"),
                                       ("llm-foundry", "2024-06", "triton"),
                                       ("megatron-core", "0.4", "unfused")):
        cfg = _cfg("mi300x", framework=framework, framework_version=version)
        assert cfg.training.attention == kernel, framework


@pytest.mark.parametrize("framework, version, kernel", [
    # ROCm TE dev 056b9e1 (2024-05-01): flash-attn off under HIP, no HIP fused backend built
    ("megatron-core", "0.6", "unfused"), ("megatron-core", "0.7", "unfused"),
    ("megatron-lm", "2024-04", "unfused"), ("megatron-lm", "2024-06", "unfused"),
    # CK merged into ROCm TE dev on 2024-08-01 (044cd8d): the first releases after it
    ("megatron-core", "0.8", "ck"), ("megatron-lm", "2024-09", "ck"),
    # NeMo 24.07's launcher sets NVTE_FUSED_ATTN=0 and ROCm TE never runs flash-attn
    ("nemo", "24.07", "unfused"), ("nemo", "24.09", "ck"),
])
def test_rocm_te_attention_follows_the_rocm_te_of_the_release(framework, version, kernel):
    assert framework_profile(framework, version).attention_for("amd") == kernel
    assert _cfg("mi300x", framework=framework,
                framework_version=version).training.attention == kernel


def test_nvidias_mlperf_code_is_refused_on_an_amd_gpu_in_one_line():
    """mlperf-nemo is NVIDIA's MLPerf implementation (AMD's runs NeMo: framework nemo); its
    profile names no AMD attention, so its cuDNN default is refused on an AMD GPU."""
    assert framework_profile("mlperf-nemo", "5.0").attention_for("amd") == "cudnn"
    with pytest.raises(ConfigError) as exc:
        _cfg("mi355x", framework="mlperf-nemo", framework_version="5.0")
    assert "runs on NVIDIA GPUs only" in str(exc.value) and "\n" not in str(exc.value)


def test_ck_is_priced_as_flashattention2_at_the_amd_gpus_rates():
    """Hand check: the same fraction of the GEMM ceiling as flash2 on MI355X (no factor of its
    own), over ATTN_BLOCK square tiles; Llama 3 8B, 8k causal, 2 x 32 heads of 128: flash2's
    own tiles (128 x 64 forward, 64 x 128 backward) count the same whole blocks here."""
    mi355x = gpu("mi355x")
    for backward in (False, True):
        assert attention_fraction("ck", backward, mi355x) == \
            attention_fraction("flash2", backward, mi355x)
        assert attention_tile("ck", 128, True, backward) == (ATTN_BLOCK, ATTN_BLOCK)
        ops = [Attention(name="a", batch=2, heads=32, kv_heads=8, q_len=8192, kv_len=8192,
                         head_dim=128, causal=True, window=None, backward=backward, impl=impl)
               for impl in ("ck", "flash2")]
        ck, fa2 = (fused_attention_work(mi355x, op) for op in ops)
        assert ck == pytest.approx(fa2, rel=1e-9) and ck > 0
    # a faster GPU prices it faster: the GPU's own rate, not a constant
    op = Attention(name="a", batch=2, heads=32, kv_heads=8, q_len=8192, kv_len=8192,
                   head_dim=128, causal=True, window=None, backward=False, impl="ck")
    assert fused_attention_work(gpu("mi355x"), op) < fused_attention_work(gpu("mi300x"), op)


def test_ck_backward_sums_the_expanded_gqa_gradients():
    """ROCm TE's CK backward writes dK/dV per query head into a workspace of 2 x b x h x s_kv x d
    and reduces each group (fused_attn_ck.cpp L232-233, ck_fused_attn_bwd.cpp dk_dv_reduce):
    read expanded + write grouped, 16-bit: 2 B x b x s x d x 2 x (h + h_kv)."""
    op = Attention(name="a", batch=2, heads=32, kv_heads=8, q_len=8192, kv_len=8192,
                   head_dim=128, causal=True, window=None, backward=True, impl="ck")
    assert gqa_group_sum_bytes(op) == 2.0 * 2 * 8192 * 128 * 2 * (32 + 8)
    mha = Attention(name="a", batch=2, heads=32, kv_heads=32, q_len=8192, kv_len=8192,
                    head_dim=128, causal=True, window=None, backward=True, impl="ck")
    assert gqa_group_sum_bytes(mha) == 0.0


@pytest.mark.parametrize("gpu_name, training, words", [
    ("h100-sxm-80gb", {"attention": "ck"}, "training.attention=ck (Transformer Engine's ROCm"),
    ("a100-sxm-80gb", {"attention": "ck"}, "runs on AMD GPUs only"),
    ("mi355x", {"attention": "cudnn"}, "training.attention=cudnn runs on NVIDIA GPUs only"),
    ("mi300x", {"attention": "flash3"}, "training.attention=flash3 runs on NVIDIA GPUs only"),
    ("mi325x", {"attention": "flash4"}, "training.attention=flash4 runs on NVIDIA GPUs only"),
    ("mi250x-gcd", {"dtype": "fp8"}, "training.dtype=fp8 needs fp8 tensor cores"),
    ("a100-sxm-80gb", {"dtype": "fp8"}, "NVIDIA Ada, Hopper or later"),
    ("mi355x", {"attention": "cudnn", "framework": "megatron-core",
                "framework_version": "0.12"}, "runs on NVIDIA GPUs only"),
])
def test_the_other_vendors_kernels_are_refused_with_one_line(gpu_name, training, words):
    with pytest.raises(ConfigError) as exc:
        _cfg(gpu_name, **training)
    msg = str(exc.value)
    assert words in msg and "\n" not in msg
    if "attention" in training:  # the refusal names what this GPU does run, and only that
        usable = msg.split("use one of ")[1].split(", ")
        assert ("ck" if gpu_name.startswith("mi") else "cudnn") in usable
        if gpu_name == "a100-sxm-80gb":  # FlashAttention-3/4 need Hopper/Blackwell
            assert not {"flash3", "flash4"} & set(usable)


def test_a_profile_key_names_an_architecture_or_amd(tmp_path):
    from trainsim.catalog.framework_schema import DEFAULTS

    check = DEFAULTS["attention_by_arch"]
    assert check({"sm90": "cudnn", "amd": "ck"}) is None
    assert "compute capability" in check({"gfx942": "ck"})
    assert "amd" in check(["ck"])
