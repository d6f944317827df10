"""What the search commands (``search.cli``) and the service's search jobs read, before any
candidate is costed: comma-separated sizes, a model or GPU given by catalog name or file, the
fixed base of a search (``build_base``: model, batch, hardware and the ``--set`` fields the
search must not vary) and the search space of the options (``search_space``); a
``--reference`` layout is read in ``search.reference_input``."""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainsim.config._build import OUT_OF_RANGE, beyond_max_int, digit_groups, whole_number
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.search.reference_input import check_plan_sets, parse_reference


def _ascii_text(text: str) -> str:
    """``text``, or a ValueError where it holds characters outside ASCII."""
    if not text.isascii():
        raise ValueError(text)
    return text


@contextmanager
def said_warnings(say: bool = True) -> Iterator[list[str]]:
    """The trainsim warnings (and deprecated names) raised while a search's inputs are read,
    one line each, once each, in the order raised: the list the block yields is filled as the
    block ends (also by an error). ``say``: raise each again from here (the CLI prints each
    as one ``warning:`` line from its own process); the CLI's and a service job's JSON carry
    the list (``warnings``): said by the search's code alone, a service worker's warning
    reached the worker's stderr, never the job's user. Other warnings pass through."""
    from trainsim.config._build import DeprecatedName

    said: list[str] = []
    seen: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            yield said
    finally:  # outside the catch: raised again to the caller's filters
        for w in seen:
            ours = issubclass(w.category, (TrainsimWarning, DeprecatedName))
            if ours and str(w.message) in said:
                continue
            if ours:
                said.append(str(w.message))
            if say or not ours:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def parse_ints(text: str | None, name: str, least: int = 1) -> tuple[int, ...] | None:
    if text is None:
        return None
    parts = [v for v in text.replace(";", ",").split(",") if v.strip()]
    for v in parts:
        digit_groups(v.strip(), f"--{name}")  # underscores in threes only, as a config's
        if beyond_max_int(v):  # as a config's count (robust57 lead 4)
            raise ConfigError(f"--{name}={text!r}: {v.strip()} {OUT_OF_RANGE}")
    try:
        # ASCII digits only ('\uff12' is 2 to int()), as a config's numbers; a whole number
        # however written ('8.0'), as a config reads a count (robust57)
        vals = tuple(int(_ascii_text(v)) if whole_number(v) is None else whole_number(v)
                     for v in parts)
    except ValueError:
        raise ConfigError(f"--{name}={text!r}: expected integers separated by commas") from None
    if not vals or any(v < least for v in vals):
        raise ConfigError(f"--{name}={text!r}: expected integers >= {least}")
    return vals


def _no_such_file(path: Path, what: str) -> None:
    """A name that is a file's (a .yaml/.json suffix or a directory part) but no such file: say
    so, rather than 'unknown model' with the list of presets."""
    if not path.is_file() and (path.suffix.lower() in (".yaml", ".yml", ".json")
                               or len(path.parts) > 1 or path.is_dir()):
        why = "is a directory" if path.is_dir() else "no such file"
        raise ConfigError(f"{what} {str(path)!r}: {why} (give a file or a catalog name)")


def model_spec(model: str) -> Any:
    """A preset name, a Hugging Face config.json, or a YAML/JSON model (or run config) file."""
    path = Path(model)
    if not path.is_file():
        from trainsim.catalog import model_name

        if model_name(model) is None:  # 'meta-llama/Llama-3.1-8B' is a preset's HF name
            _no_such_file(path, "MODEL")
        return model
    from trainsim.catalog import read_config_file

    data = read_config_file(path)
    data.pop("_base_dir", None)
    if path.suffix == ".json" and "model" not in data and "num_layers" not in data:
        return {"hf_config": str(path.resolve())}  # a Hugging Face config.json
    return data.get("model", data)


