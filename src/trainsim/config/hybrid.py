"""Hybrid layer stacks: a per-layer mixer picked by a pattern, as Megatron-core's hybrid models
(Mamba-2 / attention / MLP / MoE; Nemotron-H, Nemotron 3) lay them out.

The pattern's symbols are Megatron-core's (NVIDIA/Megatron-LM@d98e8a64
megatron/core/models/hybrid/hybrid_layer_allocation.py ``Symbols``, lines 17-23): ``M`` a Mamba
layer (norm + Mamba-2 mixer), ``*`` an attention layer (norm + self-attention), ``-`` an MLP
layer (norm + MLP), ``E`` an MoE layer (norm + routed and shared experts). Each layer holds
one mixer, not an attention *and* an MLP: Nemotron-H 8B's 52 layers are 24 Mamba, 4 attention
and 24 MLP layers. The Hugging Face ``NemotronHConfig`` writes the same string
(``hybrid_override_pattern``, or ``layers_block_type``: ``linear_attention`` = M,
``full_attention`` = *, ``mlp`` = -, ``moe`` = E; transformers 5.24.0
configuration_nemotron_h.py ``_pattern_to_list``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.errors import ConfigError

if TYPE_CHECKING:
    from trainsim.config.model import ModelConfig
    from trainsim.config.parallel import ParallelConfig
    from trainsim.config.training import TrainingConfig

MAMBA, ATTENTION, MLP, MOE = "M", "*", "-", "E"
SYMBOLS = (MAMBA, ATTENTION, MLP, MOE)
MTP_SEPARATOR = "/"
"""Megatron-core's ``Symbols.MTP_SEPARATOR`` (hybrid_layer_allocation.py lines 25, 45-71,
201-250): ``"<main>/<mtp>/<mtp>..."``, each part after the main pattern one MTP depth's layers,
all alike (Nemotron 3 Super: ``.../*E/*E``, an attention and an MoE layer per depth)."""
NOT_MODELLED = {"G": "a Gated DeltaNet layer", "D": "a DeepSeek sparse-attention layer",
                "+": "a multi-head latent attention layer",
                "|": "a pipeline-stage boundary (give parallel.pipeline_layout instead)"}
"""Megatron-core's other pattern symbols (``Symbols.GDN``, ``DS_ATTENTION``, ``MLA``,
``PIPE``): refused by name, not read as something else."""

MAMBA_ONLY_FIELDS = ("mamba_num_heads", "mamba_head_dim", "mamba_state_dim", "mamba_num_groups",
                     "mamba_conv_kernel", "mamba_chunk_size")
"""Model fields only a pattern with Mamba layers reads."""


def check_hybrid(m: ModelConfig, defaults: dict[str, object]) -> None:
    """ConfigError naming the field where a hybrid pattern cannot be built: a symbol outside
    M * - E, a length other than ``num_layers``, ``E`` without ``num_experts`` (or experts
    without ``E``), MoE placement fields beside a pattern, Mamba fields without ``M``; and
    Megatron-core's own asserts (megatron/core/ssm/mamba_mixer.py ``MambaMixer.__init__``,
    lines 241-274): heads divide by groups."""
    p = m.hybrid_layer_pattern
    given = [n for n in MAMBA_ONLY_FIELDS if getattr(m, n) != defaults[n]]
    if p is None:
        if given:
            raise ConfigError(f"model.{given[0]}={getattr(m, given[0])!r} is a Mamba setting but "
                              "the model has no hybrid_layer_pattern; set one (M for a Mamba "
                              "layer) or leave it out")
        return
    parts = p.split(MTP_SEPARATOR)
    bad = sorted({c for c in p if c not in SYMBOLS + (MTP_SEPARATOR,)})
    if bad:
        why = NOT_MODELLED.get(bad[0], "not a layer symbol")
        raise ConfigError(f"model.hybrid_layer_pattern holds {bad[0]!r} ({why}); trainsim reads "
                          "M (Mamba-2), * (attention), - (MLP) and E (MoE), one per layer")
    if len(parts[0]) != m.num_layers:
        raise ConfigError(f"model.hybrid_layer_pattern has {len(parts[0])} layers but "
                          f"model.num_layers={m.num_layers}; give one symbol per layer")
    if len(parts) > 1 and (len(set(parts[1:])) != 1 or not parts[1]):
        raise ConfigError("model.hybrid_layer_pattern's MTP depths (the parts after '/') must "
                          "be alike and not empty (Megatron-core's parse_hybrid_pattern)")
    if len(parts) - 1 != m.mtp_num_layers:
        raise ConfigError(f"model.mtp_num_layers={m.mtp_num_layers} but "
                          f"model.hybrid_layer_pattern has {len(parts) - 1} MTP depths ('/' "
                          "parts); give one '/<layers>' per depth")
    missing = sorted({c for c in parts[-1] if c not in parts[0]}) if len(parts) > 1 else []
    if missing:
        raise ConfigError(f"model.hybrid_layer_pattern's MTP layers hold {missing[0]!r}, which "
                          "the main pattern does not; trainsim prices an MTP layer as a main "
                          "layer of its symbol")
    if (MOE in p) != (m.num_experts is not None):
        raise ConfigError("model.hybrid_layer_pattern has E (MoE) layers but model.num_experts "
                          "is not set" if MOE in p else
                          f"model.num_experts={m.num_experts} but model.hybrid_layer_pattern has "
                          "no E (MoE) layer; mark the MoE layers with E")
    if m.moe_layer_freq != 1 or m.moe_first_dense_layers != 0:
        raise ConfigError("model.moe_layer_freq and model.moe_first_dense_layers place MoE "
                          "layers; with model.hybrid_layer_pattern its E symbols do: leave "
                          "them out")
    if m.parallel_block or m.post_sublayer_norm or m.is_mla:
        raise ConfigError("model.hybrid_layer_pattern builds pre-norm layers of one mixer each "
                          "(Megatron-core's hybrid layers); model.parallel_block, "
                          "model.post_sublayer_norm and latent attention (model.kv_lora_rank) "
                          "do not apply: leave them out")
    if MAMBA not in p:
        if given:
            raise ConfigError(f"model.{given[0]} is a Mamba setting but "
                              "model.hybrid_layer_pattern has no M layer")
        return
    for name in MAMBA_ONLY_FIELDS:
        v = getattr(m, name)
        if v is not None and not 0 < v <= 2**31:
            raise ConfigError(f"model.{name}={v} must be a positive whole number")
    heads, groups = mamba_heads(m), m.mamba_num_groups
    if heads < 1 or heads % groups:
        raise ConfigError(f"model.mamba_num_groups={groups} must divide the Mamba heads "
                          f"({heads}: model.mamba_num_heads, or 2 x hidden_size / "
                          "mamba_head_dim); each group's B and C serve whole heads")


def mamba_heads(m: ModelConfig) -> int:
    """Mamba-2 heads: ``mamba_num_heads``, else ``expand * hidden_size / mamba_head_dim`` with
    Megatron-core's ``expand = 2`` (mamba_mixer.py ``MambaMixer.__init__``: ``d_inner =
    expand * d_model``; ``nheads = d_inner // headdim`` unless ``config.mamba_num_heads``)."""
    if m.mamba_num_heads is not None:
        return m.mamba_num_heads
    return 2 * m.hidden_size // m.mamba_head_dim


def mtp_layer_indices(m: ModelConfig) -> tuple[int, ...]:
    """Main layers like one MTP depth's layers, in order: for a hybrid pattern's ``/`` part
    the first main layer of each of its symbols (a hybrid layer is its symbol), else the last
    layer (DeepSeek-V3's MTP module: a transformer layer like the last)."""
    p = m.hybrid_layer_pattern
    if p is None or MTP_SEPARATOR not in p:
        return (m.num_layers - 1,)
    main, depth = p.split(MTP_SEPARATOR)[:2]
    return tuple(main.index(c) for c in depth)


def main_pattern(m: ModelConfig) -> str:
    """The decoder's symbols (the pattern before any ``/``); "" without a pattern."""
    return (m.hybrid_layer_pattern or "").split(MTP_SEPARATOR)[0]


def layer_symbol(m: ModelConfig, index: int) -> str:
    """The mixer of global layer ``index``: its pattern symbol, or "" for a plain transformer
    layer (attention + MLP / MoE)."""
    p = m.hybrid_layer_pattern
    return p[index] if p is not None else ""


def layer_kind(m: ModelConfig, index: int) -> bool | str:
    """What builds global layer ``index``'s op list and keys its caches: its pattern symbol in a
    hybrid model, else whether it has routed experts (a plain transformer layer), so a
    non-hybrid model's kinds (and every cache keyed by them) stay what they were."""
    p = m.hybrid_layer_pattern
    return p[index] if p is not None else m.is_moe_layer(index)


def routed(kind: bool | str) -> bool:
    """Whether a layer of ``kind`` (``layer_kind``) has routed experts."""
    return kind is True or kind == MOE


HYBRID_FRAMEWORKS = ("megatron-core", "megatron-lm", "megatron-bridge", "nemo")
"""Frameworks whose hybrid model trainsim prices: Megatron-core's ``HybridModel`` (NVIDIA/
Megatron-LM@d98e8a64 megatron/core/models/hybrid/), which NeMo and Megatron-Bridge build."""


DUALPIPE_SCHEDULES = ("dualpipe", "dualpipe_v")


def dualpipe_reason() -> str:
    """Why a hybrid model runs no DualPipe schedule, and what runs instead: one wording for the
    config's refusal and ``search --schedules`` (robust53: it spoke of "the expert exchange" on
    dense hybrid models too, and named no valid schedule)."""
    from trainsim.config.schedule_names import PIPELINE_SCHEDULES

    valid = ", ".join(s for s in PIPELINE_SCHEDULES if s not in DUALPIPE_SCHEDULES)
    return ("DualPipe's paired passes (one micro-batch's forward beside another's backward) "
            "run through the combined-1F1B schedule plans Megatron-core builds for GPT models "
            "only (pipeline.pair_pricer prices them so), which a hybrid model lacks, with "
            f"experts or without; use one of {valid}")


def check_hybrid_run(m: ModelConfig, p: ParallelConfig, t: TrainingConfig) -> None:
    """ConfigError naming the setting where a hybrid model's step is not priced
    (``workload.layers.layer_forward`` builds one block per symbol, ``workload.mamba_block``
    the Mamba-2 layer): another framework's hybrid modules, context parallelism over Mamba
    layers (``MambaContextParallel``'s all-to-alls), Megatron-core's combined 1F1B (only
    ``GPTModel`` has ``build_schedule_plan``: megatron/core/models/gpt/gpt_model.py; the hybrid
    model has none), DualPipe (its pairs price through that overlap: ``pipeline.pair_pricer``),
    activation offloading; and Megatron-core's TP asserts on the mixer (mamba_mixer.py
    ``MambaMixer.__init__``, lines 241-274: heads and groups divide by tp)."""
    if t.framework and t.framework not in HYBRID_FRAMEWORKS:
        raise ConfigError(f"model.hybrid_layer_pattern with training.framework="
                          f"{t.framework!r}: trainsim prices Megatron-core's hybrid model "
                          f"({', '.join(HYBRID_FRAMEWORKS)}); pick one of them")
    if p.pipeline_schedule in DUALPIPE_SCHEDULES:
        raise ConfigError(f"parallel.pipeline_schedule={p.pipeline_schedule!r} with "
                          f"model.hybrid_layer_pattern: {dualpipe_reason()}")
    if p.moe_overlap_ep_comm:
        raise ConfigError("parallel.moe_overlap_ep_comm with model.hybrid_layer_pattern: "
                          "Megatron-core's combined 1F1B builds schedule plans for GPT models "
                          "only; turn it off")
    if m.moe_latent_size and p.moe_shared_expert_overlap:
        # moe_layer.py lines 476-486: "Shared expert overlap with MoE latent projections is not
        # supported during training"
        raise ConfigError("parallel.moe_shared_expert_overlap with model.moe_latent_size: "
                          "Megatron-core refuses shared-expert overlap around latent "
                          "projections in training; turn it off")
    if p.cpu_offloading_num_layers:
        raise ConfigError("parallel.cpu_offloading_num_layers with model.hybrid_layer_pattern "
                          "is not modelled; leave it at 0")
    if MAMBA not in (m.hybrid_layer_pattern or ""):
        return
    if p.cp > 1:
        raise ConfigError(f"parallel.cp={p.cp} with Mamba layers: context parallelism over the "
                          "Mamba mixer (its all-to-alls) is not modelled; use cp=1")
    heads, groups = mamba_heads(m), m.mamba_num_groups
    if heads % p.tp or groups % p.tp:
        raise ConfigError(f"parallel.tp={p.tp} must divide the Mamba heads ({heads}) and "
                          f"model.mamba_num_groups={groups} (Megatron-core's mixer shards both "
                          "over TP); choose a tp that divides them")
