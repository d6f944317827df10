"""The mechanisms a run on a framework with no profile here is predicted with.

A validation row may name a framework that ``catalog/frameworks/`` has no profile of (levanter,
accelerate, picotron, nanodo, ...). Its name says nothing trainsim can read, so the profile whose
mechanisms predict it is chosen from what the row's own cells say of its engine, one rule for
every such name (``validate.vocab`` applies it and says so in the row's ``read_as``).
"""

from __future__ import annotations

FALLBACK_PROFILES = {"sharded": "torchtitan", "sdpa": "pytorch", "unsharded": "megatron-core"}
"""The profile whose mechanisms a run on a framework with no profile here is predicted with
(:func:`fallback_framework`), by what the run's own settings say of its engine, each at its
newest entry where the run states no date (its ``framework_version`` is its own framework's:
a release selects nothing here). ``sharded`` (it states ZeRO-2/3 or FSDP sharding, or HSDP
replicas of a state it does not say is ZeRO-1): PyTorch's
FSDP2 as torchtitan, PyTorch's own reference stack, runs it (per-block ``fully_shard``,
resharded after forward, fp32 reduce-scatter overlapped with the backward, DTensor TP/SP,
torch.distributed.pipelining; torchtitan.yaml). ``sdpa`` (unsharded, and its model calls
PyTorch's scaled_dot_product_attention: attention ``sdpa`` or option ``enable_gqa``, which
Megatron-core's Transformer Engine or local attention never does; or attention ``eager``,
plain PyTorch ops, where Megatron-core's local ``unfused`` runs its FusedScaleMaskSoftmax,
NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/dot_product_attention.py L12, L100,
L194 ``baddbmm``; ``EAGER_ATTENTION``): a plain PyTorch loop, DDP
around the model's own modules (pytorch.yaml). ``unsharded`` (DDP, ZeRO-1 or the distributed
optimizer, with or without TP/PP/CP/EP): Megatron-core, the library NeMo, Megatron-Bridge,
Megatron-LM and MLPerf's NeMo build on (bucketed DDP or distributed optimizer with its
overlaps offered, Transformer Engine fused attention, TP/SP, interleaved 1F1B;
megatron-core.yaml)."""

EAGER_ATTENTION = "eager"
"""The attention a model written in plain PyTorch ops runs (``config.training`` ``eager``:
matmul, mask add, softmax, dropout, matmul), which no stack built on Megatron-core or
Transformer Engine runs (their ``attention_kernels``): a row stating it selects the plain
PyTorch loop, as SDPA does (``FALLBACK_PROFILES`` ``sdpa``). Hugging Face's
``eager_attention_forward`` is not written so in these files: the README's vocabulary has no
``eager``, and pytorch.yaml reads its ``unfused`` as transformers' eager attention (its
``softmax_fp32_saved`` / ``unfused_repeat_kv`` features add the fp32 passes that
``workload.hf_eager_attention`` prices), so an unfused row on an unknown framework stays
Megatron-core's (benchmarks/RESULTS.md, 56th session, blind56)."""

EARLIER_PROFILES: dict[str, tuple[str, ...]] = {
    "sharded": ("deepspeed",), "sdpa": (), "unsharded": ("megatron-lm", "megatron-deepspeed")}
"""The stacks that ran a run of each kind (``FALLBACK_PROFILES``) before that kind's profile
existed, newest first, for a run that states its date (a ``framework_version`` written as a
date: :func:`run_date`): a profile whose first entry is after the run's date cannot have run
it (:func:`ran_by`). ``sharded``: FSDP2, which torchtitan runs, is PyTorch's per-parameter
``fully_shard`` (torchtitan.yaml's first entry 2024-04, pytorch/torchtitan@258f6082;
per-parameter FSDP from 83c879f18, 2024-03-28); before it, ZeRO-2/3 as DeepSpeed's own
implementation runs it (deepspeed.yaml from 2021-03, ZeRO 1/2/3). ``unsharded``: Megatron-core
was Megatron-LM's ``megatron/core`` before its first release (megatron-core.yaml's first entry
0.4, tagged 2023-12-11); Megatron-LM by git date from 2021-01 (megatron-lm.yaml), whose ZeRO-1
(``--use-distributed-optimizer``) came 2022-06 (NVIDIA/Megatron-LM@d07d29df); before that,
Megatron's TP/PP with ZeRO-1 ran on DeepSpeed's engine as Megatron-DeepSpeed
(megatron-deepspeed.yaml from 2021-07, BLOOM's ZeRO stage 1), tried where Megatron-LM at the
run's date refuses the run. ``sdpa``: none (SDPA is PyTorch 2.0's, and the pytorch profile
reads no dates)."""