def _gpu_spec(gpu: str) -> Any:
    """A catalog GPU name or a YAML file holding a GPU spec (catalog units)."""
    path = Path(gpu)
    _no_such_file(path, "--gpu")
    if path.is_file():
        from trainsim.catalog import read_config_file

        data = read_config_file(path)
        data.pop("_base_dir", None)
        return data.get("gpu", data) if isinstance(data.get("gpu"), dict) else data
    return gpu


OWN_OPTIONS = {("training", "global_batch_size"): "--global-batch",
               ("training", "micro_batch_size"): "--max-micro-batch (the search varies it)",
               ("training", "seq_length"): "--seq", ("training", "dtype"): "--dtype",
               ("cluster", "num_gpus"): "--gpus / --max-gpus", ("cluster", "gpu"): "--gpu",
               ("cluster", "gpus_per_node"): "--gpus-per-node",
               ("cluster", "nic_gbit_s_per_gpu"): "--nic-gbit-s",
               ("cluster", "nic_gbps_per_gpu"): "--nic-gbit-s",
               ("cluster", "nic_bw_Bps"): "--nic-gbit-s"}
"""Fields a search or plan sets from its own options; ``--set`` may not set them too (a value
equal to the option's is let through, except for the fields the command varies, ``VARIED``)."""
VARIED = ("num_gpus", "micro_batch_size")
SHARDING_FIELDS = ("data_parallel_impl", "distributed_optimizer", "zero_stage")
"""--set parallel fields the base check carries: they decide whether the optimizer is sharded,
which training settings depend on (the rest of --set parallel is checked per candidate)."""


def node_size(gpus_per_node: int | None, overrides: tuple[str, ...] = ()) -> int:
    """``--gpus-per-node`` as given, else 8, or the rack (72) where ``--set cluster.topology``
    names nvl72, as a config's topology sets it (``catalog._cluster_section``; fuzz17b)."""
    if gpus_per_node is not None:
        return gpus_per_node
    from trainsim.catalog import apply_overrides
    from trainsim.config.cluster import NVL72_GPUS, TOPOLOGY_ALIASES

    cluster = apply_overrides({"cluster": {}}, list(overrides)).get("cluster")
    topology = cluster.get("topology") if isinstance(cluster, dict) else None
    name = str(topology or "").strip().lower().replace("_", "-")
    return NVL72_GPUS if TOPOLOGY_ALIASES.get(name, name) == "nvl72" else 8


