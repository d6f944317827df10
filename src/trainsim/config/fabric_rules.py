"""What NCCL cannot run over a cluster's inter-node transport (``cluster.fabric``), refused as
the cluster is built (robust61: each was priced without a word).

GPUDirect-TCPX (``tcpx``, Google's A3 High) runs NCCL's ring algorithm on the Simple protocol
only, with NVLink SHARP off: Google's published NCCL configuration for the plugin sets
``NCCL_ALGO=Ring``, ``NCCL_PROTO=Simple`` and ``NCCL_NVLS_ENABLE=0`` for the job
(GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpx/README.md; SkyPilot's
examples/gcp_gpu_direct_tcpx/nccl_tcpx_gcpvm_h100.yaml @ d7fe39d7), and apple/axlearn's GKE A3
job (axlearn/cloud/gcp/job.py ``GPUGKEJob``) says why beside each: "TCPX only supports Ring
algorithm", "TCPX only supports Simple protocol", "TCPX is not compatible with NVLS"
(``collectives.scale_terms.TCPX_ALGO``). A forced tree or LL128 was priced as InfiniBand's
(LL128 faster than the fabric can run).

In-network reduction (NCCL's CollNet over SHARP) needs the switches of an InfiniBand fabric
(NVIDIA Quantum's SHARP; NCCL's CollNet plugin is nccl-rdma-sharp-plugins over IB verbs). EFA
(AWS SRD through aws-ofi-nccl) and TCPX (TCP) have no reducing switch: ``in_network_reduction``
there was priced as SHARP (EFA) or ignored (TCPX, whose ring never reads it).

The flow backend (``network.flow.FlowNetwork``) prices the collectives its callers name with
its own decompositions (``collectives.flows.FLOW_ALGORITHMS``: ring; direct for an
all-to-all) and reads neither ``cluster.nccl_algo`` nor ``cluster.in_network_reduction``: a
forced tree or SHARP was taken and priced as the flows' ring (as ``nccl_proto``, refused there
since fuzz46).

Some forced algorithms no group of the cluster can run, whatever the run's groups: CollNet
without in-network reduction, NVLS / NVLS-Tree where NVLink SHARP is off (a GPU without it, or
``cluster.nvls: false``), ``direct`` (all-to-all's, which NCCL_ALGO does not pick) and a forced
LL / LL128 beside NVLS, CollNet or PAT (Simple only). They were refused only when the first
collective was priced (robust61: the service queued them); what depends on a group's shape
(tree inside one node, NVLS across nodes, PAT with more than one rank a node) is refused from
the run's tensor- and data-parallel groups before anything is priced
(``network.forced_algo``, collfab61: simulate and the service's job check), else when the
collective is priced, naming ``cluster.nccl_algo`` (``network.analytical``)."""

from __future__ import annotations

from trainsim.errors import ConfigError


def nvls_on(fabric: str, nvls: bool) -> bool:
    """``cluster.nvls`` as the run has it: off on GPUDirect-TCPX, whose NCCL configuration sets
    ``NCCL_NVLS_ENABLE=0`` ("TCPX is not compatible with NVLS"), so NCCL binds no NVLS buffers
    (``memory.nccl_buffers``: robust61, an A3 High run stating its NCCL counted 1.6 GB of them)
    and runs no NVLS (the ring ``TCPX_RUNS`` forces). Read as ``roce`` is read as InfiniBand:
    ``nvls`` defaults to on, so a stated ``true`` cannot be told from the default."""
    return nvls and fabric != "tcpx"


TCPX_RUNS = ("ring", "Simple")
"""The one NCCL algorithm and protocol GPUDirect-TCPX runs (module docstring)."""
NO_SWITCH_REDUCTION = ("efa", "tcpx")
"""Fabrics with no switch that reduces (no SHARP, so no CollNet)."""
SIMPLE_ONLY = ("nvls", "nvls_tree", "collnet", "pat")
"""Algorithms NCCL runs on the Simple protocol only (``collectives.nccl._time``: NCCL
src/graph/tuning.cc); a forced LL / LL128 beside one could run no collective of it."""
REDUCTION_NAMES = ("cluster.in_network_reduction=true", "cluster.fabric",
                   "set in_network_reduction false", "network_backend analytical")
"""How a run config spells in-network reduction, the fabric, and the two fixes
(``reduction_problem``; ``trainsim collective`` spells them as its options)."""


