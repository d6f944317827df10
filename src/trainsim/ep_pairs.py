"""A layer's forward and another micro-batch's backward of a layer as Megatron-core's combined
1F1B runs them (``--overlap-moe-expert-parallel-comm``): sub-module by sub-module, each MoE
exchange hidden only behind the compute the schedule puts beside it.

core_v0.14.0-core_v0.17.0 megatron/core/models/common/model_chunk_schedule_plan.py
``TransformerLayerSchedulePlan.run`` issues, for a forward layer f and a backward layer b
(from core_v0.16.0 post_attn is part of the attn node)::

    comm stream:    combine_bwd(b)       | dispatch_fwd(f) -> dispatch_bwd(b)       | combine_fwd(f)
    compute stream: attn_fwd, post_attn(f)| mlp_bwd(b) -> mlp_dw(b) -> mlp_fwd(f)   | post_attn_bwd, attn_bwd(b)

Each node waits for the node before it of its own micro-batch (one CUDA event per
micro-batch: ``ScheduleNode`` waits and records it), so the two streams meet three times per
layer: the combine backward runs beside the forward's attention, the dispatches beside the
expert MLPs (the backward's dispatch once its MLP backward is done, its weight gradients
included unless the run delays them, profile feature ``delay_wgrad_compute``; the forward's
MLP once its dispatch has arrived), and the forward's combine beside the backward's attention. The
combine node runs, on the communication stream, what follows the exchange in the layer: the
dispatcher's ``combine_postprocess`` (the ``alltoall`` dispatcher's ``unpermute``) and the
layer's ``mlp_bda`` (models/gpt/fine_grained_callables.py ``submodule_combine_forward``:
``layer.mlp.combine`` then ``layer.mlp.postprocess`` then ``mlp_bda``, core_v0.16.0-v0.17.0;
``MoELayer.combine`` calls ``token_combine`` and ``combine_postprocess`` itself in
core_v0.14.0-v0.15.0), and their backward before the backward's exchange. An exchange longer
than the compute beside it is exposed there, whatever compute another phase has to spare; the
pooled pricing of a single pass (``Pricer.price``) hides it behind the pass's whole compute.

Read from the op lists: the compute before a pass's first exchange is its attention node, the
compute between the exchanges its MLP node. The shared experts and the recomputed modules,
which the list puts after the forward's combine or before the backward's, are compute-stream
work placed as Megatron-core runs them: the shared experts in the MLP node in
core_v0.14-v0.15 (``submodule_moe_forward``), in the attention node from core_v0.16
(``submodule_attn_forward``, Megatron-LM e8024d7), their backward with it, as the run's
profile says (feature ``moe_shared_experts_attn_node``: Megatron-Bridge from 26.04; the
Megatron-core, Megatron-LM and NeMo profiles have no entry that names a core >= 0.16 and keep
the MLP node); the attention node's re-runs in the attention's backward (the input layernorm,
re-run by its hook on the attention's output, transformer_layer.py
``input_layernorm_checkpoint``; core_attn, mla_up_proj), the pre-MLP layernorm (hooked on the
experts' output) and the MLP's own in the MLP's. The host's waits may pass while an exchange
runs, as in the pooled pricing.

Which layers pair (``chunk_exposed``): ``TransformerModelChunkSchedulePlan.run`` runs
forward layer i of the forward chunk beside layer n_b-1-i of the backward chunk, the one its
``pop_layer()`` returns (``get_layer(n_b - 1 - i)`` in core_v0.14.0-v0.15.0, lines 442-472;
``pop_layer`` in core_v0.16.0-v0.17.0, lines 469-504), for min(n_f, n_b) steps; then the
backward chunk's remaining layers alone, then the forward chunk's. A chunk's layers are its
decoder layers then, on the last virtual stage, its MTP layers (``_build_layer_schedule_plan``
of ``model.decoder`` then ``model.mtp``, core_v0.16.0 lines 341-342; core_v0.14.0 builds the
MTP layers after the decoder's too); the embedding and the loss run before and after the
pairs. A dense layer has the attention and MLP nodes only, its dispatch and combine
``NoopScheduleNode`` (``_build_callable_nodes``, core_v0.16.0 lines 162-167): beside an MoE
layer its attention node stands where the MoE layer's is, its MLP node where the MoE layer's
MLP is. Which chunk's forward runs beside which chunk's backward is the pipeline schedule's
(``combined_1f1b.beside_forward``).

Limits. The attention's weight gradients, delayed (``b_layer.attn.backward_dw()`` at the end
of ``TransformerLayerSchedulePlan.run``), may run beside the next layer's backward combine;
here they are attention backward work, beside this layer's forward combine only. The MTP
layer's extra work (its projection, its head and loss) runs in its nodes on the compute
stream; here it is compute outside the pair.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from trainsim.catalog.frameworks import framework_profile, profile_supports
from trainsim.pricing import EP, HOST, Priced, Pricer, interned
from trainsim.workload.moe_block import SHARED_EXPERT_PREFIX
from trainsim.workload.ops import Comm, Gemm, Op

_RECOMPUTE = "recompute."  # a recomputed op's name (workload.recompute)
# the pre-MLP layernorm, in the attention node, is recomputed by a hook on the experts' output:
# at the start of the MLP's backward (fine_grained_callables.py submodule_moe_forward,
# pre_mlp_norm_checkpoint.discard_output_and_register_recompute, core_v0.14.0-v0.17.0)
_MLP_NORM = "mlp_norm"
_X = "exchange"  # a dispatch or combine node's communication, while the pair is laid out


def _pooled(op: Op) -> bool:
    """Communication the overlap pools (``Pricer._price_ops``): the expert groups'."""
    return isinstance(op, Comm) and op.group in ("ep", "etp")