def build_base(model: str, gpu: str, num_gpus: int, global_batch: int, seq: int,
               gpus_per_node: int, nic_gbps: float, dtype: str, overrides: tuple[str, ...] = ()):
    """The fixed part of a search (model, training, cluster) from command-line values."""
    from trainsim.catalog import apply_overrides
    from trainsim.config.parallel import ALIASES
    from trainsim.search.candidate import Base
    from trainsim.search.rules import profile_value

    for name, v in (("global-batch", global_batch), ("seq", seq), ("gpus-per-node", gpus_per_node)):
        if v < 1:
            raise ConfigError(f"--{name}={v} must be positive")
    raw = {"model": model_spec(model),
           # validated as a pure data-parallel run; the search replaces the batch split
           "training": {"global_batch_size": num_gpus, "micro_batch_size": 1,
                        "seq_length": seq, "dtype": dtype},
           "cluster": {"gpu": _gpu_spec(gpu), "num_gpus": num_gpus, "gpus_per_node": gpus_per_node,
                       "nic_gbit_s_per_gpu": nic_gbps}}
    given = apply_overrides(raw, list(overrides))
    touched = apply_overrides({"training": {}, "cluster": {}}, list(overrides))  # what --set set
    own = {**{k: raw[k[0]].get(k[1]) for k in OWN_OPTIONS},
           ("training", "global_batch_size"): global_batch}  # raw holds a placeholder there
    for (section, key), option in OWN_OPTIONS.items():
        if isinstance(touched.get(section), dict) and key in touched[section] and \
                (touched[section][key] != own[section, key] or key in VARIED):
            # the search sets it from its option (and replaces the batch split): an override
            # would be dropped, or would disagree with the option silently
            raise ConfigError(f"--set {section}.{key}: {option} sets it; give {option} instead")
    given["training"]["global_batch_size"] = num_gpus  # the placeholder the check runs with
    raw = given
    t = raw.get("training") or {}
    given_parallel = dict(raw.pop("parallel", None) or {})
    engine = _stage_engine(given_parallel, t)
    if engine is not None:  # the engine simulate runs the fixed stage with
        given_parallel["data_parallel_impl"] = engine
    fixed = _fixed_parallel(given_parallel, profile_value(
        t.get("framework"), t.get("framework_version"), "data_parallel_impl"))
    try:
        cfg = _checked_base(raw, {k: given_parallel[k] for k in SHARDING_FIELDS
                                  if k in given_parallel})
    except ConfigError as exc:  # a field --set gave, named as given: --set training.zero
        from trainsim.config import as_written

        keys = (o.split("=", 1)[0].strip() for o in overrides if "=" in o)
        raise as_written(exc, {k: f"--set {k}" for k in keys if k}, replace=True) from None
    expert = [k for k, v in fixed if k in ("expert_model_parallel_size",
                                            "expert_tensor_parallel_size") and (v or 1) > 1]
    if expert and not cfg.model.is_moe:  # every candidate would drop it (simulate refuses it)
        short = {full: k for k, full in ALIASES.items()}.get(expert[0], expert[0])
        raise ConfigError(f"--set parallel.{short} > 1 needs a mixture-of-experts model "
                          f"(model.num_experts); {cfg.model.name} is dense")
    training = dataclasses.replace(cfg.training, global_batch_size=global_batch, micro_batch_size=1)
    base = Base(cfg.model, training, cfg.cluster, fixed, _given(raw, global_batch))
    _check_fixed(base)
    return base


def _given(raw: dict[str, Any], global_batch: int) -> str:
    """``Base.given``: the config less what each result sets (its parallel section, micro
    batch and GPU count), with the real global batch in place of the check's placeholder."""
    out = {k: v for k, v in raw.items() if k != "parallel"}
    out["training"] = {**{k: v for k, v in (out.get("training") or {}).items()
                          if k != "micro_batch_size"}, "global_batch_size": global_batch}
    out["cluster"] = {k: v for k, v in (out.get("cluster") or {}).items() if k != "num_gpus"}
    return json.dumps(out, sort_keys=True, default=str)


def _stage_engine(given: dict[str, Any], training: dict[str, Any]) -> str | None:
    """The data-parallel engine the config loader picks for a ZeRO stage fixed with --set
    (``catalog.defaults.zero_engine``: a stage the profile's default engine does not run
    selects the engine of its ``zero_stage_engines``, a plain PyTorch loop's FSDP for 2 and 3;
    a stage no engine of the framework runs is refused with the loader's message); with no
    stage but ``dp_replicate`` > 1, the one engine the framework shards with where its default
    shards at no stage. None where --set names the engine, or the run names no framework."""
    name = training.get("framework")
    if not name or "data_parallel_impl" in given:
        return None
    from trainsim.catalog.defaults import stage_engines, zero_engine
    from trainsim.catalog.frameworks import framework_profile

    version = training.get("framework_version")
    profile = framework_profile(str(name), str(version) if version else None)
    replicas = given.get("dp_replicate", given.get("num_distributed_optimizer_instances",
                                                   given.get("data_parallel_replicate_degree")))
    if "zero_stage" not in given and "distributed_optimizer" not in given and \
            isinstance(replicas, int) and replicas > 1:
        # HSDP shards within a replica: where the profile's engine shards at no stage and
        # the framework shards with one other engine (a plain PyTorch loop's FSDP for 2 and 3),
        # the search tries that engine's stages (search.fixed.sharded_for_replicas)
        # (not DDP's ZeroRedundancyOptimizer: one process group, no replicas, ParallelConfig)
        engines = {e for s, e in stage_engines(profile, str(version) if version else None).items()
                   if s > 0 and e != "ddp"}
        default = profile.defaults.get("data_parallel_impl")
        if default not in engines and len(engines) == 1:
            # said in one line with the stages the search tries (fixed.sharded_for_replicas)
            engine = str(next(iter(engines)))
            return engine
        return None
    if "zero_stage" not in given:
        return None
    probe = {k: given[k] for k in ("zero_stage", "distributed_optimizer") if k in given}
    try:
        zero_engine(probe, profile, f"{profile.name} {version or profile.version}",
                    str(version) if version else None)
    except ConfigError as exc:
        raise ConfigError(f"--set {exc}") from None
    engine = probe.get("data_parallel_impl")
    return str(engine) if engine is not None else None


