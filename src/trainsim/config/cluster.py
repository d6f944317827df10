"""Hardware: one GPU's spec and the cluster built from it. SI units throughout."""

from __future__ import annotations

import dataclasses
import math
import typing
import warnings
from dataclasses import dataclass, field
from typing import Literal

from trainsim.config._build import (
    FREE_TEXT,
    check_fields,
    require_fraction,
    require_nonnegative,
    require_positive,
    require_rate,
    suggest,
    unknown_field,
)
from trainsim.config.fabric_rules import fabric_problem, nvls_on
from trainsim.config.nccl_release import nccl_release
from trainsim.errors import ConfigError, TrainsimWarning

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp6", "fp4", "int8")
"""Datatypes a GPU's peak_flops may list."""
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet", "pat", "direct")
"""NCCL_ALGO values (collectives.nccl prices each)."""
MAX_NICS_PER_GPU = 64
"""Most NICs one GPU may share: servers give a GPU 1 to 4 (DGX H100: 1 ConnectX-7; AWS p5: 4
EFA), and NCCL_TOPO_MAX_NODES (src/include/graph.h v2.27.3-1: 576) bounds the NICs of a whole
node; 64 leaves room above any server built."""
MAX_PUE = 10.0
"""Largest power usage effectiveness taken: facility power over IT power is about 1.1 for
hyperscale and 1.6 to 2.5 for older or small datacenters (Uptime Institute surveys); beyond 10
a value is a typo, and it would scale energy past any finite total."""
MAX_PRICE_PER_HOUR = 1e6
"""Largest price of one GPU-hour taken, in USD (rented GPUs cost about 1 to 10)."""
PROTOCOLS = ("LL", "LL128", "Simple")

FABRICS = ("infiniband", "roce", "efa", "tcpx", "tcpxo")
"""Inter-node transports a cluster config can name (``cluster.fabric``); roce, tcpxo: infiniband."""
TOPOLOGIES = ("rail-optimized", "spine-leaf", "nvl72", "torus")
"""Networks a cluster config can name (``cluster.topology``); network.topology builds each."""
TOPOLOGY_ALIASES = {"rail-optimised": "rail-optimized", "rail": "rail-optimized",
                    "leaf-spine": "spine-leaf", "gb200-nvl72": "nvl72", "nvl-72": "nvl72"}
NVL72_GPUS = 72
"""GPUs in one GB200 NVL72 NVLink domain (18 compute trays x 4 GPUs)."""
MAX_SCALE_UP_GPUS = 576
"""Most GPUs any scale-up fabric of the catalog's GPUs can join in one domain: NVIDIA specifies
fifth-generation NVLink with the NVLink Switch as "up to 576 GPUs" in one NVLink domain
(NVIDIA Blackwell architecture technical brief, 2024; NVLink 4's NVLink Switch System: 256 H100,
H100 whitepaper 2022). A ``gpus_per_node`` above it is no machine anyone can build."""

SUSTAINED_OF_BURST = 0.85
"""Sustained (power-saturated) over burst matmul throughput; see GPUSpec.gemm_ceiling."""

POWER_EXPONENT = 0.6
"""Sustained matmul rate ~ (board power limit)^0.6 below the TDP; see power_limited_rate."""


def power_limited_rate(power_limit_w: float | None, tdp_w: float) -> float:
    """Sustained large-GEMM rate under a board power limit, relative to the rate at the TDP.

    A power-saturated GEMM runs at the highest clock whose power fits the limit. Dynamic power
    grows as f·V² and the voltage rises with the clock, so the clock (and the GEMM rate, SMs x
    clock) grows slower than the power: rate ~ P^a. ``a`` is fitted to measurements of one die
    at two board powers: AMD's CDNA3 (304 CUs, the same peak FLOP/s) as MI300X at 750 W and as
    MI325X at 1000 W, Max-Achievable FLOPs with median clocks (ROCm blog "Measuring
    Max-Achievable FLOPs - Part 2", Table 1), and torch.matmul MAMF (stas00/ml-engineering
    compute/accelerator/README.md @744d01e1):

    =========================  ===========================  ========================
    dtype, source              TFLOP/s 750 W -> 1000 W      a = ln(ratio)/ln(4/3)
    =========================  ===========================  ========================
    bf16, AMD hipBLASLt        708 -> 843 (1207->1447 MHz)  0.61
    fp16, AMD hipBLASLt        654 -> 794 (1115->1354 MHz)  0.67
    fp8, AMD hipBLASLt         1273 -> 1519 (1230->1464)    0.61
    bf16, ml-engineering MAMF  668.4 -> 784.9               0.56
    =========================  ===========================  ========================

    Mean 0.61, rounded to 0.6; the rate ratios equal the clock ratios within 1 %, i.e. the
    limit acts through the SM clock. On an H100 capped at 500 W of 700 W this gives 0.82 of
    the TDP rate. A limit at or above the TDP changes nothing. Only compute-bound work is
    scaled: the HBM clock stays fixed, so memory-bound kernels keep their bandwidth.
    """
    if power_limit_w is None or power_limit_w >= tdp_w:
        return 1.0
    return (power_limit_w / tdp_w) ** POWER_EXPONENT


