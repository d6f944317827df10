"""The typed result of one simulated iteration."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from trainsim.config import RunConfig
from trainsim.config._build import to_dict
from trainsim.engine import Timeline
from trainsim.errors import ConfigError
from trainsim.memory import MemoryBreakdown


@dataclass(frozen=True)
class Result:
    config: RunConfig
    iteration_time_s: float
    breakdown: dict[str, float]
    """compute_s, exposed_comm_s, pipeline_bubble_s, optimizer_s, other_s: sums to the iteration."""
    exposed_comm: dict[str, float]
    """Exposed communication by group: tp, cp, pp, dp (parts of exposed_comm_s)."""
    memory: list[MemoryBreakdown]
    """Per pipeline stage (one representative rank each)."""
    model_flops: float
    hardware_flops: float
    critical_stage: int
    timeline: Timeline | None = field(default=None, compare=False, repr=False)
    compute_sources: dict[str, int] = field(default_factory=dict)
    """How many distinct kernels each compute model priced (database hits, roofline)."""
    simulation: dict[str, str | int] = field(default_factory=dict, compare=False)
    """How the iteration was simulated: ``method`` 'steady-state' (one or two truncated runs, the
    periodic rest extrapolated; ``trainsim.steady_state``) or 'full' (every micro-batch), and
    ``reason``: what was proven, or why the shortcut did not apply. Where the schedule runs
    several times per iteration (``trainsim.schedule_steps``), ``schedule_steps``: how many
    times one simulated step is repeated, and with a timeline, ``timeline``: what it shows."""

    @property
    def num_gpus(self) -> int:
        return self.config.cluster.num_gpus

    @property
    def tokens_per_s(self) -> float:
        return self.config.tokens_per_iteration / self.iteration_time_s

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_s / self.num_gpus

    @property
    def model_tflops_per_gpu(self) -> float:
        return self.model_flops / self.iteration_time_s / self.num_gpus / 1e12

    @property
    def peak_flops(self) -> float:
        """MFU denominator: the GPU's dense peak in the run's compute dtype (training.dtype),
        so an fp8 run is measured against the fp8 peak and no utilization exceeds 1."""
        return self.config.cluster.gpu.flops(self.config.training.dtype)

    @property
    def peak_flops_16bit(self) -> float:
        """The dense 16-bit peak: the denominator NeMo and Megatron-Bridge report fp8 runs'
        MFU against (``mfu_16bit``), which can exceed 1 for fp8."""
        return self.config.cluster.gpu.flops("bf16")

    @property
    def mfu(self) -> float:
        return self.model_tflops_per_gpu * 1e12 / self.peak_flops

    @property
    def hfu(self) -> float:
        return self.hardware_flops / self.iteration_time_s / self.num_gpus / self.peak_flops

    @property
    def mfu_16bit(self) -> float:
        """MFU against the 16-bit peak whatever the dtype (equal to ``mfu`` for bf16/fp16)."""
        return self.mfu * self.peak_flops / self.peak_flops_16bit

    @property
    def hfu_16bit(self) -> float:
        return self.hfu * self.peak_flops / self.peak_flops_16bit

    @property
    def peak_memory_bytes(self) -> float:
        """What must fit in HBM at the busiest stage: allocated peak plus the CUDA context."""
        return max(m.total for m in self.memory)

    @property
    def peak_memory_stage(self) -> int:
        return max(range(len(self.memory)), key=lambda i: self.memory[i].total)

    @property
    def fits_in_memory(self) -> bool:
        return self.peak_memory_bytes <= self.config.cluster.gpu.hbm_bytes

    def run_estimate(self) -> dict[str, float] | None:
        """Days, GPU-hours, cost and energy of the whole run, when training.train_tokens is set."""
        tokens = self.config.training.train_tokens
        if not tokens:
            return None
        seconds = tokens / self.tokens_per_s
        gpu_hours = seconds / 3600 * self.num_gpus
        c = self.config.cluster
        # GPU board power at TDP times PUE: an upper bound (Patterson et al. 2021 use measured power)
        energy_kwh = gpu_hours * c.gpu.tdp_w / 1000 * c.pue
        run = {"days": seconds / 86400, "gpu_hours": gpu_hours,
               "cost_usd": gpu_hours * c.gpu_price_per_hour, "energy_mwh": energy_kwh / 1000}
        if not all(math.isfinite(v) for v in run.values()):  # a float overflow, never a total
            raise ConfigError(f"training.train_tokens={tokens:g} at {self.tokens_per_s:.3g} "
                              "tokens/s: the run's days, cost or energy exceed any finite "
                              "number; give fewer tokens or check the GPU's tdp_w and price")
        return run

    def to_dict(self) -> dict[str, Any]:
        mem = self.memory[self.peak_memory_stage]
        out: dict[str, Any] = {
            "iteration_time_s": self.iteration_time_s,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "model_tflops_per_gpu": self.model_tflops_per_gpu,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "mfu_16bit": self.mfu_16bit,
            "hfu_16bit": self.hfu_16bit,
            "peak_memory_bytes": self.peak_memory_bytes,
            "fits_in_memory": self.fits_in_memory,
            "memory": {"stage": self.peak_memory_stage, "weights_bytes": mem.weights,
                       "gradients_bytes": mem.gradients, "optimizer_bytes": mem.optimizer,
                       "activations_bytes": mem.activations, "buffers_bytes": mem.buffers,
                       "context_bytes": mem.context,
                       "allocated_bytes": mem.allocated, "reserved_bytes": mem.reserved,
                       "device_bytes": mem.device, "peak_at": mem.peak_at,
                       "temporaries": [{"name": n, "bytes": b} for n, b in mem.temporaries],
                       "per_stage_bytes": [m.total for m in self.memory]},
            "breakdown": dict(self.breakdown),
            "exposed_comm": dict(self.exposed_comm),
            "critical_stage": self.critical_stage,
            "num_microbatches": self.config.num_microbatches,
            "stage_layers": list(self.config.stage_layer_counts),
            "compute_sources": dict(self.compute_sources),
            "simulation": dict(self.simulation),
            "dp": self.config.dp,
            "run": self.run_estimate(),
            "config": to_dict(self.config),
        }
        return out
