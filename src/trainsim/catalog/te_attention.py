"""Which attention Transformer Engine runs in training on Blackwell for a model's head widths.

Transformer Engine picks its cuDNN fused attention (trainsim's ``cudnn``) only where
``nvte_get_fused_attn_backend`` returns the F16 arbitrary-sequence-length backend, and on
Blackwell (``sm_arch_ >= 100``) that backend takes training heads of at most 128 wide for both
the query/key and the value: NVIDIA/TransformerEngine v2.0
transformer_engine/common/fused_attn/fused_attn.cpp line 156 and release_v1.14 line 158
(``!(sm_arch_ == 100 && (head_dim_qk > 128 || head_dim_v > 128))``), v2.2 (874418853, #1504) to
v2.4 line 221 (``sm_arch_ >= 100``), and v2.5 to v2.18 (v2.5 lines 233-251: heads over 128
on sm100 for inference only). The exceptions are MLA's (192, 128) heads from v2.5
(71c76b6ba, #1797; v2.5 line 250) with cuDNN >= 9.11, and 256-wide heads with cuDNN >= 9.23
(v2.18 line 335). Without the fused backend, ``get_attention_backend`` runs FlashAttention 2 where its
head filter passes (equal query/key and value widths, a multiple of 8, at most 256: v2.3
pytorch/attention/dot_product_attention/utils.py lines 474-505, which also turns FlashAttention
off for MLA) and ``UnfusedDotProductAttention`` otherwise. A framework profile states the limit
its Transformer Engine applies (``cudnn_sm100_head_dim_max``) and whether MLA's (192, 128)
heads pass (``cudnn_sm100_mla``: false before TE v2.5, null where the container's cuDNN is not
known); a profile stating neither keeps the kernel it names.
"""

from __future__ import annotations

from typing import Any

from trainsim.errors import ConfigError

FLASH2_MAX_HEAD_DIM = 256
"""FlashAttention 2's widest head (TE v2.3 utils.py line 489, ``head_dim_qk > 256``)."""


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def head_dims(model: Any) -> tuple[int, int]:
    """(query/key, value) width of one attention head: MLA's nope + rope and value widths,
    else the model's per-head width (``ModelConfig.kv_channels``)."""
    if model.is_mla:
        return model.qk_head_dim + model.qk_pos_emb_head_dim, model.v_head_dim
    return model.kv_channels, model.kv_channels


def blackwell_head_dim_attention(training: dict[str, Any], model: Any, given: bool,
                                 gpu: Any = None) -> str | None:
    """Replace, in place, a cuDNN attention that the framework's Transformer Engine does not
    run in training on a Blackwell GPU for this model's head widths by the one it runs instead
    (FlashAttention 2 where the profile lists it and its head filter passes, else the unfused
    attention). Returns 'attention cudnn -> NEW: ...' (None where nothing was replaced), which
    the caller reports; a ``cudnn`` the user named is refused, naming what runs instead."""
    if str(training.get("attention") or "") != "cudnn" or not _given(training.get("framework")):
        return None
    from trainsim.catalog.defaults import gpu_arch
    from trainsim.catalog.frameworks import _sm, framework_profile

    level = _sm(gpu_arch(gpu)) if gpu is not None else None
    if level is None or level < 100:
        return None
    version = training.get("framework_version")
    profile = framework_profile(str(training["framework"]),
                                str(version) if _given(version) else None)
    limit = profile.features.get("cudnn_sm100_head_dim_max")
    if limit is None:
        return None
    qk, v = head_dims(model)
    if qk <= limit and v <= limit:
        return None
    if (qk, v) == (192, 128) and profile.features.get("cudnn_sm100_mla") is not False:
        return None  # MLA's heads: accepted from TE v2.5 with cuDNN 9.11 (or not known)
    kernels = profile.features.get("attention_kernels") or ()
    flash = qk == v and qk % 8 == 0 and qk <= FLASH2_MAX_HEAD_DIM and "flash2" in kernels
    kernel = "flash2" if flash else "unfused"
    why = (f"{profile.name} {profile.version}'s Transformer Engine runs cuDNN attention on "
           f"Blackwell in training for heads of at most {limit} (query/key {qk}, value {v})")
    if given:
        raise ConfigError(f"training.attention=cudnn: {why}; set training.attention={kernel} "
                          "or leave it out")
    training["attention"] = kernel
    return f"attention cudnn -> {kernel}: {why}"