def _check_fixed(base: Any) -> None:
    """RunConfig's rules that tie a fixed (--set) parallel field to the model, refused in one
    line here: the search would skip every candidate and say only that none is valid."""
    from trainsim.catalog.defaults import apply_framework
    from trainsim.catalog.run_framework import stated_deferral_problem
    from trainsim.config.validity import (
        DISPATCHER_MIN_SM,
        dispatcher_fits,
        dispatcher_runs_on,
        kv_heads_problem,
        moe_dense_problem,
    )
    from trainsim.search.rules import softcap_cp_refusal

    f, m, t = dict(base.fixed), base.model, base.training
    where = f"{t.framework} {t.framework_version or ''}".strip() if t.framework else "the run"
    filled: dict[str, Any] = {}  # what the profile fills (a dense run's MoE fields may be it)
    if t.framework:  # what the framework lacks, refused by the config loader's own step
        try:  # (on a copy: the candidates' configs run it again, search.candidate)
            apply_framework(dict(f), {"framework": t.framework,
                                      "framework_version": t.framework_version})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                apply_framework(filled, {"framework": t.framework,
                                         "framework_version": t.framework_version})
        except ConfigError as exc:
            raise ConfigError(f"--set {exc}") from None
    problem = None if m.is_moe else moe_dense_problem(f, filled)
    if problem:  # every candidate would drop it, as the config loader refuses it (robust55)
        raise ConfigError(f"--set {problem}")
    problem = stated_deferral_problem(f.get("defer_embedding_wgrad_compute"), t)
    if problem:  # refused by the loader; every candidate priced would refuse it (robust59)
        raise ConfigError(f"--set {problem}")
    cp = f.get("context_parallel_size")
    refusal = cp is not None and softcap_cp_refusal(m.attn_logit_softcapping, t.framework,
                                                    t.framework_version, cp)
    if refusal:
        raise ConfigError(f"--set {refusal}")
    tp = f.get("tensor_model_parallel_size")
    problem = tp and kv_heads_problem(tp, m.kv_heads, base.kv_heads_split, where, t.framework)
    if problem:
        raise ConfigError(f"--set parallel.{problem}")
    disp = f.get("moe_token_dispatcher_type")
    ep, etp = f.get("expert_model_parallel_size"), f.get("expert_tensor_parallel_size")
    if ep is not None and not dispatcher_fits(disp, ep * (etp or 1), base.flex_two_ranks):
        raise ConfigError(f"--set parallel.moe_token_dispatcher_type={disp} needs ep*"
                          f"expert_tensor_parallel_size >= 2 in {where}, not {ep}*{etp or 1}; "
                          "use alltoall or allgather")
    gpu = base.cluster.gpu
    if m.is_moe and disp and not dispatcher_runs_on(disp, gpu.sm_arch):
        raise ConfigError(f"--set parallel.moe_token_dispatcher_type={disp} needs an NVIDIA GPU "
                          f"of sm_{DISPATCHER_MIN_SM[disp]} or newer, not {gpu.name}; use "
                          "alltoall, allgather or deepep")


