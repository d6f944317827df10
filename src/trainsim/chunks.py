"""A pipeline stage's model chunks, priced: the forward and backward passes of each virtual
stage, assembled from one priced copy of each kind of layer (routed experts or dense, windowed
or full attention, recomputed or not), the embedding, the head (with DeepSeek-V3's
multi-token-prediction modules) and what the framework does to the gradients after each
backward pass. The simulator, the pipeline closed forms and the steady-state cut all place
these passes."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace

from trainsim.catalog.frameworks import profile_supports, te_at_least
from trainsim.config import RunConfig
from trainsim.config.cached import cached
from trainsim.config.hybrid import layer_kind, mtp_layer_indices, routed
from trainsim.ep_pairs import (
    MoeSides,
    Side,
    chunk_exposed,
    dense_sides,
    moe_sides,
    note_exchanges,
    with_exposed,
)
from trainsim.memory.offload import OFFLOAD_WAIT, copy_stalls
from trainsim.pricing import Priced, Pricer, interned, join
from trainsim.workload.elementwise import TE_BULK_AMAX, fp8_amax_reductions
from trainsim.workload.grad_accumulation import fp32_grad_accumulation
from trainsim.workload.head import (
    embedding_backward,
    embedding_forward,
    head_backward,
    head_forward,
    mtp_eh_proj,
    mtp_input_backward,
    mtp_input_forward,
    train_metric_ops,
)
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Elementwise, Op
from trainsim.workload.pipe_engine import (
    deepspeed_load_micro_batch,
    deepspeed_loss_read,
    deepspeed_pipe_gathers,
)
from trainsim.workload.recompute import layer_recompute, recompute_drops_fp8
from trainsim.workload.schedule import combined_1f1b
from trainsim.workload.shard import Shard, shard_of


@dataclass(eq=False)
class Chunk:
    """Priced forward and backward of one model chunk (virtual pipeline stage)."""

    fwd_parts: tuple[Priced, ...]  # embedding (first virtual stage), each layer, head (last)
    bwd_head: Priced  # head backward (last virtual stage only; empty otherwise)
    bwd_layers: tuple[Priced, ...]  # recompute + backward of each layer, in backward order
    bwd_tail: Priced  # embedding backward (first virtual stage), gradient accumulation pass
    # under the combined 1F1B: the layers its schedule plan pairs, in forward order (its
    # decoder layers, then on the last virtual stage the MTP layers: model_chunk_schedule_
    # plan.py ``_build_layer_schedule_plan`` of ``model.decoder`` then ``model.mtp``), each
    # with the phases a pair reads (None: a layer the pair cannot split); empty otherwise.
    # The backward passes carry the exposed time of this chunk's forward beside its backward
    pair_sides: tuple[tuple[Side, Side] | None, ...] = ()

    @property
    def layers(self) -> int:
        return len(self.bwd_layers)

    @cached
    def fwd(self) -> Priced:
        return concat(self.fwd_parts)

    @cached
    def bwd(self) -> Priced:
        return concat((self.bwd_head, *self.bwd_layers, self.bwd_tail))


def concat(parts: tuple[Priced, ...] | list[Priced]) -> Priced:
    return join(parts)


LayerSource = Callable[[RunConfig, Shard, bool | str], list[Op]]
"""Builds one layer's forward ops for (config, shard, kind: routed experts, or a hybrid layer's
symbol, ``config.hybrid.layer_kind``); the analytical builder is
``workload.layers.layer_forward``; ``trainsim capture`` supplies ops recorded from PyTorch."""


def chunks(cfg: RunConfig, pricer: Pricer, sh: Shard,
            layer_source: LayerSource | None = None) -> dict[int, Chunk]:
    """Priced chunks by virtual stage index v = chunk * pp + stage."""
    m = cfg.model
    source = layer_source or (lambda c, s, moe: layer_forward(c, s, moe=moe))

    recomputed = cfg.recomputed_layers
    bf16 = cfg.bf16_layers  # layers kept in 16 bits under fp8 (training.num_layers_*_in_bf16)

    def kind(i: int) -> tuple[bool | str, bool, bool, bool]:
        # (layer_kind, windowed, recomputed, kept in bf16)
        return layer_kind(m, i), m.layer_window(i) is not None, i in recomputed, i in bf16

    # A full-attention layer of a model with a sliding window is built from the same config
    # with the window removed, so layer sources keep their (config, shard, moe) signature.
    full_cfg = cfg if m.sliding_window is None else \
        replace(cfg, model=replace(m, sliding_window=None, window_attn_skip_freq=None))
    layer_f: dict[tuple[bool | str, bool, bool, bool], Priced] = {}
    layer_b: dict[tuple[bool | str, bool, bool, bool], Priced] = {}

    paired = combined_1f1b(cfg)  # an MoE layer's passes run as combined-1F1B pairs

    sides: dict[tuple[bool | str, bool, bool, bool], tuple[Side, Side] | None] = {}
    sh16 = shard_of(replace(cfg, training=replace(cfg.training, dtype="bf16"))) if bf16 else sh

    def price_kind(k: tuple[bool | str, bool, bool, bool]) -> None:
        c = cfg if k[1] else full_cfg
        if k[3]:  # outside fp8_autocast: the layer's linears in 16 bits, whatever it recomputes
            c = replace(c, training=replace(c.training, dtype="bf16"))
            lf = source(c, sh16, k[0])
            lb = layer_recompute(c, sh16, lf, whole=k[2]) + backward_of(lf, sh16)
        elif k[2] and recompute_drops_fp8(c):  # recompute and backward in 16 bits
            lf = source(c, sh, k[0])
            c16 = replace(c, training=replace(c.training, dtype="bf16"))
            sh_16 = shard_of(c16)
            lf16 = source(c16, sh_16, k[0])
            # the run's config picks what the recompute re-runs (TE's linears, bf16 or not,
            # save after their GEMM), the bf16 block's ops what each costs
            lb = layer_recompute(c, sh_16, lf16) + backward_of(lf16, sh_16)
        else:
            lf = source(c, sh, k[0])
            lb = layer_recompute(c, sh, lf, whole=k[2]) + backward_of(lf, sh)
        pair = (moe_sides if routed(k[0]) else dense_sides)(pricer, lf, lb) if paired else None
        if isinstance(pair, MoeSides):  # an MoE layer: its passes without exchanges
            layer_f[k], layer_b[k] = pair.forward, pair.backward
            note_exchanges(pricer, pair, lf, lb)  # for exports only: nothing priced
            sides[k] = (pair.fwd_side, pair.bwd_side)
        else:
            layer_f[k], layer_b[k] = pricer.price(lf), pricer.price(lb)
            sides[k] = pair

    kind_of = [kind(i) for i in range(m.num_layers)]  # each layer's kind, read once
    for k in sorted(set(kind_of)):
        price_kind(k)
    mtp_kinds = [kind(i) for i in mtp_layer_indices(m)]  # one MTP depth's layers
    hf = head_forward(cfg, sh)
    hb = head_backward(cfg, sh, hf)
    head_f, head_b = pricer.price(hf), pricer.price(hb)
    # DeepSpeedEngine.backward reads the loss to the host before the backward starts: priced
    # with the head's backward, whose first launches the wait exposes
    loss_read = deepspeed_loss_read(cfg)
    if m.mtp_num_layers:  # DeepSeek-V3 MTP: per module a 2h->h projection, a layer and a head
        # recomputed (eh_proj and layer) only as cfg.mtp_recomputed says, not with the last layer
        redo = cfg.mtp_recomputed
        # a hybrid depth: its '/' part's; MTP layers keep the run's dtype (the bf16 layers are
        # the decoder's, by global index: Megatron-core ``is_first_last_bf16_layer``)
        mtp_kinds = [(*k[:2], redo, False) for k in mtp_kinds]
        for k in mtp_kinds:
            if k not in layer_b:
                price_kind(k)
        depth_f = sum((layer_f[k] for k in mtp_kinds[1:]), layer_f[mtp_kinds[0]])
        depth_b = sum((layer_b[k] for k in reversed(mtp_kinds[:-1])), layer_b[mtp_kinds[-1]])
        proj, proj_b = mtp_eh_proj(cfg, sh)  # column-parallel, its output gathered
        # its embedding lookup, enorm, hnorm and concat before the projection (head.py)
        mtp_in = mtp_input_forward(cfg, sh)
        redo_in = [op for op in mtp_in if op.name.startswith("mtp_")] if redo else []
        mtp_f = pricer.price(mtp_in + proj) + depth_f + head_f

        def mtp_b(again: bool) -> Priced:  # again: another lookup's table gradient on the rank
            return head_b + depth_b + pricer.price(
                redo_in + (proj if redo else []) + proj_b + mtp_input_backward(cfg, sh, again))
        head_f = head_f + mtp_f * m.mtp_num_layers
        first_b = mtp_b(False)  # each later depth: the same table again (head.py)
        rest_b = mtp_b(True) if m.mtp_num_layers > 1 and cfg.parallel.pp > 1 else first_b
        head_b = (first_b + rest_b * (m.mtp_num_layers - 1) if m.mtp_num_layers > 1
                  else first_b) + head_b
    if loss_read:
        head_b = pricer.price(loss_read + hb) if not m.mtp_num_layers \
            else pricer.price(loss_read) + head_b
    emb_f = pricer.price(embedding_forward(cfg, sh))
    emb_b = pricer.price(embedding_backward(cfg, sh))
    empty = interned(())  # one object inside pricing.shared: sums with it are shared too
    ranges = cfg.virtual_stage_layers()
    # DeepSpeed's PipelineEngine rebuilds the TP-partitioned tensors it receives (all-gathers)
    gather_f, gather_b = (pricer.price(g) for g in deepspeed_pipe_gathers(cfg, sh))
    t = cfg.training
    # Transformer Engine's delayed-scaling amax reductions, one per chunk pass
    # (``fp8_amax_reductions``), with or without CUDA graphs: a graphed layer's replay adds
    # its modules' amaxes to the global buffer that the chunk's fp8_autocast exit reduces,
    # and the first module's backward replay reduces eagerly after it (TE v1.6rc1 graph.py
    # ``make_graphed_forward`` L395-402, ``Graphed.backward`` L343-344; v2.2.1 L550, L466;
    # Megatron-core's own graphs, core_v0.11.0-0.13.0 transformer/cuda_graphs.py
    # ``_CudagraphFunc.forward`` / ``backward``: add_fp8_tensors_to_global_buffer,
    # reduce_and_update_fp8_tensors(forward=False)); graphs over parts of a layer
    # (``cuda_graph_scope``) the same (v2.10 graph.py ``Graphed.backward`` L718-720)
    amax = t.dtype == "fp8" and t.fp8_recipe == "delayed" \
        and not profile_supports(cfg, "fp8_amax_tp_async")
    amax_group = "tp_cp" if t.tp_only_amax_red or profile_supports(cfg, "fp8_amax_tp_only") \
        else "tp_dp_cp"
    # Transformer Engine >= 1.6 reduces one buffer of all the rank's modules per pass, with a
    # cat and a fused update around it (``fp8_delayed.fp8_amax_reductions``, ``bulk_update``)
    bulk = amax and te_at_least(t.framework, t.framework_version, TE_BULK_AMAX) \
        and not profile_supports(cfg, "fp8_module_scale_update")
    stage_layers = cfg.stage_layer_counts
    drops_fp8 = recompute_drops_fp8(cfg)
    out: dict[int, Chunk] = {}
    built: dict[Hashable, Chunk] = {}  # by composition(): one Chunk per composition
    n = len(kind_of)
    # Transformer Engine < 2.10's activation offloading: the compute stream's waits for late
    # copies (after a layer's forward) and reloads (after its backward), by layer
    # (``memory.offload.copy_stalls``; offloading runs without pipelining: one chunk)
    stall_f, stall_b = copy_stalls(cfg, [layer_f[k].duration_s for k in kind_of],
                                   [layer_b[k].duration_s for k in kind_of]) \
        if cfg.parallel.cpu_offloading_num_layers else ((), ())
    stalled = any(stall_f) or any(stall_b)
    for v, layers in enumerate(ranges):
        first, last = v == 0, v == len(ranges) - 1
        kinds = kind_of[layers.start:layers.stop] \
            if type(layers) is range and layers.step == 1 and 0 <= layers.start and \
            layers.stop <= n else [kind(i) for i in layers]
        key = composition(first, last, kinds)
        if stalled:  # the waits read the layers' indices
            key = (key, tuple(layers))
        if bulk:  # the bulk reduction carries the whole stage's amaxes
            key = (key, stage_layers[v % cfg.parallel.pp])
        hit = built.get(key)
        if hit is not None:
            out[v] = hit
            continue
        # each call priced alone, as the layers are: the host has run ahead of the chunk's
        # kernels, so the cat, the all_reduce and the update launch behind them
        amax_f, amax_b = (join([pricer.price([op]) for op in o]) for o in fp8_amax_reductions(
            len(layers), amax_group, stage_layers[v % cfg.parallel.pp], bulk)) \
            if amax and layers else (empty, empty)
        if drops_fp8 and all(k[2] for k in kinds):  # no fp8 module in the backward: TE v0.10
            amax_b = empty  # ``_prepare_backward`` reduces nothing when the module ran bf16
        # DeepSpeed's LoadMicroBatch before the first and the last stage's forward; the
        # legacy Megatron model's no-op layer in a chunk without a transformer layer
        load = pricer.price(deepspeed_load_micro_batch(cfg, first, last)
                            + ([] if layers else noop_layer_clone(cfg, sh)))
        fwd = (load + (empty if first else gather_f), emb_f if first else empty,
               *(layer_f[k] for k in kinds), (head_f if last else empty) + amax_f)
        # what the framework does with the gradients after each backward pass
        # (and, on the head's chunk, the trainer's train metrics over the kept logits)
        after = amax_b + pricer.price(fp32_grad_accumulation(cfg, layers, first, last)
                                      + (train_metric_ops(cfg, sh) if last else []))
        bwd_layers = tuple(layer_b[k] for k in reversed(kinds))
        bwd_head = head_b if last else gather_b
        pair_sides: tuple = ()
        if paired:  # the chunk's forward beside its own backward: each step's exposed time on
            # the backward layer it pops (the MTP layers, popped first, in the head's backward)
            mtp = mtp_kinds * (m.mtp_num_layers or 0) if last else []
            pair_sides = tuple(sides[k] for k in kinds + mtp)
            steps = chunk_exposed(pair_sides, pair_sides, pricer.sm_share["ep"],
                                  pricer.ep_gemm_share)
            bwd_head = with_exposed(bwd_head, sum(steps[:len(mtp)]))
            bwd_layers = tuple(with_exposed(b, x) for b, x in zip(bwd_layers, steps[len(mtp):]))
        if stalled:
            fwd = (*fwd[:2], *(_waited(f, stall_f[i]) for f, i in zip(fwd[2:-1], layers)),
                   fwd[-1])
            bwd_layers = tuple(_waited(b, stall_b[i]) for b, i in zip(bwd_layers,
                                                                      reversed(layers)))
        out[v] = built[key] = Chunk(fwd, bwd_head, bwd_layers,
                                    (emb_b if first else empty) + after, pair_sides)
    return out


def _waited(part: Priced, wait_s: float) -> Priced:
    """A layer's pass followed by the compute stream's wait for an offload copy or reload."""
    return part + interned(((OFFLOAD_WAIT, wait_s, "offload_copy_wait"),)) if wait_s > 0 \
        else part


def composition(first: bool, last: bool,
                kinds: list[tuple[bool | str, bool, bool, bool]]) -> Hashable:
    """What one virtual stage's ``Chunk`` depends on within a ``chunks`` call, whose config,
    pricer, shard and layer source are fixed: whether it is the first and the last virtual
    stage, and its layers' kinds (``layer_kind``, windowed, recomputed, kept in bf16) in order. ``chunks``
    assembles the virtual stages of one composition once and hands them the same ``Chunk``
    (issue 21, chunk46: the public file's 758 calls built 23,904 virtual stages of 1,980
    compositions). Exact: the assembly reads a layer's index only through its kind (the
    priced layers are per kind; ``fp32_grad_accumulation``'s tensors read it only through
    ``is_moe_layer``, ``workload.sharding.rank_tensors``; the amax reductions only the
    count), and no consumer changes a ``Chunk`` or tells two apart by identity but to find
    what was priced from it (``simulator._TaskGraph.add``'s durations by ``id``). Scoped to
    the call: nothing outlives it but the chunks it returns."""
    return (first, last, *kinds)


def noop_layer_clone(cfg: RunConfig, sh: Shard) -> list[Op]:
    """The forward of the legacy Megatron model's ``NoopTransformerLayer`` in a chunk left with
    no transformer layer (profile feature ``noop_layer_clone``): ``hidden_states.clone()``, a
    read and a write of the rank's 16-bit hidden states (its backward passes the gradient
    through, no kernel). Empty elsewhere."""
    if not profile_supports(cfg, "noop_layer_clone"):
        return []
    rows = sh.tokens / (cfg.parallel.tp if sh.sp else 1)
    return [Elementwise("noop_layer_clone", bytes=2.0 * 2 * rows * cfg.model.hidden_size,
                        kernel="copy")]
