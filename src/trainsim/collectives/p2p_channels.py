"""NCCL's point-to-point channels (split out of ``collectives.nccl``): how many channels, one
thread block each, a batched send (``batched_p2p_channels``, ``batched_p2p_s``) and a rank's
all-to-all (``all_to_all_channels``) run on, and what one channel carries
(``P2P_CHANNEL_Bps``)."""

from __future__ import annotations

import functools
import math

P2P_CHANNELS = 32
"""``p2pnChannels`` of a communicator inside an NVLink node: NCCL takes its collective channel
count and rounds it up to a power of two (src/graph/paths.cc ``ncclTopoComputeP2pChannels``,
2.12-2.2x), and an NVLink peer allows 2 channels per link (``ncclTopoGetNchannels``). Eight
A100 on NVSwitch run 24 collective channels (NVIDIA/nccl-tests #100 log: "Channel 23/24"), hence
32 p2p channels and 32 per peer; a 4-GPU A100 board logs "24 coll channels, ..., 32 p2p
channels"."""

P2P_NVL_CHUNK_BYTES = 512 * 1024
"""``NCCL_P2P_NVL_CHUNKSIZE`` default: the p2p step when every peer is on NVLink ("P2P
Chunksize set to 524288" in NCCL's logs)."""

P2P_CHANNEL_Bps = 14e9
"""What one NCCL p2p channel (one CTA moving a chunk at a time) carries: 14 GB/s, NCCL's own
figure (src/graph/paths.cc ``NCCL_P2P_PER_CHANNEL_NET_BW``, default 14 GB/s: a network peer gets
its NICs' GB/s / 14 channels, so that the channels keep the NIC busy). Assumed for NVLink too:
one CTA reading its peer's buffer (``P2P/IPC/read`` on A100) is bound by the bytes it keeps in
flight, not by the twelve links. No single-channel NVLink measurement was found; the zero-bubble
table's 8-stage rows imply 14.6-15 GB/s (benchmarks/zero_bubble.py: 0.43-0.47 ms per 25-28 MB
send on 4 channels), a check, not where the figure comes from."""

# Network peers (read 2026-11-24 in NVIDIA/nccl; not priced, see benchmarks/RESULTS.md):
# - channels per network peer: src/graph/paths.cc ``ncclTopoGetNchannels``: 2
#   (NCCL_NCHANNELS_PER_NET_PEER default 2 @ v2.18.1-1..v2.19.4-1; -1 = "2, halved while
#   2 nRanks > 4 p2pnChannels, at least the NICs' count" @ v2.20.3-1..v2.28.9-1); from v2.29.2-1
#   max(NICs, ceil(NIC GB/s / 14)), i.e. 4 on a 400 Gb/s NIC, cut down in
#   ``ncclTopoComputeP2pChannels`` until all peers fit one round (its release note: "improves the
#   default number of channels per net peer for all-to-all, send, and recv").
# - the count is communicator-wide: ``p2pnChannelsPerPeer`` is the minimum over every peer, so
#   NVLink peers of a multi-node communicator get it too, with NCCL_P2P_NET_CHUNKSIZE (128 KiB)
#   as their step (src/init.cc, v2.27.7-1: ``if (comm->nNodes > 1) p2pChunkSize = ...Net...``).
# - in one group every peer is in flight at once: ``scheduleP2pTasksToPlan`` (src/enqueue.cc)
#   puts all rounds in one plan; ``ncclP2pChannelBaseForRound`` (src/include/channel.h,
#   v2.22.3-1+; ``ncclChannelComputeBase`` before) gives all peers on one remote node the same
#   channels, and one CTA runs up to 8 of them side by side, one warp each way
#   (src/device/sendrecv.h ``nWarpPerWork``). So a single network peer (pipeline or CP ring
#   send) moves on 2 channels, but a rank's all-to-all traffic to R remote nodes moves on 2R.