def _dense_sizes(text: str | None, name: str, model: str) -> str | None:
    """``--ep`` / ``--etp`` of a dense model: its sizes above 1 dropped and said in one warning
    line (robust52: ``--ep 1,8`` refused whole though ep 1 runs); refused where none is 1."""
    sizes = parse_ints(text, name) if text else None
    if not sizes or sizes == (1,):
        return text
    dropped = [str(v) for v in dict.fromkeys(sizes) if v != 1]
    if 1 not in sizes:
        raise ConfigError(f"--ep/--etp: {model} is dense (no model.num_experts); "
                          "expert parallelism needs a mixture-of-experts model")
    warnings.warn(f"--{name}={text}: {model} is dense (no model.num_experts), so only {name} 1 "
                  f"runs; {', '.join(dropped)} dropped", TrainsimWarning, stacklevel=2)
    return "1"


def _hybrid_schedules(text: str, names: list[str]) -> list[str]:
    """``--schedules`` of a hybrid model with DualPipe among others: DualPipe dropped and said
    in one warning line (robust52: the whole list refused though 1f1b runs); DualPipe alone is
    left for ``SearchSpace.held_by``'s refusal."""
    from trainsim.config.hybrid import DUALPIPE_SCHEDULES, dualpipe_reason

    kept = [n for n in names if n not in DUALPIPE_SCHEDULES]
    if kept and len(kept) < len(names):
        dropped = ", ".join(dict.fromkeys(n for n in names if n not in kept))
        warnings.warn(f"--schedules={text}: {dropped} dropped: "
                      f"{dualpipe_reason()}", TrainsimWarning, stacklevel=2)
        return kept
    return names


def search_space(tp_: str | None, pp_: str | None, cp_: str | None, max_vpp: int | None,
                 max_micro_batch: int, recompute: str, zero: str | None, overlap: str,
                 ep_: str | None = None, etp_: str | None = None, dispatcher: str | None = None,
                 schedules: str | None = None, base: Any = None):
    """The search space of the options of ``trainsim search``/``plan`` (comma-separated text,
    None for the default), narrowed by the ``--set`` parallel fields of ``base``
    (``SearchSpace.fixed_by``): the CLI and the service's search and plan jobs build it here."""
    from trainsim.config.parallel import schedule_name
    from trainsim.search.rules import MEGATRON_1F1B
    from trainsim.search.space import SearchSpace

    if base is not None and not base.model.is_moe:
        ep_, etp_ = (_dense_sizes(v, n, base.model.name) for v, n in ((ep_, "ep"), (etp_, "etp")))
    if base is not None and not base.model.is_moe and dispatcher and dispatcher.strip(", "):
        raise ConfigError(f"--dispatcher: {base.model.name} is dense (no model.num_experts); "
                          "a token dispatcher needs a mixture-of-experts model")
    # names in any case, as a config's recompute: NONE or dispatcher: AllToAll reads
    rc = tuple(s.strip().lower() for s in recompute.split(",") if s.strip())
    if not rc:  # an empty list would leave nothing to search, reported as "nothing fits"
        raise ConfigError(f"--recompute={recompute!r}: give one or more of none, selective, full")
    scheds = None
    if schedules is not None:
        try:
            names = [schedule_name(x.strip()) for x in schedules.split(",") if x.strip()]
        except ConfigError as exc:  # named as the user wrote it, not as the config's field
            raise ConfigError(f"--schedules={schedules!r}: {exc}") from None
        if base is not None and base.model.hybrid_layer_pattern is not None:
            names = _hybrid_schedules(schedules, names)
        scheds = tuple(dict.fromkeys("" if n in MEGATRON_1F1B else n
                                     for n in names))
    disp = tuple(x.strip().lower() for x in dispatcher.split(",") if x.strip()) \
        if dispatcher else None
    sizes = {n: parse_ints(v, n) for n, v in (("tp", tp_), ("pp", pp_), ("cp", cp_),
                                              ("ep", ep_), ("etp", etp_))}
    experts = base.model.num_experts if base is not None and base.model.is_moe else None
    fixed_ep = dict(base.fixed).get("expert_model_parallel_size") if experts else None
    given = ((fixed_ep,), f"parallel.ep={fixed_ep}") if isinstance(fixed_ep, int) else \
        (sizes["ep"], f"--ep={ep_}")
    if experts and given[0] and all(experts % e for e in given[0]):
        # else every candidate is refused and the search says "widen --tp/--pp/--cp"
        raise ConfigError(f"{given[1]}: ep must divide the {experts} routed experts of "
                          f"{base.model.name} (each expert-parallel rank holds num_experts/ep "
                          f"of them); {'none of these does' if len(given[0]) > 1 else 'it does not'}")
    if base is not None and (problem := sizes_problem(sizes, base, {"tp": tp_, "pp": pp_,
                                                                    "cp": cp_})):
        raise ConfigError(problem)
    try:
        space = SearchSpace(**sizes, max_vpp=max_vpp, max_micro_batch=max_micro_batch,
                            recompute=rc, zero=parse_ints(zero, "zero", least=0),
                            overlap=overlap.lower() if isinstance(overlap, str) else overlap,
                            dispatcher=disp, schedules=scheds)
    except ConfigError as exc:  # 'search space: zero values [5] ...' names the flag: --zero
        text = re.sub(r"^search space: ([a-z_]+)",
                      lambda m: "--" + m.group(1).replace("_", "-"), str(exc))
        raise ConfigError(text) from None
    if base is None:
        return space
    from trainsim.search.fixed import sharded_for_replicas

    return sharded_for_replicas(space.fixed_by(base.fixed), base)