def segment_domains(units: int, unit_gpus: int, units_per_domain: int) -> tuple[int, ...]:
    """GPUs of the job in each domain when it asks for ``units`` nodes (trays of
    ``unit_gpus`` GPUs) in Slurm segments, as NeMo's performance scripts submit a GB200 job
    beyond one rack: the segment is the largest divisor of the node count that one rack holds
    (NVIDIA/NeMo scripts/performance/utils.py ``slurm_executor`` @ 7a8f1cc7bc, r2.3.0: ``for
    segment_candidate in range(18, 0, -1)``; the same rule in NVIDIA/dgxc-benchmarking's
    llmb-run, cli/llmb-run/src/llmb_run/job_launcher.py ``_compute_segment_size``). Slurm's
    topology/block plugin places each segment inside one block (sbatch ``--segment``), as many
    whole segments to a rack as fit, racks filled in rank order; a job that fits one rack takes
    it alone. 64 trays: 4 x 16 (64 GPUs a rack); 19 trays: segments of 1, 18 + 1 trays (72 + 4
    GPUs); 25 trays: segments of 5, 15 + 10 trays (60 + 40)."""
    if units <= units_per_domain:
        return (units * unit_gpus,)
    segment = next(d for d in range(units_per_domain, 0, -1) if units % d == 0)
    per_domain = units_per_domain // segment * segment
    full, rest = divmod(units, per_domain)
    return (per_domain * unit_gpus,) * full + ((rest * unit_gpus,) if rest else ())



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
    flops_per_exp: float = 256.0
    """Tensor-core 16-bit FLOPs per special-function (exp) result at the same clock: the SMs'
    MUFU units give 16 results per clock per SM while the tensor cores' rate doubles each
    generation, so 128 on Ampere (A100: 312 TFLOP/s vs 108 SMs x 16 x 1.41 GHz), 256 on
    Hopper ("989 TFLOPS of FP16 matmul but only 3.9 TFLOPS of special functions", FA3 paper
    §3.1) and 512 on Blackwell (FA4 paper §1). Softmax in attention pays one exp per score."""
    sustained_of_burst: float = SUSTAINED_OF_BURST
    """Matmul rate during training over the rate of one GPU benchmarked alone (see
    ``gemm_ceiling``); 1.0 prices a kernel microbenchmark, which runs at the burst clock."""
    tdp_w: float = 700.0
    power_limit_w: float | None = None
    """Board power limit the GPUs run under (``nvidia-smi -pl``); None = tdp_w. A limit below
    the TDP lowers the sustained matmul rate (``power_limited_rate``), not the HBM bandwidth."""
    price_per_hour: float = 2.0
    """Indicative on-demand USD per GPU-hour; override in the cluster config."""
    host_link_bw_Bps: float | None = None
    """GPU-to-host-memory bandwidth, one direction (PCIe Gen5 x16: 64e9; GB200's NVLink-C2C:
    450e9); None = not stated. Activation CPU offloading copies over it (``memory.offload``)."""
    vendor: Literal["nvidia", "amd"] = "nvidia"
    """Whose GPU: which vendor's kernels it runs (cuDNN and FlashAttention-3 NVIDIA's, CK AMD's)
    and whose defaults it takes; read case-blind (``AMD`` is ``amd``, fuzz17: it was read as a
    third vendor that runs neither's kernels)."""
    nvls: bool = False
    """NVLink SHARP in the NVSwitch (H100 generation and later)."""
    nvls_efficiency: float = 0.85
    """Achieved fraction of the NVLink rate that NVLS's multimem reduce/multicast traffic gets,
    relative to a ring's. NCCL's own tuning model uses 0.85 on Hopper and 0.74 on Blackwell
    (src/graph/tuning.cc, ``nvlsEfficiency``)."""
    largest_nvlink_domain: int | None = None
    """The most GPUs of this part one built system joins on its NVLink (AMD: Infinity Fabric)
    fabric: the largest NVSwitch board or rack shipped (DGX-2 16 V100, HGX A100 16-GPU, HGX
    H100/B200 8, GB200 NVL72 72, an MI300X platform 8); for a ``pcie_only`` card the most such
    cards one server holds on its PCIe switches. Each GPU file cites its own; None = not
    stated. A cluster with more GPUs per node is priced as the hypothetical domain it states,
    with a warning."""
    pcie_only: bool = False
    """The GPUs of a node talk over PCIe: a PCIe card, with no NVLink switch (an NVLink bridge
    joins two cards at most); ``nvlink_bw_Bps`` is then its PCIe link rate. Such a node is no
    NVLink rack (``cluster.topology=nvl72`` refused)."""
    compute_capability: int | None = None
    """CUDA compute capability, major x 10 + minor (NVIDIA's "CUDA GPUs" list: A100 80,
    H100/H800/H200 90, B200/GB200 100, RTX PRO 6000 Blackwell 120); None for a GPU that is not
    NVIDIA's or a GPU file that does not state it (``sm_arch`` then reads it from the peaks)."""
    max_sm_clock_mhz: float | None = None
    """The SM clock the GPU boosts to when its power allows (``nvidia-smi -q -d CLOCK``, "Max
    Clocks: SM"; the highest application clock): A100 1410, H100/H800/H200 SXM 1980, B200 1965
    MHz. A memory-bound kernel draws too little power to pull the clock down, so a rate the SMs
    set (``compute.roofline.scalar_load_bw``) runs at this one. None: not stated."""
    source: str = field(default="", metadata={FREE_TEXT: True})
    """Where the figures were read: free text, which may span lines (``source: >``)."""

    def __post_init__(self) -> None:
        check_fields(self, f"gpu[{self.name}]")
        require_positive(f"gpu[{self.name}]", hbm_bytes=self.hbm_bytes, hbm_bw_Bps=self.hbm_bw_Bps,
                         nvlink_bw_Bps=self.nvlink_bw_Bps, num_sms=self.num_sms,
                         tdp_w=self.tdp_w, power_limit_w=self.power_limit_w,
                         flops_per_exp=self.flops_per_exp,
                         largest_nvlink_domain=self.largest_nvlink_domain,
                         compute_capability=self.compute_capability,
                         max_sm_clock_mhz=self.max_sm_clock_mhz)
        cc = self.compute_capability
        if cc is not None and self.vendor != "nvidia":
            raise ConfigError(f"gpu[{self.name}].compute_capability={cc} is an NVIDIA (CUDA) "
                              f"number; vendor {self.vendor!r} has none: remove the field")
        if cc is not None and cc < 30:  # CUDA's oldest, Kepler, is 3.0; written 10.0 it is 100
            raise ConfigError(f"gpu[{self.name}].compute_capability={cc} is major*10+minor, "
                              "e.g. 100 for 10.0, 90 for 9.0")
        if not self.peak_flops:
            raise ConfigError(f"gpu[{self.name}].peak_flops is empty")
        for dtype, peak in self.peak_flops.items():
            if dtype not in DTYPES:
                raise ConfigError(f"gpu[{self.name}].peak_flops: unknown dtype {dtype!r}"
                                  f"{suggest(dtype, DTYPES)}; known: {', '.join(DTYPES)}")
            if not 0 < peak < math.inf:
                raise ConfigError(f"gpu[{self.name}].peak_flops.{dtype}={peak:g} must be a "
                                  "positive finite FLOP/s")
            require_rate(f"gpu[{self.name}]", **{f"peak_flops.{dtype}": peak})
        if "bf16" not in self.peak_flops and "fp16" not in self.peak_flops:
            raise ConfigError(f"gpu[{self.name}].peak_flops needs a 16-bit peak (bf16 or fp16): "
                              "utilization is reported against it")
        require_fraction(f"gpu[{self.name}]", mamf_fraction=self.mamf_fraction,
                         mamf_fraction_fp8=self.mamf_fraction_fp8,
                         nvls_efficiency=self.nvls_efficiency)
        require_positive(f"gpu[{self.name}]", host_link_bw_Bps=self.host_link_bw_Bps)
        require_rate(f"gpu[{self.name}]", hbm_bw_Bps=self.hbm_bw_Bps,
                     nvlink_bw_Bps=self.nvlink_bw_Bps, host_link_bw_Bps=self.host_link_bw_Bps)
        require_nonnegative(f"gpu[{self.name}]", l2_bytes=self.l2_bytes,
                            price_per_hour=self.price_per_hour)
        if not 0 < self.sustained_of_burst <= 1:
            raise ConfigError(f"gpu[{self.name}].sustained_of_burst={self.sustained_of_burst:g} "
                              "must be in (0, 1]")
        if self.power_limit_w is not None and self.power_limit_w > self.tdp_w:
            raise ConfigError(
                f"gpu[{self.name}].power_limit_w={self.power_limit_w:g} exceeds "
                f"tdp_w={self.tdp_w:g}; a power limit can only lower the board power")

    @property
    def sm_arch(self) -> int | None:
        """The NVIDIA architecture kernels are chosen by (80, 90, 100, 120, ...): the compute
        capability where the GPU states it, else the generation its peaks imply, the rule
        before the field existed (fp4 cores: 100, Blackwell; fp8: 90, Hopper; else 80), so a
        GPU file without it prices as it did; None for another vendor's GPU."""
        if self.vendor != "nvidia":
            return None
        if self.compute_capability is not None:
            return self.compute_capability
        return 100 if "fp4" in self.peak_flops else 90 if "fp8" in self.peak_flops else 80

    @property
    def fp8_any_layout(self) -> bool:
        """fp8 GEMMs in layouts other than TN (no transposed fp8 copy needed): Transformer
        Engine's ``nvte_is_non_tn_fp8_gemm_supported`` (v2.8 common/transformer_engine.cpp
        715-722; pytorch/utils.py 462-467): compute capability 100-119 or 130 and above, so
        not sm120 (consumer/workstation Blackwell), which has fp4 cores too."""
        cc = self.sm_arch
        return cc is not None and (100 <= cc < 120 or cc >= 130)

    @property
    def block_scaled_mma(self) -> bool:
        """Tensor cores that take per-block scale factors in the MMA itself: the generation that
        brought fp4 (Blackwell's ``tcgen05.mma ... block_scale``, PTX ISA 8.7; MI355X's MX
        instructions) brought the microscaling formats with it."""
        return "fp4" in self.peak_flops

    def gemm_ceiling(self, dtype: str) -> float:
        """Sustained FLOP/s of the best large GEMM in ``dtype`` during training.

        MAMF is a boost-clock burst; a GPU in a training job runs power-saturated, at the
        sustained rate (MSMF). Bekman's measurements with all 8 GPUs of a node busy give
        MSMF/MAMF = 701/826 = 0.85 on H200 and 1439/1758 = 0.82 on B200 (ml-engineering,
        mamf-finder "alone vs all-8 concurrent"): B200's and GB200's catalog entries carry
        their own 0.82 (GB200: Azure's sustained cuBLASLt fp8 over its MAMF, gb200.yaml),
        every other GPU 0.85, H200's (``sustained_of_burst``; 1.0 for a kernel benchmarked
        alone). A board power limit below the TDP lowers it further (``power_limited_rate``).
        """
        frac = self.mamf_fraction
        if dtype == "fp8" and "fp8" in self.peak_flops:
            frac = self.mamf_fraction_fp8 or self.mamf_fraction
        return self.flops(dtype) * frac * self.sustained_of_burst * self.power_scale

    @property
    def board_power_w(self) -> float:
        """The power the board runs at when busy: the power limit, else the TDP."""
        return self.power_limit_w if self.power_limit_w is not None else self.tdp_w

    @property
    def power_scale(self) -> float:
        """Sustained matmul rate at the power limit over the rate at the TDP (<= 1)."""
        return power_limited_rate(self.power_limit_w, self.tdp_w)

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
    """GPUs on one NVLink domain (a server, or a rack of trays such as GB200 NVL72's 72); a
    job holding the same share of each domain may state that share (64 of a 72-GPU rack)."""
    nic_bw_Bps: float = 50e9
    """Inter-node bandwidth per GPU, one direction (400 Gbit/s NIC per GPU = 50e9 B/s)."""
    nics_per_gpu: int = 1
    """NICs nearest each GPU that share ``nic_bw_Bps`` (at most ``MAX_NICS_PER_GPU``): NCCL
    keeps a channel per NIC a GPU needs to match its own link to the CPU for each network peer
    of an all-to-all (``p2p_channels.net_count_by_bw``). NCCL reads that link only on a GPU linked to
    the CPU directly (NVLink-C2C: GB200, the catalog's one GPU with ``host_link_gbyte_s``); a
    GPU behind a PCIe switch (DGX/HGX H100, AWS p5 with its 4 EFA NICs a GPU) counts one NIC
    whatever this says."""
    gpus_per_nic: int = 1
    """GPUs behind one NIC (a divisor of ``gpus_per_node``): 2 on a node of 8 GPUs and 4 NICs
    (DGX-1, DGX A100 built with 4 HDR ports, InternEvo's 4 x 100 Gb RoCE machines). The NIC's
    rate is shared by its GPUs, so ``nic_bw_Bps`` stays each GPU's share of it (the NIC's rate
    over ``gpus_per_nic``); what changes is NCCL's plan: one searched ring per NIC, so half the
    channels a node cross the network (``collectives.ring_channels``), and
    the flow backend's GPUs share one NIC link of ``gpus_per_nic x nic_bw_Bps``."""
    intra_node_bw_Bps: float | None = None
    """NVLink bandwidth per GPU, one direction; None = the GPU's catalog value."""
    network_backend: Literal["analytical", "flow"] = "analytical"
    """analytical: NCCL's alpha-beta model per tier (fast); flow: max-min fair sharing of every
    link of a rail-optimized fat-tree among a collective's flows (congestion, ECMP)."""
    nvls: bool = True
    """Use NVLink SHARP where the GPU's NVSwitch has it (NCCL_NVLS_ENABLE)."""
    nccl_version: str | None = None
    """The NCCL release the run's stack loaded (``2.19.4``), which sizes NCCL's NVLS buffers
    (``memory.nccl_buffers``); None = not stated: those buffers are not counted."""
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
    topology: str = "rail-optimized"
    """The network between GPUs: ``rail-optimized`` (NVIDIA DGX SuperPOD: NIC i of every node
    on the rail-i leaf of its group), ``spine-leaf`` (top-of-rack leaves: all NICs of a node on
    one leaf), ``nvl72`` (GB200 NVL72 racks: 72 GPUs on one NVLink fabric, so gpus_per_node is
    72; trays of 4 GPUs on a rail-optimized scale-out) or ``torus`` (ASTRA-sim's
    multi-dimensional network: the nodes on a ring per dimension of ``torus_dims``, each GPU
    linked to its counterparts in the neighbouring nodes at the NIC rate). The flow backend
    builds it link by link; the analytical one sees its tiers (the NVLink domain, the NIC rate,
    the leaves' oversubscription)."""
    fabric: str = "infiniband"
    """The NICs' transport between nodes, which sets NCCL's network hop cost and rate
    (``collectives.scale_terms``): ``infiniband`` (NCCL's IB verbs; ``roce`` and ``tcpxo``,
    Google's A3 Mega, price as it), ``efa`` (AWS SRD via aws-ofi-nccl: p4d / p5 / p5e) or
    ``tcpx`` (Google's GPUDirect-TCPX plugin on A3 High: TCP, ring / Simple; scale_terms)."""
    nodes_per_leaf: int = 32
    """Nodes under one leaf switch (per rail when rail-optimized)."""
    oversubscription: float = 1.0
    """Leaf downlink over uplink capacity (1 = non-blocking); traffic of a group spanning more
    than ``nodes_per_leaf`` nodes shares the leaf uplinks."""
    torus_dims: tuple[int, ...] | None = None
    """Nodes along each torus dimension (product = number of nodes); None = the squarest 2-D
    grid."""
    domain_gpus: tuple[int, ...] | None = None
    """The job's GPUs in each NVLink domain it uses, in rank order, where they differ: a job
    packed onto 72-GPU racks ending in a partial one (256 GPUs: [72, 72, 72, 40]), or Slurm
    segments of trays (``segment_domains``). Each at most ``gpus_per_node``, summing to
    ``num_gpus``; collectives are priced over the domains each group's ranks land in
    (``collectives.placement``). None: whole domains of ``gpus_per_node``."""
    extra: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_fields(self, "cluster")
        if self.extra:  # a placeholder nothing reads: a value here would be silently ignored
            raise ConfigError(f"cluster.extra.{next(iter(self.extra))} is not read by any model; "
                              "remove it")
        require_positive("cluster", num_gpus=self.num_gpus, gpus_per_node=self.gpus_per_node,
                         nic_bw_Bps=self.nic_bw_Bps, intra_node_bw_Bps=self.intra_node_bw_Bps,
                         nics_per_gpu=self.nics_per_gpu, gpus_per_nic=self.gpus_per_nic)
        require_nonnegative("cluster", price_per_gpu_hour=self.price_per_gpu_hour)
        require_rate("cluster", nic_bw_Bps=self.nic_bw_Bps, intra_node_bw_Bps=self.intra_node_bw_Bps)
        if self.nics_per_gpu > MAX_NICS_PER_GPU:
            raise ConfigError(f"cluster.nics_per_gpu={self.nics_per_gpu} is out of range (at most "
                              f"{MAX_NICS_PER_GPU} NICs a GPU)")
        if self.nics_per_gpu > 1 and self.gpu.host_link_bw_Bps is None:
            warnings.warn(f"cluster.nics_per_gpu={self.nics_per_gpu} changes nothing on gpu "
                          f"{self.gpu.name}, which states no host_link_gbyte_s: NCCL counts the "
                          "NICs a GPU needs only on a GPU linked to the CPU directly (C2C)",
                          TrainsimWarning, stacklevel=2)
        if self.price_per_gpu_hour is not None and self.price_per_gpu_hour > MAX_PRICE_PER_HOUR:
            raise ConfigError(f"cluster.price_per_gpu_hour={self.price_per_gpu_hour:g} is out of "
                              f"range (at most {MAX_PRICE_PER_HOUR:,.0f} USD per GPU-hour)")
        if not 1 <= self.pue <= MAX_PUE:
            raise ConfigError(f"cluster.pue={self.pue} must be >= 1 and at most {MAX_PUE:g} (facility "
                              "power over IT power; 1.0 is a datacenter with no overhead)")
        if self.nccl_algo.lower() not in ("auto",) + ALGORITHMS:
            raise ConfigError(f"cluster.nccl_algo={self.nccl_algo!r} is unknown"
                              f"{suggest(self.nccl_algo.lower(), ALGORITHMS)}; known: auto, "
                              f"{', '.join(ALGORITHMS)}")
        # NCCL reads NCCL_PROTO without regard to case (collectives.nccl.collective_cost, as
        # `trainsim collective --protocol`); fuzz46: 'simple' was refused here
        spelled = {p.lower(): p for p in ("auto",) + PROTOCOLS}.get(
            str(self.nccl_proto).strip().lower())
        if spelled is None:
            raise ConfigError(f"cluster.nccl_proto={self.nccl_proto!r} is unknown"
                              f"{suggest(str(self.nccl_proto), ('auto',) + PROTOCOLS)}; known: "
                              f"auto, {', '.join(PROTOCOLS)}")
        object.__setattr__(self, "nccl_proto", spelled)
        if self.nccl_version is not None:  # refused here, in one line, if no release
            nccl_release(self.nccl_version)
        self._check_topology()
        self._check_gpus_per_nic()
        fabric = str(self.fabric).strip().lower()
        if fabric not in FABRICS:
            raise ConfigError(f"cluster.fabric={self.fabric!r} is unknown{suggest(fabric, FABRICS)}"
                              f"; known: {', '.join(FABRICS)}")
        ib_like = fabric in ("roce", "tcpxo")  # priced as InfiniBand (FABRICS)
        object.__setattr__(self, "fabric", "infiniband" if ib_like else fabric)
        object.__setattr__(self, "nvls", nvls_on(self.fabric, self.nvls))
        fabric_problem(self.fabric, self.nccl_algo, self.nccl_proto, self.in_network_reduction,
                       self.network_backend, nvls=self.gpu.nvls and self.nvls)
        if self.network_backend == "flow" and self.nccl_proto != "auto":
            # the flow model shares links among flows and has no protocols (FlowNetwork.
            # collective: "protocol is reported, not priced"): a forced one was shown, unpriced
            raise ConfigError(f"cluster.nccl_proto={self.nccl_proto} is priced by the analytical "
                              "network backend only; the flow backend models links, not NCCL "
                              "protocols: leave nccl_proto auto")
        if self.fabric in ("efa", "tcpx") and (self.network_backend == "flow"
                                               or self.topology == "torus"):
            raise ConfigError(f"cluster.fabric={self.fabric} is priced by the analytical network "
                              "backend only; the flow backend and torus price InfiniBand links")
        self._check_domain()
        if self.domain_gpus is not None:
            self._check_domain_gpus()
        elif self.num_gpus > self.gpus_per_node and self.num_gpus % self.gpus_per_node:
            raise ConfigError(
                f"cluster.num_gpus={self.num_gpus} is not a multiple of "
                f"cluster.gpus_per_node={self.gpus_per_node}; use whole nodes, or state the "
                "GPUs in each NVLink domain (cluster.domain_gpus, e.g. a last partial one)")

    def _check_gpus_per_nic(self) -> None:
        g = self.gpus_per_nic
        if g == 1:
            return
        if self.nics_per_gpu > 1:
            raise ConfigError(f"cluster.gpus_per_nic={g} and cluster.nics_per_gpu="
                              f"{self.nics_per_gpu} contradict each other: a GPU has several "
                              "NICs or shares one; set one of them")
        if self.gpus_per_node % g:
            raise ConfigError(f"cluster.gpus_per_nic={g} does not divide cluster.gpus_per_node="
                              f"{self.gpus_per_node}: a node's GPUs share its NICs evenly")
        if self.topology in ("nvl72", "torus"):
            raise ConfigError(f"cluster.gpus_per_nic={g} is priced on a switched topology "
                              "(rail-optimized, spine-leaf); topology "
                              f"{self.topology} gives every GPU its own NIC or link")

    @property
    def nics_per_node(self) -> int:
        """NICs of one node (NVLink domain): ``gpus_per_node / gpus_per_nic``."""
        return max(1, self.gpus_per_node // self.gpus_per_nic)

    def _check_domain_gpus(self) -> None:
        shares, n = self.domain_gpus, self.gpus_per_node
        if not shares or min(shares) < 1 or max(shares) > n:
            raise ConfigError(f"cluster.domain_gpus={list(shares or ())} must list 1 to "
                              f"cluster.gpus_per_node={n} GPUs for each NVLink domain used")
        if sum(shares) != self.num_gpus:
            raise ConfigError(f"cluster.domain_gpus={list(shares)} holds {sum(shares)} GPUs; "
                              f"cluster.num_gpus is {self.num_gpus}")
        if self.network_backend == "flow" or self.topology == "torus":
            raise ConfigError("cluster.domain_gpus is priced by the analytical network backend "
                              "on a switched topology; the flow backend and the torus build "
                              "whole nodes")

    def _check_topology(self) -> None:
        name = str(self.topology).strip().lower().replace("_", "-")
        name = TOPOLOGY_ALIASES.get(name, name)
        if name not in TOPOLOGIES:
            raise ConfigError(f"cluster.topology={self.topology!r} is unknown"
                              f"{suggest(name, TOPOLOGIES)}; known: {', '.join(TOPOLOGIES)}")
        object.__setattr__(self, "topology", name)
        require_positive("cluster", nodes_per_leaf=self.nodes_per_leaf)
        if not 1 <= self.oversubscription < math.inf:
            raise ConfigError(f"cluster.oversubscription={self.oversubscription} must be >= 1 "
                              "(leaf downlink over uplink capacity; 1 is non-blocking)")
        if name == "nvl72" and self.gpu.pcie_only:
            raise ConfigError(f"cluster.topology=nvl72 is an NVLink rack; {self.gpu.name} is a "
                              "PCIe card with no NVLink switch (its node talks over PCIe): use "
                              "an NVL72 GPU (gb200, gb300) or another topology")
        if name == "nvl72" and self.gpus_per_node != NVL72_GPUS:
            raise ConfigError(f"cluster.topology=nvl72 is a {NVL72_GPUS}-GPU NVLink domain: "
                              f"cluster.gpus_per_node must be {NVL72_GPUS}, not "
                              f"{self.gpus_per_node}")
        if name == "torus":
            if self.oversubscription != 1:
                raise ConfigError("cluster.oversubscription applies to leaf switches; a torus "
                                  "(cluster.topology=torus) has none")
            if self.torus_dims is not None and (
                    not self.torus_dims or min(self.torus_dims) < 1
                    or math.prod(self.torus_dims) != self.num_nodes):
                raise ConfigError(f"cluster.torus_dims={list(self.torus_dims)} must be positive "
                                  f"and multiply to the number of nodes ({self.num_nodes})")
        elif self.torus_dims is not None:
            raise ConfigError(f"cluster.torus_dims needs cluster.topology=torus, not {name}")

    def _check_domain(self) -> None:
        """``gpus_per_node`` is the NVLink domain (every GPU of a node on one NVLink fabric):
        above ``MAX_SCALE_UP_GPUS`` refused, above what any system of this GPU was built with
        (``GPUSpec.largest_nvlink_domain``) priced as stated with a warning (a what-if such as
        a B200 in a 72-GPU rack)."""
        n, built = self.gpus_per_node, self.gpu.largest_nvlink_domain
        if n > MAX_SCALE_UP_GPUS:
            raise ConfigError(f"cluster.gpus_per_node={n} puts {n} GPUs on one NVLink fabric; no "
                              f"scale-up fabric joins more than {MAX_SCALE_UP_GPUS} (NVLink 5's "
                              "NVLink Switch): give the GPUs of one server or rack")
        if built is not None and n > built and self.gpu.pcie_only:
            warnings.warn(f"cluster.gpus_per_node={n} exceeds the most {self.gpu.name} cards any "
                          f"server was built with ({built}, on PCIe switches: the card has no "
                          f"NVLink switch); priced as a hypothetical {n}-GPU PCIe node",
                          TrainsimWarning, stacklevel=3)
        elif built is not None and n > built:
            warnings.warn(f"cluster.gpus_per_node={n} exceeds the largest NVLink domain any "
                          f"{self.gpu.name} system was built with ({built} GPUs); priced as a "
                          f"hypothetical {n}-GPU NVLink domain", TrainsimWarning, stacklevel=3)

    @property
    def num_nodes(self) -> int:
        if self.domain_gpus is not None:
            return len(self.domain_gpus)
        return max(1, self.num_gpus // self.gpus_per_node)

    def with_gpus(self, num_gpus: int) -> ClusterConfig:
        """This cluster with ``num_gpus`` GPUs (a search's other counts, a capture's one GPU):
        stated domains (``domain_gpus``) become whole domains packed in order, the last partial
        where ``gpus_per_node`` does not divide the count."""
        if self.domain_gpus is None:
            return dataclasses.replace(self, num_gpus=num_gpus)
        full, rest = divmod(num_gpus, self.gpus_per_node)
        shares = (self.gpus_per_node,) * full + ((rest,) if rest else ())
        return dataclasses.replace(self, num_gpus=num_gpus,
                                   domain_gpus=shares if rest else None)

    @property
    def gpus_per_domain(self) -> int:
        """The most of the job's GPUs one NVLink domain holds (``gpus_per_node``, or the
        largest of ``domain_gpus``)."""
        return max(self.domain_gpus) if self.domain_gpus is not None else self.gpus_per_node

    @property
    def torus_shape(self) -> tuple[int, ...]:
        """Nodes along each torus dimension: ``torus_dims``, else the squarest 2-D grid."""
        if self.torus_dims is not None:
            return self.torus_dims
        n = self.num_nodes
        a = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
        return (a, n // a) if a > 1 else (n,)

    @property
    def nvlink_bw_Bps(self) -> float:
        return self.intra_node_bw_Bps or self.gpu.nvlink_bw_Bps

    @property
    def gpu_price_per_hour(self) -> float:
        return self.price_per_gpu_hour if self.price_per_gpu_hour is not None else self.gpu.price_per_hour


def gpu_missing(keys: typing.Iterable[str], converted: typing.Iterable[str] = ()) -> ConfigError:
    """The error of a cluster section that names no GPU (``cluster.gpu``, or a ``node`` preset's
    GPU). A key of ``keys`` that is no cluster field is named first, as ``build`` names it
    (``unknown field cluster.Gpu (did you mean 'gpu'?)``): a misspelt ``gpu`` or ``node``
    (``Gpu``, ``nod``, ``gpu_type``) is why no GPU was read, and fuzz46 found "cluster.gpu is
    required" hiding it. ``converted``: keys the catalog reads into fields (units). Returned
    for ``raise``."""
    known = {f.name for f in dataclasses.fields(ClusterConfig)} | set(converted)
    unknown = next((k for k in keys if k not in known), None)
    if unknown is not None:
        return unknown_field(ClusterConfig, unknown, "cluster")
    return ConfigError("cluster.gpu is required (a catalog name such as h100-sxm-80gb)")