def batched_p2p_channels(size_bytes: float, nranks: int) -> int:
    """Channels NCCL gives one send of ``size_bytes`` inside a group (``ncclGroupStart`` /
    ``ncclGroupEnd``, which PyTorch's ``batch_isend_irecv`` issues on the process group's own
    communicator) of ``nranks`` ranks, all in one NVLink node.

    NCCL 2.12-2.2x (src/enqueue.cc ``scheduleP2pTasksToPlan`` and ``calcP2pChunkSize``) starts
    from ``p2pnChannels / nranks`` channels per peer (so that one channel serves each
    operation), halving a power of two, and doubles it only while a channel's share exceeds 32
    p2p steps (16 MiB on NVLink), up to ``4 p2pnChannels / nranks``. An 8-rank pipeline group
    sends a 28 MB activation on 4 channels; a 2-rank communicator (a lone ``isend``) on 16."""
    per_peer = P2P_CHANNELS
    lo = per_peer
    while lo * nranks > P2P_CHANNELS and lo > 1:
        lo //= 2
    hi = per_peer
    while hi * nranks > 4 * P2P_CHANNELS and hi > 1:
        hi //= 2
    n = lo
    while size_bytes / n > 32 * P2P_NVL_CHUNK_BYTES and n <= hi // 2:
        n *= 2
    return n


P2P_CHANNELS_PCIE = 4
"""``p2pnChannels`` of a PCIe node (no NVLink): NCCL's rings over PCIe find few channels, and
the p2p pool is their count rounded up to a power of two (``ncclTopoComputeP2pChannels``); a
4-GPU PCIe server logs "4 coll channels, 0 nvls channels, 4 p2p channels, 2 p2p channels per
peer" (mcrl/tccl, TCCL's evaluation on PCIe clusters)."""

P2P_NET_CHUNK_BYTES = 128 * 1024
"""``NCCL_P2P_NET_CHUNKSIZE`` (and ``NCCL_P2P_PCI_CHUNKSIZE``) default: the p2p step of a
communicator spanning nodes (src/init.cc v2.27.3-1 L637: ``if (comm->nNodes > 1) p2pChunkSize =
ncclParamP2pNetChunkSize()``) or of a PCIe node."""


def net_count_by_bw(nics: int, nic_bw_Bps: float, gpu_link_bw_Bps: float | None) -> int:
    """NICs one GPU needs to match its own link to the CPU, NCCL's ``getLocalNetCountByBw``
    (src/graph/topo.cc v2.27.3-1 L1464-1485): the GPU's nearest NICs taken one by one,
    ``nic_bw_Bps`` each, while their sum is below ``gpu_link_bw_Bps``, at most ``nics``; in
    closed form ``min(nics, ceil(link / nic_bw))``. NCCL reads the link only from a GPU linked
    to a CPU node directly (L1470-1475: NVLink-C2C, L656, or a GPU on a CPU root port); a GPU
    behind a PCIe switch (DGX/HGX H100, AWS p5: L476-477 link it to the switch) or whose link
    is not stated counts one NIC."""
    if gpu_link_bw_Bps is None:
        return 1
    return max(1, min(nics, math.ceil(gpu_link_bw_Bps / nic_bw_Bps)))