def run_date(version: object) -> str:
    """A run's ``framework_version`` where it is written as a date (``2022-02``, ``2021``,
    "March 2021"), as written; '' for a release or nothing: a release of a framework with no
    profile here says nothing trainsim can read, a date says when the run was."""
    from trainsim.catalog.framework_versions import parse

    text = str(version or "").strip()
    got = parse(text) if text else None
    return text if got is not None and got.kind == "date" else ""


def ran_by(profile: str, date: str) -> bool:
    """Whether the stack of ``profile`` existed at ``date`` (always, for an undated run): the
    date is not before the profile's first entry, a year alone meaning any month of it (a run
    of "2023" may have used Megatron-core 0.4, tagged 2023-12-11). A profile that reads no
    dates (pytorch: release numbers only) is taken as existing."""
    from trainsim.catalog.framework_versions import parse
    from trainsim.catalog.frameworks import framework_entries, released_before
    from trainsim.errors import CatalogError

    if not date:
        return True
    got = parse(date)
    if got is not None and got.kind == "date" and got.key[1:] == (1, 1) and \
            date.strip().isdigit():
        date = f"{got.key[0]}-12"  # a year alone: any time in it, December included
    try:
        return not released_before(profile, date, framework_entries(profile)[0])
    except CatalogError:
        return True


def entry_at(profile: str, date: str) -> str:
    """The version ``profile`` is read at for a run of ``date``: the date itself, or '' (its
    newest entry) where the run states no date or the profile reads no dates."""
    from trainsim.catalog.frameworks import framework_profile
    from trainsim.errors import CatalogError

    if not date:
        return ""
    try:
        framework_profile(profile, date)
    except CatalogError:
        return ""
    return date


def _kind(zero_stage: object, replicas: object, sdpa: bool) -> tuple[str, str]:
    """(kind of ``FALLBACK_PROFILES``, why) from the run's cells."""
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
        return "sharded", f"it states {said}"
    if sdpa:
        return "sdpa", "its model calls PyTorch SDPA and shards nothing"
    return "unsharded", "it states no ZeRO-2/3 sharding"


MECHANISMS = {
    "torchtitan": "PyTorch FSDP2's mechanisms",
    "deepspeed": "DeepSpeed ZeRO's mechanisms",
    "pytorch": "a plain PyTorch loop's mechanisms (DDP; FSDP where it shards)",
    "megatron-core": "Megatron-core's mechanisms (DDP or distributed optimizer, TP/SP/PP)",
    "megatron-lm": "Megatron-LM's mechanisms (DDP or distributed optimizer, TP/SP/PP)",
    "megatron-deepspeed": "Megatron-DeepSpeed's mechanisms (Megatron TP/PP on DeepSpeed's "
                          "pipeline engine and ZeRO-1)",
}
"""What each fallback profile stands for, as a row's ``read_as`` says it (:func:`said`)."""

MEGATRON_FSDP = ("Megatron-core's mechanisms (Megatron-FSDP: parameters, gradients and optimizer "
                 "state sharded around Transformer Engine's layers, TP/SP/PP)")
"""What Megatron-core stands for where it runs a ZeRO-3 row (``MEGATRON_SHARDED``, or the
attention rule's ``cudnn`` + ZeRO-3), not its DDP or distributed optimizer."""


def said(profile: str, zero_stage: object = None) -> str:
    """What ``profile``'s mechanisms are for a row stating ``zero_stage``, as its ``read_as``
    says it: ``MECHANISMS``, Megatron-core's sharded engine for a ZeRO-3 row."""
    try:
        stage = float(str(zero_stage).strip())
    except ValueError:
        stage = None
    if profile == MEGATRON_SHARDED and stage == 3.0:
        return MEGATRON_FSDP
    return MECHANISMS.get(profile, f"{profile}'s mechanisms")


def _stacks(kind: str) -> tuple[str, ...]:
    return (FALLBACK_PROFILES[kind], *EARLIER_PROFILES[kind])