def sizes_problem(sizes: dict[str, tuple[int, ...] | None], base: Any,
                  given: dict[str, str | None]) -> str | None:
    """Why none of the ``--tp``, ``--pp`` or ``--cp`` sizes given can split the model at any
    GPU count (the search space's own tests, ``SearchSpace.memory_keys``: tp divides the
    heads, pp the layers unless the model or framework splits them unevenly, 2*cp the
    sequence), or None: the search then said only "no parallel configuration is valid" and
    plan "no valid configuration fits on any of them" (robust55 lead 4, robust56)."""
    from trainsim.config.validity import kv_heads_fit

    m, seq = base.model, base.training.seq_length
    tps, pps, cps = sizes.get("tp"), sizes.get("pp"), sizes.get("cp")
    if tps and not any(not m.num_attention_heads % t and kv_heads_fit(m.kv_heads, t,
                                                                      base.kv_heads_split)
                       for t in tps):
        who = base.training.framework or "the run"
        kv = (f" and its {m.kv_heads} KV heads: {who} splits them, so tp must divide them too"
              if base.kv_heads_split else f" and its {m.kv_heads} KV heads (one of tp and "
              "them must divide the other)") if m.kv_heads < m.num_attention_heads else ""
        return (f"--tp {given['tp']}: tp must divide the {m.num_attention_heads} attention "
                f"heads of {m.name}{kv}; none of the sizes given does")
    uneven = m.is_moe or base.layout_rule == "front_loaded"  # who splits layers unevenly
    if pps and not any(p <= m.num_layers and (uneven or not m.num_layers % p) for p in pps):
        rule = f"at most the {m.num_layers} layers" if uneven else \
            f"must divide the {m.num_layers} layers"
        return (f"--pp {given['pp']}: pp {rule} of {m.name} (a stage holds whole layers); "
                "none of the sizes given does")
    if cps and not any(c == 1 or not seq % (2 * c) for c in cps):
        return (f"--cp {given['cp']}: 2*cp must divide the sequence of {seq} tokens (context "
                "parallelism splits it into 2*cp chunks); none of the sizes given does")
    return None


