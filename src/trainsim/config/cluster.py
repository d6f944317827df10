"""Hardware: one GPU's spec and the cluster built from it. SI units throughout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from trainsim.config._build import require_positive
from trainsim.errors import ConfigError

SUSTAINED_OF_BURST = 0.85
"""Sustained (power-saturated) over burst matmul throughput; see GPUSpec.gemm_ceiling."""


@dataclass(frozen=True)
class GPUSpec:
    """Datasheet numbers of one accelerator (dense peaks: no 2:4 sparsity)."""

    name: str
    peak_flops: dict[str, float]
    """Dense peak FLOP/s per dtype: fp32, tf32, fp16, bf16, fp8."""
    hbm_bytes: float
    hbm_bw_Bps: float
    nvlink_bw_Bps: float
    """Unidirectional GPU-to-fabric bandwidth of NVLink/Infinity Fabric (half the 'bidirectional' figure)."""
    num_sms: int
    l2_bytes: float = 0.0
    mamf_fraction: float = 0.8
    """Maximum achievable matmul FLOP/s as a fraction of the dense 16-bit peak (measured, per
    GPU: best large GEMM, e.g. Bekman's MAMF finder)."""
    mamf_fraction_fp8: float | None = None
    """The same for fp8 GEMMs against the fp8 peak; None = mamf_fraction."""
    tdp_w: float = 700.0
    price_per_hour: float = 2.0
    """Indicative on-demand USD per GPU-hour; override in the cluster config."""
    vendor: str = "nvidia"
    nvls: bool = False
    """NVLink SHARP in the NVSwitch (H100 generation and later)."""
    nvls_efficiency: float = 0.85
    """Achieved fraction of the NVLink rate that NVLS's multimem reduce/multicast traffic gets,
    relative to a ring's. NCCL's own tuning model uses 0.85 on Hopper and 0.74 on Blackwell
    (src/graph/tuning.cc, ``nvlsEfficiency``)."""
    source: str = ""

    def __post_init__(self) -> None:
        require_positive(f"gpu[{self.name}]", hbm_bytes=self.hbm_bytes, hbm_bw_Bps=self.hbm_bw_Bps,
                         nvlink_bw_Bps=self.nvlink_bw_Bps, num_sms=self.num_sms)
        if not self.peak_flops:
            raise ConfigError(f"gpu[{self.name}].peak_flops is empty")

    def gemm_ceiling(self, dtype: str) -> float:
        """Sustained FLOP/s of the best large GEMM in ``dtype`` during training.

        MAMF is a boost-clock burst; a GPU in a training job runs power-saturated, at the
        sustained rate (MSMF). Bekman's measurements with all 8 GPUs of a node busy give
        MSMF/MAMF = 701/826 = 0.85 on H200 and 1439/1758 = 0.82 on B200 (ml-engineering,
        mamf-finder "alone vs all-8 concurrent"); we use 0.85 for every GPU.
        """
        frac = self.mamf_fraction
        if dtype == "fp8" and "fp8" in self.peak_flops:
            frac = self.mamf_fraction_fp8 or self.mamf_fraction
        return self.flops(dtype) * frac * SUSTAINED_OF_BURST

    def flops(self, dtype: str) -> float:
        """Peak FLOP/s for ``dtype``; fp8 falls back to the 16-bit peak where the GPU has none."""
        if dtype in self.peak_flops:
            return self.peak_flops[dtype]
        if dtype == "fp8":
            return self.flops("bf16")
        if dtype in ("bf16", "fp16"):
            other = "fp16" if dtype == "bf16" else "bf16"
            if other in self.peak_flops:
                return self.peak_flops[other]
        raise ConfigError(f"gpu {self.name} has no peak FLOP/s for dtype {dtype}")


@dataclass(frozen=True)
class ClusterConfig:
    """GPUs, how they are grouped in nodes, and the network between nodes."""

    gpu: GPUSpec
    num_gpus: int = 8
    gpus_per_node: int = 8
    nic_bw_Bps: float = 50e9
    """Inter-node bandwidth per GPU, one direction (400 Gbit/s NIC per GPU = 50e9 B/s)."""
    intra_node_bw_Bps: float | None = None
    """NVLink bandwidth per GPU, one direction; None = the GPU's catalog value."""
    network_backend: Literal["analytical", "flow"] = "analytical"
    """analytical: NCCL's alpha-beta model per tier (fast); flow: max-min fair sharing of every
    link of a rail-optimized fat-tree among a collective's flows (congestion, ECMP)."""
    nvls: bool = True
    """Use NVLink SHARP where the GPU's NVSwitch has it (NCCL_NVLS_ENABLE)."""
    in_network_reduction: bool = False
    """The network's switches reduce (InfiniBand SHARP): enables NCCL's CollNet."""
    nccl_algo: str = "auto"
    """Force an algorithm like NCCL_ALGO: auto, ring, tree, nvls, nvls_tree, collnet, pat."""
    compute_db: str | None = "auto"
    """Measured kernel database (``trainsim profile`` JSON): a path, 'auto' (the bundled one for
    this GPU when it exists) or None (roofline only)."""
    nccl_proto: str = "auto"
    """Force a protocol like NCCL_PROTO: auto, LL, LL128, Simple."""
    node: str = "custom"
    price_per_gpu_hour: float | None = None
    """USD per GPU-hour; None = the GPU's catalog value."""
    pue: float = 1.2
    """Datacenter power usage effectiveness for energy estimates."""
    extra: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_positive("cluster", num_gpus=self.num_gpus, gpus_per_node=self.gpus_per_node,
                         nic_bw_Bps=self.nic_bw_Bps, intra_node_bw_Bps=self.intra_node_bw_Bps)
        if self.num_gpus > self.gpus_per_node and self.num_gpus % self.gpus_per_node:
            raise ConfigError(
                f"cluster.num_gpus={self.num_gpus} is not a multiple of "
                f"cluster.gpus_per_node={self.gpus_per_node}; use whole nodes")

    @property
    def num_nodes(self) -> int:
        return max(1, self.num_gpus // self.gpus_per_node)

    @property
    def nvlink_bw_Bps(self) -> float:
        return self.intra_node_bw_Bps or self.gpu.nvlink_bw_Bps

    @property
    def gpu_price_per_hour(self) -> float:
        return self.price_per_gpu_hour if self.price_per_gpu_hour is not None else self.gpu.price_per_hour
