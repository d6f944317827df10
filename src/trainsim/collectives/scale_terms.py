"""Two costs of an NCCL collective beyond its latency and its bytes at the link rate.

* NVLS pipeline fill (``nvls_fill_bytes``): structural, from NCCL's own kernel and chunking.
* Chain fill (``chain_fill_s``): a ring broadcast's or reduce's first chunk forwarded whole at
  every network hop (and every hop under Simple); structural, from NCCL's buffers and proxy.
* EFA (``EFA_HOP_US``, ``EFA_BW_SHARE``): what a network hop and the NIC rate cost more on
  AWS's Elastic Fabric Adapter than on InfiniBand; two constants fitted on published p5 runs.
* Fabric scale (``fabric_scale_share``): a ring's (or tree's) network rate falls by a
  near-constant step in 1/busbw per doubling of the nodes it spans; one constant, fitted by
  ``benchmarks/fit_collectives.py`` on published nccl-tests runs.

Kept apart from ``collectives.nccl`` (which calls them) so that each stays readable.
"""

from __future__ import annotations

import math

NVLS_FILL_LOOPS = 2
"""A one-node NVLS all_reduce pays two of its loops beyond its bytes: it is a three-stage pipeline.

NCCL's kernel (src/device/all_reduce.h ``RunWorkColl<ncclFuncAllReduce, T, RedOp,
NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE>`` @ v2.27.3-1; ``RunWorkElement`` in
src/collectives/device/all_reduce.h @ v2.18.5-1, the same shape) splits each channel's warps
into scatter (the input into every head's buffer), reduce (multimem load-reduce and multicast
store of the rank's own head) and gather (the result into the output buffer), and moves the
buffer one loop at a time: ``nvlsChannels x nHeads`` chunks. Each loop passes the three stages
in turn, so n loops take n + 2 stage times. Not fitted. Checked on NVIDIA's DGX H100 sample
(NVIDIA/dgxc-benchmarking nccl/README.md, one process per GPU, default algorithm): 54.2 /
123.8 / 324.7 us at 4 / 16 / 64 MiB are 2.0 / 2.6 / 1.9 loops above the time of their bytes at
the 274 GB/s that 8-16 GiB reach, after NCCL's 25 us NVLS latency; Azure's ND H100 v5 sweep
(NVLS forced, NCCL 2.18.5, Azure/AI-benchmarking-guide) takes the same times from 4 MiB up.
Without it the model put 16 MiB at 90 us."""

NVLS_CHANNELS = {90: 16, 100: 24}
"""NVLS channels of a one-node communicator by compute capability: 16 on Hopper, 24 on a
Blackwell NVLink domain (src/transport/nvls.cc ``NVLS_NCHANNELS_SM90`` and
``NVLS_NCHANNELS_SM100_NVL``, v2.27.3-1 to v2.30.3-1; v2.25.1-1 ran 32 on Blackwell and
v2.17-v2.24 ``NCCL_NVLS_NCHANNELS`` = 16 on every GPU)."""

NVLS_MAX_CHUNK = 128 * 1024
"""``NCCL_NVLS_CHUNKSIZE`` default (src/transport/nvls.cc, v2.21.5-1 on; the same 128 KiB cap
in src/enqueue.cc ``computeColl`` @ v2.18.5-1)."""


def nvls_loop_bytes(size: float, k: int, compute_capability: int | None) -> float:
    """Bytes of one NVLS loop (``nvlsChannels x nHeads x chunk``) of an all_reduce of ``size``
    bytes on ``k`` GPUs of one node. NCCL cuts the 128 KiB chunk to 64, 32 and 16 KiB while the
    buffer holds fewer than 64, 8 and 2 loops of the chunk it has so far (src/enqueue.cc
    ``calcCollChunking`` v2.19.3-1 to v2.30.3-1, ``computeColl`` before: the same thresholds)."""
    cc = compute_capability or 90
    ops = NVLS_CHANNELS[100 if cc >= 100 else 90] * k
    chunk = NVLS_MAX_CHUNK
    for loops, smaller in ((64, 64 * 1024), (8, 32 * 1024), (2, 16 * 1024)):
        if size < loops * ops * chunk and chunk > smaller:
            chunk = smaller
    return ops * chunk


