"""The design space of a search: which parallel layouts and switches are candidates.

A :class:`Candidate` is one point: the parallel sizes (tp, pp, cp, vpp; dp is derived), the
micro-batch, recompute, sequence parallelism, optimizer sharding, for mixture-of-experts models
expert parallelism (EP, expert TP, the token dispatcher) and the pipeline schedule, and the
overlap switches (expert all-to-all overlap among them). Only *canonical* candidates are enumerated: a switch that cannot change anything
(sequence parallel without TP, p2p overlap without PP, gradient overlap or ZeRO without data
parallelism, parameter-gather overlap without a sharded optimizer) takes one value, so no two
candidates describe the same run.

Memory depends on everything but the overlap switches, so the space is walked as memory
groups (:class:`MemoryKey`) first, each checked once, then expanded into switch variants.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from trainsim.catalog.frameworks import (
    framework_supports,
    sends_block,
    uneven_layout,
    uneven_split,
)
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.config.validity import dispatcher_runs_on
from trainsim.errors import ConfigError
from trainsim.search.rules import (
    chunks_fit,
    dispatcher_fits,
    divisors,
    powers_of_two,
    profile_value,
    schedules_fit,
    tp_fits,
    unsharded_zero,
    zeros_fit,
)

ZERO_LABELS = {0: "none", 1: "distopt", 2: "zero2", 3: "zero3"}
"""Optimizer sharding: 1 is Megatron's distributed optimizer (= ZeRO-1)."""
RECOMPUTE = ("none", "selective", "full")
OverlapMode = Literal["search", "on", "off"]


_TRAININGS: dict[tuple[int, int], tuple[TrainingConfig, TrainingConfig]] = {}
"""(id of a base's training config, micro-batch) -> (that config, the one with the micro-batch)."""
_CLUSTERS: dict[tuple[int, int], tuple[ClusterConfig, ClusterConfig]] = {}
"""(id of a base's cluster, GPU count) -> (that cluster, the one with the GPU count)."""
_PARALLELS: dict[tuple[tuple[str, object], ...], ParallelConfig] = {}
"""The fields of a ParallelConfig built by ``Candidate.to_config`` -> that config."""
_PARALLELS_KEPT = 8192  # ~3.5 kB each with its key


def drop_parallels() -> None:
    """Forget the parallel configs :func:`_parallel` kept (a search's end in its main process,
    a new search's first batch in a worker: ``search.core``, ``search.evaluation``), so that
    they live no longer than the search that built them."""
    _PARALLELS.clear()