def every_split_refused(b: Any, gpu_counts: Any, refused: str) -> ConfigError:
    """A search none of whose splits the config's rules (or a forced ``cluster.nccl_algo``)
    take, ``refused`` the first refusal."""
    counts = ",".join(str(n) for n in gpu_counts)
    return ConfigError(f"no parallel configuration of {b.model.name} is valid on {counts} "
                       f"GPUs: every split the sizes allow is refused, e.g. {refused}")


def nothing_found(result: Any) -> ConfigError:
    """Why a search ranked nothing: no candidate is a valid split at all (the GPU count, the
    batch and the model's heads and layers admit none; or every split they admit is refused
    by the config's own rules, whose first refusal is said), or none fits in memory."""
    b = result.base
    over = getattr(result, "over_limit", None)
    if result.stats.enumerated and over and not any(e.fits for e in result.evaluated):
        algo = " and the forced cluster.nccl_algo" if ": cluster.nccl_algo=" in over else ""
        return ConfigError("no configuration fits in memory and can be simulated within the "
                           f"work limits{algo}, e.g. {over}")
    if result.stats.enumerated:
        return ConfigError("no configuration fits in memory; try more GPUs, a smaller "
                           "--global-batch or --seq, or allow recompute/ZeRO")
    counts = ",".join(str(n) for n in result.gpu_counts)
    if result.refused:
        return every_split_refused(b, result.gpu_counts, result.refused)
    who = b.training.framework or "the run"
    kv = f" (and the {b.model.kv_heads} KV heads: {who} splits them)" \
        if b.kv_heads_split and b.model.kv_heads < b.model.num_attention_heads else ""
    if b.model.is_moe:
        kv += f", ep the {b.model.num_experts} routed experts"
    vpp = dict(b.fixed).get("virtual_pipeline_model_parallel_size")
    chunks = f", pp times the fixed vpp={vpp} the layers" if isinstance(vpp, int) and vpp > 1 \
        else ""
    return ConfigError(
        f"no parallel configuration of {b.model.name} is valid on {counts} GPUs with global "
        f"batch {b.training.global_batch_size}: tp*pp*cp*dp must be the GPU count, tp must "
        f"divide the {b.model.num_attention_heads} attention heads{kv}, pp the "
        f"{b.model.num_layers} layers{chunks}, and dp*micro batch the global batch; change "
        "--gpus or --global-batch, or widen --tp/--pp/--cp")


def _fixed_parallel(given: dict[str, Any], engine: object = None
                    ) -> tuple[tuple[str, Any], ...]:
    """Parallel fields fixed with --set parallel.X=V, by their full names, checked by
    ParallelConfig (unknown names and bad values are errors, never dropped) under the
    profile's data-parallel ``engine`` where --set names none, as each candidate is built (a
    ZeRO stage that engine does not run is refused here, config.validity.ZERO_STAGES)."""
    from trainsim.config import ParallelConfig, as_written, build
    from trainsim.config.parallel import ALIASES

    full = {ALIASES.get(k, k): v for k, v in given.items()}
    try:
        fill = _searched_for_check(full, engine)
        zero = "zero_stage" in {**fill, **full} or "distributed_optimizer" in full
        engine_of = {"data_parallel_impl": engine} if engine and zero and \
            "data_parallel_impl" not in full else {}
        p = build(ParallelConfig, {**fill, **full, **engine_of}, "--set parallel")
    except ConfigError as exc:  # named as written: tp, not tensor_model_parallel_size
        as_written(exc, {f"--set parallel.{ALIASES[k]}": f"--set parallel.{k}"
                         for k in given if k in ALIASES}, replace=True)
        raise
    fixed = {k: getattr(p, k) for k in full}
    if full.get("pipeline_model_parallel_layout") and p.pipeline_model_parallel_layout is None:
        # 'first:N,last:M' is read as the two decoder fields (config.parallel_checks.check_pp_layout)
        del fixed["pipeline_model_parallel_layout"]
        fixed.update((k, getattr(p, k)) for k in ("decoder_first_pipeline_num_layers",
                                                  "decoder_last_pipeline_num_layers")
                     if getattr(p, k) is not None)
    return tuple(sorted(fixed.items()))


