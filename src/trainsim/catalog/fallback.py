"""The mechanisms a run on a framework with no profile here is predicted with.

A validation row may name a framework that ``catalog/frameworks/`` has no profile of (colossalai,
maxtext, accelerate, picotron, ...). Its name says nothing trainsim can read, so the profile whose
mechanisms predict it is chosen from what the row's own cells say of its engine, one rule for
every such name (``validate.vocab`` applies it and says so in the row's ``read_as``).
"""

from __future__ import annotations

FALLBACK_PROFILES = {"sharded": "torchtitan", "sdpa": "pytorch", "unsharded": "megatron-core"}
"""The profile whose mechanisms a run on a framework with no profile here is predicted with
(:func:`fallback_framework`), by what the run's own settings say of its engine, each at its
newest entry (the run's ``framework_version`` is its own framework's, no date or release of
these profiles). ``sharded`` (it states ZeRO-2/3 or FSDP sharding, or HSDP replicas of a state
it does not say is ZeRO-1): PyTorch's
FSDP2 as torchtitan, PyTorch's own reference stack, runs it (per-block ``fully_shard``,
resharded after forward, fp32 reduce-scatter overlapped with the backward, DTensor TP/SP,
torch.distributed.pipelining; torchtitan.yaml). ``sdpa`` (unsharded, and its model calls
PyTorch's scaled_dot_product_attention: attention ``sdpa`` or option ``enable_gqa``, which
Megatron-core's Transformer Engine or local attention never does): a plain PyTorch loop, DDP
around the model's own modules (pytorch.yaml). ``unsharded`` (DDP, ZeRO-1 or the distributed
optimizer, with or without TP/PP/CP/EP): Megatron-core, the library NeMo, Megatron-Bridge,
Megatron-LM and MLPerf's NeMo build on (bucketed DDP or distributed optimizer with its
overlaps offered, Transformer Engine fused attention, TP/SP, interleaved 1F1B;
megatron-core.yaml)."""


def fallback_framework(zero_stage: object = None, replicas: object = None,
                       sdpa: bool = False) -> tuple[str, str]:
    """(profile name, why) for a run on a framework with no profile here, from the run's own
    ``zero_stage`` (2 or 3: sharded), HSDP ``replicas`` (above 1: sharded; at ZeRO-1 they are
    Megatron-core's distributed-optimizer instances) and whether its model calls PyTorch's SDPA
    (``sdpa``), never from the framework's name (``FALLBACK_PROFILES``)."""
    def number(value: object) -> float:
        try:
            return float(str(value).strip())
        except ValueError:
            return 0.0

    stage, dp_rep = number(zero_stage), number(replicas)
    # replicas of a ZeRO-1 state are Megatron-core's distributed-optimizer instances
    # (--num-distributed-optimizer-instances, megatron-core.yaml hybrid_shard), not FSDP's HSDP:
    # FSDP2 has no stage 1 to run them with
    if stage in (2.0, 3.0) or (dp_rep > 1 and stage != 1.0):
        said = f"zero_stage {int(stage)}" if stage in (2.0, 3.0) else f"dp_replicate {dp_rep:g}"
        return FALLBACK_PROFILES["sharded"], f"it states {said}: PyTorch FSDP2's mechanisms"
    if sdpa:
        return FALLBACK_PROFILES["sdpa"], ("its model calls PyTorch SDPA and shards nothing: "
                                           "a plain PyTorch loop's mechanisms (DDP)")
    return FALLBACK_PROFILES["unsharded"], ("it states no ZeRO-2/3 sharding: Megatron-core's "
                                            "mechanisms (DDP or distributed optimizer, TP/SP/PP)")


APEX_ADAM_PROFILE = "nemo"
"""The one profile here whose optimizer is Apex's DistributedFusedAdam (feature
``apex_distributed_adam``), the optimizer whose ``dtype`` a run's ``optimizer_dtype`` sets: NeMo's
launcher recipes, Megatron-core's model and parallelism with Apex's optimizer
(NVIDIA/NeMo@v2.0.0 nemo/collections/nlp/models/language_modeling/megatron_base_model.py
L790-812, nemo.yaml 24.07), tried last by :func:`fallback_order` at the newest of its entries
that runs that optimizer (its 25.02 entry on moved to Megatron-core's own)."""


def fallback_order(first: str) -> tuple[tuple[str, str], ...]:
    """(profile, version: '' for its newest entry) in the order a run on a framework with no
    profile here is tried, the first whose configuration checks accept the run predicting it:
    ``first`` (:func:`fallback_framework`'s choice), then the other ``FALLBACK_PROFILES`` in
    their order (sharded, sdpa, unsharded), each at its newest entry, then ``APEX_ADAM_PROFILE``
    at its newest entry whose optimizer is Apex's DistributedFusedAdam."""
    from trainsim.catalog.frameworks import framework_entries, framework_profile

    order = [(first, "")] + [(p, "") for p in dict.fromkeys(FALLBACK_PROFILES.values())
                             if p != first]
    apex = [v for v in framework_entries(APEX_ADAM_PROFILE)
            if framework_profile(APEX_ADAM_PROFILE, v).supports("apex_distributed_adam")]
    if apex:
        order.append((APEX_ADAM_PROFILE, apex[-1]))
    return tuple(order)
