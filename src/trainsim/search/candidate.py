"""One point of a search's design space and the group it is checked by: :class:`Base` (what
a search keeps fixed), :class:`MemoryKey` (everything memory depends on) and :class:`Candidate`
(a memory group with its overlap switches), and how each becomes a ``RunConfig``.
``search.space`` enumerates them."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
from dataclasses import dataclass

from trainsim.catalog.framework_rules import flex_backend_runs, uneven_layout, uneven_split
from trainsim.catalog.frameworks import framework_profile, framework_supports
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.config.validity import dispatcher_runs_on
from trainsim.search.rules import profile_value

ZERO_LABELS = {0: "none", 1: "distopt", 2: "zero2", 3: "zero3"}


def zero_label(zero: int, zero1_as_stage: bool = False) -> str:
    """A sharding level's label: ZeRO-1 is ``zero1`` where the run writes it as
    ``zero_stage: 1`` (``Base.zero1_as_stage``, nanotron), Megatron's ``distopt`` else."""
    return "zero1" if zero1_as_stage and zero == 1 else ZERO_LABELS[zero]
"""Optimizer sharding: 1 is Megatron's distributed optimizer (= ZeRO-1)."""


_TRAININGS: dict[tuple[int, int], tuple[TrainingConfig, TrainingConfig]] = {}
"""(id of a base's training config, micro-batch) -> (that config, the one with the micro-batch)."""
_CLUSTERS: dict[tuple[int, int], tuple[ClusterConfig, ClusterConfig]] = {}
"""(id of a base's cluster, GPU count) -> (that cluster, the one with the GPU count)."""
PARALLEL_CACHE: dict[tuple[tuple[str, object], ...], ParallelConfig] = {}
"""The fields of a ParallelConfig built by ``Candidate.to_config`` -> that config."""
_PARALLELS_KEPT = 8192  # ~3.5 kB each with its key


_PARALLEL_OF: dict[tuple, tuple[Base, ParallelConfig, bool]] = {}
"""A candidate's fields but its GPU count and micro batch -> (the base it was built for, its
parallel config, whether a RunConfig of them was built: its field checks passed, so the other
GPU counts' and micro batches' skip them, ``RunConfig.fields_checked``): ``Candidate.to_config``'s
lookup before :func:`_parallel`'s."""


def drop_parallels() -> None:
    """Forget the parallel configs :func:`_parallel` kept (a search's end in its main process,
    a new search's first batch in a worker: ``search.core``, ``search.evaluation``), so that
    they live no longer than the search that built them."""
    PARALLEL_CACHE.clear()
    _PARALLEL_OF.clear()


_PLACED = ("pipeline_model_parallel_layout", "decoder_first_pipeline_num_layers",
           "decoder_last_pipeline_num_layers")
"""Parallel fields that place the layers on the pipeline stages (a layout fixed with --set)."""


def _parallel(fields: dict[str, object], framework: tuple[str, str | None] | None = None
              ) -> ParallelConfig:
    """The parallel config of ``fields`` as the run's ``framework`` (name, version) builds it
    (:func:`framework_parallel`), one object per search for equal fields: the memory groups
    of a search that differ only in the micro-batch (a training field) have the same parallel
    config, and its construction and checks were a tenth of the 22B search's main process. A
    config is frozen and read by value (nothing keys on its identity); an invalid one raises
    each time, as before."""
    key = (framework, *fields.items())
    try:
        hit = PARALLEL_CACHE.get(key)
    except TypeError:  # a fixed field's value that cannot be hashed: built each time
        return framework_parallel(fields, framework)
    if hit is None:
        if len(PARALLEL_CACHE) >= _PARALLELS_KEPT:
            PARALLEL_CACHE.clear()
        hit = PARALLEL_CACHE[key] = framework_parallel(fields, framework)
    return hit


