"""The design space of a search: which parallel layouts and switches are candidates.

A :class:`Candidate` is one point: the parallel sizes (tp, pp, cp, vpp; dp is derived), the
micro-batch, recompute, sequence parallelism, optimizer sharding and the four overlap
switches. Only *canonical* candidates are enumerated: a switch that cannot change anything
(sequence parallel without TP, p2p overlap without PP, gradient overlap or ZeRO without data
parallelism, parameter-gather overlap without a sharded optimizer) takes one value, so no two
candidates describe the same run.

Memory depends on everything but the overlap switches, so the space is walked as memory
groups (:class:`MemoryKey`) first, each checked once, then expanded into switch variants.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.errors import ConfigError
from trainsim.limits import limit, simulation_tasks
from trainsim.memory import estimate_stage_memory

ZERO_LABELS = {0: "none", 1: "distopt", 2: "zero2", 3: "zero3"}
"""Optimizer sharding: 1 is Megatron's distributed optimizer (= ZeRO-1)."""
RECOMPUTE = ("none", "selective", "full")
OverlapMode = Literal["search", "on", "off"]


@dataclass(frozen=True)
class Base:
    """What a search keeps fixed: the model, the training batch and the hardware.

    ``cluster.num_gpus`` is replaced by each searched GPU count.
    """

    model: ModelConfig
    training: TrainingConfig
    cluster: ClusterConfig

    def cluster_for(self, num_gpus: int) -> ClusterConfig:
        if num_gpus == self.cluster.num_gpus:
            return self.cluster
        return dataclasses.replace(self.cluster, num_gpus=num_gpus)

    @classmethod
    def of(cls, cfg: RunConfig) -> Base:
        return cls(cfg.model, cfg.training, cfg.cluster)


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
                "overlap_p2p_comm": self.overlap_p2p_comm}

    def to_config(self, base: Base) -> RunConfig:
        """The RunConfig of this candidate (ConfigError if the combination is invalid)."""
        return RunConfig(base.model, ParallelConfig(**self.parallel_fields()),  # type: ignore[arg-type]
                         dataclasses.replace(base.training, micro_batch_size=self.mem.micro_batch),
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
        flags = [s for s, on in (("grad", self.overlap_grad_reduce),
                                 ("param", self.overlap_param_gather),
                                 ("tp", self.tp_comm_overlap), ("p2p", self.overlap_p2p_comm)) if on]
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
                "tp_comm_overlap": self.tp_comm_overlap, "overlap_p2p_comm": self.overlap_p2p_comm}

    @classmethod
    def from_config(cls, cfg: RunConfig) -> Candidate:
        p = cfg.parallel
        zero = 1 if (p.distributed_optimizer and p.zero_stage == 0) else p.zero_stage
        key = MemoryKey(cfg.cluster.num_gpus, p.tp, p.pp, p.cp, p.vpp, cfg.training.micro_batch_size,
                        p.recompute, p.sequence_parallel, zero)
        return cls(key, p.overlap_grad_reduce, p.overlap_param_gather, p.tp_comm_overlap,
                   p.overlap_p2p_comm)