def _exchange(op: Op) -> bool:
    """The dispatch and combine nodes' communication: the expert all-to-alls. The expert-TP
    all-gather and reduce-scatter run in the MLP node, on the compute stream: the ``alltoall``
    dispatcher's ``dispatch_postprocess`` gathers the received tokens over the expert-TP group
    and its ``combine_preprocess`` reduce-scatters the experts' output
    (transformer/moe/token_dispatcher.py, core_v0.14.0-v0.16.0), both called from
    ``MoELayer.routed_experts_compute`` (``experts_compute`` in core_v0.14.0) in
    ``submodule_moe_forward``; the routing-map and token-count all-gathers run in the
    router's preprocessing, on the compute stream too: each a blocking segment in its node."""
    return _pooled(op) and op.kind == "all_to_all"  # type: ignore[union-attr]


def _timeline(pricer: Pricer, ops: list[Op]) -> tuple[list[tuple[str, float, str]], float]:
    """``ops`` priced as one pass with the overlap: its compute-stream segments in issue order,
    each pooled collective put back where the list has it at its own time (an exchange marked
    ``_X``; any other blocks the compute stream, an ``EP`` segment), and the host wait."""
    priced, order, at = pricer.price_at(ops)  # positions: a shared price's ops are not ops'
    kept: list[tuple[int, tuple[str, float, str]]] = []
    host_s, last = 0.0, -1
    for seg, op, i in zip(priced.segments, order, at):
        if seg[0] == HOST:
            host_s += seg[1]
        elif not _pooled(op):
            last = i if i >= 0 else last
            kept.append((last, seg))
    note = getattr(pricer, "note_ops", None)  # an export's pricer records each op's segment
    for i, op in enumerate(ops):
        if _pooled(op):
            seg = (_X if _exchange(op) else EP, pricer.comm_time(op), op.name)  # type: ignore[arg-type]
            if note is not None and seg[0] == EP:  # a blocking collective of the pass
                note(seg, [op])
            kept.append((i, seg))
    kept.sort(key=lambda item: item[0])  # stable: compute segments keep their order
    return [seg for _, seg in kept], host_s