MEGATRON_SHARDED = "megatron-core"
"""The stack that runs a sharded (ZeRO-2/3) run whose own cells say its engine is not PyTorch
FSDP2's (:func:`_megatron_sharded`): Megatron-core, whose Megatron-FSDP shards the state (stage
3 from core_v0.12, ``catalog.defaults.stage_engines``) around Transformer Engine's layers.

* *fp8 GEMMs without torch.compile.* PyTorch's own fp8 training, the only one the sharded
  stack runs (torchtitan's ``float8`` / ``mx`` converters swap in torchao's ``Float8Linear`` /
  ``MXLinear``), casts and scales in plain PyTorch ops that torch.compile fuses, and says it
  needs it: pytorch/ao@1c488e8ae (2024-09-04) torchao/float8/README.md L49, its training
  example's "enable torch.compile for competitive performance" (still
  docs/source/examples/float8_training_example.py L37 at 36027d82d); torchao's
  ``float8nocompile`` prototype (02d413c00, 2024-12-17) exists to be a Float8Linear that needs
  no torch.compile to perform (float8nocompile_linear.py's module docstring);
  pytorch/torchtitan@b5bcd76c6
  torchtitan/components/quantization/mx.py L73-L77 and float8.py L240-L243 warn that
  torch.compile is required for MXFP8 and float8 MoE performance. Transformer Engine casts and
  scales in its own fused kernels, no compiler needed. Every PyTorch-fp8 row here states
  ``compile`` (training_heldout's torchtitan fp8 rows, training_torchao,
  training_torchtitan_gb200, training_olmo_core); the sharded fp8 rows that do not are
  Transformer Engine runs (Megatron-Bridge / NeMo Megatron-FSDP, llm-foundry's TE layers,
  MaxText / Paxml through TE-JAX).
* *The distributed optimizer stated* (``distributed_optimizer`` 1): Megatron's
  ``--use-distributed-optimizer``, which Megatron-FSDP (v1) turns on itself
  (NVIDIA/Megatron-LM@d98e8a64 megatron/training/arguments.py L1118-L1134, "Megatron-FSDP v1
  is only compatible with --use-distributed-optimizer"); FSDP2 has no such optimizer."""


def _megatron_sharded(zero_stage: object, replicas: object, date: str, fp8: bool,
                      compiled: bool, distributed_optimizer: object) -> tuple[str, str, str] | None:
    """(``MEGATRON_SHARDED``, its version: '' for its newest entry, why) for a sharded run
    that states fp8 GEMMs and not torch.compile (options without ``compile``) or states the
    distributed optimizer, where that stack existed at the run's ``date`` and its
    configuration checks accept the run's ZeRO stage and replicas at that entry
    (:func:`_accepts`); else None (the sharded stack stands)."""
    dist_opt = str(distributed_optimizer or "").strip().lower() in ("1", "true", "yes")
    if dist_opt:
        why = "and Megatron's distributed optimizer, which Megatron-FSDP runs and FSDP2 has " \
            "none of (MEGATRON_SHARDED):"
    elif fp8 and not compiled:
        why = "and fp8 GEMMs without torch.compile, which PyTorch's fp8 training needs " \
            "(MEGATRON_SHARDED): Transformer Engine's fp8 under"
    else:
        return None
    if not ran_by(MEGATRON_SHARDED, date):
        return None
    version = entry_at(MEGATRON_SHARDED, date)
    if not _accepts(MEGATRON_SHARDED, version, zero_stage, replicas):
        return None
    return MEGATRON_SHARDED, version, f"{why} {said(MEGATRON_SHARDED, zero_stage)}"


def fallback_framework(zero_stage: object = None, replicas: object = None,
                       sdpa: bool = False, date: str = "", attention: str = "",
                       fp8: bool = False, compiled: bool = False,
                       distributed_optimizer: object = None) -> tuple[str, str]:
    """(profile name, why) of :func:`fallback_choice`."""
    name, _, why = fallback_choice(zero_stage, replicas, sdpa, date, attention, fp8, compiled,
                                   distributed_optimizer)
    return name, why


