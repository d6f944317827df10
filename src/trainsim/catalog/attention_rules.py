"""The attention rules a framework's profile sets for a run config before it is built: which
kernel adds a sink (``sink_attention``), which runs a model with logit soft-capping
(``softcap_attention``), what a sliding window needs (``window_attention_problem``) and when
SDPA's ``enable_gqa`` exists (``sdpa_enable_gqa_problem``). ``catalog.defaults`` re-exports
them; ``catalog.load_run`` applies them.
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog.raw_values import given as _given
from trainsim.catalog.raw_values import truthy
from trainsim.errors import ConfigError


def gpu_vendor(gpu: Any) -> str:
    """The vendor of a catalog GPU (or of an inline GPU mapping); nvidia where unknown, as
    ``GPUSpec.vendor`` defaults."""
    from trainsim.catalog import gpu as catalog_gpu

    if isinstance(gpu, dict):
        return str(gpu.get("vendor") or "nvidia").lower()
    try:
        return catalog_gpu(str(gpu)).vendor if gpu is not None else "nvidia"
    except ConfigError:
        return "nvidia"


def sink_kernels(kernels: Any, vendor: str) -> list[str]:
    """The kernels, in ``config.training.SINK_FALLBACK``'s order of preference, that add a sink
    and run here: those a framework profile lists (``attention_kernels``; any where it lists
    none) that run on a GPU of ``vendor`` (``config.training.NVIDIA_ONLY_ATTENTION``)."""
    from trainsim.config.training import NVIDIA_ONLY_ATTENTION, SINK_ATTENTION, SINK_FALLBACK

    order = [*SINK_FALLBACK, *sorted(SINK_ATTENTION - set(SINK_FALLBACK))]
    return [k for k in order if (kernels is None or k in kernels)
            and (vendor == "nvidia" or k not in NVIDIA_ONLY_ATTENTION)]


def sink_attention(training: dict[str, Any], softmax_type: str, given: bool,
                   gpu: Any = None) -> str | None:
    """Replace, in place, a default attention kernel that cannot add the sink of a model whose
    ``softmax_type`` is not vanilla by the one its framework runs instead
    (``config.training.SINK_FALLBACK``: the first its profile lists that runs on ``gpu``'s
    vendor; cuDNN, on an NVIDIA GPU, without a framework or a list; the unfused softmax when
    none is left). Returns the replacement as 'attention OLD -> NEW: model.softmax_type=...'
    (None where nothing was replaced), which the caller reports. A kernel the user named that
    takes no sink is refused here, naming the ones this framework and GPU run that do."""
    from trainsim.config.training import SINK_ATTENTION

    current = str(training.get("attention") or "flash2")
    if softmax_type == "vanilla" or current in SINK_ATTENTION:
        return None
    kernels = None
    where = ""
    if _given(training.get("framework")):
        from trainsim.catalog.frameworks import framework_profile

        version = training.get("framework_version")
        profile = framework_profile(str(training["framework"]),
                                    str(version) if _given(version) else None)
        kernels = profile.features.get("attention_kernels")
        where = f" {profile.name} {profile.version}" if kernels is not None else ""
    vendor = gpu_vendor(gpu)
    usable = sink_kernels(kernels, vendor)
    if given:
        on = f" on {gpu}" if gpu is not None and not isinstance(gpu, dict) else ""
        raise ConfigError(f"training.attention={current} cannot add model.softmax_type="
                          f"{softmax_type}'s sink to the softmax; use one of "
                          f"{', '.join(sorted(usable or ['unfused']))} (what{where} runs{on} "
                          "that takes a sink)")
    training["attention"] = usable[0] if usable else "unfused"
    return f"attention {current} -> {training['attention']}: model.softmax_type={softmax_type}"


def softcap_attention(training: dict[str, Any], softcap: float | None, given: bool,
                      cp: Any = 1) -> str | None:
    """Replace, in place, the attention kernel of a model with attention-logit soft-capping by
    the one its framework's model runs for it (profile feature ``softcap_attention``:
    Megatron-Bridge's and NeMo's Gemma 2 layer spec, unfused). Returns the replacement as
    'attention OLD -> NEW: ...' (None where nothing was replaced), which the caller reports; a
    different kernel the user named is refused, since the framework's layer spec does not take
    it, and so is context parallelism (``cp``): that layer's Gemma2DotProductAttention asserts
    ``context_parallel_size == 1`` (NVIDIA-NeMo/Megatron-Bridge@2394d359
    src/megatron/bridge/models/gemma/gemma2_provider.py; NVIDIA/NeMo@db624485
    nemo/collections/nlp/models/language_modeling/megatron/gemma2/gemma2_modules.py line 77)."""
    if softcap is None or not _given(training.get("framework")):
        return None
    from trainsim.catalog.frameworks import framework_profile

    version = training.get("framework_version")
    profile = framework_profile(str(training["framework"]),
                                str(version) if _given(version) else None)
    kernel = profile.features.get("softcap_attention")
    if kernel is not None and _given(cp) and str(cp).strip() not in ("1", "1.0"):
        raise ConfigError(f"parallel.cp={cp}: {profile.name} {profile.version} runs a model with "
                          f"model.attn_logit_softcapping={softcap:g} on its soft-capping "
                          f"{kernel} attention, which takes no context parallelism; set "
                          "parallel.cp=1")
    current = str(training.get("attention") or "flash2")
    if kernel is None or current == kernel:
        return None
    if given:
        raise ConfigError(f"training.attention={current}: {profile.name} {profile.version} runs "
                          f"a model with model.attn_logit_softcapping={softcap:g} on its "
                          f"{kernel} attention (its layer spec's soft-capping attention); "
                          f"set training.attention={kernel} or leave it out")
    training["attention"] = kernel
    return (f"attention {current} -> {kernel}: model.attn_logit_softcapping={softcap:g} "
            f"({profile.name}'s soft-capping attention)")


def window_attention_problem(training: dict[str, Any], window: int | None,
                             notes: list[str | None] | tuple[()] = ()) -> None:
    """Refuse a sliding-window model on an unfused (or eager) attention its framework's model
    cannot window (profile feature ``unfused_sliding_window`` false): Megatron-core's local
    DotProductAttention asserts ``config.window_size is None`` ("Sliding Window Attention is
    only supported by TEDotProductAttention!", NVIDIA/Megatron-LM
    megatron/core/transformer/dot_product_attention.py line 51, core_v0.5.0 to core_v0.8.0).
    Megatron-Bridge's and NeMo's Gemma 2 spec runs its own masked unfused attention instead
    (``masked_window_scores``).

    ``notes``: the replacements made before (``catalog._run_config``); one that ends in
    ``unfused`` is a fused attention Transformer Engine replaced by its own
    ``UnfusedDotProductAttention`` for the model's heads (``te_attention``). That one does take
    a window, as an 'arbitrary' mask over every score (NVIDIA/TransformerEngine@030b7921
    pytorch/attention/dot_product_attention/utils.py ``get_attention_backend``, "Filter:
    Sliding window attention" table), but trainsim prices ``unfused`` as the framework's own
    (only the window's scores, its own launches), so the run is still refused, naming the heads
    as the cause: no other kernel of the framework takes them (edge45; before, the message
    suggested the fused kernels that had just refused the heads)."""
    if window is None or not _given(training.get("framework")):
        return
    current = str(training.get("attention") or "flash2")
    if current not in ("unfused", "eager"):
        return
    from trainsim.catalog.frameworks import framework_profile

    version = training.get("framework_version")
    profile = framework_profile(str(training["framework"]),
                                str(version) if _given(version) else None)
    replaced = next((n.split(": ", 1)[1] for n in notes if n and " -> unfused: " in n), None)
    if profile.features.get("unfused_sliding_window") is False:
        if replaced:
            raise ConfigError(f"model.sliding_window={window}: these heads run on Transformer "
                              f"Engine's UnfusedDotProductAttention ({replaced}), which masks "
                              "the window over every score; trainsim prices an unfused attention "
                              f"as {profile.name} {profile.version}'s own, which takes no "
                              "window: give the model heads a fused kernel trains, or no window")
        other = [k for k in profile.features.get("attention_kernels") or ()
                 if k not in ("unfused", "eager")]
        fix = f"set training.attention to {' or '.join(other)}" if other else \
            "no attention of this framework version takes one"
        raise ConfigError(f"training.attention={current}: {profile.name} {profile.version}'s "
                          f"unfused attention takes no sliding window (model.sliding_window="
                          f"{window}; DotProductAttention asserts window_size is None); {fix}")


SDPA_ENABLE_GQA_SINCE = (2, 5)
"""The torch release whose ``scaled_dot_product_attention`` takes ``enable_gqa`` (PyTorch 2.5
release notes; torch/nn/functional.py ``scaled_dot_product_attention`` signature from
v2.5.0)."""


def sdpa_enable_gqa_problem(training: dict[str, Any]) -> None:
    """Refuse ``training.sdpa_enable_gqa`` where it cannot apply: a run whose framework's models
    do not copy K and V before SDPA (no profile feature ``sdpa_repeat_kv``: the option would
    change nothing), an attention kernel SDPA does not dispatch to (``sdpa`` or the profile's
    ``sdpa_by_arch`` kernels or its ``sdpa_backends``, as ``workload.shard.kv_repeated`` reads
    them), or a plain PyTorch run on a torch release before 2.5 (``SDPA_ENABLE_GQA_SINCE``)."""
    if not truthy(training.get("sdpa_enable_gqa")):
        return
    framework = training.get("framework")
    if not _given(framework):
        raise ConfigError("training.sdpa_enable_gqa=true needs a training.framework whose models "
                          "call SDPA (pytorch, torchtitan); without one it means nothing")
    from trainsim.catalog.framework_versions import parse
    from trainsim.catalog.frameworks import framework_profile

    version = training.get("framework_version")
    profile = framework_profile(str(framework), str(version) if _given(version) else None)
    if not profile.features.get("sdpa_repeat_kv"):
        raise ConfigError(f"training.sdpa_enable_gqa=true: {profile.name} {profile.version}'s "
                          "models do not repeat K and V before SDPA, so enable_gqa changes "
                          "nothing; leave it out")
    kernel = str(training.get("attention") or "")
    dispatched = set((profile.defaults.get("sdpa_by_arch") or {}).values()) \
        | set(profile.features.get("sdpa_backends") or ())  # its own sdpa_kernel list
    if kernel and kernel != "sdpa" and kernel not in dispatched:
        raise ConfigError(f"training.sdpa_enable_gqa=true with training.attention={kernel}: "
                          "enable_gqa is an argument of SDPA, which does not run that kernel; "
                          "use training.attention=sdpa or leave sdpa_enable_gqa out")
    parsed = parse(str(version)) if profile.name == "pytorch" and _given(version) else None
    if parsed is not None and parsed.kind == "release" \
            and parsed.key[:2] < SDPA_ENABLE_GQA_SINCE:
        raise ConfigError(f"training.sdpa_enable_gqa=true with training.framework_version="
                          f"{version}: SDPA takes enable_gqa from torch 2.5; set "
                          "framework_version >= 2.5 or leave sdpa_enable_gqa out")


__all__ = ["SDPA_ENABLE_GQA_SINCE", "gpu_vendor", "sdpa_enable_gqa_problem", "sink_attention",
           "sink_kernels", "softcap_attention", "window_attention_problem"]
