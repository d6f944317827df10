"""The vocabulary of a framework profile's values and the validators of single values
(``catalog.framework_schema`` maps each ``features`` / ``defaults`` key to one of them).

Each validator returns None for a good value, else one phrase saying what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from trainsim.config.parallel import (
    DATA_PARALLEL_IMPLS,
)

# ---------------------------------------------------------------------------- vocabulary

#: attention implementations. ``triton``: a FlashAttention-style kernel written in Triton
#: (llm-foundry's ``attn_impl: triton``); ``flex``: PyTorch FlexAttention (torch.compile-generated);
#: ``mem_efficient``: xFormers' memory-efficient kernels, as PyTorch SDPA's EFFICIENT_ATTENTION
#: backend runs them; ``ck``: Transformer Engine's fused attention on ROCm (Composable Kernel)
#: (``workload.ops.AttentionImpl``).
ATTENTION = ("unfused", "eager", "flash1", "flash2", "flash3", "flash4", "cudnn", "sdpa", "triton",
             "flex", "mem_efficient", "ck")
TRAINING_DTYPES = ("fp16", "bf16", "fp8")
REDUCE_DTYPES = ("fp32", "bf16", "fp16")
FP8_RECIPES = ("delayed", "current", "blockwise", "mxfp8", "nvfp4")
MOE_DISPATCHERS = ("alltoall", "allgather", "deepep", "hybridep")
UNEVEN_PIPELINE = ("none", "first_last", "layout", "deepspeed_partition", "front_loaded")
TP_BACKWARD_ALLREDUCE = ("async", "blocking")
#: a transformer layer's dense linears by role: the QKV projection, the attention output
#: projection, the MLP's first (fc1; gate and up) and second (fc2) linear
LINEAR_ROLES = ("qkv", "proj", "fc1", "fc2")


GROUPED_GEMM = ("multi_stream", "loop", "cutlass", "triton", "deepgemm")
"""The experts' GEMM kernels a profile's ``grouped_gemm`` names (``workload.ops``)."""
MOE_EXPERTS = ("torchtitan_scatter_add", "torchtitan_index_put", "torchtitan_sorted")
"""The MoE layers of its own a profile's ``moe_experts`` names (``workload.moe_titan.STYLES``);
absent, Megatron-core's (``workload.moe_block``)."""

_ARCH = re.compile(r"^(sm\d{2,3}|amd)$")
"""A key of ``attention_by_arch`` / ``sdpa_by_arch``: an NVIDIA compute capability (``sm80``,
from it up to the next key) or ``amd``, every AMD GPU (``catalog.defaults.gpu_arch``)."""