def fallback_choice(zero_stage: object = None, replicas: object = None,
                    sdpa: bool = False, date: str = "", attention: str = "",
                    fp8: bool = False, compiled: bool = False,
                    distributed_optimizer: object = None) -> tuple[str, str, str]:
    """(profile name, version: '' for its newest entry, why) for a run on a framework with no
    profile here, from the run's own
    ``zero_stage`` (2 or 3: sharded), HSDP ``replicas`` (above 1: sharded; at ZeRO-1 they are
    Megatron-core's distributed-optimizer instances) and whether its model calls PyTorch's SDPA
    (``sdpa``), never from the framework's name (``FALLBACK_PROFILES``); where it states its
    ``date`` (:func:`run_date`), the newest stack of that kind that existed then
    (``EARLIER_PROFILES``; the oldest where none did). A sharded run that states ``fp8``
    GEMMs and not ``compiled`` (torch.compile), or its ``distributed_optimizer``, is no FSDP2
    run: ``MEGATRON_SHARDED`` where it accepts the run (:func:`_megatron_sharded`). Where it
    states its ``attention``
    kernel and that profile's models run other kernels only (its ``attention_kernels`` at that
    entry, each list citing the framework's model code), the first of :func:`fallback_order`
    whose models run that kernel (or list none) and whose checks accept the row's ZeRO stage
    and replicas (:func:`_accepts`), else the first that runs the kernel; the first choice
    where none does."""
    from trainsim.catalog.frameworks import framework_entries

    eager = str(attention or "").strip().lower() == EAGER_ATTENTION
    kind, why = _kind(zero_stage, replicas, sdpa or eager)
    if kind == "sdpa" and not sdpa:
        why = "its model runs attention in plain PyTorch ops (eager) and shards nothing"
    megatron = _megatron_sharded(zero_stage, replicas, date, fp8, compiled,
                                 distributed_optimizer) if kind == "sharded" else None
    if megatron is not None:  # a sharded run whose cells say it is no FSDP2 run
        name, version, but = megatron
        why = f"{why}, {but}"
    else:
        stacks = _stacks(kind)
        name = next((p for p in stacks if ran_by(p, date)), stacks[-1])
        if name != stacks[0]:
            why += f", and its date {date} is before " + ", ".join(
                f"{p}'s first entry ({framework_entries(p)[0]})"
                for p in stacks[:stacks.index(name)])
        why = f"{why}: {MECHANISMS[name]}"
        version = entry_at(name, date)
    if attention and not _runs(name, version, attention):
        others = [(p, v) for p, v in fallback_order(name, date)[1:] if _runs(p, v, attention)]
        runs = next((x for x in others if _accepts(*x, zero_stage, replicas)),
                    others[0] if others else None)
        if runs is not None:
            why = f"{why}; {name}'s models run no {attention} attention (attention_kernels): " \
                f"{said(runs[0], zero_stage)}"
            name, version = runs
    return name, version, why


def _runs(profile: str, version: str, attention: str) -> bool:
    """Whether the models of ``profile`` at ``version`` ('' = newest) may run ``attention``:
    its entry lists the kernel among ``attention_kernels``, or lists none."""
    from trainsim.catalog.frameworks import framework_profile

    return framework_profile(profile, version or None).supports(attention) is not False


def _accepts(profile: str, version: str, zero_stage: object, replicas: object) -> bool:
    """Whether the configuration checks of ``profile`` at ``version`` ('' = newest) accept a
    row's stated ``zero_stage`` (a stage it runs at that entry: ``catalog.defaults.
    stage_engines``, e.g. Megatron-core's 3 from 0.12 only) and HSDP ``replicas`` above 1 (its
    ``hybrid_shard`` is not false), as the loader refuses them (``catalog.defaults``); what the
    row does not state is not checked."""
    from trainsim.catalog.defaults import stage_engines
    from trainsim.catalog.frameworks import framework_profile

    def number(value: object) -> float | None:
        try:
            return float(str(value).strip())
        except ValueError:
            return None

    profile_at = framework_profile(profile, version or None)
    stage = number(zero_stage)
    if stage is not None and stage == int(stage) and \
            int(stage) not in stage_engines(profile_at, version or None):
        return False
    reps = number(replicas)
    return not (reps is not None and reps > 1 and profile_at.supports("hybrid_shard") is False)


APEX_ADAM_PROFILE = "nemo"
"""The one profile here whose optimizer is Apex's DistributedFusedAdam (feature
``apex_distributed_adam``), the optimizer whose ``dtype`` a run's ``optimizer_dtype`` sets: NeMo's
launcher recipes, Megatron-core's model and parallelism with Apex's optimizer
(NVIDIA/NeMo@v2.0.0 nemo/collections/nlp/models/language_modeling/megatron_base_model.py
L790-812, nemo.yaml 24.07), tried last by :func:`fallback_order` at the newest of its entries
that runs that optimizer (its 25.02 entry on moved to Megatron-core's own)."""