def wide_head_attention(training: dict[str, Any], model: Any, stated: Any,
                        gpu: Any = None) -> str | None:
    """Replace, in place, an attention that falls back for heads wider than any fused kernel
    trains (``config.validity.FUSED_MAX_HEAD_DIM``) by the kernel that runs them. PyTorch SDPA
    (``stated`` sdpa, or a framework's default sdpa, as ``training.attention`` sdpa or the
    backend its profile's ``sdpa_by_arch`` resolves it to) runs its memory-efficient backend,
    which takes any width of a multiple of 8 (pytorch/pytorch
    aten/src/ATen/native/transformers/cuda/sdp_utils.cpp ``check_head_dim_size_mem_efficient``;
    ``check_head_dim_size_flash``: at most 256). A framework's default cuDNN attention
    (Transformer Engine's fused attention) runs ``UnfusedDotProductAttention``: TE's fused
    backend trains heads of at most 256 (NVIDIA/TransformerEngine@d0067d0d
    transformer_engine/common/fused_attn/fused_attn.cpp L314-L319), its FlashAttention filters
    refuse them too (pytorch/attention/dot_product_attention/utils.py L931
    ``fa2_padded_head_dim > 256``, L954 ``head_dim_qk > 256``). Returns 'attention OLD -> NEW:
    ...' (None where nothing was replaced); a FlashAttention or cuDNN kernel the user named is
    refused by ``RunConfig`` (``config.validity.head_dim_problem``)."""
    from trainsim.config.validity import FUSED_MAX_HEAD_DIM

    qk, v = head_dims(model)
    current = str(training.get("attention") or "flash2")
    if current == "ck":
        return ck_wide_head_attention(training, model, stated)
    if max(qk, v) <= FUSED_MAX_HEAD_DIM or current not in ("sdpa", "cudnn"):
        return None
    profile = None
    if _given(training.get("framework")):
        from trainsim.catalog.defaults import gpu_arch
        from trainsim.catalog.frameworks import framework_profile

        version = training.get("framework_version")
        profile = framework_profile(str(training["framework"]),
                                    str(version) if _given(version) else None)
        arch = gpu_arch(gpu) if gpu is not None else None
        asked = str(stated) if _given(stated) else profile.attention_for(arch)
        via_sdpa = current == "sdpa" or (
            asked == "sdpa" and (profile.defaults.get("sdpa_by_arch") or {}).get(arch) == current)
    else:
        via_sdpa = current == "sdpa"
    wide = f"heads of at most {FUSED_MAX_HEAD_DIM} (query/key {qk}, value {v})"
    if via_sdpa:
        training["attention"] = "mem_efficient"
        return (f"attention {current} -> mem_efficient: PyTorch SDPA's flash and cuDNN backends "
                f"train {wide}; it runs its memory-efficient backend")
    if _given(stated) or profile is None:
        return None
    training["attention"] = "unfused"
    return f"attention cudnn -> unfused: Transformer Engine's fused and flash attention train {wide}"


def ck_wide_head_attention(training: dict[str, Any], model: Any, stated: Any) -> str | None:
    """Replace, in place, a framework's default ``ck`` (ROCm Transformer Engine's CK attention)
    for heads CK refuses (``config.validity.CK_HEAD_DIM_BELOW``) by ``unfused`` where ROCm TE
    runs ``UnfusedDotProductAttention`` for them: AOTriton's filter refuses MLA's unequal widths,
    grouped key/value heads, a window on every layer or an ALiBi bias, and FlashAttention 2 takes
    no head over 256 (``config.validity.CK_FALLBACK_SOURCE``). Where AOTriton would run, or
    ``ck`` was the user's, nothing is replaced and ``RunConfig`` refuses it in one line."""
    from trainsim.config.validity import CK_HEAD_DIM_BELOW, ck_head_fallback

    qk, v = head_dims(model)
    if max(qk, v) < CK_HEAD_DIM_BELOW or _given(stated):
        return None
    windowed = model.sliding_window is not None and not model.window_attn_skip_freq
    if ck_head_fallback(qk, v, model.kv_heads < model.num_attention_heads, windowed,
                        model.position_embedding == "alibi") != "unfused":
        return None
    training["attention"] = "unfused"
    return (f"attention ck -> unfused: ROCm Transformer Engine's CK attention trains heads "
            f"narrower than {CK_HEAD_DIM_BELOW} (query/key {qk}, value {v}), its AOTriton "
            "attention no MLA, grouped key/value heads, window or bias, its FlashAttention 2 "
            "none over 256; it runs UnfusedDotProductAttention")