def transport_problem(fabric: str, algorithm: str, protocol: str,
                      names: tuple[str, str, str] = ("cluster.nccl_algo", "cluster.nccl_proto",
                                                     "cluster.fabric")) -> None:
    """Refuse a forced algorithm / protocol the inter-node transport ``fabric`` cannot run (on
    ``tcpx``: anything but ring / Simple). ``names``: how the caller spells the algorithm,
    protocol and fabric settings (the config's fields; ``trainsim collective``'s
    ``--algorithm`` / ``--protocol`` / ``--fabric``, collfab61), so one rule answers both."""
    algo_name, proto_name, fabric_name = names
    if fabric == "tcpx" and algorithm.strip().lower() not in ("auto", TCPX_RUNS[0]):
        raise ConfigError(f"{algo_name}={algorithm} but {fabric_name}=tcpx runs NCCL's ring only "
                          "(GPUDirect-TCPX: 'TCPX only supports Ring algorithm', Google's "
                          f"NCCL_ALGO=Ring); leave {algo_name} auto or set ring")
    if fabric == "tcpx" and protocol not in ("auto", TCPX_RUNS[1]):
        raise ConfigError(f"{proto_name}={protocol} but {fabric_name}=tcpx runs NCCL's Simple "
                          "protocol only (GPUDirect-TCPX: 'TCPX only supports Simple protocol', "
                          f"Google's NCCL_PROTO=Simple); leave {proto_name} auto or set Simple")


def reduction_problem(fabric: str, in_network: bool, backend: str = "analytical",
                      names: tuple[str, str, str, str] = REDUCTION_NAMES) -> None:
    """Refuse in-network reduction (SHARP, NCCL's CollNet) where nothing reduces in the network:
    a ``fabric`` without reducing switches (``NO_SWITCH_REDUCTION``), or the flow ``backend``,
    which models none. ``names``: how the caller spells the setting, the fabric and the two
    fixes (``REDUCTION_NAMES``; ``trainsim collective``'s ``--in-network-reduction``, robust62)."""
    on, fabric_name, off, analytical = names
    if in_network and fabric in NO_SWITCH_REDUCTION:
        raise ConfigError(f"{on} but {fabric_name}={fabric} has no switch that reduces (SHARP, "
                          f"NCCL's CollNet, needs an InfiniBand fabric); {off}")
    if backend == "flow" and in_network:
        raise ConfigError(f"{on} is priced by the analytical network backend only; the flow "
                          f"backend models no reducing switch: {off} or {analytical}")


def fabric_problem(fabric: str, algorithm: str, protocol: str, in_network: bool,
                   backend: str = "analytical", nvls: bool = True) -> None:
    """Refuse what ``fabric`` (``cluster.fabric`` as read, lower case) cannot run: a forced
    ``cluster.nccl_algo`` / ``nccl_proto`` other than ring / Simple on ``tcpx``, and
    ``cluster.in_network_reduction`` on a fabric without reducing switches; what the flow
    ``backend`` does not read (a forced algorithm other than ring, in-network reduction); and
    a forced algorithm no group can run on this cluster (``nvls``: NVLink SHARP on)."""
    algo = algorithm.strip().lower()
    transport_problem(fabric, algorithm, protocol)
    if in_network and fabric in NO_SWITCH_REDUCTION:
        reduction_problem(fabric, in_network, backend)
    if backend == "flow" and algo not in ("auto", "ring"):
        raise ConfigError(f"cluster.nccl_algo={algorithm} is priced by the analytical network "
                          "backend only; the flow backend runs ring (direct for an all-to-all): "
                          "leave nccl_algo auto or ring")
    reduction_problem(fabric, in_network, backend)
    if algo == "collnet" and not in_network:
        raise ConfigError("cluster.nccl_algo=collnet needs cluster.in_network_reduction=true "
                          "(NCCL's CollNet reduces in SHARP switches); leave nccl_algo auto")
    if algo in ("nvls", "nvls_tree") and not nvls:
        raise ConfigError(f"cluster.nccl_algo={algorithm} needs NVLink SHARP, which this cluster "
                          "has off (its GPU's NVSwitch has none, or cluster.nvls is false); "
                          "leave nccl_algo auto")
    if algo == "direct":
        raise ConfigError("cluster.nccl_algo=direct is no algorithm NCCL_ALGO picks (all-to-all "
                          "and point-to-point sends run direct whatever it says); leave "
                          "nccl_algo auto")
    if algo in SIMPLE_ONLY and protocol not in ("auto", "Simple"):
        raise ConfigError(f"cluster.nccl_proto={protocol} cannot run cluster.nccl_algo={algo}: "
                          "NCCL runs NVLS, CollNet and PAT on the Simple protocol only "
                          "(collectives.nccl, tuning.cc); leave nccl_proto auto or set Simple")
