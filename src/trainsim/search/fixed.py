"""A search space narrowed by the parallel fields a user fixed with ``--set``/``--fix``:
each fixed field becomes the only value of its dimension, and a fixed value the given ranges
cannot run (a schedule, vpp or layout with only pp 1, sequence parallelism with only tp 1, a
recompute the ``--recompute`` list leaves out) is refused in one line."""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING

from trainsim.config.parallel import schedule_name
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.search.rules import MEGATRON_1F1B, refuse_pipeline_fields, zeros_fit

if TYPE_CHECKING:
    from trainsim.search.candidate import Base
    from trainsim.search.space import SearchSpace


def narrowed(space: SearchSpace, fixed: tuple[tuple[str, object], ...]) -> SearchSpace:
    """``space`` with the dimensions the ``fixed`` parallel fields name narrowed to their
    values (ConfigError when the space already lists other values for one)."""
    from trainsim.search.space import OVERLAP_SWITCHES

    f = dict(fixed)
    dims = {"tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
            "context_parallel_size": "cp", "virtual_pipeline_model_parallel_size": "vpp",
            "expert_model_parallel_size": "ep", "expert_tensor_parallel_size": "etp",
            "moe_token_dispatcher_type": "dispatcher", "pipeline_schedule": "schedules",
            "recompute": "recompute", "sequence_parallel": "sequence_parallel"}
    out = space
    for name, dim in dims.items():
        if name not in f or f[name] is None:
            continue
        value = shown = f[name]
        if dim == "schedules":
            out = dataclasses.replace(out, fixed_schedule=schedule_name(str(value)))
            value = "" if out.fixed_schedule in MEGATRON_1F1B else out.fixed_schedule
            shown = out.fixed_schedule
        have = getattr(space, dim)
        if have is not None and dim not in ("recompute", "sequence_parallel") \
                and tuple(have) != (value,):
            listed = [_schedule_shown(h) for h in have] if dim == "schedules" else list(have)
            raise ConfigError(f"parallel.{name}={shown} is fixed (--set) but the search "
                              f"was also given {dim}={listed}; give one of them")
        if dim == "recompute" and value not in space.recompute:  # --recompute lists all
            # three unless given: one that leaves out the fixed value contradicts it
            raise ConfigError(f"parallel.recompute={value} is fixed (--set) but the search "
                              f"was also given --recompute {','.join(space.recompute)}; "
                              "give one of them")
        out = dataclasses.replace(out, **{dim: (value,)})
    levels = recompute_levels(f)
    if levels and f.get("recompute") is None:
        out = _recompute_narrowed(out, f, levels)
    if "zero_stage" in f or "distributed_optimizer" in f:
        z = int(f.get("zero_stage") or 0)
        out = dataclasses.replace(out, zero=(1 if z == 0 and f.get("distributed_optimizer")
                                             else z,))
    if out.fixed_schedule is not None and out.pp is not None and set(out.pp) == {1}:
        raise ConfigError(f"parallel.pipeline_schedule={out.fixed_schedule} is fixed (--set) "
                          "but the search was given pp=[1], where no pipeline runs it; "
                          "give --pp above 1")
    if out.pp is not None and set(out.pp) == {1}:
        refuse_pipeline_fields(f)
        if space.schedules is not None:  # as a fixed schedule (robust56: answered in silence)
            raise ConfigError(f"--schedules {','.join(map(_schedule_shown, space.schedules))}: "
                              "the search was given pp=[1], where no pipeline runs a "
                              "schedule; give --pp above 1, or leave --schedules out")
    if f.get("sequence_parallel") and out.tp is not None and set(out.tp) == {1}:
        raise ConfigError("parallel.sequence_parallel=true is fixed (--set) but the search "
                          "was given tp=[1], where no tensor-parallel group splits the "
                          "sequence; give --tp above 1")
    pinned = tuple((k, bool(f[k])) for k in OVERLAP_SWITCHES if f.get(k) is not None)
    if pinned:  # a candidate's switches are its own fields (Candidate.to_config)
        out = dataclasses.replace(out, pinned=pinned)
    return out


RECOMPUTE_BOUND = {"recompute_modules": ("selective",), "recompute_num_layers": ("full",),
                   "remat_policy": ("selective", "full")}
"""Parallel fields that need a recompute level (``ParallelConfig``: Megatron's
--recompute-modules with selective, --recompute-num-layers with full, a JAX remat policy with
either), which the search sets per candidate."""


def recompute_levels(fixed: dict[str, object]) -> tuple[str, ...]:
    """The recompute levels every recompute-bound field of ``fixed`` allows (all three when
    none is fixed: ())."""
    given = [levels for name, levels in RECOMPUTE_BOUND.items()
             if fixed.get(name) not in (None, "")]
    return tuple(x for x in ("selective", "full") if all(x in g for g in given)) if given else ()