def _nullable(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda v: None if v is None else check(v)


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "expected true, false or null"


def _enum(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda v: None if v in choices else f"{v!r} is not one of {list(choices)}"


def _int(v: Any) -> str | None:
    ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
    return None if ok else "expected a non-negative integer or null"


def _prob(v: Any) -> str | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0
    return None if ok else "expected a probability in [0, 1] or null"


def _str(v: Any) -> str | None:
    return None if isinstance(v, str) and v.strip() else "expected a non-empty string or null"


def _release(v: Any) -> str | None:
    """A library release as ``MAJOR.MINOR`` or ``MAJOR.MINOR.PATCH`` (``"2.12"``)."""
    ok = isinstance(v, str) and re.fullmatch(r"\d+\.\d+(\.\d+)?", v) is not None
    return None if ok else "expected a quoted release such as \"2.12\" or null"


def _list_of(choices: tuple[str, ...], what: str) -> Callable[[Any], str | None]:
    """A validator of a non-empty list of ``choices`` (``what`` names them in the message)."""
    def check(v: Any) -> str | None:
        if not isinstance(v, list) or not v:
            return f"expected a non-empty list of {what} or null"
        bad = [x for x in v if x not in choices]
        return f"{bad} not in {list(choices)}" if bad else None
    return check


def _backend_gpus(v: Any) -> str | None:
    """A checker of ``flex_backend_gpus``: {deepep or hybridep: [GPU name or ccN, ...]}."""
    if not isinstance(v, dict):
        return "expected a mapping {flex backend: [catalog GPU name or ccN]}"
    for k, x in v.items():
        if k not in ("deepep", "hybridep"):
            return f"key {k!r} is not a flex dispatcher backend (deepep, hybridep)"
        if not isinstance(x, list) or not x or not all(isinstance(g, str) for g in x):
            return f"{k}: expected a non-empty list of GPU names or compute capabilities"
    return None


#: run options (``validate`` options column) a profile's ``moe_recipe_options`` may name
RECIPE_OPTIONS = ("ep_overlap", "cuda_graphs", "tp_overlap", "pp_overlap", "dp_overlap")
#: the systems a profile's ``moe_recipe_options`` may single out, by the run's NVLink domain
#: (``cluster.gpus_per_node``): ``any`` every run; ``rack`` an NVLink domain larger than one
#: 8-GPU board, i.e. a multi-node NVLink rack (GB200/GB300 NVL72), whose performance recipes
#: keep the expert all-to-all inside NVLink
NVLINK_SCOPES = {"any": 0, "rack": 8}
"""scope -> the NVLink domain size (GPUs) a run's must exceed for the scope to apply"""


def _deferral_rule(v: Any) -> str | None:
    """``{max_local_batch: N, micro_batch_size: M}``, both positive integers."""
    keys = ("max_local_batch", "micro_batch_size")
    if not isinstance(v, dict) or set(v) != set(keys) or any(
            not isinstance(v[k], int) or isinstance(v[k], bool) or v[k] < 1 for k in keys):
        return "expected {max_local_batch: N, micro_batch_size: M} (positive integers) or null"
    return None


def _roles(v: Any) -> str | None:
    """A possibly empty list of ``LINEAR_ROLES`` (empty: a later entry turning them all off)."""
    if not isinstance(v, list) or any(x not in LINEAR_ROLES for x in v):
        return f"expected a list of {list(LINEAR_ROLES)} (possibly empty) or null"
    return None


def _recipe_options(v: Any) -> str | None:
    if not isinstance(v, dict):
        return "expected a mapping {nvlink scope: {fp8 recipe or dtype: [options]}}"
    for scope, by_recipe in v.items():
        if scope not in NVLINK_SCOPES:
            return f"{scope!r} is not one of {list(NVLINK_SCOPES)} (a system, never a GPU name)"
        if not isinstance(by_recipe, dict):
            return f"{scope}: expected a mapping {{fp8 recipe or dtype: [options]}}"
        kinds = FP8_RECIPES + TRAINING_DTYPES
        for recipe, options in by_recipe.items():
            if recipe not in kinds:
                return f"{scope}: {recipe!r} is not one of {list(kinds)}"
            bad = [o for o in options or () if o not in RECIPE_OPTIONS]
            if not isinstance(options, list) or bad:
                return f"{scope}.{recipe}: expected a list of {list(RECIPE_OPTIONS)}"
    return None


def _option_list(v: Any) -> str | None:
    if not isinstance(v, list):
        return f"expected a list of {list(RECIPE_OPTIONS)}, got {v!r}"
    bad = [o for o in v if o not in RECIPE_OPTIONS]
    if bad:
        return f"{bad[0]!r} is not an option switch; expected a list of {list(RECIPE_OPTIONS)}"
    if len(set(v)) != len(v):
        return f"an option listed twice in {v}"
    return None


#: the profile feature each option switch needs at a version (none recorded for ep_overlap)
OPTION_FEATURES = {"dp_overlap": "overlap_grad_reduce", "tp_overlap": "tp_comm_overlap",
                   "pp_overlap": "p2p_overlap", "cuda_graphs": "cuda_graphs", "ep_overlap": None}


def tuned_options_problem(features: dict[str, Any], defaults: dict[str, Any]) -> str | None:
    """Why a profile entry's ``tuned_options`` (switches its users chose, tried both ways for a
    row that states no options) cannot stand, or None: each one's feature must not be false
    at that version (a switch the release lacks is no choice), and none may also be in
    ``run_options`` (a switch the framework always turns on is no choice either)."""
    tuned = defaults.get("tuned_options") or ()
    for option in tuned:
        feature = OPTION_FEATURES[option]
        if feature is not None and features.get(feature) is False:
            return f"{option} needs features.{feature}, which is false at this version"
    both = sorted(set(tuned) & set(defaults.get("run_options") or ()))
    if both:
        return f"{both[0]} is in run_options too (always on): list it in one of them"
    return None


def _grad_reduce(v: Any) -> str | None:
    if not isinstance(v, dict):
        return "expected a mapping {fp16: ..., bf16: ..., fp8: ...}"
    for k, x in v.items():
        if k not in TRAINING_DTYPES:
            return f"training dtype {k!r} is not one of {list(TRAINING_DTYPES)}"
        if x is not None and x not in REDUCE_DTYPES:
            return f"{k}: {x!r} is not one of {list(REDUCE_DTYPES)} or null"
    return None


def _bool_by_recipe(v: Any) -> str | None:
    """A flag, or a mapping {fp8 recipe: flag} where the framework's recipes set it per recipe."""
    if isinstance(v, bool):
        return None
    if not isinstance(v, dict):
        return "expected true, false, null or a mapping {fp8 recipe: true/false}"
    for k, x in v.items():
        if k not in FP8_RECIPES:
            return f"fp8 recipe {k!r} is not one of {list(FP8_RECIPES)}"
        if not isinstance(x, bool):
            return f"{k}: expected true or false"
    return None


def _by_arch_of(values: Any, what: str) -> Callable[[Any], str | None]:
    """A checker of a {smNN or amd: value} mapping whose values lie in ``values``."""
    def check(v: Any) -> str | None:
        if not isinstance(v, dict):
            return f"expected a mapping {{smNN or amd: {what}}}"
        for k, x in v.items():
            if not (isinstance(k, str) and _ARCH.match(k)):
                return f"key {k!r} is not a compute capability like 'sm80' (or amd)"
            if x not in values:
                return f"{k}: {x!r} is not one of {list(values)}"
        return None
    return check


def _zero_engines(v: Any) -> str | None:
    if not isinstance(v, dict):
        return "expected a mapping {zero stage: data-parallel engine}"
    for k, x in v.items():
        if k not in ("0", "1", "2", "3"):
            return f"key {k!r} is not a ZeRO stage '0' to '3'"
        if x not in DATA_PARALLEL_IMPLS:
            return f"{k}: {x!r} is not one of {list(DATA_PARALLEL_IMPLS)}"
    return None


def _stages(v: Any) -> str | None:
    if not isinstance(v, list) or not v or \
            any(isinstance(x, bool) or x not in (0, 1, 2, 3) for x in v):
        return "expected a non-empty list of ZeRO stages 0 to 3"
    return None


def _by_stage(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """``check``'s value, or a mapping {ZeRO stage '0' to '3': such a value}."""
    def by_stage(v: Any) -> str | None:
        if not isinstance(v, dict):
            return check(v)
        for k, x in v.items():
            if k not in ("0", "1", "2", "3"):
                return f"key {k!r} is not a ZeRO stage '0' to '3'"
            problem = check(x)
            if problem:
                return f"{k}: {problem}"
        return None
    return by_stage


def _bool_or_stages(v: Any) -> str | None:
    return None if isinstance(v, bool) or v == [] else _stages(v)


def _stage_releases(v: Any) -> str | None:
    if not isinstance(v, dict):
        return "expected a mapping {zero stage: first release that runs it}"
    for k, x in v.items():
        if k not in ("1", "2", "3"):
            return f"key {k!r} is not a ZeRO stage '1' to '3'"
        if not isinstance(x, str) or not x.strip():
            return f"{k}: {x!r} is not a release"
    return None
