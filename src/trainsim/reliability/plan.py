"""From configs to the numbers the Monte Carlo needs: rates, recovery times, checkpoint costs.

Pure functions of (RunConfig, ReliabilityConfig); every result in seconds or bytes.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from trainsim.config import RunConfig
from trainsim.errors import ConfigError
from trainsim.model import total_params
from trainsim.reliability.config import (
    CheckpointConfig,
    FailureMode,
    RecoveryConfig,
    ReliabilityConfig,
    component_counts,
)

RECOVERY_CAUSES = ("detection", "diagnosis", "replacement", "restart", "init", "restore")
"""The steps of a recovery, in the order they happen."""


# ---------------------------------------------------------------------------- checkpoints

@dataclass(frozen=True)
class CheckpointCosts:
    """Size and time of saving and restoring one checkpoint of this run."""

    size_bytes: float
    """Unique bytes of one checkpoint (replicas saved once)."""
    per_gpu_bytes: float
    """Training state one GPU holds and copies to host memory (its weights and its shard of
    the optimizer state)."""
    host_copy_s: float
    """Stage 1: GPU memory to host memory, all GPUs in parallel."""
    upload_s: float
    """Stage 2: host memory to remote storage."""
    restore_s: float
    """Read from storage (and broadcast, or every rank reads), then copy to the GPUs."""
    mode: str = "async"

    @property
    def stall_s(self) -> float:
        """Training time lost per checkpoint (what Young/Daly call the checkpoint cost)."""
        return self.host_copy_s if self.mode == "async" else self.host_copy_s + self.upload_s

    @property
    def commit_latency_s(self) -> float:
        """From the end of the stall until the checkpoint is durable in remote storage."""
        return self.upload_s if self.mode == "async" else 0.0

    @property
    def stop_s(self) -> float:
        """A planned stop writes a full checkpoint and waits for it."""
        return self.host_copy_s + self.upload_s


def checkpoint_costs(cfg: RunConfig, ck: CheckpointConfig) -> CheckpointCosts:
    """Checkpoint size from the parameter count, write and restore times from bandwidths.

    Weights are split over tp*pp model shards and replicated over dp*cp; the optimizer state is
    also sharded with the distributed optimizer / ZeRO >= 1, and the weights too with ZeRO-3,
    over the ranks that shard the state: dp*cp, or one HSDP replica's dp*cp / dp_replicate
    (``RunConfig.shard_ranks``; every replica holds the whole state). A checkpoint holds each
    unique byte once.
    """
    n_params = float(total_params(cfg.model))
    p, c = cfg.parallel, cfg.cluster
    shards = p.tp * p.pp
    replicas, sharders = cfg.dp * p.cp, cfg.shard_ranks
    opt_shard = sharders if (p.distributed_optimizer or p.zero_stage >= 1) else 1
    w_shard = sharders if p.zero_stage == 3 else 1
    per_gpu = (n_params * ck.weight_bytes_per_param / (shards * w_shard)
               + n_params * ck.optimizer_bytes_per_param / (shards * opt_shard))
    size = n_params * (ck.weight_bytes_per_param + ck.optimizer_bytes_per_param)
    nodes = c.num_nodes
    host_copy = per_gpu / ck.host_copy_bw_Bps
    upload = size / min(ck.storage_write_bw_Bps, nodes * ck.node_storage_bw_Bps)
    if ck.restore == "broadcast":
        # one replica (the tp*pp shards) reads everything, then sends each GPU its state over
        # the training network (a pipelined broadcast/scatter moves ~per_gpu bytes per link)
        reader_nodes = max(1, math.ceil(shards / c.gpus_per_node))
        read = size / min(ck.storage_read_bw_Bps, reader_nodes * ck.node_storage_bw_Bps)
        spread = per_gpu / c.nic_bw_Bps if replicas > 1 else 0.0
        restore = read + spread
    else:
        restore = per_gpu * c.num_gpus / min(ck.storage_read_bw_Bps,
                                            nodes * ck.node_storage_bw_Bps)
    restore += per_gpu / ck.host_copy_bw_Bps
    return CheckpointCosts(size_bytes=size, per_gpu_bytes=per_gpu, host_copy_s=host_copy,
                           upload_s=upload, restore_s=restore, mode=ck.mode)


def young_interval(cost_s: float, mtbf_s: float) -> float:
    """Young (1974): the optimal compute time between checkpoints, sqrt(2 C M)."""
    return math.sqrt(2.0 * cost_s * mtbf_s)


def daly_interval(cost_s: float, mtbf_s: float) -> float:
    """Daly (2006), Eq. 37, the higher-order optimum: for C < 2M,
    sqrt(2CM) [1 + (1/3) sqrt(C/2M) + (1/9) (C/2M)] - C, and M otherwise."""
    if math.isinf(mtbf_s):
        return math.inf
    if cost_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = cost_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * cost_s * mtbf_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - cost_s


# ---------------------------------------------------------------------------- the run plan

@dataclass(frozen=True)
class RunPlan:
    """All the Monte Carlo needs, in seconds. Built from configs, or by hand in tests."""

    mode_names: tuple[str, ...]
    mode_rates: tuple[float, ...]
    """Interruptions per second of each cause on this cluster."""
    mode_planned: tuple[bool, ...]
    recovery_s: tuple[tuple[float, ...], ...]
    """Per cause: seconds of each step of RECOVERY_CAUSES."""
    interval_s: float
    """Training time between checkpoints (math.inf: never)."""
    stall_s: float = 0.0
    """Training stops this long per checkpoint."""
    commit_latency_s: float = 0.0
    """After the stall, this long until the checkpoint survives a failure."""
    stop_checkpoint_s: float = 0.0
    """A planned stop waits this long for a full checkpoint."""
    straggler_factor: float = 1.0
    """Step time with stragglers over step time without."""
    mode_categories: tuple[str, ...] = ()
    step_s: float = 0.0
    """One iteration's training time (0: not known): a checkpoint is taken between iterations
    (Megatron's ``--save-interval`` and torchtitan's ``checkpoint.interval`` count them), so no
    interval is shorter. robust50: a Daly interval below one iteration was priced as several
    checkpoints inside it."""

    def __post_init__(self) -> None:
        n = len(self.mode_names)
        if not (len(self.mode_rates) == len(self.mode_planned) == len(self.recovery_s) == n):
            raise ConfigError("RunPlan: mode_names, mode_rates, mode_planned and recovery_s "
                              "must have one entry per cause")
        if any(len(r) != len(RECOVERY_CAUSES) for r in self.recovery_s):
            raise ConfigError(f"RunPlan.recovery_s: each cause needs {len(RECOVERY_CAUSES)} "
                              f"steps {RECOVERY_CAUSES}")
        if any(not r >= 0 for r in self.mode_rates):
            raise ConfigError("RunPlan.mode_rates must not be negative")
        if not self.interval_s > 0:
            raise ConfigError(f"checkpoint interval {self.interval_s} s must be positive")
        if not self.straggler_factor >= 1.0:
            raise ConfigError("RunPlan.straggler_factor must be at least 1")

    @property
    def unexpected_rate(self) -> float:
        return sum(r for r, p in zip(self.mode_rates, self.mode_planned) if not p)

    @property
    def planned_rate(self) -> float:
        return sum(r for r, p in zip(self.mode_rates, self.mode_planned) if p)

    @property
    def mtbf_s(self) -> float:
        """Mean time between unplanned interruptions (what loses work)."""
        return 1.0 / self.unexpected_rate if self.unexpected_rate > 0 else math.inf

    @property
    def effective_interval_s(self) -> float:
        """A new checkpoint cannot start before the previous one's upload is done, nor
        within an iteration."""
        return max(self.interval_s, self.commit_latency_s, self.step_s)

    def with_interval(self, interval_s: float) -> RunPlan:
        return dataclasses.replace(self, interval_s=interval_s)


def _recovery_steps(mode: FailureMode, rec: RecoveryConfig, num_gpus: int,
                    restore_s: float) -> tuple[float, ...]:
    detection = {"crash": rec.heartbeat_timeout_s, "hang": rec.hang_timeout_s, "none": 0.0}
    replace = (rec.replacement_s if rec.spare_pool else rec.repair_s) if mode.replace else 0.0
    diagnosis = 0.0 if mode.planned else rec.diagnosis_s
    return (detection[mode.detection], diagnosis, replace, rec.restart_s, rec.init_s(num_gpus),
            restore_s)


def build_plan(cfg: RunConfig, rel: ReliabilityConfig,
               interval_s: float | None = None) -> tuple[RunPlan, CheckpointCosts]:
    """The run plan of ``cfg`` under ``rel``; the checkpoint interval defaults to Daly's optimum."""
    c = cfg.cluster
    counts = component_counts(c.num_gpus, c.gpus_per_node)
    modes = [m for m in rel.profile.modes if rel.include_planned or not m.planned]
    ck = checkpoint_costs(cfg, rel.checkpoint)
    plan = RunPlan(
        mode_names=tuple(m.name for m in modes),
        mode_categories=tuple(m.category for m in modes),
        mode_rates=tuple(m.rate(counts) * rel.rate_scale for m in modes),
        mode_planned=tuple(m.planned for m in modes),
        recovery_s=tuple(_recovery_steps(m, rel.recovery, c.num_gpus, ck.restore_s)
                         for m in modes),
        interval_s=math.inf, stall_s=ck.stall_s, commit_latency_s=ck.commit_latency_s,
        stop_checkpoint_s=ck.stop_s, straggler_factor=rel.straggler.factor(c.num_nodes))
    chosen = interval_s or rel.checkpoint.interval_s or daly_interval(ck.stall_s, plan.mtbf_s)
    return plan.with_interval(chosen), ck


def expected_interruptions(plan: RunPlan, duration_s: float) -> float:
    """Rate times duration: the expected interruption count of a window of wall-clock time."""
    return sum(plan.mode_rates) * duration_s
