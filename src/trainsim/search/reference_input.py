"""Two inputs of the search commands read against the fixed base (split from
``search.cli_inputs``, robust56): a ``--reference`` layout to compare with, and plan's
``--pue`` / ``--price`` beside a ``--set`` of the same field."""

from __future__ import annotations

import dataclasses
from typing import Any

from trainsim.errors import ConfigError


def parse_reference(text: str, base: Any, num_gpus: int):
    """'tp=8,pp=8,vpp=3,sp=1,recompute=selective,mb=1' -> a Candidate on ``num_gpus`` GPUs."""
    from trainsim.catalog.framework_rules import uneven_split
    from trainsim.config import ParallelConfig, RunConfig, as_written, build
    from trainsim.config._build import SYNONYMS, suggest
    from trainsim.config.parallel import ALIASES
    from trainsim.config.safe_load import parse_value
    from trainsim.config.validity import zero_stages
    from trainsim.search.candidate import Candidate, MemoryKey

    names = {"sp": "sequence_parallel", "zero": "zero_stage", "distopt": "distributed_optimizer",
             **ALIASES}
    parallel: dict[str, Any] = {}
    written: dict[str, str] = {}  # full field name -> as the user wrote it
    micro = 1
    for item in text.replace(";", ",").split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise ConfigError(f"--reference {item!r}: expected field=value")
        k, v = (s.strip() for s in item.split("=", 1))
        value = parse_value(v, f"--reference {k}")
        if names.get(k, k) in parallel or k in ("mb", "micro_batch_size") and "mb" in written:
            raise ConfigError(f"--reference {k}: given twice; give each field once")
        if k in ("mb", "micro_batch_size"):
            micro, written["mb"] = value, k
        else:
            parallel[names.get(k, k)] = value
            written[names.get(k, k)] = k
    searched = Candidate(MemoryKey(1, 1, 1, 1, 1, 1, "none", False, 0)).parallel_fields()
    dropped = sorted(k for k in parallel if k not in searched and k not in dict(base.fixed))
    if dropped:  # a Candidate carries only the searched fields: never drop one silently
        # the names it reads, with a near one for a name as Megatron's or torchtitan's flags
        # spell it (fuzz17: 'mbs' and 'schedule' were "not varied", micro-batch and schedule are)
        known = [*names, *searched, *dict(base.fixed), "mb", "micro_batch_size"]
        synonym = SYNONYMS["parallel"].get(written[dropped[0]])
        hint = (f" (did you mean '{synonym}'?)" if synonym in known else f" ({synonym})"
                if synonym else suggest(written[dropped[0]], known))
        raise ConfigError(f"--reference {', '.join(written[k] for k in dropped)}: not a field "
                          f"the search varies{hint}; fix it for every candidate with --set "
                          "parallel.FIELD=VALUE")
    parallel = {**dict(base.fixed), **parallel}
    stage = parallel.get("zero_stage")  # the candidates' engine (Candidate.to_config)
    engine = base.engine_for(stage) if isinstance(stage, int) else base.data_parallel_impl
    if engine and "data_parallel_impl" not in parallel:
        parallel["data_parallel_impl"] = engine
        if "zero_stage" not in parallel and "distributed_optimizer" not in parallel:
            parallel["zero_stage"] = min(zero_stages(engine))  # its lowest, as the search's
    placed = ("pipeline_model_parallel_layout", "decoder_first_pipeline_num_layers",
              "decoder_last_pipeline_num_layers")
    try:
        p = build(ParallelConfig, parallel, "--reference")
        rule = base.layout_rule
        if uneven_split(rule, base.model.num_layers, p.pp, p.vpp) and \
                not any(parallel.get(k) for k in placed):
            p = build(ParallelConfig, {**parallel, "pipeline_model_parallel_layout": rule},
                      "--reference")
        micro = build(type(base.training), {"micro_batch_size": micro},
                      "--reference").micro_batch_size
    except ConfigError as exc:  # '--reference tp=...' as written
        as_written(exc, {f"--reference.{full}": f"--reference {short}"
                         for full, short in written.items()} | {
                   "--reference.micro_batch_size": f"--reference {written.get('mb', 'mb')}"},
                   replace=True)
        raise
    training = dataclasses.replace(base.training, micro_batch_size=micro)
    try:
        cfg = RunConfig(base.model, p, training, base.cluster_for(num_gpus))
    except ConfigError as exc:  # 'parallel.tp=3 does not divide ...': the layout --reference gave
        raise ConfigError(f"--reference {text!r}: {exc}") from None
    return Candidate.from_config(cfg)


def check_plan_sets(overrides: list[str] | tuple[str, ...], pue: float | None,
                    price: float | None) -> None:
    """Refuse plan's ``--pue`` / ``--price`` beside a ``--set cluster.pue`` /
    ``cluster.price_per_gpu_hour`` of another value (robust51's lead 1: the option won in
    silence); equal values are one setting."""
    from trainsim.catalog import check_option_sets

    check_option_sets(overrides, {"cluster.pue": (f"--pue {pue:g}" if pue is not None else "", pue),
                                  "cluster.price_per_gpu_hour": (
                                      f"--price {price:g}" if price is not None else "", price)})


__all__ = ["check_plan_sets", "parse_reference"]