def nvls_fill_bytes(size: float, k: int, compute_capability: int | None) -> float:
    """Bytes' worth of time a one-node NVLS all_reduce of ``size`` spends filling and draining
    its pipeline: ``NVLS_FILL_LOOPS`` loops, or that many copies of a buffer smaller than one."""
    return NVLS_FILL_LOOPS * min(size, nvls_loop_bytes(size, k, compute_capability))


NCCL_STEP_WIRE_BYTES = {"LL": 8 * 512 * 16, "LL128": 120 * 640 * 8, "Simple": 2**22 // 8}
"""Bytes one NCCL step occupies on the wire, by protocol: the protocol's buffer over NCCL_STEPS
(8). NVIDIA/nccl src/init.cc v2.14.3-1 L475-477 (v2.27.3-1 L618-620, unchanged):
``DEFAULT_LL_BUFFSIZE`` = NCCL_LL_LINES_PER_THREAD (8) x NCCL_LL_MAX_NTHREADS (512) x
NCCL_STEPS x 16-byte lines (64 KiB a step, half of it data), ``DEFAULT_LL128_BUFFSIZE`` =
NCCL_LL128_ELEMS_PER_THREAD (120) x NCCL_LL128_MAX_NTHREADS (640) x NCCL_STEPS x 8 bytes
(600 KiB a step, 120 of every 128 bytes data), ``DEFAULT_BUFFSIZE`` 4 MiB (Simple: 512 KiB a
step). A ring broadcast or reduce moves one step a chunk (src/collectives/device/broadcast.h
L19: ``calcBytePerStep() x BROADCAST_CHUNKSTEPS`` (1); L33-41: the chunk shrinks to the channel's
share of a smaller message)."""

def chain_fill_s(size: float, proto: str, payload: float, forwarding_hops: int,
                 channels: int, bw_Bps: float) -> float:
    """Seconds a pipelined chain (NCCL's ring broadcast and reduce) spends filling, beyond its
    bytes at ``bw_Bps`` (the rate its bytes term uses) and its hops' latencies.

    A channel's chain moves its L chunks through h hops that each hold a whole chunk before
    passing it on in (L + h - 1) chunk times, not L: the first chunk must reach the last rank.
    Which hops hold a whole chunk is NCCL's code, not a choice (``forwarding_hops``):

    * a network hop, under every protocol: the sending GPU posts a step to its proxy only once
      it has written all of it (src/collectives/device/prims_ll128.h v2.14.3-1 L299 the step's
      size, L319 ``postSend`` after the whole step; prims_simple.h L177-208 per slice), and the
      proxy hands the NIC whole steps (src/transport/net.cc v2.14.3-1 ``sendProxyProgress``
      L855-890: LL128 waits on the GPU's tail, LL on every line's flag);
    * an NVLink hop under Simple: the receiver waits on the sender's slice flag (prims_simple.h
      L177 ``waitPeer``, L208 ``postPeer``), and a broadcast's slice is its chunk
      (BROADCAST_SLICESTEPS = BROADCAST_CHUNKSTEPS = 1, likewise reduce's, src/include/
      collectives.h v2.14.3-1 L118-121). LL and LL128 pass their 8- and 128-byte lines on as
      they land over NVLink: the hop latency covers them.

    A chunk is ``min(step payload, size / channels)`` (``NCCL_STEP_WIRE_BYTES`` x ``payload``;
    ``channels`` a node's: across nodes ``collectives.ring_channels``, one ring a NIC the
    node's ranks reach, duplicated as NCCL does; inside one node two a rank), and a channel
    streams at
    ``bw_Bps / channels``: each forwarding hop after the first adds ``min(step payload x
    channels, size) / bw_Bps``. Ring all-reduce, all-gather and reduce-scatter pay nothing of
    this: every rank sends a chunk of its own from the first step, so no rank waits for the
    ring to fill."""
    if forwarding_hops < 2:
        return 0.0
    channels = max(channels, 1)
    chunk_all = min(NCCL_STEP_WIRE_BYTES[proto] * payload * channels, size)
    return (forwarding_hops - 1) * chunk_all / bw_Bps


FABRIC_DOUBLING_COST = 0.056
"""Per doubling of the nodes a ring or tree spans beyond two, its network time per byte grows
by this share of the time at two nodes: ``1/busbw = (1/busbw_2) (1 + c log2(nodes / 2))``.

Fitted by ``benchmarks/fit_collectives.py`` (mean |ln(predicted/measured)|, golden section) on
the published nccl-tests runs of benchmarks/collectives_published.csv that span more than two
nodes, with three sources held out (nccl-tests #78, 256 V100; NVIDIA/nccl #1368, 5 x 8 H100
ring and tree; nccl-tests #119, 3 x 8 A100): fit rows MAPE 27.1 -> 14.3 %, held out 17.5 ->
9.5 % (2026-11-25). The series behind it is NVIDIA/nccl #1229 (8 H100 and NICs a node,
reduce_scatter 360, 345, 320, 300, 280, 260 GB/s on 4 to 128 nodes), whose 1/busbw grows by a
near-constant step per doubling beyond what the ring's step latency adds (linear in the rank
count, not in its logarithm): the shape of a fabric whose links a collective's flows share
more as it grows (more of its node-to-node edges leave a leaf switch, cross spine tiers and
meet other flows in ECMP hashing; each ring step waits on the slowest edge). The runs do not
state their fabrics' tiers, so the cost is one global constant per doubling, not one per tier.
Not paid (no measurement says so): NVLS+tree and CollNet (NCCL's NVLS+tree all_reduce on
248 x 8 H200, nccl-tests #283, is within 1 % without it, -26 % with it), all-to-all and p2p,
and groups of one rank per node (no published run of that shape beyond two nodes)."""

FABRIC_SCALE_ALGOS: tuple[str, ...] = ("ring", "tree")
"""Algorithms that pay ``FABRIC_DOUBLING_COST`` (``collectives.nccl`` algorithm names);
``benchmarks/fit_collectives.py --algos`` compares other choices on the same rows."""


def fabric_scale_share(nodes: int) -> float:
    """Share of a ring's two-node network rate it keeps over ``nodes`` nodes
    (``FABRIC_DOUBLING_COST``); 1 on one or two nodes."""
    if nodes <= 2:
        return 1.0
    return 1.0 / (1.0 + FABRIC_DOUBLING_COST * math.log2(nodes / 2))


EFA_HOP_US = 110.0
"""Latency an EFA network hop adds to NCCL's InfiniBand hop (``nccl._HOP_US["net"]``), us.

On EFA, NCCL reaches the NIC through the aws-ofi-nccl plugin and libfabric's efa provider, not
its own IB verbs transport, and the NIC runs AWS's SRD (Scalable Reliable Datagram) transport:
each message is sprayed over many network paths and may arrive out of order, and the plugin
and provider complete it in software (the proxy thread polls libfabric's completion queue)
before NCCL's next step can use the buffer (Shalev et al., "A Cloud-Optimized Transport
Protocol for Elastic and Scalable HPC", IEEE Micro 2020; aws/aws-ofi-nccl). So every network
step of a ring or tree waits longer than on InfiniBand. Fitted by ``benchmarks/fit_collectives.py
--efa`` (mean |ln(predicted/measured)|) on the rows of benchmarks/collectives_published.csv with
``fabric = efa`` only: AWS p5.48xlarge nccl-tests all_reduce on 2-32 nodes, 32 MiB to 8 GiB
(crazyguitar/aws-gpu-communication-benchmark @ 4fdb5a4f, 45 rows): MAPE 71.8 -> 11.7 %; each
node count predicted by a fit on the others 9.2-22.9 % (2026-11-26); held out, the same study's
alltoall_perf rows (35, 2-32 nodes, 32 MiB-2 GiB) 26.4 % as InfiniBand, 16.9 % with it (31st
session). The busbw ramp those rows
show (half of 8 GiB's busbw at 64 MiB on 2 nodes, 512 MiB on 32; the InfiniBand model passes
it below 32 MiB) is this hop: the NVLS+tree all_reduce the model picks pays 2 ceil(log2(nodes)). One source, fitted on one
collective: the split between this and ``EFA_BW_SHARE`` is fitted, not measured apart. A cluster with
``cluster.fabric: efa`` pays it, never a framework profile."""

EFA_BW_SHARE = 0.835
"""Share of ``NIC_EFFICIENCY`` (InfiniBand's achievable rate) that NCCL reaches over EFA on
large messages; fitted with ``EFA_HOP_US`` (0.835: 0.80 of the line rate, 40 GB/s a GPU on p5's
4 x 100 Gb/s; the same rows' 8 GiB busbw, 356 GB/s on 4-16 nodes, is NIC-bound there)."""

TCPX_ALGO, TCPX_PROTO = "ring", "Simple"
"""What NCCL runs on a ``cluster.fabric: tcpx`` cluster where the config forces nothing: Google's
published NCCL configuration for GPUDirect-TCPX (GoogleCloudPlatform/container-engine-
accelerators gpudirect-tcpx/README.md, releases of Feb 15 2024 and Jun 22 2026; SkyPilot's
nccl_tcpx_gcpvm_h100.yaml @ d7fe39d7 the same) sets NCCL_ALGO=Ring and NCCL_PROTO=Simple for
the job: no tree, no NVLS, no LL / LL128, inside a VM as across VMs (axlearn's GKE A3 job,
axlearn/cloud/gcp/job.py GPUGKEJob, says why: "TCPX only supports Ring algorithm", "only
supports Simple protocol", "not compatible with NVLS")."""

TCPX_HOP_US = 221.0
"""Latency a GPUDirect-TCPX network hop adds to NCCL's InfiniBand hop (``nccl._HOP_US["net"]``),
us. TCPX is NCCL's net plugin nccl-plugin-gpudirecttcpx over TCP on A3 High's four 200 Gb/s GPU
NICs (Google Cloud: 'up to four secondary NICs, each up to 200 Gbps for GPU data transfer'): the
payload lands in GPU memory through the NIC's header split and devmem TCP, a receive daemon
(tcpgpudmarxd) programs the flow steering, and NCCL's kernels unpack the received pages into
the destination buffer (the plugin's devcomm/unpack); every step waits on TCP's completion in
the plugin's threads. Fitted by ``benchmarks/fit_tcpx.py`` with ``TCPX_BW_SHARE`` on the 15
published 2 x 8 all_reduce rows of benchmarks/collectives_gcp_a3.csv (SkyPilot, 2 x
a3-highgpu-8g, NCCL's ring / Simple, 128 KiB-2 GiB): MAPE 277 % as InfiniBand -> 6.6 %; fitted
on the 8 rows of 16 MiB and more (181 us, 0.761), the 7 smaller ones are predicted to 17.8 %
(60th session). The rows' busbw is flat at 66-68 GB/s from 256 MiB (0.66-0.68 of the four NICs'
line rate, against InfiniBand's 0.96) and a 1-8 MiB all_reduce takes 1.5-1.7 ms. One source,
one collective, two nodes: the split between this and the share is fitted, not measured apart.
A cluster with ``cluster.fabric: tcpx`` pays it, never a framework profile."""

TCPX_BW_SHARE = 0.774
"""Share of ``NIC_EFFICIENCY`` (InfiniBand's achievable rate) that NCCL reaches over
GPUDirect-TCPX on large messages; fitted with ``TCPX_HOP_US`` (benchmarks/fit_tcpx.py): 0.774 of
0.96 is 0.74 of the line rate, 9.3 GB/s a GPU on A3 High's 100 Gb/s share, where the rows' last
four sizes reach 0.66-0.68 (the fit trades the plateau for the ramp: +10 % at 2 GiB)."""