def fallback_order(first: str, date: str = "") -> tuple[tuple[str, str], ...]:
    """(profile, version: '' for its newest entry) in the order a run on a framework with no
    profile here is tried, the first whose configuration checks accept the run predicting it:
    ``first`` (:func:`fallback_framework`'s choice), then the other ``FALLBACK_PROFILES`` in
    their order (sharded, sdpa, unsharded), each at its newest entry, then ``APEX_ADAM_PROFILE``
    at its newest entry whose optimizer is Apex's DistributedFusedAdam. A run that states its
    ``date`` tries, after ``first``, the other stacks of its kind (``EARLIER_PROFILES``), then
    the other kinds' stacks, each at its entry of that date (:func:`entry_at`) and only those
    that existed then (:func:`ran_by`), Apex's entry too; then, where all of them refuse it,
    the undated order of its kind at the newest entries."""
    from trainsim.catalog.frameworks import framework_entries, framework_profile, released_before

    kind = next(k for k in FALLBACK_PROFILES if first in _stacks(k))
    if date:
        names = [*_stacks(kind), *(p for k in FALLBACK_PROFILES if k != kind
                                   for p in _stacks(k))]
        names = [p for p in names if p != first and ran_by(p, date)]
    else:
        names = [p for p in dict.fromkeys(FALLBACK_PROFILES.values()) if p != first]
    order = [(p, entry_at(p, date)) for p in (first, *names)]
    apex = [v for v in framework_entries(APEX_ADAM_PROFILE)
            if framework_profile(APEX_ADAM_PROFILE, v).supports("apex_distributed_adam")
            and not (date and released_before(APEX_ADAM_PROFILE, date, v))]
    if apex:
        order.append((APEX_ADAM_PROFILE, apex[-1]))
    if date:
        # a run every stack of its date refuses ran a mechanism that came to the stacks here
        # later (InternEvo's 2023 ZeRO-1 groups, in Megatron-core from 2024-11-30): the undated
        # order, each at its newest entry, after them
        order += [x for x in fallback_order(FALLBACK_PROFILES[kind]) if x not in order]
    return tuple(order)


FP8_WEIGHT_RECIPES = ("delayed", "current", "mxfp8")
"""The fp8 recipes whose weights the frameworks built on Megatron-core keep in fp8 (Megatron-core
--fp8-param-gather: TE quantized parameters, gathered in fp8 by the distributed optimizer) in
their recipes: NeMo 2's performance scripts for delayed and current scaling (nemo.yaml 25.04
``fp8_param_gather``) and MXFP8 from 25.07; Megatron-Bridge's bf16_with_fp8_delayed /
current / mxfp8 mixed-precision recipes (megatron-bridge.yaml ``fp8_param_gather``); MLPerf's
NeMo FP8_PARAMS=True (mlperf-nemo.yaml). Blockwise (subchannel) and NVFP4 recipes keep 16-bit
weights there, so nothing is offered for them."""

FALLBACK_KEPT = ("fp8_param_gather", "cpu_offloading_num_layers")
"""Unknowns of a row on a framework with no profile here whose first candidate, its stack's own
default, the tuner keeps wherever the fastest setting of the other cells fits with it
(``validate.training.tune``'s ``kept``, as ``row_unknowns.KEPT_DEFAULTS`` for a named
framework): the other candidates are memory measures the run takes only where that setting
needs them (:func:`fp8_weight_candidates`)."""


def fp8_weight_candidates(row: dict[str, str], profile: object) -> list[bool]:
    """``[False, True]``: the candidates of ``fp8_param_gather`` (weights kept and gathered in
    fp8) for a normalized training row on a framework with no profile here (``FALLBACK_MARK``)
    that runs fp8 GEMMs under a recipe of ``FP8_WEIGHT_RECIPES`` with a distributed optimizer
    or none stated (ZeRO-2/3 rows shard by other engines), leaves the cell empty, and is
    predicted with a stack whose profile names no such default for the recipe but whose
    distributed optimizer has the fp8-parameter path at that entry (feature
    ``fp8_param_amax_all_reduce``: Megatron-core from core_v0.9.0, whose
    megatron/training/arguments.py adds --fp8-param-gather, store_true, L724, "only supported
    with distributed optimizer" L316); else ``[]``. The stack's 16-bit weights come first and
    are kept wherever they fit (``FALLBACK_KEPT``): whether the unknown framework kept its
    weights in fp8 is not known (the frameworks built on that stack do in their fp8 recipes,
    ``FP8_WEIGHT_RECIPES``; JAX's and torchao's keep 16-bit master weights and cast them), so
    fp8 weights are what a run takes where the setting the tuner finds fastest would not fit
    without them, as the frameworks' recipes take them to fit (Megatron-Bridge's GB300 Llama
    rows run without recomputation only with them)."""
    def cell(name: str) -> str:
        return str(row.get(name) or "").strip().lower()

    if profile is None or not read_by_fallback(row) or cell("dtype") != "fp8" or \
            cell("fp8_param_gather") or cell("zero_stage") in ("2", "3") or \
            cell("distributed_optimizer") in ("0", "false"):
        return []
    recipe = cell("fp8_recipe") or str(profile.defaults.get("fp8_recipe") or "delayed")
    if recipe not in FP8_WEIGHT_RECIPES or profile.fp8_param_gather(recipe) is not None or \
            profile.supports("fp8_param_amax_all_reduce") is not True:
        return []
    return [False, True]


