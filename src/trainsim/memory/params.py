"""Parameters one rank of a pipeline stage holds: the transformer layers of the model chunks it
runs (``workload.pipeline_schedules.rank_chunks``), the embedding on the first virtual stage, the
output layer (and multi-token-prediction depths) on the last, sharded over tensor parallelism
and, for routed experts, over expert x expert-tensor parallelism. Split out of
``memory.estimate``, which builds the activation and buffer side of the rank's memory on it."""

from __future__ import annotations

from trainsim.config import ModelConfig, RunConfig
from trainsim.config.hybrid import mtp_layer_indices
from trainsim.model.counts import (
    embedding_params,
    layer_expert_params,
    layer_params,
    mtp_params,
    output_layer_params,
)
from trainsim.workload.pipeline_schedules import rank_chunks
from trainsim.workload.vocab import padded_vocab

_SPLITS: dict[tuple[int, int], tuple[RunConfig, tuple[float, float]]] = {}
"""_stage_layer_split's answers by (config identity, stage), each kept with its config (so an
identity is never reused while kept): a memory check asks twice per stage (the rank's
parameters, then its layers' for fp8 copies); cleared when it reaches _SPLITS_KEPT."""

_SPLITS_KEPT = 4096


def _stage_layer_split(cfg: RunConfig, stage: int) -> tuple[float, float]:
    """(non-expert, routed-expert) parameters of the transformer layers on pipeline stage
    ``stage``, before tensor and expert parallelism."""
    key = (id(cfg), stage)
    hit = _SPLITS.get(key)
    if hit is not None and hit[0] is cfg:
        return hit[1]
    if len(_SPLITS) >= _SPLITS_KEPT:
        _SPLITS.clear()
    out = _SPLITS[key] = (cfg, _layer_split(cfg, stage))
    return out[1]


_BY_LAYERS: dict[tuple, tuple[object, tuple[float, float]]] = {}
"""_layer_split's answers by (model identity, virtual stages' layers, the rank's chunks), each
kept with its model: the memory groups of a search that place the same layers on a stage (other
micro-batches, recompute, optimizer sharding) ask the same."""


def _layer_split(cfg: RunConfig, stage: int) -> tuple[float, float]:
    p = cfg.parallel
    ranges = cfg.virtual_ranges
    held = rank_chunks(p.pipeline_schedule, stage, p.pp, p.vpp)
    key = (id(cfg.model), ranges, held)
    hit = _BY_LAYERS.get(key)
    if hit is not None and hit[0] is cfg.model:
        return hit[1]
    if len(_BY_LAYERS) >= _SPLITS_KEPT:
        _BY_LAYERS.clear()
    out = _layers_of(cfg.model, ranges, held)
    _BY_LAYERS[key] = (cfg.model, out)
    return out


def cache_clear() -> None:
    """Forget the kept layer splits (``_SPLITS``, ``_BY_LAYERS``; ``memory.cache_clear``)."""
    _SPLITS.clear()
    _BY_LAYERS.clear()


def _layers_of(m: ModelConfig, ranges: tuple[range, ...],
               held: tuple[int, ...]) -> tuple[float, float]:
    """(non-expert, routed-expert) parameters of the layers of virtual stages ``held``."""
    if m.num_experts is None and m.hybrid_layer_pattern is None:  # one kind: count, first layer
        n = sum(len(ranges[v]) for v in held)
        return (n * layer_params(m, next(r[0] for r in (ranges[v] for v in held) if r))
                if n else 0), 0
    layers = [i for v in held for i in ranges[v]]
    if m.hybrid_layer_pattern is not None:  # a layer's parameters follow its symbol
        kinds: dict[str, list[int]] = {}
        for i in layers:
            kinds.setdefault(m.hybrid_layer_pattern[i], []).append(i)
        total = sum(len(ix) * layer_params(m, ix[0]) for ix in kinds.values())
        experts = sum(len(ix) * layer_expert_params(m, ix[0]) for ix in kinds.values())
        return total - experts, experts
    # a layer's parameters depend only on whether it has routed experts: count each kind once
    moe = [i for i in layers if m.is_moe_layer(i)]
    dense = len(layers) - len(moe)
    experts = len(moe) * layer_expert_params(m, moe[0]) if moe else 0
    total = (len(moe) * layer_params(m, moe[0]) if moe else 0) + \
        (dense * layer_params(m, next(i for i in layers if not m.is_moe_layer(i))) if dense else 0)
    return total - experts, experts