def _parallel(fields: dict[str, object]) -> ParallelConfig:
    """``ParallelConfig(**fields)``, one object per search for equal fields: the memory groups
    of a search that differ only in the micro-batch (a training field) have the same parallel
    config, and its construction and checks were a tenth of the 22B search's main process. A
    config is frozen and read by value (nothing keys on its identity); an invalid one raises
    each time, as before."""
    key = tuple(fields.items())
    try:
        hit = _PARALLELS.get(key)
    except TypeError:  # a fixed field's value that cannot be hashed: built each time
        return ParallelConfig(**fields)  # type: ignore[arg-type]
    if hit is None:
        if len(_PARALLELS) >= _PARALLELS_KEPT:
            _PARALLELS.clear()
        hit = _PARALLELS[key] = ParallelConfig(**fields)  # type: ignore[arg-type]
    return hit


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

    @property
    def layout_rule(self) -> str:
        """The layout rule of the run's framework for layers that do not split evenly."""
        return uneven_layout(self.training.framework, self.training.framework_version)

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
        (``config.validity.dispatcher_runs_on``: sm_90 or newer)."""
        return framework_supports(self.training.framework, self.training.framework_version,
                                  "hybridep") and \
            dispatcher_runs_on("hybridep", self.cluster.gpu.sm_arch)

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
            hit = _CLUSTERS[key] = (self.cluster, dataclasses.replace(self.cluster,
                                                                      num_gpus=num_gpus))
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
    d = self.__dict__
    h = d.get("_hash")
    if h is None:
        h = d["_hash"] = hash(self._fields(self))  # type: ignore[union-attr]
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

    def parallel_fields(self) -> dict[str, object]:
        m = self.mem
        return {"tensor_model_parallel_size": m.tp, "pipeline_model_parallel_size": m.pp,
                "context_parallel_size": m.cp,
                "virtual_pipeline_model_parallel_size": m.vpp if m.vpp > 1 else None,
                "sequence_parallel": m.sequence_parallel, "recompute": m.recompute,
                "zero_stage": 0 if m.zero == 1 else m.zero,
                "distributed_optimizer": m.zero == 1,
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
        fields = {**dict(base.fixed), **self.parallel_fields()}
        impl = base.data_parallel_impl  # the profile's engine, as simulate builds it
        if impl is not None:
            fields.setdefault("data_parallel_impl", impl)
        if base.cp_te_ring:
            fields.setdefault("cp_te_ring", base.cp_te_ring)
        placed = ("pipeline_model_parallel_layout", "decoder_first_pipeline_num_layers",
                  "decoder_last_pipeline_num_layers")
        rule = base.layout_rule
        if uneven_split(rule, base.model.num_layers, self.mem.pp, self.mem.vpp) and \
                not any(fields.get(k) for k in placed):
            fields["pipeline_model_parallel_layout"] = rule
        return RunConfig(base.model, _parallel(fields),
                         base.training_for(self.mem.micro_batch),
                         base.cluster_for(self.mem.num_gpus))

    def label(self) -> str:
        m = self.mem
        parts = [f"TP{m.tp}", f"PP{m.pp}"] + ([f"VPP{m.vpp}"] if m.vpp > 1 else [])
        parts += ([f"CP{m.cp}"] if m.cp > 1 else []) + [f"DP{m.dp}", f"mb{m.micro_batch}"]
        if m.sequence_parallel:
            parts.append("SP")
        if m.recompute != "none":
            parts.append(f"rc={m.recompute}")
        if m.zero:
            parts.append(ZERO_LABELS[m.zero])
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

    def to_dict(self) -> dict[str, object]:
        m = self.mem
        return {"num_gpus": m.num_gpus, "tp": m.tp, "pp": m.pp, "cp": m.cp, "dp": m.dp,
                "vpp": m.vpp, "micro_batch_size": m.micro_batch, "recompute": m.recompute,
                "sequence_parallel": m.sequence_parallel, "optimizer_sharding": ZERO_LABELS[m.zero],
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


MOE_CP_FROM_SEQ = 16384
"""Default CP sizes for MoE models below this sequence length: 1 (their published runs at 4k
use none; with EP the search space is otherwise too large to enumerate)."""
MAX_EXPERTS_PER_RANK = 16
"""Default EP sizes keep at most this many routed experts on a rank: fewer EP ranks hold the
weights of more experts than any published MoE run does (DeepSeek-V3 4 per GPU, Mixtral and
Qwen3 recipes 1-16), and they would only be pruned by memory after costing enumeration."""


def _check_choices(name: str, values: tuple, allowed: tuple) -> None:
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ConfigError(f"search space: {name} values {bad} are not in {list(allowed)}")


@dataclass(frozen=True)
class SearchSpace:
    """Limits of the enumeration; None means every valid value."""

    tp: tuple[int, ...] | None = None
    """Tensor-parallel sizes; None = divisors of the GPUs per node (TP stays inside a node)."""
    pp: tuple[int, ...] | None = None
    """Pipeline sizes; None = every size that splits the layers evenly."""
    cp: tuple[int, ...] | None = None
    """Context-parallel sizes; None = powers of two up to max_cp."""
    max_cp: int = 8
    max_vpp: int = 8
    """Largest number of model chunks per pipeline rank (interleaved 1F1B)."""
    micro_batch: tuple[int, ...] | None = None
    """Micro-batch sizes; None = divisors of the per-replica batch up to max_micro_batch."""
    max_micro_batch: int = 8
    recompute: tuple[str, ...] = RECOMPUTE
    sequence_parallel: tuple[bool, ...] = (False, True)
    zero: tuple[int, ...] | None = None
    """Optimizer sharding to try: 0 none, 1 distributed optimizer, 2 ZeRO-2, 3 ZeRO-3; None =
    all four, for MoE models the distributed optimizer (Megatron-core's MoE recipes)."""
    overlap: OverlapMode = "search"
    """'search' tries every overlap switch on and off, 'on' / 'off' fixes all of them."""
    vpp: tuple[int, ...] | None = None
    """Model chunks per rank; None = divisors of the layers per stage up to max_vpp."""
    ep: tuple[int, ...] | None = None
    """Expert-parallel sizes (MoE); None = powers of two dividing the experts that leave at
    most MAX_EXPERTS_PER_RANK experts on a rank."""
    etp: tuple[int, ...] | None = None
    """Expert tensor-parallel sizes (MoE); None = 1 and the TP size (Megatron-core's choices)."""
    dispatcher: tuple[str, ...] | None = None
    """Token dispatchers (MoE, EP > 1); None = alltoall, deepep when EP leaves the node, and
    hybridep where the framework offers it and the GPU runs it (``Base.hybridep``)."""
    schedules: tuple[str, ...] | None = None
    """Pipeline schedules (pp > 1; "" = Megatron's 1F1B); None = "" for dense models, "" and
    dualpipe for MoE (DeepSeek-V3's; it hides the expert all-to-alls)."""
    fixed_schedule: str | None = None
    """A schedule fixed with --set (:meth:`fixed_by`): pipelined splits only (rules.chunks_fit)."""
    pinned: tuple[tuple[str, bool], ...] = ()
    """Overlap switches fixed with --set (:meth:`fixed_by`), held wherever they can matter."""

    def __post_init__(self) -> None:
        _check_choices("recompute", self.recompute, RECOMPUTE)
        _check_choices("zero", self.zero or (), (0, 1, 2, 3))
        _check_choices("overlap", (self.overlap,), ("search", "on", "off"))
        for name in ("tp", "pp", "cp", "micro_batch"):
            vals = getattr(self, name)
            if vals is not None and (not vals or any(int(v) < 1 for v in vals)):
                raise ConfigError(f"search space: {name} needs positive integers, got {vals}")
        for name in ("max_cp", "max_vpp", "max_micro_batch"):
            if getattr(self, name) < 1:
                raise ConfigError(f"search space: {name} must be >= 1")

    def fixed_by(self, fixed: tuple[tuple[str, object], ...]) -> SearchSpace:
        """This space with the dimensions a fixed parallel field names narrowed to its value
        (ConfigError when the space already lists other values for it): ``search.fixed``."""
        from trainsim.search.fixed import narrowed

        return narrowed(self, fixed)

    # ------------------------------------------------------------------ enumeration
    def _moe_choices(self, base: Base, tp: int, cp: int, dp: int
                     ) -> Iterator[tuple[int, int, str]]:
        """(ep, expert tp, dispatcher) of a MoE model on tp x cp x dp ranks of a stage."""
        m, gpn = base.model, base.cluster.gpus_per_node
        if not m.is_moe:
            yield 1, 1, "alltoall"
            return
        experts = m.num_experts or 1
        ranks = tp * cp * dp
        two_ranks = base.flex_two_ranks
        eps = self.ep or tuple(e for e in powers_of_two(experts)
                               if experts // e <= MAX_EXPERTS_PER_RANK)
        etps = self.etp or tuple(dict.fromkeys((1, tp)))
        for ep in eps:
            for etp in etps:
                if experts % ep or ranks % (ep * etp):
                    continue
                if self.dispatcher is not None:
                    disps = self.dispatcher
                elif ep == 1:
                    disps = ("alltoall",)
                else:  # DeepEP sends a token once per node: it matters across nodes
                    disps = ("alltoall", "deepep") if ep * etp > gpn else ("alltoall",)
                    # HybridEP: TMA kernels in the NVLink domain (the Bridge recipes' choice on
                    # GB200 NVL72) and RDMA between domains (DeepEP hybrid-ep 1dddd19)
                    disps += ("hybridep",) if base.hybridep else ()
                for d in disps:
                    if dispatcher_fits(d, ep * etp, two_ranks):
                        yield ep, etp, d

    def _schedules(self, base: Base, pp: int, vpp: int, n_micro: int) -> tuple[str, ...]:
        if pp == 1:
            return ("",)
        names = self.schedules if self.schedules is not None else \
            (("", "dualpipe") if base.model.is_moe else ("",))
        return schedules_fit(names, pp, vpp, n_micro)

    def memory_keys(self, base: Base, num_gpus: int) -> Iterator[MemoryKey]:
        """Memory groups that pass the arithmetic checks of RunConfig, in a fixed order."""
        m, t = base.model, base.training
        gpn = base.cluster.gpus_per_node
        front = base.layout_rule == "front_loaded"
        tps = self.tp or tuple(divisors(min(gpn, num_gpus)))
        split, impl = base.kv_heads_split, base.data_parallel_impl
        for tp in tps:
            if num_gpus % tp or not tp_fits(m, tp, split):  # (search.rules: what frameworks refuse)
                continue
            pps = self.pp or tuple(divisors(num_gpus // tp))
            for pp in pps:
                # layers that do not split evenly are placed by a balanced layout (MoE models,
                # whose published runs do so: DeepSeek-V3's 61 layers over 16 stages), or by the
                # framework's front-loaded split (any model, any number of virtual stages)
                uneven = bool(m.num_layers % pp)
                if num_gpus % (tp * pp) or pp > m.num_layers or \
                        (uneven and not m.is_moe and not front):
                    continue
                per_stage = m.num_layers // pp
                cps = self.cp or tuple(c for c in (1, 2, 4, 8, 16, 32) if c <= self.max_cp)
                if self.cp is None and m.is_moe and t.seq_length < MOE_CP_FROM_SEQ:
                    cps = (1,)
                for cp in cps:
                    if num_gpus % (tp * pp * cp) or (cp > 1 and t.seq_length % (2 * cp)):
                        continue
                    dp = num_gpus // (tp * pp * cp)
                    if t.global_batch_size % dp:
                        continue
                    per_replica = t.global_batch_size // dp
                    mbs = self.micro_batch or tuple(
                        b for b in divisors(per_replica, self.max_micro_batch) if b <= self.max_micro_batch)
                    # (v runs up to what the layers allow, not up to max_vpp: a --max-vpp or a
                    # validated row's vpp of 1e11 looped 1e11 times)
                    if front:  # every count of virtual stages the layers fill
                        vpps = [1] if pp == 1 else \
                            list(range(1, min(self.max_vpp, m.num_layers // pp) + 1))
                    elif uneven:  # balanced layouts that give every virtual stage equal slots
                        slots = m.num_layers + m.mtp_num_layers + 2
                        vpps = [1] + [v for v in range(2, min(self.max_vpp, slots // pp) + 1)
                                      if slots % (pp * v) == 0]
                    else:
                        vpps = [1] if pp == 1 else \
                            [v for v in divisors(per_stage, self.max_vpp) if v <= self.max_vpp]
                    if self.vpp is not None:
                        vpps = [v for v in self.vpp if v == 1 or v in vpps]
                    if self.fixed_schedule is not None:  # no pipeline runs it at pp 1
                        vpps = [v for v in vpps if pp > 1 and chunks_fit(self.fixed_schedule, v)]
                    # Megatron-core needs sequence parallelism for MoE with TP
                    sps = tuple(dict.fromkeys(self.sequence_parallel)) if tp > 1 else (False,)
                    if m.is_moe and tp > 1:
                        sps = tuple(sp for sp in sps if sp) or sps
                    zeros = zeros_fit(self.zero, impl, pp, m.is_moe) if dp * cp > 1 \
                        else (unsharded_zero(impl),)
                    moe = list(self._moe_choices(base, tp, cp, dp))
                    for mb in mbs:
                        if per_replica % mb:
                            continue
                        n_micro = per_replica // mb
                        for vpp in vpps:
                            scheds = self._schedules(base, pp, vpp, n_micro)
                            if vpp > 1 and n_micro % pp and scheds == ("",):
                                continue
                            for rc in self.recompute:
                                for sp in sps:
                                    for z in zeros:
                                        for ep, etp, disp in moe:
                                            for sch in scheds:
                                                if sch and z == 3:  # pipeline.py: not modelled
                                                    continue
                                                yield MemoryKey(num_gpus, tp, pp, cp, vpp, mb, rc,
                                                                sp, z, ep, etp, disp, sch)

    def switches(self, key: MemoryKey, sends_block_alone: bool = False) -> dict[str, bool]:
        """Which overlap switches can matter for a memory group (Candidate's order; see
        :meth:`variants`)."""
        sharded_dp = key.dp * key.cp > 1
        return {
            "overlap_grad_reduce": sharded_dp,
            "overlap_param_gather": sharded_dp and key.zero in (1, 2),
            "tp_comm_overlap": key.tp > 1,
            "overlap_p2p_comm": key.pp > 1 and not sends_block(key.vpp, key.schedule,
                                                               sends_block_alone),
            # DualPipe's pairs hide the all-to-alls themselves; Megatron-core refuses the
            # overlap with pp > 1 without interleaving, with full recompute and with the
            # allgather dispatcher (core_v0.15.0 transformer_config.py __post_init__; the flex
            # dispatcher, DeepEP or HybridEP backend, takes it: core_v0.16.0 L1866-1869)
            "moe_overlap_ep_comm": key.ep > 1 and key.schedule == "" and key.recompute != "full"
            and key.dispatcher in ("alltoall", "deepep", "hybridep")
            and (key.pp == 1 or key.vpp > 1),
        }

    def variants(self, key: MemoryKey, sends_block_alone: bool = False) -> list[Candidate]:
        """The overlap-switch variants of a memory group (only switches that can matter);
        ``sends_block_alone``: the framework sends blocking in a pipeline without interleaving
        whatever overlap_p2p_comm says (``Base.sends_block_alone``; the rule is
        ``catalog.frameworks.sends_block``, as the simulation's ``sends_overlap``). A pinned
        switch (:attr:`pinned`) that can matter holds its value in every variant."""
        options = self.switches(key, sends_block_alone)
        if self.pinned:
            pins = {k: v for k, v in self.pinned if options[k]}
            if self.overlap == "search":
                varied = tuple(options[k] and k not in pins for k in OVERLAP_SWITCHES)
                return [Candidate(key, *(pins.get(k, f) for k, f in zip(OVERLAP_SWITCHES, flags)))
                        for flags in _switch_products(varied)]
            on = self.overlap == "on"
            return [Candidate(key, *(pins.get(k, on and options[k]) for k in OVERLAP_SWITCHES))]
        if self.overlap == "off":
            return [Candidate(key)]
        if self.overlap == "on":
            return [Candidate(key, **{k: v for k, v in options.items()})]
        # every combination of the switches that apply (Candidate's fields in this order;
        # built directly: dataclasses.replace was a tenth of a large search's own time), in
        # Candidate's order: product's own, False before True field by field; each object's
        # fields set as the frozen dataclass's __init__ sets them (it has no __post_init__),
        # without its setattr call per field (0.26 -> 0.12 s for the 22B search's 182,592)
        out = []
        for flags in _switch_products(tuple(options.values())):
            c = _new(Candidate)
            c.__dict__.update(zip(_CANDIDATE_FIELDS, (key, *flags)))
            out.append(c)
        return out


OVERLAP_SWITCHES = ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
                    "overlap_p2p_comm", "moe_overlap_ep_comm")
"""Candidate's overlap switches, in its field order (SearchSpace.switches' keys)."""


@functools.lru_cache(maxsize=64)
def _switch_products(applies: tuple[bool, ...]) -> tuple[tuple[bool, ...], ...]:
    """Every combination of the switches that apply (False before True, field by field)."""
    return tuple(itertools.product(*((False, True) if a else (False,) for a in applies)))


for _cls in (MemoryKey, Candidate):  # what the dataclass's own __hash__ would hash
    _cls._fields = operator.attrgetter(*(f.name for f in dataclasses.fields(_cls)))  # type: ignore[attr-defined]
_CANDIDATE_FIELDS = tuple(f.name for f in dataclasses.fields(Candidate))
_new = object.__new__
assert not hasattr(Candidate, "__post_init__")  # SearchSpace.variants builds it without __init__


__all__ = [
    "ZERO_LABELS",
    "Base",
    "Candidate",
    "MemoryKey",
    "SearchSpace",
]