FALLBACK_MARK = "_fallback_of"
"""The key ``validate.vocab`` writes into a normalized training row whose framework has no
profile here (its value: that framework's name), read by :func:`read_by_fallback`; no CSV
column is read into it (``normalized_training_row`` drops one that a file carries)."""


def read_by_fallback(row: dict[str, str]) -> bool:
    """Whether a normalized training row is on a framework with no profile here
    (``FALLBACK_MARK``)."""
    return bool(str(row.get(FALLBACK_MARK) or "").strip())


def keeps_stack_defaults(row: dict[str, str]) -> bool:
    """Whether the tuner keeps a normalized training row's stack defaults among its candidates
    wherever they fit (``validate.row_unknowns.KEPT_DEFAULTS``: the gradient-reduce dtype);
    not for a row on a framework with no profile here that runs fp8 GEMMs (dtype ``fp8``,
    any recipe). A default kept so is the named framework's own practice (Megatron-LM's --bf16
    accumulates and reduces gradients in fp32 unless --grad-reduce-in-bf16 is passed,
    megatron/training/arguments.py validate_args at core_v0.12.0 L582-594), which an unknown
    framework's is not known to be; what the frameworks built on that stack did splits by the
    run's precision: their fp8 recipes reduce in bf16 (NVIDIA/NeMo@v2.3.0
    scripts/performance/utils.py set_primary_perf_configs L351 ``grad_reduce_in_fp32 = False``
    under fp8; every NeMo-Framework-Launcher 24.07 fp8 example passes grad_sync_dtype bf16,
    nemo.yaml; MLPerf's NeMo, mlperf-nemo.yaml; Megatron-LM's own FP8 example
    examples/llama/train_llama3_8b_h100_fp8.sh @ bf6e99859f L95 --grad-reduce-in-bf16), their
    bf16 runs keep fp32 (NeMo 2 recipes/precision/mixed_precision.py bf16_mixed
    grad_reduce_in_fp32=True). So an fp8 run's dtype is the authors' choice, the fastest that
    fits, as for a row that names no framework (``validate.unnamed``), among what the stack
    offered at the row's entry (``validate.row_unknowns.bf16_reduce``: the bf16 candidate where
    the profile has the flag, Megatron-core from core_v0.12.0; else its dtype stands); a 16-bit
    run keeps the stack's fp32 wherever it fits."""
    if not read_by_fallback(row):
        return True
    return str(row.get("dtype") or "bf16").strip().lower() != "fp8"


def offload_offered(row: dict[str, str], profile: object) -> bool:
    """Whether the tuner offers activation CPU offloading (``cpu_offloading_num_layers``) to a
    normalized training row on a framework with no profile here (``FALLBACK_MARK``): its stack
    has the mechanism but no recipe of its own says which runs used it (feature
    ``cpu_offloading`` stated null: Megatron-core from core_v0.5.0,
    megatron/core/transformer/transformer_config.py L181-193). No offload comes first and is
    kept wherever the fastest setting of the other cells fits without it (``FALLBACK_KEPT``):
    the frameworks built on that stack offload where their recipes need memory
    (Megatron-Bridge's GB200 / GB300 Llama 3 70B recipes 20-40 layers, megatron-bridge.yaml
    ``cpu_offloading``), as a run takes fp8 weights (:func:`fp8_weight_candidates`)."""
    if profile is None or not read_by_fallback(row):
        return False
    features = getattr(profile, "features", {})
    return "cpu_offloading" in features and features["cpu_offloading"] is None
