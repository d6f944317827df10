"""What the frameworks refuse, as the search skips it: each rule is one that ``RunConfig``
raises on (its source cited there), applied to a memory group's sizes before a config is built,
so the enumeration never yields a layout only to have it refused, and a fixed ``--set`` field
that no candidate could pass is refused in one line (``search.cli_inputs._check_fixed``).
"""

from __future__ import annotations

import functools
import math

from trainsim.catalog.frameworks import framework_profile
from trainsim.config import ModelConfig
from trainsim.config.validity import dispatcher_fits, kv_heads_fit, zero_stages
from trainsim.errors import ConfigError


def profile_value(framework: object, version: object, key: str) -> object:
    """The profile's default or feature ``key`` (None without a framework; a list as a tuple),
    read once per search: what ``search.space.Base`` takes where no ``--set`` fixes it. The
    names read as the config loader reads them (``catalog.defaults.apply_framework``): as
    text; a mapping or a list from ``--set`` was an "unhashable type" here (robust55)."""
    if not framework:
        return None
    given = version is not None and str(version).strip()
    return _profile_value(str(framework), str(version) if given else None, key)


@functools.cache
def _profile_value(framework: str, version: str | None, key: str) -> object:
    profile = framework_profile(framework, version)
    value = profile.defaults.get(key, profile.features.get(key))
    return tuple(value) if isinstance(value, list) else value


def softcap_cp_fits(m: ModelConfig, framework: str | None, version: str | None,
                    cp: int) -> bool:
    """Whether a model with attention-logit soft-capping takes context parallelism ``cp`` on
    its framework (:func:`softcap_cp_refusal` says no reason)."""
    return cp == 1 or m.attn_logit_softcapping is None or \
        softcap_cp_refusal(m.attn_logit_softcapping, framework, version, cp) is None


@functools.cache
def softcap_cp_refusal(softcap: float | None, framework: str | None, version: str | None,
                       cp: object) -> str | None:
    """Why the config loader refuses context parallelism ``cp`` for a model with
    attention-logit soft-capping ``softcap`` on its framework (None where it takes it): one
    whose profile runs such a model on its own soft-capping attention (feature
    ``softcap_attention``: Megatron-Bridge's and NeMo's Gemma 2 layer spec, whose
    Gemma2DotProductAttention asserts ``context_parallel_size == 1``) takes cp 1 only. The
    loader's own rule and message (``catalog.defaults.softcap_attention``, sources cited
    there), asked once per (soft-cap, framework, version, cp)."""
    from trainsim.catalog.defaults import softcap_attention

    training: dict[str, object] = {"framework": framework, "framework_version": version}
    try:
        softcap_attention(training, softcap, False, cp)
    except ConfigError as exc:
        return str(exc)
    return None


def tp_fits(m: ModelConfig, tp: int, split: bool) -> bool:
    """Whether ``tp`` divides the attention heads and the FFN and can hold the KV heads."""
    return not (m.num_attention_heads % tp or m.ffn_size % tp) and kv_heads_fit(m.kv_heads, tp,
                                                                                 split)


def zeros_fit(zeros: tuple[int, ...] | None, data_parallel_impl: object, pp: int,
              moe: bool = False) -> tuple[int, ...]:
    """The optimizer shardings of ``zeros`` (None: the search's default) that the engine runs
    (``config.validity.ZERO_STAGES``: plain DDP 0 and 1, FSDP 2 and 3, Megatron 0, 1 and 3) with
    ``pp`` stages: DeepSpeed's pipeline engine takes ZeRO 0-1 only (``config.parallel``:
    PipelineEngine asserts stage < 2). The default is every stage the engine runs, for an MoE
    model stage 1 alone where the engine has it as a distributed optimizer (not DDP's
    ZeroRedundancyOptimizer: a plain loop's MoE model tries every stage)."""
    allowed = zero_stages(data_parallel_impl)
    if data_parallel_impl == "deepspeed" and pp > 1:
        allowed = tuple(z for z in allowed if z < 2)
    if zeros is None:
        zeros = (1,) if moe and 1 in allowed and data_parallel_impl != "ddp" else allowed
    return tuple(z for z in dict.fromkeys(zeros) if z in allowed)


def unsharded_zero(data_parallel_impl: object) -> int:
    """The stage a run on one data-parallel rank is built with: the engine's least (FSDP's is
    2, parameters kept gathered, as one rank holds them; the others' 0)."""
    return min(zero_stages(data_parallel_impl))


