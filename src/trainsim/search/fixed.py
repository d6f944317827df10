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
        value = f[name]
        if dim == "schedules":
            out = dataclasses.replace(out, fixed_schedule=schedule_name(str(value)))
            value = "" if out.fixed_schedule in MEGATRON_1F1B else out.fixed_schedule
        have = getattr(space, dim)
        if have is not None and dim not in ("recompute", "sequence_parallel") \
                and tuple(have) != (value,):
            raise ConfigError(f"parallel.{name}={value} is fixed (--set) but the search "
                              f"was also given {dim}={list(have)}; give one of them")
        if dim == "recompute" and value not in space.recompute:  # --recompute lists all
            # three unless given: one that leaves out the fixed value contradicts it
            raise ConfigError(f"parallel.recompute={value} is fixed (--set) but the search "
                              f"was also given --recompute {','.join(space.recompute)}; "
                              "give one of them")
        out = dataclasses.replace(out, **{dim: (value,)})
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
    if f.get("sequence_parallel") and out.tp is not None and set(out.tp) == {1}:
        raise ConfigError("parallel.sequence_parallel=true is fixed (--set) but the search "
                          "was given tp=[1], where no tensor-parallel group splits the "
                          "sequence; give --tp above 1")
    pinned = tuple((k, bool(f[k])) for k in OVERLAP_SWITCHES if f.get(k) is not None)
    if pinned:  # a candidate's switches are its own fields (Candidate.to_config)
        out = dataclasses.replace(out, pinned=pinned)
    return out


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
    tried = zeros_fit(space.zero, impl, 1, base.model.is_moe)
    sharded = tuple(z for z in tried if z > 0)
    if base.lacks("distributed_optimizer"):
        sharded = tuple(z for z in sharded if z != 1)
    engine = impl or "megatron"
    if not sharded:
        raise ConfigError(
            f"--set parallel.dp_replicate={replicas} needs a sharded state (HSDP shards within "
            f"each replica) but the search's stages {list(tried)} under {engine} shard none; "
            "fix one with --set parallel.zero_stage=N (a stage the framework shards at)")
    if sharded != tried:
        warnings.warn(f"--set parallel.dp_replicate={replicas}: HSDP shards within each replica,"
                      f" so the search tries {engine}'s sharded stages "
                      f"{', '.join(map(str, sharded))} only (not "
                      f"{', '.join(str(z) for z in tried if z not in sharded)})",
                      TrainsimWarning, stacklevel=2)
    return dataclasses.replace(space, zero=sharded)