def _recompute_narrowed(space: SearchSpace, f: dict[str, object], levels: tuple[str, ...]
                        ) -> SearchSpace:
    """``space`` trying only the recompute ``levels`` the fixed fields of ``f`` allow
    (robust61: the search refused --set parallel.recompute_modules with "needs
    recompute=selective" whatever --recompute said; recompute_num_layers, remat_policy too)."""
    names = [n for n in RECOMPUTE_BOUND if f.get(n) not in (None, "")]
    kept = tuple(r for r in space.recompute if r in levels)
    if not kept:
        need = " or ".join(levels) or "one level for all of them"
        raise ConfigError(f"parallel.{', '.join(names)} is fixed (--set) and needs recompute="
                          f"{need}, but the search was given --recompute "
                          f"{','.join(space.recompute)}; add {levels[0] if levels else 'it'} "
                          "to --recompute")
    return dataclasses.replace(space, recompute=kept)


def _schedule_shown(name: str) -> str:
    """A schedule of the search space as the user names it ('' is Megatron's 1F1B)."""
    return name or "1f1b"


def _run_stages(base: Base) -> dict[int, str]:
    """Every ZeRO stage the run runs, with its engine: its framework's (``catalog.defaults.
    stage_engines``), without one the engine's own (``config.validity.zero_stages``)."""
    from trainsim.config.validity import zero_stages

    if base.framework:
        from trainsim.catalog.defaults import stage_engines
        from trainsim.catalog.frameworks import framework_profile

        by = stage_engines(framework_profile(*base.framework), base.framework[1])
    else:
        engine = base.data_parallel_impl or "megatron"
        by = {s: engine for s in zero_stages(engine)}
    if base.lacks("distributed_optimizer") and not base.zero1_as_stage:
        by.pop(1, None)
    return by


def _sharding_stages(base: Base) -> str:
    """The stages > 0 of :func:`_run_stages` as 'S, S (engine)'; empty where it shards at none."""
    engines: dict[str, list[int]] = {}
    for s, e in _run_stages(base).items():
        if s > 0:
            engines.setdefault(str(e), []).append(s)
    return "; ".join(f"{', '.join(map(str, ss))} ({e})" for e, ss in engines.items())


def sharded_for_replicas(space: SearchSpace, base: Base) -> SearchSpace:
    """``space`` with only the sharded optimizer stages where ``dp_replicate`` > 1 is fixed and
    no stage is: every HSDP form shards within a replica (FSDP's HYBRID_SHARD and
    _HYBRID_SHARD_ZERO2, Megatron's instances of its distributed optimizer; ``ParallelConfig``
    refuses an unsharded state with replicas), so the search tries the sharded stages the run's
    engine runs (``rules.zeros_fit``) and says so in one ``warning:`` line; where the engine
    runs none (torch DDP), the refusal names the stages the framework shards at."""
    f = dict(base.fixed)
    replicas = f.get("dp_replicate") or 1
    if not isinstance(replicas, int) or replicas <= 1 or "zero_stage" in f or \
            "distributed_optimizer" in f:
        return space
    impl = base.data_parallel_impl
    runs = base.zero_runs
    tried = tuple(z for z in zeros_fit(space.zero, impl, 1, base.model.is_moe)
                  if runs is None or z in runs)
    sharded = tuple(z for z in tried if z > 0)
    if base.lacks("distributed_optimizer") and not base.zero1_as_stage:
        sharded = tuple(z for z in sharded if z != 1)
    engine = impl or "megatron"
    asked = space.zero if space.zero is not None else (0, 1, 2, 3)  # None: --zero not given
    given = ", ".join(map(str, asked))
    if not sharded:
        where = _sharding_stages(base)
        raise ConfigError(
            f"--set parallel.dp_replicate={replicas} needs a sharded state (HSDP shards within "
            f"each replica) but the ZeRO stages searched ({given}) run none under "
            f"{base.training.framework or engine}, which shards at "
            f"{where or 'no stage'}; search one of those (--zero) or fix one with "
            "--set parallel.zero_stage=N")
    if sharded != asked:  # one line: the engine the search runs and the stages it tries
        from trainsim.search.rules import profile_value

        t = base.training
        default = profile_value(t.framework, t.framework_version, "data_parallel_impl") \
            if t.framework else None
        runs_any = _run_stages(base)  # the stages left out that the framework runs at all
        dropped = ", ".join(str(z) for z in asked if z not in sharded and z in runs_any)
        switched = bool(default) and default != engine
        how = (f" and {t.framework}'s {default} shards within no replica, so the search runs "
               f"its {engine} engine at stages" if switched
               else f", so the search tries {engine}'s sharded stages")
        warnings.warn(f"--set parallel.dp_replicate={replicas}: HSDP shards within each replica"
                      f"{how} {', '.join(map(str, sharded))}"
                      + (f" only (not {dropped})" if dropped else ""), TrainsimWarning, stacklevel=2)
    return dataclasses.replace(space, zero=sharded)