def _split(segs: list[tuple[str, float, str]]) -> list[list[tuple[str, float, str]]] | None:
    """Compute runs and exchange runs alternating: [compute, exchange, compute, exchange,
    compute], or None where the pass does not have exactly two exchange nodes."""
    parts: list[list[tuple[str, float, str]]] = [[]]
    for seg in segs:
        if (seg[0] == _X) != (len(parts) % 2 == 0):
            parts.append([])
        parts[-1].append(seg)
    if len(parts) == 4:
        parts.append([])
    return parts if len(parts) == 5 else None


def _shared(name: str) -> bool:
    """A shared expert's op (its backward and recomputation included)."""
    return name.removeprefix(_RECOMPUTE).startswith(SHARED_EXPERT_PREFIX)


def _forward_name(name: str) -> str:
    """The forward op a backward segment belongs to (``unpermute.bwd`` -> ``unpermute``)."""
    return name.removesuffix(".bwd")


def _s(segs: list[tuple[str, float, str]]) -> float:
    return sum(seg[1] for seg in segs)


def _gemm_s(segs: list[tuple[str, float, str]], gemms: set[str]) -> float:
    """The seconds of ``segs`` that GEMMs (names in ``gemms``) take."""
    return sum(seg[1] for seg in segs if seg[2] in gemms)


def _gemm_names(ops: list[Op]) -> set[str]:
    return {op.name for op in ops if isinstance(op, Gemm)}


def delay_wgrad_compute(cfg: Any) -> bool:
    """Whether the run delays the MoE layer's weight gradients (``parallel.delay_wgrad_compute``;
    where the run leaves it out, its framework profile's default, else off as in Megatron-core)."""
    given = cfg.parallel.delay_wgrad_compute
    if given is not None:
        return bool(given)
    t = cfg.training
    return bool(t.framework) and \
        framework_profile(t.framework, t.framework_version).defaults.get("delay_wgrad_compute") is True


class Side(NamedTuple):
    """One pass of a layer as the pair's three phases read it (seconds): on the forward the
    attention node, the dispatch exchange, the MLP node, the combine exchange and the combine
    node's compute; on the backward the combine node's compute, the combine exchange, the MLP
    node (its weight gradients apart where the run delays them), the dispatch exchange and
    the attention node. ``busy``: the pass's compute and host wait, all it takes alone but for
    its exchanges. A dense layer has no exchange and no combine node (its dispatch and combine
    are ``NoopScheduleNode``, model_chunk_schedule_plan.py ``_build_callable_nodes``)."""

    attn: float
    mlp: float
    wgrad: float
    dispatch: float
    combine: float
    node: float
    busy: float
    attn_gemm: float = 0.0
    """The attention node's GEMM seconds (part of ``attn``)."""
    mlp_gemm: float = 0.0
    """The MLP node's GEMM seconds (part of ``mlp`` + ``wgrad``, the weight gradients all GEMMs)."""


class MoeSides(NamedTuple):
    """An MoE layer's passes as ``moe_sides`` prices them for a pair: each pass's compute and
    host wait as it runs alone (its exchanges apart), and the phases the pair reads."""

    forward: Priced
    backward: Priced
    fwd_side: Side
    bwd_side: Side