@functools.cache  # every Pricer of an expert-parallel run asks: ~40 us a call
def all_to_all_channels(nodes: int, per_node: int, bytes_per_peer: float | None = None,
                        link: str = "nvlink", net_count: int = 1) -> int:
    """Channels, one thread block each, that one rank's NCCL all-to-all (a send and a receive
    per peer in one group: ``all_to_all_single``) runs on: the SMs it holds while it runs.

    NCCL 2.22-2.28, as read in v2.27.3-1 (v2.21.5-1 gives the same count on one node and with
    at most 8 ranks a node, fewer across nodes of more than 8: see the last point):
    - per peer at most ``p2pnChannelsPerPeer`` parts (src/graph/paths.cc
      ``ncclTopoGetNchannels``, ``ncclTopoComputeP2pChannels``: the minimum over all peers of
      2 per NVLink (times links, so the whole pool on an NVSwitch), 2 per PCIe peer, and for a
      network peer 2, halved while ``2 nRanks > 4 p2pnChannels``, but never below the NICs
      the GPU needs, ``net_count`` (paths.cc L809-818 ``max(netCountByBw, nChannelsMax)``,
      the same in v2.21.5-1 L713-726: :func:`net_count_by_bw`), rounded up to a power of 2
      (L851 ``pow2Up``));
    - a peer's bytes split into ``nChannelsMin`` parts (``p2pnChannelsPerPeer`` halved while
      ``nChannelsMin nRanks > p2pnChannels``), fewer when the bytes are under a part of
      ``minSize`` each, doubled while a part exceeds ``maxSize`` up to ``p2pnChannelsPerPeer``
      (src/enqueue.cc v2.21.5-1 ``calcP2pChunkSize``; v2.27.3-1 ``addP2pToPlan``: minSize step/2
      and maxSize step across nodes, step/8 and 32 step in one);
    - part ``p`` of the peer ``localDelta`` ranks and ``nodeDelta`` nodes away runs on channel
      ``base + reverseBits(p)`` with ``base = nodeDelta*ceil(localRanks/8) + localDelta/8``
      across nodes and ``base = localDelta`` in one (v2.27.3-1 src/include/channel.h
      ``ncclP2pChannelBaseForRound``, src/include/device.h ``ncclP2pChannelForPart``;
      the round's ``nodeDelta`` and ``localDelta`` are a permutation of the peers, src/init.cc
      p2pSchedule, so the bases are those of every (node, local) offset; v2.21.5-1 channel.h
      ``ncclChannelComputeBase``: ``nNodes > 1 ? delta + step/8 : step``, then
      ``p2pChannels[base] + chunk`` with p2pChannels the bit mirror: the same count up to 8
      ranks a node, but its bases overlap beyond: 2 nodes of 16 get bases {0, 1, 2} and 6
      channels where v2.27 gets {0..3} and 8; GB200 NVL72 domains of up to 72 local ranks
      follow v2.27's count).
    So the base moves with the node, not the peer: across nodes every peer of a node shares
    its node's channels. ``bytes_per_peer`` None: a layer's exchange (megabytes per peer)
    takes every part. From v2.29.2-1 a network peer gets ``max(NICs, NIC GB/s / 14)`` channels
    (4 on a 400 Gb/s NIC) cut to fit ``p2pMaxPeers``: more than counted here across nodes."""
    nranks = nodes * per_node
    if nranks <= 1:
        return 1
    pool = P2P_CHANNELS if link == "nvlink" else P2P_CHANNELS_PCIE
    per_peer = pool if link == "nvlink" else 2
    if nodes > 1:
        net = 2
        while net * nranks > 4 * pool and net > 1:
            net //= 2
        per_peer = min(per_peer, 1 << (max(net_count, net) - 1).bit_length())
    n_min = per_peer
    while n_min * nranks > pool and n_min > 1:
        n_min //= 2
    step = P2P_NET_CHUNK_BYTES if nodes > 1 or link != "nvlink" else P2P_NVL_CHUNK_BYTES
    min_part, max_part = (step / 2, step) if nodes > 1 else (step / 8, 32 * step)
    if bytes_per_peer is None:
        parts = per_peer
    else:
        parts = max(1, min(n_min, math.ceil(bytes_per_peer / min_part)))
        size = max(min_part, bytes_per_peer / parts)
        while size > max_part and parts <= per_peer // 2:
            parts *= 2
            size = bytes_per_peer / parts
    bits = pool.bit_length() - 1
    deltas = [int(format(p, f"0{bits}b")[::-1], 2) if bits else 0 for p in range(parts)]
    stride = -(-per_node // 8)
    bases = {d // per_node * stride + d % per_node // 8 if nodes > 1 else d
             for d in range(nranks)}
    return len({(b + x) & (pool - 1) for b in bases for x in deltas})


def batched_p2p_s(size_bytes: float, nranks: int) -> float:
    """Least seconds of one NVLink send of ``size_bytes`` on a communicator of ``nranks`` ranks:
    its ``batched_p2p_channels`` at ``P2P_CHANNEL_Bps`` each (the links may bind first)."""
    return size_bytes / (batched_p2p_channels(size_bytes, nranks) * P2P_CHANNEL_Bps)
