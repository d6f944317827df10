"""JAX remat policies by name (``parallel.remat_policy``): which named values ``jax.checkpoint``
keeps of a decoder layer, as MaxText's ``remat_policy`` and Paxml's ``CHECKPOINT_POLICY`` name
them. Pure data; ``workload.remat_policy`` turns the kept names into the ops a layer re-runs and
the bytes it keeps.

MaxText (AI-Hypercomputer/maxtext@8e55ab1aa19c7f02a0a9b089ba9dfd4f98140be3, 2024-12-09)
``MaxText/layers/models.py`` L302-366: ``minimal`` is ``checkpoint_dots_with_no_batch_dims``, the
``save_*`` policies ``save_only_these_names(...)`` over the names the layers set with
``checkpoint_name``, ``custom`` ``save_and_offload_only_these_names`` with the tensors the run
puts on ``device``, ``full`` no policy (nothing saved); ``qkv_proj_offloaded`` and
``minimal_offloaded`` move values to host memory, which is not modelled. The names:
``layers/attentions.py`` L1188 ``qkv_proj`` (fused_qkv, before RoPE), L1279-1281
``query_proj`` / ``key_proj`` / ``value_proj`` (after RoPE), L1315 ``out_proj``;
``layers/linears.py`` L245 ``mlpwi`` (fused_mlp), L263 ``mlpwi_0`` / ``mlpwi_1`` (``'mlp' +
dense_name``: ``wi`` alone for one activation), L288 ``mlpwo``. No ``context`` name is set at
that commit.

Paxml on Praxis (google/praxis@2b59deaad0525c934f64384a033a576f53614232
``praxis/layers/checkpoint_policy.py`` L23-117 ``AutodiffCheckpointType`` and ``custom_policy``):
``save_nothing`` (no policy), ``save_everything`` (``everything_saveable``), ``save_dot_only``
(``checkpoint_dots``), ``save_dot_with_no_batch_dims``, and ``save_only_these_names`` lists; under
Transformer Engine's JAX layers (ENABLE_TE=1) the projections are named ``combined_qkv_proj`` and
``out_proj`` (NVIDIA/TransformerEngine@b0f65354 transformer_engine/jax/flax/transformer.py L902,
L1110).
"""

from __future__ import annotations

import re

from trainsim.errors import ConfigError

DOTS = "*dots"
"""Every matmul's output (``checkpoint_dots``; the layer's linears, which have no batch
dimension, under ``checkpoint_dots_with_no_batch_dims`` too): the projections' outputs before
RoPE, no attention output (a fused attention is a custom call)."""
EVERYTHING = "*everything"
"""Every value (``everything_saveable``): nothing re-runs."""

REMAT_POLICIES: dict[str, tuple[str, ...]] = {
    # MaxText models.py L302-366
    "full": (),
    "minimal": (DOTS,),
    "save_dot_with_context_except_mlp": ("query_proj", "value_proj", "key_proj", "qkv_proj",
                                         "context", "out_proj"),
    "save_dot_except_mlpwi": ("query_proj", "value_proj", "key_proj", "qkv_proj", "out_proj",
                              "mlpwo"),
    "save_dot_except_mlp": ("query_proj", "value_proj", "key_proj", "qkv_proj", "out_proj"),
    "save_qkv_proj": ("query_proj", "value_proj", "key_proj", "qkv_proj"),
    "save_out_proj": ("out_proj",),
    "minimal_flash": (DOTS, "context"),
    # Praxis checkpoint_policy.py custom_policy
    "save_nothing": (),
    "save_everything": (EVERYTHING,),
    "save_dot_only": (DOTS,),
    "save_dot_with_no_batch_dims": (DOTS,),
    "save_qkv_out_proj": ("combined_qkv_proj", "out_proj"),
    "save_qkv_out_proj_separate": ("query_proj", "value_proj", "key_proj", "out_proj"),
    "save_context": ("context",),
    "save_encoded_and_out_proj": ("context", "out_proj"),
    "save_dot_for_mlperf_200b": ("combined_qkv_proj", "query_proj", "value_proj", "key_proj",
                                 "context", "out_proj"),
}
"""Policy name -> the checkpoint names it keeps (``DOTS``, ``EVERYTHING``: the two
name-free policies)."""

CHECKPOINT_NAMES = frozenset({"query_proj", "key_proj", "value_proj", "qkv_proj",
                              "combined_qkv_proj", "out_proj", "context", "mlpwi", "mlpwi_0",
                              "mlpwi_1", "mlpwo"})
"""The names a ``custom:`` policy may keep (MaxText's decoder-layer ``checkpoint_name`` calls,
TE-JAX's ``combined_qkv_proj``)."""

OFFLOADED = ("qkv_proj_offloaded", "minimal_offloaded")


def remat_policy_names(policy: str) -> tuple[str, ...]:
    """The checkpoint names ``policy`` keeps: a name of :data:`REMAT_POLICIES`, or
    ``custom:<name>;<name>...`` (MaxText's ``remat_policy=custom`` with those tensors on
    ``device``). ValueError with the reason for anything else."""
    if policy.startswith("custom:"):
        # the names as MaxText lists them, split on ';' or ',' (or a space: robust61,
        # 'custom: qkv_proj' was refused for its ' qkv_proj'), in lower case as the names are
        names = tuple(w.lower() for w in re.split(r"[;,\s]+", policy[len("custom:"):]) if w)
        bad = [w for w in names if w not in CHECKPOINT_NAMES]
        if bad:
            raise ValueError(f"custom remat policy: unknown checkpoint name '{bad[0]}'; known: "
                             f"{', '.join(sorted(CHECKPOINT_NAMES))}")
        return names
    if policy in OFFLOADED:
        raise ValueError(f"remat policy {policy} offloads to host memory, which is not "
                         "modelled; give a policy that keeps its values on the device")
    if policy not in REMAT_POLICIES:
        raise ValueError(f"unknown remat policy '{policy}'; known: "
                         f"{', '.join(REMAT_POLICIES)}, custom:<names>")
    return REMAT_POLICIES[policy]


def remat_policy_checked(policy: object, recompute: str, modules: object) -> str:
    """``parallel.remat_policy`` as ``ParallelConfig`` keeps it (a name in lower case, a
    ``custom:`` list as its names, `;`-separated), or a ConfigError: an unknown name, recompute off, or a
    Megatron-core module list beside it."""
    if not isinstance(policy, str):
        raise ConfigError(f"parallel.remat_policy: {policy!r} is not a policy name")
    policy = policy.strip()
    custom = policy[:7].lower() == "custom:"
    policy = "custom:" + policy[7:] if custom else policy.lower()
    try:
        names = remat_policy_names(policy)
    except ValueError as e:
        raise ConfigError(f"parallel.remat_policy: {e}") from None
    if custom:  # kept as the names read, ';'-separated (a resolved config reads back the same)
        policy = "custom:" + ";".join(names)
    if recompute == "none":
        raise ConfigError("parallel.remat_policy needs recompute=selective or full")
    if modules is not None:
        raise ConfigError("parallel.remat_policy and recompute_modules both given: a JAX remat "
                          "policy names what the layer keeps; drop recompute_modules")
    return policy