def _divisors(n: int, upto: int | None = None) -> list[int]:
    """Divisors of ``n`` in increasing order (those <= ``upto``), in O(sqrt n) steps or fewer."""
    if upto is not None and upto * upto <= n:
        return [d for d in range(1, upto + 1) if n % d == 0]
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


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
    zero: tuple[int, ...] = (0, 1, 2, 3)
    """Optimizer sharding to try: 0 none, 1 distributed optimizer, 2 ZeRO-2, 3 ZeRO-3."""
    overlap: OverlapMode = "search"
    """'search' tries every overlap switch on and off, 'on' / 'off' fixes all of them."""

    def __post_init__(self) -> None:
        _check_choices("recompute", self.recompute, RECOMPUTE)
        _check_choices("zero", self.zero, (0, 1, 2, 3))
        _check_choices("overlap", (self.overlap,), ("search", "on", "off"))
        for name in ("tp", "pp", "cp", "micro_batch"):
            vals = getattr(self, name)
            if vals is not None and (not vals or any(int(v) < 1 for v in vals)):
                raise ConfigError(f"search space: {name} needs positive integers, got {vals}")
        for name in ("max_cp", "max_vpp", "max_micro_batch"):
            if getattr(self, name) < 1:
                raise ConfigError(f"search space: {name} must be >= 1")

    # ------------------------------------------------------------------ enumeration
    def memory_keys(self, base: Base, num_gpus: int) -> Iterator[MemoryKey]:
        """Memory groups that pass the arithmetic checks of RunConfig, in a fixed order."""
        m, t = base.model, base.training
        gpn = base.cluster.gpus_per_node
        tps = self.tp or tuple(_divisors(min(gpn, num_gpus)))
        for tp in tps:
            if (num_gpus % tp or m.num_attention_heads % tp or m.ffn_size % tp
                    or (m.kv_heads % tp and tp % m.kv_heads)):
                continue
            pps = self.pp or tuple(_divisors(num_gpus // tp))
            for pp in pps:
                if num_gpus % (tp * pp) or m.num_layers % pp:
                    continue
                per_stage = m.num_layers // pp
                cps = self.cp or tuple(c for c in (1, 2, 4, 8, 16, 32) if c <= self.max_cp)
                for cp in cps:
                    if num_gpus % (tp * pp * cp) or (cp > 1 and t.seq_length % (2 * cp)):
                        continue
                    dp = num_gpus // (tp * pp * cp)
                    if t.global_batch_size % dp:
                        continue
                    per_replica = t.global_batch_size // dp
                    mbs = self.micro_batch or tuple(
                        b for b in _divisors(per_replica, self.max_micro_batch) if b <= self.max_micro_batch)
                    vpps = [1] if pp == 1 else [v for v in _divisors(per_stage, self.max_vpp) if v <= self.max_vpp]
                    sps = tuple(dict.fromkeys(self.sequence_parallel)) if tp > 1 else (False,)
                    zeros = tuple(dict.fromkeys(self.zero)) if dp * cp > 1 else (0,)
                    for mb in mbs:
                        if per_replica % mb:
                            continue
                        n_micro = per_replica // mb
                        for vpp in vpps:
                            if vpp > 1 and n_micro % pp:
                                continue
                            for rc in self.recompute:
                                for sp in sps:
                                    for z in zeros:
                                        yield MemoryKey(num_gpus, tp, pp, cp, vpp, mb, rc, sp, z)

    def variants(self, key: MemoryKey) -> list[Candidate]:
        """The overlap-switch variants of a memory group (only switches that can matter)."""
        sharded_dp = key.dp * key.cp > 1
        options = {
            "overlap_grad_reduce": sharded_dp,
            "overlap_param_gather": sharded_dp and key.zero in (1, 2),
            "tp_comm_overlap": key.tp > 1,
            "overlap_p2p_comm": key.pp > 1,
        }
        if self.overlap == "off":
            return [Candidate(key)]
        if self.overlap == "on":
            return [Candidate(key, **{k: v for k, v in options.items()})]
        out = [Candidate(key)]
        for name, applies in options.items():
            if applies:
                out = out + [dataclasses.replace(c, **{name: True}) for c in out]
        return sorted(out)


@dataclass(frozen=True)
class MemoryCheck:
    """The memory verdict of one memory group."""

    fits: bool
    peak_bytes: float
    """Peak over pipeline stages (or over stages 0 and pp-1 when those already do not fit)."""
    headroom_bytes: float


def check_memory(key: MemoryKey, base: Base) -> MemoryCheck | None:
    """Memory of a memory group; None if RunConfig rejects the combination or its iteration
    is over the task limit (trainsim.limits: it could not be simulated)."""
    try:
        cfg = Candidate(key).to_config(base)
    except ConfigError:
        return None
    if simulation_tasks(cfg) > limit("TRAINSIM_MAX_TASKS"):
        return None
    hbm = cfg.cluster.gpu.hbm_bytes
    pp = cfg.parallel.pp
    # The first stage holds the most micro-batches in flight and the last one the logits:
    # check those two first and skip the middle stages when one already does not fit.
    ends = {0, pp - 1}
    peak = max(estimate_stage_memory(cfg, s).total for s in ends)
    if peak <= hbm:
        peak = max([peak] + [estimate_stage_memory(cfg, s).total for s in range(pp) if s not in ends])
    return MemoryCheck(peak <= hbm, peak, hbm - peak)


__all__ = [
    "ZERO_LABELS",
    "Base",
    "Candidate",
    "MemoryCheck",
    "MemoryKey",
    "SearchSpace",
    "check_memory",
]