def schedules_fit(names: tuple[str, ...], pp: int, vpp: int, n_micro: int) -> tuple[str, ...]:
    """The pipeline schedules of ``names`` ("" = Megatron's 1F1B, interleaved when vpp > 1)
    that run ``vpp`` chunks per rank on ``pp`` stages with ``n_micro`` micro-batches: the V
    schedules two chunks, interleaved zero-bubble more than one, looped BFS any, the others one
    (``config.parallel_checks.check_schedule``), interleaved zero-bubble on a
    multiple of its ``max(1, m // pp)`` rounds (``pipeline_schedules.interleaved_zb``);
    DualPipe one chunk, an even pp and an even number of micro-batches, at least 2 pp
    (deepseek-ai/DualPipe dualpipe.py ``step``: ``num_chunks >= num_ranks * 2``,
    ``num_chunks % 2 == 0``)."""
    out = []
    for name in names:
        if name in ("zb_v", "dualpipe_v") and vpp != 2:
            continue
        if name == "dualpipe" and (vpp > 1 or pp % 2 or n_micro < 2 * pp or n_micro % 2):
            continue
        if name not in ("", "zb_v", "dualpipe_v", "interleaved_zb", "looped_bfs") and vpp > 1:
            continue
        if name == "interleaved_zb" and (vpp == 1 or n_micro % max(1, n_micro // pp)):
            continue  # torch's rounds (max(1, m // pp)) must divide m
        out.append(name)
    return tuple(out)


def divisors(n: int, upto: int | None = None) -> list[int]:
    """Divisors of ``n`` in increasing order (those <= ``upto``), in O(sqrt n) steps or fewer."""
    if upto is not None and upto * upto <= n:
        return [d for d in range(1, upto + 1) if n % d == 0]
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n and (upto is None or
                                                                         n // d <= upto)]


DEFAULT_MAX_VPP = 8
"""The most model chunks per rank :func:`stage_interleavings` offers where no framework rule asks
for more (the search's --max-vpp default before the rule; the validator's short list ends at 8)."""


def stage_interleavings(per_stage: int, overlap_interleaves: bool,
                        cap: int | None = None) -> list[int]:
    """The counts of model chunks per rank (vpp) that Megatron's interleaved 1F1B runs on a
    pipeline stage of ``per_stage`` layers, 1 (not interleaved) first: every divisor of
    ``per_stage`` (NVIDIA/Megatron-LM megatron/training/arguments.py at core_v0.8.0,
    ``validate_args`` lines 254-270, asks only that --num-layers-per-virtual-pipeline-stage
    divide the layers per stage) up to ``cap``. ``cap`` None is the framework's rule: where the
    run may overlap its pipeline sends and its framework overlaps them only when interleaved
    (``overlap_interleaves``: profile ``p2p_overlap_interleaved_only``; lines 271-277 turn
    overlap_p2p_comm off without a virtual stage size), every divisor, since 23 layers a stage
    overlap only as vpp 23; else those up to :data:`DEFAULT_MAX_VPP`. `trainsim search`
    enumerates these; `trainsim validate`'s tuner takes those above 1 for a row stating
    pp_overlap (``validate.row_settings.interleavings``)."""
    if cap is None and not overlap_interleaves:
        cap = DEFAULT_MAX_VPP
    return divisors(per_stage, cap)


def powers_of_two(n: int) -> list[int]:
    """The powers of two that divide ``n``."""
    return [1 << k for k in range(n.bit_length()) if n % (1 << k) == 0]


MEGATRON_1F1B = ("1f1b", "interleaved_1f1b")
"""The schedules a candidate names "" (Megatron's 1F1B, interleaved when vpp > 1)."""


def chunks_fit(schedule: str, vpp: int) -> bool:
    """Whether a schedule fixed by name runs ``vpp`` chunks per rank where a candidate's
    schedule does not say so itself: 1F1B one, interleaved 1F1B more (Megatron-core picks
    between them by vpp; ``config.parallel`` refuses the other); the rest by
    :func:`schedules_fit`."""
    if schedule in MEGATRON_1F1B:
        return (vpp > 1) == (schedule == "interleaved_1f1b")
    return True


__all__ = [
    "DEFAULT_MAX_VPP",
    "MEGATRON_1F1B",
    "chunks_fit",
    "dispatcher_fits",
    "divisors",
    "kv_heads_fit",
    "powers_of_two",
    "profile_value",
    "schedules_fit",
    "softcap_cp_fits",
    "softcap_cp_refusal",
    "stage_interleavings",
    "tp_fits",
    "unsharded_zero",
    "zeros_fit",
]


def refuse_pipeline_fields(f: dict) -> None:
    """A fixed (--set) field that splits the layers over pipeline stages, refused in one line
    when the search was given pp=[1] only: every candidate would be invalid, reported as the
    generic "no parallel configuration is valid"."""
    vpp = f.get("virtual_pipeline_model_parallel_size")
    if isinstance(vpp, int) and vpp > 1:
        given = f"parallel.virtual_pipeline_model_parallel_size={vpp}"
    elif f.get("decoder_first_pipeline_num_layers") is not None or \
            f.get("decoder_last_pipeline_num_layers") is not None:
        given = "parallel.pipeline_model_parallel_layout=" + ",".join(
            f"{end}:{f[k]}" for end, k in (("first", "decoder_first_pipeline_num_layers"),
                                           ("last", "decoder_last_pipeline_num_layers"))
            if f.get(k) is not None)
    else:
        return
    raise ConfigError(f"{given} is fixed (--set) but the search was given pp=[1], where no "
                      "pipeline splits the layers; give --pp above 1")
