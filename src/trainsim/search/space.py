"""The design space of a search: which parallel layouts and switches are candidates.

A :class:`Candidate` (``search.candidate``) is one point: the parallel sizes (tp, pp, cp, vpp;
dp is derived), the micro-batch, recompute, sequence parallelism, optimizer sharding, for mixture-of-experts models
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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from trainsim.catalog.framework_rules import sends_block
from trainsim.config._build import suggest
from trainsim.config.hybrid import DUALPIPE_SCHEDULES
from trainsim.errors import ConfigError
from trainsim.search.candidate import (  # noqa: F401 - PARALLEL_CACHE, drop_parallels: re-exported
    PARALLEL_CACHE,
    ZERO_LABELS,
    Base,
    Candidate,
    MemoryKey,
    candidate,
    drop_parallels,
    memory_key,
)
from trainsim.search.rules import (
    DEFAULT_MAX_VPP,
    chunks_fit,
    dispatcher_fits,
    divisors,
    powers_of_two,
    schedules_fit,
    softcap_cp_fits,
    stage_interleavings,
    tp_fits,
    unsharded_zero,
    zeros_fit,
)

RECOMPUTE = ("none", "selective", "full")
OverlapMode = Literal["search", "on", "off"]


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
        hint = suggest(bad[0], [str(a) for a in allowed]) if isinstance(bad[0], str) else ""
        raise ConfigError(f"search space: {name} values {bad} are not in {list(allowed)}{hint}")


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
    max_vpp: int | None = None
    """Largest number of model chunks per pipeline rank (interleaved 1F1B); None = the
    framework's rule (``rules.stage_interleavings``): every count that splits a stage's layers
    where the framework overlaps pipeline sends only when interleaved (Megatron), else up to
    8 (``rules.DEFAULT_MAX_VPP``)."""
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
    """Model chunks per rank; None = those of max_vpp's rule."""
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
    overlap_zero: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """(data-parallel overlap switch, the ZeRO stages at which it is tried) where the run's
    framework limits them (:meth:`held_by`: ``Base.overlap_zero``, nanotron's gradient
    reduction at 0, parameter gather at none); a switch not named: wherever it acts."""

    def __post_init__(self) -> None:
        _check_choices("recompute", self.recompute, RECOMPUTE)
        _check_choices("zero", self.zero or (), (0, 1, 2, 3))
        _check_choices("overlap", (self.overlap,), ("search", "on", "off"))
        from trainsim.config.parallel import Dispatcher

        _check_choices("dispatcher", self.dispatcher or (), get_args(Dispatcher))
        for name in ("tp", "pp", "cp", "micro_batch"):
            vals = getattr(self, name)
            if vals is not None and (not vals or any(int(v) < 1 for v in vals)):
                raise ConfigError(f"search space: {name} needs positive integers, got {vals}")
        for name in ("max_cp", "max_vpp", "max_micro_batch"):  # max_vpp None: the rule's
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"search space: {name} must be >= 1")

    @property
    def vpp_cap(self) -> int:
        """The largest vpp where no framework rule decides (uneven and front-loaded splits);
        never below a vpp fixed with --set (``vpp``), which no cap hides."""
        return max((DEFAULT_MAX_VPP if self.max_vpp is None else self.max_vpp, *(self.vpp or ())))

    @property
    def even_vpp_cap(self) -> int | None:
        """``max_vpp`` for even splits (None: the framework's rule, ``stage_interleavings``),
        raised to a vpp fixed with --set: a fixed value is tried, or refused for its own
        reason, never dropped by a cap."""
        if not self.vpp:
            return self.max_vpp
        return max(self.max_vpp or DEFAULT_MAX_VPP, *self.vpp)

    def fixed_by(self, fixed: tuple[tuple[str, object], ...]) -> SearchSpace:
        """This space with the dimensions a fixed parallel field names narrowed to its value
        (ConfigError when the space already lists other values for it): ``search.fixed``."""
        from trainsim.search.fixed import narrowed

        return narrowed(self, fixed)

    def held_by(self, base: Base) -> SearchSpace:
        """This space with the overlap switches the run's framework lacks (``Base.lacks``:
        the config loader refuses them, ``catalog.defaults.apply_framework``) and a hybrid
        model refuses (``moe_overlap_ep_comm``) pinned off,
        so no variant turns one on (sequence parallelism, virtual stages and the distributed
        optimizer are left out by :meth:`memory_keys`), and data-parallel overlap tried at
        the ZeRO stages where the framework overlaps it only (``Base.overlap_zero``; one fixed
        on with --set keeps the stages where it is not refused)."""
        from trainsim.catalog.defaults import OVERLAP_ACTS

        if _no_pairs(base) and set(self.schedules or ()) & set(DUALPIPE_SCHEDULES):
            from trainsim.config.hybrid import dualpipe_reason

            listed = ",".join(s for s in self.schedules or () if s in DUALPIPE_SCHEDULES)
            raise ConfigError(f"--schedules {listed} with model.hybrid_layer_pattern: "
                              f"{dualpipe_reason()}")
        if "looped_bfs" in (self.schedules or ()) and base.framework:
            from trainsim.catalog.frameworks import framework_profile

            if framework_profile(*base.framework).supports("looped_bfs_schedule") is not True:
                raise ConfigError(f"--schedules looped_bfs: {' '.join(filter(None, base.framework))}"
                                  " does not run torch.distributed.pipelining's ScheduleLoopedBFS "
                                  "(profile feature looped_bfs_schedule; torchtitan's has it)")
        free = dict(self.pinned)
        # a hybrid model has no combined 1F1B (config.hybrid.check_hybrid_run): its expert
        # exchange overlap is pinned off (hsearch51), as a framework's lacked switches are
        refused = ("moe_overlap_ep_comm",) if base.model.hybrid_layer_pattern is not None else ()
        off = tuple((k, False) for k in dict.fromkeys((*lacked(base), *refused))
                    if k in OVERLAP_SWITCHES and k not in free)
        held = dataclasses.replace(self, pinned=self.pinned + off) if off else self
        if base.overlap_zero and not held.overlap_zero:
            held = dataclasses.replace(held, overlap_zero=base.overlap_zero)
            for switch, stages in base.overlap_zero:  # --set on: only where it can overlap
                if free.get(switch) is not True:
                    continue
                zeros = tuple(z for z in (held.zero or (0, 1, 2, 3))
                              if z in stages or z not in OVERLAP_ACTS[switch])
                if not zeros:
                    from trainsim.catalog.defaults import stages_phrase

                    raise ConfigError(f"--set parallel.{switch}=true: the framework overlaps "
                                      f"it at {stages_phrase(stages)}, not at "
                                      f"{', '.join(map(str, held.zero or ()))}")
                held = dataclasses.replace(held, zero=zeros)
        return held

    # ------------------------------------------------------------------ enumeration
    def _moe_choices(self, base: Base, tp: int, cp: int, dp: int
                     ) -> Iterator[tuple[int, int, str]]:
        """(ep, expert tp, dispatcher) of a MoE model on tp x cp x dp ranks of a stage."""
        m, gpn = base.model, base.cluster.gpus_per_domain
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
                    disps = ("alltoall", "deepep") if ep * etp > gpn and base.deepep \
                        else ("alltoall",)
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
            (("", "dualpipe") if base.model.is_moe and not _no_pairs(base) else ("",))
        return schedules_fit(names, pp, vpp, n_micro)

    def memory_keys(self, base: Base, num_gpus: int) -> Iterator[MemoryKey]:
        """Memory groups that pass the arithmetic checks of RunConfig, in a fixed order."""
        m, t = base.model, base.training
        gpn = base.cluster.gpus_per_domain
        front = base.layout_rule == "front_loaded"
        tps = self.tp or tuple(divisors(min(gpn, num_gpus)))
        # no tp, pp or cp > 1 the loader would refuse, unless asked for (--tp 2 or a held
        # parallel.tp=2): the loader then refuses it in the error's words
        sizes = lacked_sizes(base)
        tps = tuple(x for x in tps if x == 1) if "tp" in sizes and self.tp is None else tps
        split, impl = base.kv_heads_split, base.data_parallel_impl
        # what the run's framework lacks, as the config loader refuses it (Base.lacks)
        lacks = lacked(base)
        no_sp = "sequence_parallel" in lacks
        no_vpp = "virtual_pipeline_model_parallel_size" in lacks
        # ZeRO-1 as Megatron's switch where the framework lacks it, unless it runs stage 1
        # as zero_stage 1 (Base.zero1_as_stage); the stages its profile lists (Base.zero_runs)
        no_distopt = "distributed_optimizer" in lacks and not base.zero1_as_stage
        runs = base.zero_runs
        engines = base.zero_engines
        # the interleavings a framework that overlaps sends only when interleaved needs, where
        # the pipeline overlap may be on (rules.stage_interleavings, as the validator's tuner)
        interleaves = base.sends_block_alone and self.overlap != "off" and \
            dict(self.pinned).get("overlap_p2p_comm") is not False
        for tp in tps:
            if num_gpus % tp or not tp_fits(m, tp, split):  # (search.rules: what frameworks refuse)
                continue
            pps = self.pp or tuple(divisors(num_gpus // tp))
            pps = tuple(x for x in pps if x == 1) if "pp" in sizes and self.pp is None else pps
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
                if "cp" in sizes and self.cp is None:
                    cps = tuple(c for c in cps if c == 1)
                cps = tuple(c for c in cps if softcap_cp_fits(m, t.framework,
                                                              t.framework_version, c))
                for cp in cps:
                    if num_gpus % (tp * pp * cp) or (cp > 1 and t.seq_length % (2 * cp)):
                        continue
                    dp = num_gpus // (tp * pp * cp)
                    if t.global_batch_size % dp:
                        continue
                    per_replica = t.global_batch_size // dp
                    mbs = self.micro_batch or tuple(divisors(per_replica, self.max_micro_batch))
                    # (v runs up to what the layers allow, not up to max_vpp: a --max-vpp or a
                    # validated row's vpp of 1e11 looped 1e11 times)
                    if front:  # every count of virtual stages the layers fill
                        vpps = [1] if pp == 1 else \
                            list(range(1, min(self.vpp_cap, m.num_layers // pp) + 1))
                    elif uneven:  # balanced layouts that give every virtual stage equal slots
                        slots = m.num_layers + m.mtp_num_layers + 2
                        vpps = [1] + [v for v in range(2, min(self.vpp_cap, slots // pp) + 1)
                                      if slots % (pp * v) == 0]
                    else:
                        vpps = [1] if pp == 1 else \
                            stage_interleavings(per_stage, interleaves, self.even_vpp_cap)
                    if self.vpp is not None:
                        vpps = [v for v in self.vpp if v == 1 or v in vpps]
                    if no_vpp:
                        vpps = [v for v in vpps if v == 1]
                    if self.fixed_schedule is not None:  # no pipeline runs it at pp 1
                        vpps = [v for v in vpps if pp > 1 and chunks_fit(self.fixed_schedule, v)]
                    # Megatron-core needs sequence parallelism for MoE with TP
                    sps = tuple(dict.fromkeys(self.sequence_parallel)) \
                        if tp > 1 and not no_sp else (False,)
                    if m.is_moe and tp > 1:
                        sps = tuple(sp for sp in sps if sp) or sps
                    if dp * cp == 1:
                        zeros = (unsharded_zero(impl),)
                    elif engines is None:
                        zeros = zeros_fit(self.zero, impl, pp, m.is_moe)
                    else:  # each stage with its own engine (Base.zero_engines)
                        zeros = tuple(sorted(z for e in set(engines.values()) for z in
                                             zeros_fit(self.zero, e, pp, m.is_moe)
                                             if engines.get(z) == e))
                    if no_distopt:
                        zeros = tuple(z for z in zeros if z != 1)
                    if runs is not None:
                        zeros = tuple(z for z in zeros if z in runs)
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
                                                if z == 3 and not _sharded_fits(base, sch):
                                                    continue
                                                yield memory_key(num_gpus, tp, pp, cp, vpp, mb,
                                                                 rc, sp, z, ep, etp, disp, sch)

    def switches(self, key: MemoryKey, sends_block_alone: bool = False) -> dict[str, bool]:
        """Which overlap switches can matter for a memory group (Candidate's order; see
        :meth:`variants`)."""
        sharded_dp = key.dp * key.cp > 1
        limits = dict(self.overlap_zero)
        return {
            "overlap_grad_reduce": sharded_dp and key.zero in limits.get(
                "overlap_grad_reduce", (key.zero,)),
            "overlap_param_gather": sharded_dp and key.zero in (1, 2) and key.zero in limits.get(
                "overlap_param_gather", (key.zero,)),
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
        ``catalog.framework_rules.sends_block``, as the simulation's ``sends_overlap``). A pinned
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
        # without its setattr call per field (0.26 -> 0.12 s for the 22B search's 182,592;
        # one store per field, ``candidate``, about half that again)
        return [candidate(key, *flags) for flags in _switch_products(tuple(options.values()))]


OVERLAP_SWITCHES = ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
                    "overlap_p2p_comm", "moe_overlap_ep_comm")
"""Candidate's overlap switches, in its field order (SearchSpace.switches' keys)."""


def _no_pairs(base: Base) -> bool:
    """Whether the model has no DualPipe pairs: a hybrid model (``config.hybrid.
    dualpipe_reason``)."""
    return base.model.hybrid_layer_pattern is not None


def lacked(base: Base) -> frozenset[str]:
    """The parallel fields the run's framework cannot set (``catalog.defaults.
    SEARCH_SWITCHES``, the loader's own list: ``Base.lacks`` its feature)."""
    from trainsim.catalog.defaults import SEARCH_SWITCHES

    return frozenset(key for key, feature in SEARCH_SWITCHES if base.lacks(feature))


def lacked_sizes(base: Base) -> frozenset[str]:
    """The parallel sizes (``tp``, ``pp``, ``cp``) the run's framework has no parallelism for
    at its release (``catalog.defaults.SEARCH_SIZES``, the loader's own list): the search
    tries size 1 only (olmo-core before its TP and CP releases)."""
    from trainsim.catalog.defaults import SEARCH_SIZES

    return frozenset(short for short, feature, _ in SEARCH_SIZES if base.lacks(feature))


@functools.lru_cache(maxsize=64)
def _switch_products(applies: tuple[bool, ...]) -> tuple[tuple[bool, ...], ...]:
    """Every combination of the switches that apply (False before True, field by field)."""
    return tuple(itertools.product(*((False, True) if a else (False,) for a in applies)))




__all__ = [
    "ZERO_LABELS",
    "Base",
    "Candidate",
    "MemoryKey",
    "SearchSpace",
]


def _sharded_fits(base: Base, schedule: str) -> bool:
    """Whether ``schedule`` ("" = Megatron's) runs ZeRO-3 / FSDP parameters: the whole-pass
    schedules (``pipeline_passes``) always; the named ones (``pipeline.ScheduledPipeline``:
    zero-bubble, DualPipeV) where the framework keeps its units gathered until a stage's last
    backward (profile ``fsdp_pp_unsharded``: torchtitan), DualPipe never
    (``pipeline.sharded_schedule_problem``)."""
    from trainsim.workload.pipeline_schedules_bfs import FB_SCHEDULES

    if not schedule or schedule in FB_SCHEDULES:
        return True
    return schedule != "dualpipe" and _keeps_units_gathered(base.framework)


@functools.lru_cache(maxsize=64)
def _keeps_units_gathered(framework: tuple | None) -> bool:
    from trainsim.catalog.frameworks import framework_profile

    return bool(framework) and framework_profile(*framework).supports(  # type: ignore[misc]
        "fsdp_pp_unsharded") is True