def _checked_base(raw: dict[str, Any], sharding: dict[str, Any]):
    """``raw`` as a RunConfig, checked as a pure data-parallel run; where that fails and
    --set fixed the optimizer's sharding (``SHARDING_FIELDS``), checked again with it, since a
    training setting may need it (training.use_precision_aware_optimizer needs Megatron-core's
    distributed optimizer); the first error stands if that fails too."""
    from trainsim.catalog import run_config_from_dict

    try:
        return run_config_from_dict(raw)
    except ConfigError:
        if not sharding:
            raise
        try:
            return run_config_from_dict({**raw, "parallel": sharding})
        except ConfigError:
            pass
        raise


def _searched_for_check(full: dict[str, Any], engine: object = None) -> dict[str, Any]:
    """Fields the search sets per candidate that a fixed field needs set to be checked alone
    (and kept: sequence parallelism, read as off at tp 1, is checked at tp 2): an engine's
    least ZeRO stage under a fixed ``data_parallel_impl`` (FSDP has no stage 0;
    the search tries the engine's stages, ``search.rules.zeros_fit``), under a fixed
    ``dp_replicate`` > 1 the least sharded stage of the engine (``fixed`` ``engine``, else the
    profile's), as HSDP needs one and the search tries those only
    (``search.fixed.sharded_for_replicas``), a recompute level a fixed recompute-bound field
    needs (``search.fixed.recompute_levels``), and under a fixed
    ``pipeline_schedule`` or vpp > 1 a pipeline of 2 stages (2 chunks each for the
    interleaved schedules); the candidates' own sizes are checked as each is built."""
    from trainsim.config.parallel import schedule_name
    from trainsim.config.validity import zero_stages
    from trainsim.search.fixed import recompute_levels
    from trainsim.search.rules import unsharded_zero

    fill: dict[str, Any] = {}
    levels = recompute_levels(full)
    if levels and "recompute" not in full:  # robust61: checked at a level the search tries
        fill["recompute"] = levels[-1]
    if full.get("sequence_parallel") is True and "tensor_model_parallel_size" not in full:
        fill["tensor_model_parallel_size"] = 2  # at tp 1 ParallelConfig turns SP off
    impl = full.get("data_parallel_impl")
    if impl and "zero_stage" not in full and "distributed_optimizer" not in full:
        fill["zero_stage"] = unsharded_zero(impl)
    replicas = full.get("dp_replicate")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas > 1 and \
            "zero_stage" not in full and "distributed_optimizer" not in full:
        sharded = [z for z in zero_stages(impl or engine) if z > 0]
        if sharded:  # none (DDP): ParallelConfig's 'needs a sharded state' is the reason
            fill["zero_stage"] = min(sharded)
            if fill.get("zero_stage") == 1:
                fill["distributed_optimizer"], fill["zero_stage"] = True, 0
    sched = full.get("pipeline_schedule")
    vpp = full.get("virtual_pipeline_model_parallel_size")
    chunks = isinstance(vpp, int) and not isinstance(vpp, bool) and vpp > 1
    if ((isinstance(sched, str) and sched) or chunks) and \
            "pipeline_model_parallel_size" not in full:
        fill["pipeline_model_parallel_size"] = 2
        if isinstance(sched, str) and sched and \
                schedule_name(sched) in ("interleaved_1f1b", "interleaved_zb") and \
                "virtual_pipeline_model_parallel_size" not in full:
            fill["virtual_pipeline_model_parallel_size"] = 2
    return fill


__all__ = ["OWN_OPTIONS", "VARIED", "build_base", "check_plan_sets", "model_spec", "nothing_found", "parse_ints",
           "parse_reference", "search_space", "sizes_problem"]