EMPTY = Side(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # no layer on this side: the other runs alone
PAIR_EXPOSED = "moe.pair_exposed"  # the segment a pair's exposed exchange time is priced in


def exposed(f: Side | None, b: Side | None, share: float,
            gemm_share: float | None = None) -> float:
    """The time forward layer ``f`` and backward layer ``b`` take as one
    ``TransformerLayerSchedulePlan.run`` beyond their passes' own compute (module docstring),
    the compute beside an exchange slowed by ``share`` of its time (the SMs it holds). None
    or ``EMPTY``: that side has no layer (``run(f_layer, None)`` or ``run(None, b_layer)``, the
    leftover layers of two chunks of unequal length): the other's exchanges wait for its own
    compute and its compute for them, exposed whole but where a backward's delayed weight
    gradients run beside its dispatch. ``gemm_share``: the share of the GEMMs' time lost
    beside an exchange where it differs from ``share`` (``Pricer.ep_gemm_share``: Hopper's
    statically scheduled GEMMs), each phase's compute weighted by its GEMM seconds."""
    f, b = f or EMPTY, b or EMPTY
    g = share if gemm_share is None else gemm_share
    if b is EMPTY:
        return f.dispatch + f.combine
    if f is EMPTY:
        return b.combine + b.dispatch - min(b.dispatch, b.wgrad) * (1.0 - g)

    def lost(comp: float, gemm: float) -> float:  # the share lost by compute with gemm GEMMs
        return share if comp <= 0.0 else (gemm * g + (comp - gemm) * share) / comp

    def beside(comm: float, comp: float, gemm: float) -> float:
        return max(comm, comp) + min(comm, comp) * lost(comp, gemm)

    # the combine node's kernels, on the communication stream beside the other stream's
    # compute, take the GPU from it for their time: they add to both streams' time
    phase1 = b.node + beside(b.combine, f.attn, f.attn_gemm)
    mlps = b.mlp + b.wgrad + f.mlp
    phase2 = max(max(f.dispatch, b.mlp) + b.dispatch,
                 max(b.mlp + b.wgrad, f.dispatch) + f.mlp) + \
        min(f.dispatch + b.dispatch, mlps) * lost(mlps, b.mlp_gemm + f.mlp_gemm)
    phase3 = beside(f.combine, b.attn, b.attn_gemm) + f.node
    return max(0.0, phase1 + phase2 + phase3 - f.busy - b.busy)


def chunk_exposed(fwd: tuple[tuple[Side, Side] | None, ...],
                  bwd: tuple[tuple[Side, Side] | None, ...], share: float,
                  gemm_share: float | None = None) -> list[float]:
    """A forward chunk's layers (``fwd``) beside a backward chunk's (``bwd``), each in forward
    order as (forward side, backward side), None for a layer the pair cannot split, as
    ``TransformerModelChunkSchedulePlan.run`` pairs them (model_chunk_schedule_plan.py,
    core_v0.14.0 lines 442-470, core_v0.16.0 lines 467-504): forward layer i beside the
    backward chunk's ``pop_layer()``, its layer n_b-1-i, for the first min(n_f, n_b) steps;
    then the backward's remaining layers alone, then the forward's. The exposed time of each
    step in the order they run."""
    f = [None if x is None else x[0] for x in fwd]
    b = [None if x is None else x[1] for x in bwd]
    n_f, n_b = len(f), len(b)
    both = min(n_f, n_b)
    return [exposed(f[i], b[n_b - 1 - i], share, gemm_share) for i in range(both)] + \
        [exposed(None, b[j], share, gemm_share) for j in range(n_b - both - 1, -1, -1)] + \
        [exposed(f[i], None, share, gemm_share) for i in range(both, n_f)]


def _busy(segs: list[tuple[str, float, str]], host: float) -> float:
    return sum(seg[1] for seg in segs if seg[0] != _X) + host


def dense_sides(pricer: Pricer, fwd_ops: list[Op], bwd_ops: list[Op]
                ) -> tuple[Side, Side] | None:
    """A dense layer's passes as a pair reads them: the attention node (``_forward_attention``)
    up to the pre-MLP layernorm, the MLP node (``_forward_mlp``: the layernorm, the MLP,
    ``mlp_bda``) from it (fine_grained_callables.py ``submodule_attn_forward`` returns before
    the layernorm for a dense layer, ``mlp_wrapper``, core_v0.16.0; core_v0.14.0 the same with
    no ``post_attn`` node); the backward's recomputed ops with their node's backward. None
    where the forward names no pre-MLP layernorm, or a pass holds a pooled collective."""
    names = [op.name for op in fwd_ops]
    if _MLP_NORM not in names or any(map(_pooled, fwd_ops + bwd_ops)):
        return None
    attn_ops = set(names[:names.index(_MLP_NORM)])
    f_segs, f_host = _timeline(pricer, fwd_ops)
    b_segs, b_host = _timeline(pricer, bwd_ops)
    attn_f_segs = [s for s in f_segs if s[0] != EP and s[2] in attn_ops]
    attn_f = _s(attn_f_segs)
    split = next((i for i, s in enumerate(b_segs) if s[2] == _MLP_NORM + ".bwd"), None)
    if split is None:
        return None

    def attn_b(i: int, name: str) -> bool:
        if name.startswith(_RECOMPUTE):
            return name.removeprefix(_RECOMPUTE) in attn_ops
        return i > split

    attn_b_segs = [s for i, s in enumerate(b_segs) if attn_b(i, s[2])]
    attn_bwd = _s(attn_b_segs)
    f_busy, b_busy = _busy(f_segs, f_host), _busy(b_segs, b_host)
    gemms = _gemm_names(fwd_ops + bwd_ops)
    attn_gf, attn_gb = _gemm_s(attn_f_segs, gemms), _gemm_s(attn_b_segs, gemms)
    return (Side(attn_f, f_busy - f_host - attn_f, 0.0, 0.0, 0.0, 0.0, f_busy,
                 attn_gf, _gemm_s(f_segs, gemms) - attn_gf),
            Side(attn_bwd, b_busy - b_host - attn_bwd, 0.0, 0.0, 0.0, 0.0, b_busy,
                 attn_gb, _gemm_s(b_segs, gemms) - attn_gb))


def moe_sides(pricer: Pricer, fwd_ops: list[Op], bwd_ops: list[Op]) -> MoeSides | None:
    """An MoE layer's forward and backward as a combined-1F1B pair runs them: each pass's
    compute and host wait as it runs alone (priced), and the phases the pair reads; None where
    a pass has not the one dispatch and one combine node the schedule pairs (the pooled
    pricing then stands)."""
    f_segs, f_host = _timeline(pricer, fwd_ops)
    b_segs, b_host = _timeline(pricer, bwd_ops)
    f_parts, b_parts = _split(f_segs), _split(b_segs)
    if f_parts is None or b_parts is None:
        return None
    attn_f, dispatch_f, mlp_f, combine_f, after_f = f_parts
    before_b, combine_b, mlp_b, dispatch_b, attn_b = b_parts
    # the combine node runs what follows the exchange in the layer (its unpermute and the
    # layer's mlp_bda) on the communication stream, and their backward before the backward's
    # exchange; the shared experts (and recomputed modules) are compute-stream work: the
    # shared experts in the attention node where the run's Megatron-core puts them there,
    # the modules recomputed by a hook on the attention's output (input_layernorm) in the
    # attention's backward, the others in the MLP's
    node = {s[2] for s in after_f if not _shared(s[2])}
    in_attn = profile_supports(pricer.cfg, "moe_shared_experts_attn_node")
    attn_ops = {s[2] for s in attn_f} - {_MLP_NORM}
    node_f = sum(s[1] for s in after_f if s[2] in node)
    node_b = sum(s[1] for s in before_b if _forward_name(s[2]) in node)

    def attn_node_b(name: str) -> bool:  # a backward segment of the attention node
        recomputed = name.startswith(_RECOMPUTE) and name.removeprefix(_RECOMPUTE) in attn_ops
        return recomputed or in_attn and _shared(name)

    to_attn_f = [s for s in after_f if in_attn and _shared(s[2])]
    to_attn_b = [s for s in before_b if attn_node_b(s[2])]
    attn_fwd, attn_bwd = _s(attn_f) + _s(to_attn_f), _s(attn_b) + _s(to_attn_b)
    mlp_fwd = _s(mlp_f) + sum(s[1] for s in after_f if s[2] not in node) - _s(to_attn_f)
    mlp_all = mlp_b + [s for s in before_b if _forward_name(s[2]) not in node
                       and not attn_node_b(s[2])]
    # --delay-wgrad-compute: the weight gradients wait until the backward's dispatch is issued
    # (model_chunk_schedule_plan.py run: mlp.backward_dw() before moe_dispatch.backward);
    # without it backward_dw returns at once, the MLP's backward computing them itself, and
    # the dispatch waits for them (fine_grained_callables.py TransformerLayerNode.backward_dw,
    # core_v0.14.0-v0.17.0)
    delayed = delay_wgrad_compute(pricer.cfg)
    wgrad = sum(s[1] for s in mlp_all if s[2].endswith("wgrad")) if delayed else 0.0
    fwd = tuple(s for s in f_segs if s[0] != _X) + \
        (((HOST, f_host, "host_launch_wait"),) if f_host > 0 else ())
    bwd = tuple(s for s in b_segs if s[0] != _X) + \
        (((HOST, b_host, "host_launch_wait"),) if b_host > 0 else ())
    # the GEMM seconds of each node, for the share a statically scheduled GEMM loses
    gemms = _gemm_names(fwd_ops + bwd_ops)
    mlp_f_segs = mlp_f + [s for s in after_f if s[2] not in node and s not in to_attn_f]
    return MoeSides(interned(fwd), interned(bwd),
                    Side(attn_fwd, mlp_fwd, 0.0, _s(dispatch_f), _s(combine_f), node_f,
                         _busy(f_segs, f_host), _gemm_s(attn_f + to_attn_f, gemms),
                         _gemm_s(mlp_f_segs, gemms)),
                    Side(attn_bwd, _s(mlp_all) - wgrad, wgrad, _s(dispatch_b), _s(combine_b),
                         node_b, _busy(b_segs, b_host), _gemm_s(attn_b + to_attn_b, gemms),
                         _gemm_s(mlp_all, gemms)))


def note_exchanges(pricer: Pricer, sides: MoeSides, fwd_ops: list[Op],
                   bwd_ops: list[Op]) -> None:
    """Hand an export's pricer (one with ``note_pair``; a plain ``Pricer`` has none: nothing
    priced reads this) the exchanges each pass of ``sides`` leaves out of its segments: they
    run beside the pair's compute, the exposed part of them priced as the backward's
    ``PAIR_EXPOSED`` seconds (``interop.chakra_pairs`` writes them as collectives)."""
    note = getattr(pricer, "note_pair", None)
    if note is not None:
        note(sides.forward, tuple(op for op in fwd_ops if _exchange(op)), True)
        note(sides.backward, tuple(op for op in bwd_ops if _exchange(op)), False)


def with_exposed(bwd: Priced, extra: float) -> Priced:
    """``bwd`` with ``extra`` seconds of a pair's exposed exchanges as its last segment."""
    return bwd + interned(((EP, extra, PAIR_EXPOSED),)) if extra > 0 else bwd


def own_segments(priced: Priced) -> tuple[tuple[str, float, str], ...]:
    """``priced``'s segments without a pair's exposed exchanges (:func:`with_exposed`): the
    work of its own, which does not depend on the pass beside it."""
    return tuple(seg for seg in priced.segments if seg[2] != PAIR_EXPOSED)


__all__ = ["EMPTY", "PAIR_EXPOSED", "MoeSides", "Side", "chunk_exposed", "delay_wgrad_compute",
           "dense_sides", "exposed", "moe_sides", "note_exchanges", "own_segments",
           "with_exposed"]
