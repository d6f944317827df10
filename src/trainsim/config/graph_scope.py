"""Which parts of a layer CUDA graphs capture: Megatron-core's ``cuda_graph_scope`` and the
combinations it refuses (core_v0.16.0 3bec9aa9, megatron/core/transformer/transformer_config.py
L1699-1775, ``__post_init__``), checked once at load."""

from __future__ import annotations

from trainsim.config._build import suggest
from trainsim.errors import ConfigError

GRAPH_SCOPES = ("full", "full_iteration", "attn", "mlp", "moe", "moe_router", "moe_preprocess",
                "mamba")
"""Megatron-core's ``CudaGraphScope`` members (core_v0.16.0 transformer/enums.py L70-79;
``CudaGraphModule`` at d0b3b775, enums.py L61-73), with the deprecated ``full``. ``mamba``
captures a hybrid model's Mamba layers whole (cuda_graphs.py ``_layer_is_graphable``
L1645-1647; module.py ``_te_cuda_graph_capture`` L279-284: the layer's forward); with no
Mamba layer it captures nothing, as Megatron-core takes it."""

WHOLE_LAYER = ("full", "full_iteration")
"""Scopes that capture the whole layer (``full``: Megatron-core's empty scope; ``full_iteration``:
the local implementation's whole step): priced as ``TrainingConfig.cuda_graphs`` alone."""


def graph_scope_checked(scope: tuple[str, ...], cuda_graphs: bool) -> tuple[str, ...]:
    """``scope`` stripped, lower-cased and checked as Megatron-core checks it: known names,
    ``full`` alone, not both ``moe`` and ``moe_router``, ``moe_preprocess`` only with
    ``moe_router``; any scope needs ``cuda_graphs`` (Megatron reads the scope only when
    ``cuda_graph_impl`` is not "none")."""
    bad = [s for s in scope if not isinstance(s, str)]
    if bad:
        raise ConfigError(f"training.cuda_graph_scope: {bad[0]!r} is not a scope name; known: "
                          f"{', '.join(GRAPH_SCOPES)}")
    out = tuple(dict.fromkeys(s.strip().lower() for s in scope if s.strip()))
    for name in out:
        if name not in GRAPH_SCOPES:
            raise ConfigError(f"training.cuda_graph_scope: '{name}' is unknown"
                              f"{suggest(name, GRAPH_SCOPES)}; known: {', '.join(GRAPH_SCOPES)}")
    if not out:
        return out
    if not cuda_graphs:
        raise ConfigError(f"training.cuda_graph_scope={','.join(out)} needs "
                          "training.cuda_graphs=true (Megatron-core reads the scope only with a "
                          "cuda_graph_impl)")
    if "full_iteration" in out and len(out) > 1:
        # training/arguments.py L1441: full_iteration runs with cuda_graph_impl=local only, the
        # layer scopes with transformer_engine only (transformer_config.py L1738-1742)
        raise ConfigError("training.cuda_graph_scope: 'full_iteration' cannot be used with "
                          "other scopes (Megatron-core captures the whole step with "
                          "cuda_graph_impl=local, layer scopes with transformer_engine)")
    if "full" in out and len(out) > 1:
        raise ConfigError("training.cuda_graph_scope: 'full' cannot be used with other scopes "
                          "(Megatron-core); leave it empty to capture the whole layer")
    if "moe" in out and "moe_router" in out:
        raise ConfigError("training.cuda_graph_scope must not contain both moe and moe_router "
                          "(Megatron-core)")
    if "moe_preprocess" in out and "moe_router" not in out:
        raise ConfigError("training.cuda_graph_scope: moe_preprocess needs moe_router "
                          "(Megatron-core)")
    return out


def graph_scope_problem(scope: tuple[str, ...], moe: bool, dense_layers: bool,
                        padded: bool, *, capacity_factor: float | None = None,
                        dispatcher: str = "alltoall", recompute: str = "none",
                        recompute_modules: tuple[str, ...] | None = None,
                        moe_overlap_ep_comm: bool = False) -> str | None:
    """What Megatron-core refuses for this run, or None (core_v0.16.0 3bec9aa9,
    transformer/transformer_config.py ``__post_init__`` unless named): ``moe``/``moe_router``
    without experts (L1751-1755), ``mlp`` with no dense layer (L1757-1763), ``moe`` for a
    dropless or unpadded MoE (L1764-1770), ``moe_preprocess`` with the all-to-all dispatcher
    and token dropping without padding (its split sizes copied to the host inside the
    preprocess, L1771-1778), full recompute with layer scopes (L1780-1784: full recompute
    only with ``full_iteration``), a selective recompute of ``moe`` with ``moe_router``
    (L1788-1795, transformer_engine graphs), and ``moe`` (or a dense layer's ``mlp``) with
    ``moe_overlap_ep_comm`` (transformer_layer.py L1033-1044: the EP overlap needs the MLP/MoE
    block eager). ``scope``: as ``graph_scope_checked`` returns it; empty, ``full`` and
    ``full_iteration`` are whole-layer or whole-step graphs, which these checks leave alone
    (core_v0.16.0 also refuses full recompute and the EP overlap with an empty scope; trainsim's
    plain ``cuda_graphs`` stands for earlier releases' and other frameworks' graphs too)."""
    layer = [s for s in scope if s not in WHOLE_LAYER]
    if not layer:
        return None
    if not moe and ("moe" in scope or "moe_router" in scope):
        return "training.cuda_graph_scope moe / moe_router needs an MoE model (Megatron-core)"
    if moe and not dense_layers and "mlp" in scope:
        return ("training.cuda_graph_scope mlp captures dense layers only and the model has "
                "none (Megatron-core)")
    if moe and "moe" in scope and not padded:
        return ("training.cuda_graph_scope moe needs drop-and-pad MoE (model.moe_capacity_factor"
                " with padding, Megatron-core); a dropless MoE graphs moe_router, moe_preprocess")
    if moe and "moe_preprocess" in scope and dispatcher == "alltoall" and \
            capacity_factor is not None and not padded:
        return ("training.cuda_graph_scope moe_preprocess cannot run with the alltoall "
                "dispatcher and token dropping without padding (model.moe_capacity_factor "
                "without moe_pad_expert_input_to_capacity): its preprocess copies the split "
                "sizes to the host (Megatron-core)")
    if recompute == "full":
        return (f"training.cuda_graph_scope={','.join(scope)} cannot run with parallel."
                "recompute=full: Megatron-core runs full recompute only with full_iteration "
                "graphs; use recompute=selective or no layer scope")
    if recompute == "selective" and "moe" in (recompute_modules or ()) and \
            "moe_router" in scope:
        return ("training.cuda_graph_scope moe_router cannot run with parallel."
                "recompute_modules moe (Megatron-core: a recomputed module must lie wholly "
                "inside or outside the graph)")
    if moe_overlap_ep_comm and ("moe" in scope or "mlp" in scope and dense_layers):
        return ("training.cuda_graph_scope moe / mlp capture the whole MLP block, which "
                "parallel.moe_overlap_ep_comm needs eager (Megatron-core); graph moe_router "
                "instead")
    return None