def framework_parallel(fields: dict[str, object], framework: tuple[str, str | None] | None
                       ) -> ParallelConfig:
    """``ParallelConfig(**fields)`` after the framework step of the config loader
    (``catalog.defaults.apply_framework``, what ``trainsim simulate`` runs on a config's
    parallel section): the profile's defaults the fields leave out (DDP bucket layout,
    ZeRO-3 gathers and reductions, micro-batch group order, CP communication, ...) filled
    in, and what the framework lacks (sequence parallelism, virtual stages, TP overlap, ...)
    refused with the loader's message; so a candidate is simulated as the same config given
    to ``simulate`` is. Without a framework: the fields alone, as the loader builds them."""
    if framework is None:
        return ParallelConfig(**fields)  # type: ignore[arg-type]
    from trainsim.catalog.defaults import apply_framework
    from trainsim.config import build

    raw = dict(fields)
    name, version = framework
    apply_framework(raw, {"framework": name} if version is None else
                    {"framework": name, "framework_version": version})
    return build(ParallelConfig, raw, "parallel")


@dataclass(frozen=True)
class Base:
    """What a search keeps fixed: the model, the training batch and the hardware.

    ``cluster.num_gpus`` is replaced by each searched GPU count.
    """

    model: ModelConfig
    training: TrainingConfig
    cluster: ClusterConfig
    fixed: tuple[tuple[str, object], ...] = ()
    """Parallel fields the user fixed (``--set parallel.X=V``): every candidate has them, and a
    searched dimension they name takes only that value (``SearchSpace.fixed_by``)."""
    given: str = ""
    """The run config the search was given less its parallel section, as JSON text: the
    model, training (the real global batch, no micro batch) and cluster (no GPU count) as
    --set left them, the framework included. A result's config is this, extended with its
    micro batch, GPU count and ``parallel`` section (``SearchResult.to_dict``'s ``base``);
    empty where the base was built in code."""

    @property
    def layout_rule(self) -> str:
        """The layout rule of the run's framework for layers that do not split evenly."""
        return uneven_layout(self.training.framework, self.training.framework_version,
                             bool(self.model.mtp_num_layers))

    @functools.cached_property
    def framework(self) -> tuple[str, str | None] | None:
        """(name, version) of the run's framework, None where it names none: whose loader step
        builds each candidate's parallel config (:func:`framework_parallel`)."""
        t = self.training
        return (t.framework, t.framework_version) if t.framework else None

    def lacks(self, feature: str) -> bool:
        """Whether the run's framework profile says it has no ``feature`` (``supports`` is
        False, not merely unrecorded): what the config loader refuses a field for
        (``catalog.defaults.apply_framework``), so the search never offers it."""
        t = self.training
        return bool(t.framework) and \
            framework_profile(t.framework, t.framework_version).supports(feature) is False

    @functools.cached_property
    def zero_runs(self) -> tuple[int, ...] | None:
        """The ZeRO stages the run's framework runs at its version where fewer than its
        engines run (``catalog.defaults.zero_stages_run``: the profile's ``zero_stages``,
        nanotron 0 and 1, less the stages released after the version), which the loader
        refuses others of (``catalog.defaults.zero_engine``); None: every stage its engines
        run."""
        from trainsim.catalog.defaults import zero_stages_run

        t = self.training
        if not t.framework:
            return None
        return zero_stages_run(framework_profile(t.framework, t.framework_version),
                               t.framework_version)

    @property
    def zero1_as_stage(self) -> bool:
        """Whether ZeRO-1 is written ``zero_stage: 1`` (the framework has no distributed
        optimizer switch, ``Base.lacks``, but lists stage 1 among those it runs: nanotron's
        ZeroDistributedOptimizer) rather than Megatron's ``zero_stage: 0`` with
        ``distributed_optimizer: true``."""
        t = self.training
        if not t.framework:
            return False
        from trainsim.catalog.defaults import zero_stages_run

        # the stages the profile lists, whatever the version (a release gate is no layout)
        runs = zero_stages_run(framework_profile(t.framework, t.framework_version))
        return runs is not None and 1 in runs and self.lacks("distributed_optimizer")

    @functools.cached_property
    def overlap_zero(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """(switch, the ZeRO stages at which the run's framework overlaps it) for each
        data-parallel overlap switch its profile limits (``catalog.defaults.overlap_stages``:
        nanotron's gradient reduction at 0 only, its parameter gather at none)."""
        t = self.training
        if not t.framework:
            return ()
        from trainsim.catalog.defaults import OVERLAP_ACTS, overlap_stages

        profile = framework_profile(t.framework, t.framework_version)
        limits = ((k, overlap_stages(profile, k)) for k in OVERLAP_ACTS)
        return tuple((k, v) for k, v in limits if v is not None)

    @property
    def sends_block_alone(self) -> bool:
        """Whether the run's framework sends blocking in a pipeline without interleaving
        whatever overlap_p2p_comm says (profile feature ``p2p_overlap_interleaved_only``):
        the flag ``SearchSpace.variants`` takes, the same for the search and for anything
        that counts its candidates beforehand (the service's ``max_candidates``)."""
        return bool(framework_supports(self.training.framework, self.training.framework_version,
                                       "p2p_overlap_interleaved_only"))

    @property
    def kv_heads_split(self) -> bool:
        """Whether tp must divide the KV heads (--set, else the profile's ``kv_heads_split``)."""
        return bool(dict(self.fixed).get("kv_heads_split", framework_supports(
            self.training.framework, self.training.framework_version, "kv_heads_split")))

    @functools.cached_property
    def data_parallel_impl(self) -> str | None:
        """The data-parallel engine: --set, else the profile's default (what simulate builds)."""
        return dict(self.fixed).get("data_parallel_impl") or profile_value(  # type: ignore
            self.training.framework, self.training.framework_version, "data_parallel_impl")

    @functools.cached_property
    def zero_engines(self) -> dict[int, str] | None:
        """The engine of each ZeRO stage the framework runs, where its profile runs some with
        another engine than its default (``zero_stage_engines``: a plain PyTorch loop, DDP at
        0 and FSDP at 2 and 3, ``catalog.defaults.stage_engines``), as the loader picks it for
        a run stating that stage; None where --set names the engine (or a stage, whose engine
        ``build_base`` fixed) or the profile has one engine."""
        t = self.training
        if not t.framework or "data_parallel_impl" in dict(self.fixed):
            return None
        from trainsim.catalog.defaults import stage_engines

        profile = framework_profile(t.framework, t.framework_version)
        if not profile.defaults.get("zero_stage_engines"):
            return None
        return stage_engines(profile)

    def engine_for(self, zero: int) -> str | None:
        """The data-parallel engine a candidate at ZeRO stage ``zero`` runs with
        (:attr:`zero_engines`, else :attr:`data_parallel_impl`)."""
        engines = self.zero_engines
        if engines is not None and zero in engines:
            return engines[zero]
        return self.data_parallel_impl

    @functools.cached_property
    def flex_two_ranks(self) -> tuple[str, ...]:
        """Dispatchers needing ep x etp >= 2: --set, else feature flex_dispatchers_two_ranks."""
        fixed = dict(self.fixed)
        if "flex_two_ranks" in fixed:  # --set parallel.flex_two_ranks=[] switches the rule off
            return tuple(fixed["flex_two_ranks"] or ())
        return tuple(profile_value(self.training.framework, self.training.framework_version,
                                   "flex_dispatchers_two_ranks") or ())  # type: ignore

    @functools.cached_property
    def cp_te_ring(self) -> tuple[str, ...]:
        """Attention kernels whose p2p CP is Transformer Engine's ring: --set, else the
        profile's ``cp_te_ring`` (what simulate builds: ``catalog.defaults``)."""
        fixed = dict(self.fixed)
        if "cp_te_ring" in fixed:
            return tuple(fixed["cp_te_ring"] or ())  # type: ignore[arg-type]
        return tuple(profile_value(self.training.framework, self.training.framework_version,
                                   "cp_te_ring") or ())  # type: ignore

    @functools.cached_property
    def hybridep(self) -> bool:
        """Whether the search tries the HybridEP dispatcher: the run's framework offers it
        (profile ``moe_dispatchers``: Megatron-core from core_v0.16.0, Megatron-Bridge from
        v0.2.0; not for a run that names no framework) and the GPU runs its kernels
        (``config.validity.dispatcher_runs_on``: sm_90 or newer) and the framework's release
        accepts it there (``catalog.framework_rules.flex_backend_runs``)."""
        t, g = self.training, self.cluster.gpu
        return framework_supports(t.framework, t.framework_version, "hybridep") and \
            dispatcher_runs_on("hybridep", g.sm_arch) and \
            flex_backend_runs(t.framework, t.framework_version, "hybridep", g.name, g.sm_arch)

    @functools.cached_property
    def deepep(self) -> bool:
        """Whether the search may try DeepEP where the experts leave the node: the framework's
        release accepts it on this GPU (``catalog.framework_rules.flex_backend_runs``: not on
        GB200 / GB300 in Megatron-Bridge)."""
        t, g = self.training, self.cluster.gpu
        return flex_backend_runs(t.framework, t.framework_version, "deepep", g.name, g.sm_arch)

    def cluster_for(self, num_gpus: int) -> ClusterConfig:
        """``cluster`` with this GPU count, one object per count and process: the shared
        prices (``pricing.shared``) are kept by the cluster's identity."""
        if num_gpus == self.cluster.num_gpus:
            return self.cluster
        key = (id(self.cluster), num_gpus)
        hit = _CLUSTERS.get(key)
        if hit is None or hit[0] is not self.cluster:
            if len(_CLUSTERS) > 256:
                _CLUSTERS.clear()
            hit = _CLUSTERS[key] = (self.cluster, self.cluster.with_gpus(num_gpus))
        return hit[1]

    def training_for(self, micro_batch: int) -> TrainingConfig:
        """``training`` with this micro-batch size, built once per process: a search makes a
        candidate's config ~26k times (the 22B one), and this replace's checks were 40 % of
        it."""
        key = (id(self.training), micro_batch)
        hit = _TRAININGS.get(key)
        if hit is None or hit[0] is not self.training:
            if len(_TRAININGS) > 256:
                _TRAININGS.clear()
            hit = _TRAININGS[key] = (self.training, dataclasses.replace(
                self.training, micro_batch_size=micro_batch))
        return hit[1]

    @classmethod
    def of(cls, cfg: RunConfig) -> Base:
        return cls(cfg.model, cfg.training, cfg.cluster)


def _kept_hash(self: MemoryKey | Candidate) -> int:
    """The dataclass's own hash (of its fields' tuple), computed once per object: a search
    hashes its memory keys and candidates ~10^6 times (dict and heap bookkeeping, a twentieth
    of its main process). Not pickled (:func:`_unkept`: a string's hash differs between
    processes), so a copy computes its own."""
    try:  # an instance attribute read (no call, no lookup of __dict__ by name): ~1/5 faster
        return self._hash  # type: ignore[union-attr]
    except AttributeError:
        h = self.__dict__["_hash"] = hash(self._fields(self))  # type: ignore[union-attr]
        return h


def _unkept(self: MemoryKey | Candidate) -> dict[str, object]:
    state = dict(self.__dict__)
    state.pop("_hash", None)
    return state


@dataclass(frozen=True, order=True)
class MemoryKey:
    """The fields of a candidate that memory depends on (all but the overlap switches)."""

    num_gpus: int
    tp: int
    pp: int
    cp: int
    vpp: int
    micro_batch: int
    recompute: str
    sequence_parallel: bool
    zero: int
    """0 none, 1 distributed optimizer (ZeRO-1), 2 ZeRO-2, 3 ZeRO-3."""
    ep: int = 1
    etp: int = 1
    dispatcher: str = "alltoall"
    schedule: str = ""
    """parallel.pipeline_schedule; "" = Megatron's 1F1B (interleaved when vpp > 1)."""

    __hash__ = _kept_hash
    __getstate__ = _unkept

    @property
    def dp(self) -> int:
        return self.num_gpus // (self.tp * self.pp * self.cp)


@dataclass(frozen=True, order=True)
class Candidate:
    """One configuration of the search."""

    mem: MemoryKey
    overlap_grad_reduce: bool = False
    overlap_param_gather: bool = False
    tp_comm_overlap: bool = False
    overlap_p2p_comm: bool = False
    moe_overlap_ep_comm: bool = False

    __hash__ = _kept_hash
    __getstate__ = _unkept

    @property
    def layout(self) -> tuple[int, int, int, int, int, int]:
        """(GPUs, tp, pp, cp, vpp, micro batch): the distinct layouts a ranking shows."""
        m = self.mem
        return (m.num_gpus, m.tp, m.pp, m.cp, m.vpp, m.micro_batch)

    def parallel_fields(self, zero1_as_stage: bool = False) -> dict[str, object]:
        """The candidate's parallel fields; ZeRO-1 as Megatron writes it (zero_stage 0 with
        the distributed optimizer), or as ``zero_stage: 1`` where ``zero1_as_stage``
        (``Base.zero1_as_stage``: a framework without Megatron's switch)."""
        m = self.mem
        as_stage = zero1_as_stage and m.zero == 1
        return {"tensor_model_parallel_size": m.tp, "pipeline_model_parallel_size": m.pp,
                "context_parallel_size": m.cp,
                "virtual_pipeline_model_parallel_size": m.vpp if m.vpp > 1 else None,
                "sequence_parallel": m.sequence_parallel, "recompute": m.recompute,
                "zero_stage": 0 if m.zero == 1 and not as_stage else m.zero,
                "distributed_optimizer": m.zero == 1 and not as_stage,
                "overlap_grad_reduce": self.overlap_grad_reduce,
                "overlap_param_gather": self.overlap_param_gather,
                "tp_comm_overlap": self.tp_comm_overlap,
                "overlap_p2p_comm": self.overlap_p2p_comm,
                "expert_model_parallel_size": m.ep,
                "expert_tensor_parallel_size": m.etp if m.etp > 1 else None,
                "moe_token_dispatcher_type": m.dispatcher,
                "pipeline_schedule": m.schedule or None,
                "moe_overlap_ep_comm": self.moe_overlap_ep_comm}

    def to_config(self, base: Base) -> RunConfig:
        """The RunConfig of this candidate (ConfigError if the combination is invalid): its
        fields over the user's fixed ones; layers that do not split evenly over the stages are
        placed by the framework's uneven layout (``uneven_layout``: front-loaded for NeMo
        Automodel, else Megatron-core's balanced one) unless a layout is fixed."""
        m = self.mem
        # the parallel config reads neither the GPU count nor the micro batch: one lookup for
        # the memory groups that differ only in those (the 22B search's 13,248 groups have
        # 3,416 parallel configs; the fields below were a third of building a group's config)
        key = (m.tp, m.pp, m.cp, m.vpp, m.recompute, m.sequence_parallel, m.zero, m.ep, m.etp,
               m.dispatcher, m.schedule, self.overlap_grad_reduce, self.overlap_param_gather,
               self.tp_comm_overlap, self.overlap_p2p_comm, self.moe_overlap_ep_comm)
        hit = _PARALLEL_OF.get(key)
        if hit is None or hit[0] is not base:
            if len(_PARALLEL_OF) >= _PARALLELS_KEPT:
                _PARALLEL_OF.clear()
            hit = _PARALLEL_OF[key] = (base, self._parallel_config(base), False)
        training, cluster = base.training_for(m.micro_batch), base.cluster_for(m.num_gpus)
        if hit[2]:  # a config of this parallel one and base built: its field checks passed
            return RunConfig.fields_checked(base.model, hit[1], training, cluster)
        cfg = RunConfig(base.model, hit[1], training, cluster)
        _PARALLEL_OF[key] = (base, hit[1], True)
        return cfg

    def _parallel_config(self, base: Base) -> ParallelConfig:
        """:meth:`to_config`'s parallel config (ConfigError if invalid)."""
        fields = {**dict(base.fixed), **self.parallel_fields(base.zero1_as_stage)}
        impl = base.engine_for(self.mem.zero)  # the stage's engine, as simulate builds it
        if impl is not None:
            fields.setdefault("data_parallel_impl", impl)
        if base.cp_te_ring:
            fields.setdefault("cp_te_ring", base.cp_te_ring)
        rule = self.placed_layout(base)
        if rule is not None:
            fields["pipeline_model_parallel_layout"] = rule
        return _parallel(fields, base.framework)

    def placed_layout(self, base: Base) -> str | None:
        """The framework's uneven layout rule (``uneven_layout``) where the search places this
        candidate's layers by it: they do not split evenly over its (virtual) stages and no
        layout is fixed; else None."""
        fixed = dict(base.fixed)
        if any(fixed.get(k) for k in _PLACED):
            return None
        rule = base.layout_rule
        return rule if uneven_split(rule, base.model.num_layers, self.mem.pp, self.mem.vpp) \
            else None

    def run_layout(self, base: Base) -> str | None:
        """The layout this candidate's layers run by: one fixed with --set (as written there:
        a layout string, or ``first:N,last:M`` for the decoder fields), else the rule the
        search placed them by (:meth:`placed_layout`); None where they split evenly."""
        fixed = dict(base.fixed)
        if fixed.get("pipeline_model_parallel_layout"):
            return str(fixed["pipeline_model_parallel_layout"])
        ends = [f"{end}:{fixed[f'decoder_{end}_pipeline_num_layers']}" for end in ("first", "last")
                if fixed.get(f"decoder_{end}_pipeline_num_layers") is not None]
        return ",".join(ends) if ends else self.placed_layout(base)

    def simulate_parallel(self, base: Base) -> dict[str, object]:
        """The parallel section of the config a user gives ``simulate`` for this candidate:
        the --set fields, the candidate's own (those it leaves unset left out) and the layout
        where the search placed the layers unevenly (:meth:`placed_layout`); the loader fills
        the framework's defaults itself, as :meth:`to_config`'s framework step does."""
        out = {**dict(base.fixed),
               **{k: v for k, v in self.parallel_fields(base.zero1_as_stage).items()
                  if v is not None}}
        rule = self.placed_layout(base)
        if rule is not None:
            out["pipeline_model_parallel_layout"] = rule
        return out

    def label(self, zero1_as_stage: bool = False) -> str:
        m = self.mem
        parts = [f"TP{m.tp}", f"PP{m.pp}"] + ([f"VPP{m.vpp}"] if m.vpp > 1 else [])
        parts += ([f"CP{m.cp}"] if m.cp > 1 else []) + [f"DP{m.dp}", f"mb{m.micro_batch}"]
        if m.sequence_parallel:
            parts.append("SP")
        if m.recompute != "none":
            parts.append(f"rc={m.recompute}")
        if m.zero:
            parts.append(zero_label(m.zero, zero1_as_stage))
        if m.ep > 1:
            parts.append(f"EP{m.ep}" + (f" ETP{m.etp}" if m.etp > 1 else "") + f" {m.dispatcher}")
        if m.schedule:
            parts.append(m.schedule)
        flags = [s for s, on in (("grad", self.overlap_grad_reduce),
                                 ("param", self.overlap_param_gather),
                                 ("tp", self.tp_comm_overlap), ("p2p", self.overlap_p2p_comm),
                                 ("ep", self.moe_overlap_ep_comm)) if on]
        if flags:
            parts.append("ov:" + ",".join(flags))
        return " ".join(parts)

    def to_dict(self, zero1_as_stage: bool = False) -> dict[str, object]:
        m = self.mem
        return {"num_gpus": m.num_gpus, "tp": m.tp, "pp": m.pp, "cp": m.cp, "dp": m.dp,
                "vpp": m.vpp, "micro_batch_size": m.micro_batch, "recompute": m.recompute,
                "sequence_parallel": m.sequence_parallel, "optimizer_sharding": zero_label(m.zero, zero1_as_stage),
                "overlap_grad_reduce": self.overlap_grad_reduce,
                "overlap_param_gather": self.overlap_param_gather,
                "tp_comm_overlap": self.tp_comm_overlap, "overlap_p2p_comm": self.overlap_p2p_comm,
                "ep": m.ep, "etp": m.etp, "moe_token_dispatcher_type": m.dispatcher,
                "pipeline_schedule": m.schedule or None,
                "moe_overlap_ep_comm": self.moe_overlap_ep_comm}

    @classmethod
    def from_config(cls, cfg: RunConfig) -> Candidate:
        p = cfg.parallel
        zero = p.effective_zero_stage
        key = MemoryKey(cfg.cluster.num_gpus, p.tp, p.pp, p.cp, p.vpp, cfg.training.micro_batch_size,
                        p.recompute, p.sequence_parallel, zero, p.ep, p.etp,
                        p.moe_token_dispatcher_type, p.pipeline_schedule or "")
        return cls(key, p.overlap_grad_reduce, p.overlap_param_gather, p.tp_comm_overlap,
                   p.overlap_p2p_comm, p.moe_overlap_ep_comm)


for _cls in (MemoryKey, Candidate):  # what the dataclass's own __hash__ would hash
    _cls._fields = operator.attrgetter(*(f.name for f in dataclasses.fields(_cls)))  # type: ignore[attr-defined]
CANDIDATE_FIELDS = tuple(f.name for f in dataclasses.fields(Candidate))
new_bare = object.__new__
"""A Candidate without ``__init__``'s checks (``SearchSpace.variants`` fills its ``__dict__``)."""


def candidate(mem: MemoryKey, overlap_grad_reduce: bool = False,
              overlap_param_gather: bool = False, tp_comm_overlap: bool = False,
              overlap_p2p_comm: bool = False, moe_overlap_ep_comm: bool = False) -> Candidate:
    """``Candidate(...)`` built with its fields stored in its ``__dict__`` one by one, not by
    the frozen ``__init__`` (an ``object.__setattr__`` call per field; a dict ``update`` from
    a ``zip`` costs as much): 0.9-1.0 us against 2.3-2.5 us (timeit, 3.11), for the search's
    leads, class leads and variants. The same object in every field, so equal, hashed,
    ordered and pickled as the one ``__init__`` builds."""
    c = new_bare(Candidate)
    d = c.__dict__
    d["mem"] = mem
    d["overlap_grad_reduce"] = overlap_grad_reduce
    d["overlap_param_gather"] = overlap_param_gather
    d["tp_comm_overlap"] = tp_comm_overlap
    d["overlap_p2p_comm"] = overlap_p2p_comm
    d["moe_overlap_ep_comm"] = moe_overlap_ep_comm
    return c


_KEY_FIELDS = tuple(f.name for f in dataclasses.fields(MemoryKey))


def memory_key(num_gpus: int, tp: int, pp: int, cp: int, vpp: int, micro_batch: int,
               recompute: str, sequence_parallel: bool, zero: int, ep: int, etp: int,
               dispatcher: str, schedule: str) -> MemoryKey:
    """``MemoryKey(...)`` of every field, built as :func:`candidate` builds a candidate (the
    search enumerates one per memory group: 13,248 for the 22B search)."""
    k = new_bare(MemoryKey)
    k.__dict__.update(zip(_KEY_FIELDS, (num_gpus, tp, pp, cp, vpp, micro_batch, recompute,
                                        sequence_parallel, zero, ep, etp, dispatcher, schedule)))
    return k


assert not hasattr(Candidate, "__post_init__")  # SearchSpace.variants builds it without __init__
assert not hasattr(MemoryKey, "__post_init__") and len(_KEY_FIELDS) == 13  # memory_key, as it
assert CANDIDATE_FIELDS == tuple(inspect.signature(candidate).parameters)  # candidate, as it


__all__ = ["CANDIDATE_FIELDS", "PARALLEL_CACHE", "ZERO_LABELS", "Base", "Candidate", "MemoryKey",
           "candidate", "drop_parallels", "memory_key", "new_bare", "zero_label"]