def holds_last_chunk(cfg: RunConfig, stage: int) -> bool:
    """Whether a rank of pipeline stage ``stage`` runs the model's last virtual stage, and so
    holds the output layer and the multi-token-prediction depths: the last rank of a Megatron
    schedule, rank 0 of a V (its chunk 1 is virtual stage 2pp - 1), both ends of DualPipe (two
    copies of the pp stages, the reverse one placing stage pp - 1 on rank 0)."""
    p = cfg.parallel
    held = rank_chunks(p.pipeline_schedule, stage, p.pp, p.vpp)
    return p.pp * p.vpp - 1 in held or (p.pipeline_schedule == "dualpipe" and p.pp - 1 in held)


def stage_param_split(cfg: RunConfig, stage: int) -> tuple[float, float]:
    """(non-expert, routed-expert) parameters held by one rank of pipeline stage ``stage``:
    non-expert parameters are sharded over TP, experts over EP x expert-TP."""
    m, p = cfg.model, cfg.parallel
    dense, experts = _stage_layer_split(cfg, stage)
    pad = (padded_vocab(cfg) - m.vocab_size) * m.hidden_size  # the framework's padding rows
    held = rank_chunks(p.pipeline_schedule, stage, p.pp, p.vpp)
    if 0 in held:
        dense += embedding_params(m) + pad
        if m.position_embedding == "learned":
            # a learned position table is a plain embedding, not vocab-parallel: whole on every
            # TP rank (Megatron-LM megatron/model/language_model.py Embedding.__init__
            # ``torch.nn.Embedding(max_sequence_length, hidden_size)``, 2022; Megatron-core
            # models/common/embeddings/language_model_embedding.py, the same)
            dense += m.max_position_embeddings * m.hidden_size * (p.tp - 1)
    if holds_last_chunk(cfg, stage):
        mtp_experts = m.mtp_num_layers * sum(  # head, MTP
            layer_expert_params(m, i) for i in mtp_layer_indices(m))
        experts += mtp_experts
        dense += (output_layer_params(m) + (0 if m.tied_embeddings else pad) + mtp_params(m)
                  - mtp_experts)
        if (m.tied_embeddings or m.mtp_num_layers) and p.pp > 1 and not (
                0 in held and p.pipeline_schedule in ("dualpipe", "dualpipe_v")):
            # own word embedding: the tied head's; MTP's input (gpt_model.py mtp_process). Not
            # where DualPipe puts the embedding on the same rank: DeepSeek-V3 §3.2.3 shares its
            # parameters and gradients physically between the MTP module and the main model
            dense += padded_vocab(cfg) * m.hidden_size
    return dense / p.tp, experts / (p.ep * p.etp)


def stage_layer_params(cfg: RunConfig, stage: int) -> float:
    """Parameters of the transformer (and multi-token-prediction) layers one rank of ``stage``
    holds: the matmul weights fp8 GEMMs read, with their small norms; no embedding or head."""
    m, p = cfg.model, cfg.parallel
    dense, experts = _stage_layer_split(cfg, stage)
    if m.mtp_num_layers and holds_last_chunk(cfg, stage):
        mtp_experts = m.mtp_num_layers * sum(layer_expert_params(m, i)
                                             for i in mtp_layer_indices(m))
        dense, experts = dense + mtp_params(m) - mtp_experts, experts + mtp_experts
    return dense / p.tp + experts / (p.ep * p.etp)


def stage_bf16_layer_params(cfg: RunConfig, stage: int) -> float:
    """Parameters of the layers one rank of ``stage`` holds that run in 16 bits under fp8
    (``RunConfig.bf16_layers``): their matmul weights have no fp8 copies."""
    bf16 = cfg.bf16_layers
    if not bf16:
        return 0.0
    m, p = cfg.model, cfg.parallel
    held = rank_chunks(p.pipeline_schedule, stage, p.pp, p.vpp)
    layers = [i for v in held for i in cfg.virtual_ranges[v] if i in bf16]
    experts = sum(layer_expert_params(m, i) for i in layers)
    return (sum(layer_params(m, i) for i in layers) - experts) / p.tp + experts / (p.ep * p.etp)


def stage_params(cfg: RunConfig, stage: int) -> float:
    """Parameters held by one rank of pipeline stage ``stage``."""
    return sum(stage_param_split(cfg, stage))
