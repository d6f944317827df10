"""Which parts of a layer CUDA graphs capture: Megatron-core's ``cuda_graph_scope`` and the
combinations it refuses (core_v0.16.0 3bec9aa9, megatron/core/transformer/transformer_config.py
L1699-1775, ``__post_init__``), checked once at load."""

from __future__ import annotations

from trainsim.config._build import suggest
from trainsim.errors import ConfigError

GRAPH_SCOPES = ("full", "full_iteration", "attn", "mlp", "moe", "moe_router", "moe_preprocess")
"""Megatron-core's ``CudaGraphScope`` members that a transformer layer has (core_v0.16.0
transformer/enums.py L70-79, less ``mamba``), with the deprecated ``full``."""

WHOLE_LAYER = ("full", "full_iteration")
"""Scopes that capture the whole layer (``full``: Megatron-core's empty scope; ``full_iteration``:
the local implementation's whole step): priced as ``TrainingConfig.cuda_graphs`` alone."""


def graph_scope_checked(scope: tuple[str, ...], cuda_graphs: bool) -> tuple[str, ...]:
    """``scope`` stripped, lower-cased and checked as Megatron-core checks it: known names,
    ``full`` alone, not both ``moe`` and ``moe_router``, ``moe_preprocess`` only with
    ``moe_router``; any scope needs ``cuda_graphs`` (Megatron reads the scope only when
    ``cuda_graph_impl`` is not "none")."""
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
                        padded: bool) -> str | None:
    """What Megatron-core refuses for this model, or None: ``moe``/``moe_router`` without
    experts, ``mlp`` with no dense layer, ``moe`` for a dropless (or unpadded) MoE."""
    if not moe and ("moe" in scope or "moe_router" in scope):
        return "training.cuda_graph_scope moe / moe_router needs an MoE model (Megatron-core)"
    if moe and not dense_layers and "mlp" in scope:
        return ("training.cuda_graph_scope mlp captures dense layers only and the model has "
                "none (Megatron-core)")
    if moe and "moe" in scope and not padded:
        return ("training.cuda_graph_scope moe needs drop-and-pad MoE (model.moe_capacity_factor"
                " with padding, Megatron-core); a dropless MoE graphs moe_router, moe_preprocess")
    return None
