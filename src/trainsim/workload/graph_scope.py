"""Scoped CUDA graphs: which ops of a layer a Transformer Engine graph replays, as Megatron-core
captures the parts ``TrainingConfig.cuda_graph_scope`` names (``cuda_graph_impl:
transformer_engine``; the host cost of what stays eager is ``compute.host``'s).

Megatron-core core_v0.16.0 (3bec9aa9) megatron/core/transformer/transformer_layer.py:
``_te_cuda_graph_capture`` (L970-1005) runs ``_forward_attention`` when ``attn`` is in the
scope (input norm, self-attention, its bias-dropout-add: ``_get_submodules_under_cudagraphs``
L942-968) and then ``_forward_mlp`` for a dense layer under ``mlp`` (pre-MLP norm, MLP, its
bias-dropout-add) or an MoE layer under ``moe`` (the whole block; drop-and-pad only) or
``moe_router``; under ``moe_router`` the MoE layer returns early from inside the graph
(transformer/moe/moe_layer.py ``maybe_skip_or_early_return_by_cudagraph``, L245-285): the
pre-MLP norm, the router and the shared experts (unless ``moe_shared_expert_overlap``) are
captured, and with ``moe_preprocess`` the token dispatcher's ``dispatch_preprocess`` too
(token_dispatcher.py L592-646: the tokens-per-expert reductions, their all-gather over TP x EP,
the first permutation). The device-to-host copies of the split sizes then move to
``before_ep_alltoall`` (L438-443), outside the graph, and the host still waits for them before
the all-to-all; the dispatch, the experts, the combine and the layer's last residual add run
eagerly (``_te_cuda_graph_replay`` L1045-1108). One callable per layer: attention, router and
shared-expert parts are one graph (``_get_submodules_under_cudagraphs`` L942-968 lists them
for one ``make_graphed_callables`` call), replayed once forward and once backward (TE graph.py
``Graphed``), even where trainsim's op list puts the shared experts after the eager
unpermutation (``graph_joins``).

A hybrid model's Mamba layer (``mamba``) is graphed whole or not at all: core_v0.16.0
transformer/cuda_graphs.py ``_layer_is_graphable`` (L1645-1647) takes a ``MambaLayer`` only
under ``mamba``, and ``GraphableMegatronModule._te_cuda_graph_capture`` (module.py L279-284)
captures its whole forward (norm, mixer, residual add); its ops share names with the
attention block's (``out_proj``) but never its scope (``mamba_parts``).

The parts are found by position in the layer's forward op list (``workload.layers.
layer_forward``): everything before the pre-MLP norm is the attention block. An op of another
list (backward, recomputation) belongs to the forward op whose name its own extends
(``qkv_proj.dgrad`` -> ``qkv_proj``; ``recompute.`` is dropped first). Ops of no known layer
(embedding, head, optimizer; a captured model's own names) stay eager.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainsim.config import RunConfig
from trainsim.config.graph_scope import WHOLE_LAYER
from trainsim.config.hybrid import MAMBA
from trainsim.workload.layers import layer_forward
from trainsim.workload.moe_block import SHARED_EXPERT_PREFIX, shared_expert_overlap
from trainsim.workload.ops import Comm, Elementwise, Op
from trainsim.workload.shard import Shard

MOE_DTOH_COPIES = 4
"""Of ``moe_tokens_to_host``'s launches (``moe_block.MOE_KERNELS['preprocess']``: 6 reductions
and 4 device-to-host copies), the copies: Megatron-core moves them out of a ``moe_preprocess``
graph (``_maybe_dtoh_and_synchronize`` at ``before_ep_alltoall``), the reductions stay in it."""

PREPROCESS_NAMES = ("permute", "moe.tokens_per_expert_all_gather", "moe_capacity_counts")
"""Forward ops (and their pieces, ``permute.maps``) of the all-to-all dispatcher's
``dispatch_preprocess`` before its exchange."""

DTOH = "moe_tokens_to_host"


def layer_parts(fwd: Sequence[Op]) -> dict[str, str]:
    """Forward op name -> the part of the layer that issues it: ``attn``, ``mlp`` (a dense
    layer's MLP block), and in an MoE layer ``moe_router`` (pre-MLP norm, router),
    ``moe_preprocess``, ``moe_dtoh`` (the split sizes' reductions and copies), ``shared``
    (shared experts) or ``moe`` (the rest of the block). A layer with no pre-MLP norm (a
    parallel block) is all ``attn``."""
    moe = any(_is_router(op.name) for op in fwd)
    out: dict[str, str] = {}
    block, exchanged = "attn", False
    for op in fwd:
        name = op.name
        if name == "mlp_norm":
            block = "mlp"
        if block == "attn" or not moe:
            part = block
        elif name.startswith(SHARED_EXPERT_PREFIX):
            part = "shared"
        elif name == "mlp_norm" or _is_router(name):
            part = "moe_router"
        elif isinstance(op, Comm) and op.group in ("ep", "etp") and not name.startswith(
                PREPROCESS_NAMES):
            exchanged, part = True, "moe"
        elif name == DTOH:
            part = "moe_dtoh"
        elif not exchanged and any(name == p or name.startswith(p + ".")
                                   for p in PREPROCESS_NAMES):
            part = "moe_preprocess"
        else:
            part = "moe"
        out.setdefault(name, part)
    return out


PartTables = tuple[dict[str, str], dict[str, str], "dict[str, str] | None"]
"""``layer_parts`` of a dense and an MoE layer, ``mamba_parts`` of a Mamba layer (None: the
model has none)."""


def part_tables(cfg: RunConfig, sh: Shard) -> PartTables:
    """The part tables of ``cfg``'s layers (the MoE table the dense one for a dense model)."""
    dense = layer_parts(layer_forward(cfg, sh, moe=False))
    moe = layer_parts(layer_forward(cfg, sh, moe=True)) if cfg.model.is_moe else dense
    mamba = mamba_parts(layer_forward(cfg, sh, MAMBA)) \
        if MAMBA in (cfg.model.hybrid_layer_pattern or "") else None
    return dense, moe, mamba


def mamba_parts(fwd: Sequence[Op]) -> dict[str, str]:
    """A Mamba layer's forward op names -> ``mamba``, and the stem of each dotted name
    (``ssd``), so that its backward's own kernels (``ssd.dt_clone``) belong to it too."""
    out = dict.fromkeys((op.name for op in fwd), "mamba")
    for op in fwd:
        out.setdefault(op.name.split(".", 1)[0], "mamba")
    return out


def captured_parts(cfg: RunConfig) -> frozenset[str]:
    """The parts ``training.cuda_graph_scope`` captures (empty: none is scoped, i.e. no graphs
    or the whole layer, which ``Pricer`` prices without host cost)."""
    scope = set(cfg.training.cuda_graph_scope)
    if not cfg.training.cuda_graphs or not scope or scope & set(WHOLE_LAYER):
        return frozenset()
    parts: set[str] = set()
    if "attn" in scope:
        parts.add("attn")
    if "mlp" in scope:
        parts.add("mlp")
    if "moe" in scope:
        parts |= {"moe_router", "moe_preprocess", "moe_dtoh", "shared", "moe"}
    if "moe_router" in scope:
        parts.add("moe_router")
        if not shared_expert_overlap(cfg):
            parts.add("shared")
    if "moe_preprocess" in scope:
        parts |= {"moe_preprocess", "moe_dtoh"}
    if "mamba" in scope:
        parts.add("mamba")
    return frozenset(parts)


def captured_launches(ops: Sequence[Op], dense: dict[str, str], moe: dict[str, str],
                      parts: frozenset[str], launches: Sequence[int],
                      mamba: dict[str, str] | None = None) -> list[int]:
    """For each op of a layer's list (issue order), how many of its ``launches`` a graph
    replays: all of an op in a captured part, none of an op that makes the host wait (except
    ``moe_tokens_to_host`` under ``moe_preprocess``: its reductions in the graph, its
    ``MOE_DTOH_COPIES`` copies and the wait outside), none of an op of no known layer part.
    ``dense`` / ``moe``: ``layer_parts`` of the two layer kinds; a list with a router is an
    MoE layer's; ``mamba``: ``mamba_parts`` of a hybrid model's Mamba layer, whose list holds
    an op no other layer has."""
    names = [op.name.removeprefix("recompute.") for op in ops]
    table = _table(names, dense, moe, mamba)
    out = []
    for op, name, n in zip(ops, names, launches):
        part = _part(name, table)
        if part not in parts:
            out.append(0)
        elif part == "moe_dtoh":
            out.append(max(0, n - MOE_DTOH_COPIES))
        elif isinstance(op, Elementwise) and op.host_sync:
            out.append(0)
        else:
            out.append(n)
    return out


def graph_joins(ops: Sequence[Op], dense: dict[str, str], moe: dict[str, str],
                mamba: dict[str, str] | None = None) -> list[bool]:
    """For each op of a layer's list, whether a run of captured ops starting at it belongs to
    a graph another run of the layer already replays: the shared experts', which Megatron-core
    captures in the router's callable (transformer_layer.py L961-966) while ``workload.layers``
    issues them after the unpermutation. Arguments as ``captured_launches``'."""
    names = [op.name.removeprefix("recompute.") for op in ops]
    table = _table(names, dense, moe, mamba)
    return [_part(name, table) == "shared" for name in names]


def _table(names: Sequence[str], dense: dict[str, str], moe: dict[str, str],
           mamba: dict[str, str] | None) -> dict[str, str]:
    """The part table of the layer whose op ``names`` these are (``captured_launches``)."""
    if any(_is_router(n) for n in names):
        return moe
    if mamba and any(_part(n, dense) is None and _part(n, mamba) for n in names):
        return mamba
    return dense


def _part(name: str, table: dict[str, str]) -> str | None:
    while True:
        part = table.get(name)
        if part is not None or "." not in name:
            return part
        name = name.rsplit(".", 1)[0]


def _is_router(name: str) -> bool:
    return name == "router" or name.startswith(("router.", "router_"))
