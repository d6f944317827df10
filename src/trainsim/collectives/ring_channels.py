"""How many channels NCCL's rings run across nodes: one searched ring a NIC, then NCCL's
duplications (split out of ``collectives.scale_terms``, whose chain fill reads it).

Read in NVIDIA/nccl, tags v2.14.3-1 (the NCCL of PyTorch 1.13, A100 clusters of 2022-2023) and
v2.27.3-1 (Hopper and Blackwell):

1. ``ncclTopoCompute`` (src/graph/search.cc v2.14.3-1 L770-783, v2.27.3-1 L917-1076) starts the
   ring search at the first speed of ``speedArrayInter`` (v2.14.3-1 L730; v2.27.3-1 L903, and
   ``sm90SpeedArrayInter`` / ``sm100SpeedArrayInter`` L908 / L913 on Hopper / Blackwell) that is
   not above the system's per-channel bandwidth, the NIC's rate here.
2. ``ncclTopoSearchRecNet`` (v2.14.3-1 L452-476) takes that speed off the NIC's ``net.bw`` for each
   ring it starts there, so a NIC whose rate is under twice the speed holds one ring; the search
   keeps a graph only when rings x speed grows (L298-299), which the slower speeds that fit two
   rings a NIC do not give. Rings = NICs, at most ``ringGraph.maxChannels`` = MAXCHANNELS / 2
   (src/init.cc v2.14.3-1 L564).
3. ``ncclTopoDupChannels`` (v2.27.3-1 search.cc L887-898; inline in v2.14.3-1 L893-900): at a
   speed of 25 GB/s or more the rings are doubled (speed halved), except on a GPU newer than
   Ampere at under 50 GB/s with more than 4 rings (v2.27.3-1 L891).
4. ``ncclTopoPostset`` runs every ring twice (src/graph/connect.cc v2.14.3-1 L299, v2.27.3-1
   L452), at most MAXCHANNELS (32).
5. On Hopper and later across nodes, a ring searched at over 45 GB/s doubles once more while
   under 16 channels (connect.cc v2.27.3-1 L465-467).

Structural, not fitted: 8 A100 with 8 HDR NICs run 16 channels (24 GB/s rings, no duplication),
8 A100 sharing 4 x 100 Gb NICs (InternEvo) 8, 8 H100 with 8 x 400 Gb NICs 16 (48 GB/s, step 3
skipped), 8 H100 with 4 such NICs 16 (step 3 doubles 4 rings)."""

from __future__ import annotations

import math

SPEED_INTER_GBPS = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0,
                    4.0, 3.0, 2.4, 1.2, 0.24, 0.12)
"""``speedArrayInter`` (GB/s), v2.27.3-1 src/graph/search.cc L903 (v2.14.3-1 L730 lacks the 28,
which no NIC rate here lands on: 100 / 200 / 400 Gb/s are 12.5 / 25 / 50 GB/s)."""

SM90_SPEED_INTER_GBPS = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                         3.0, 2.4, 1.2, 0.24, 0.12)
"""``sm90SpeedArrayInter`` (v2.27.3-1 L908); Blackwell's ``sm100SpeedArrayInter`` (L913) differs
only in its first entry (47.9), the same pick for a 400 Gb/s NIC."""

MAX_CHANNELS = 32
"""MAXCHANNELS (src/include/devcomm.h v2.14.3-1 L50): the channels a communicator may run."""


def ring_channels(nics: int, nic_Bps: float, compute_capability: int | None) -> int:
    """Channels NCCL's rings run on a node whose ranks reach ``nics`` NICs of ``nic_Bps`` each
    (one direction), on GPUs of ``compute_capability`` (None: read as Ampere)."""
    cc = compute_capability or 80
    speeds = SM90_SPEED_INTER_GBPS if cc >= 90 else SPEED_INTER_GBPS
    rate = nic_Bps / 1e9
    speed = next((s for s in speeds if s <= rate), speeds[-1])
    rings = max(1, min(nics, MAX_CHANNELS // 2))
    if speed >= 25.0 and not (cc > 80 and speed < 50.0 and rings > 4):
        doubled = min(2 * rings, MAX_CHANNELS // 2)
        speed /= math.ceil(doubled / rings)
        rings = doubled
    channels = min(MAX_CHANNELS, 2 * rings)
    if cc >= 90 and speed > 45.0 and channels < 16:
        channels *= 2
    return channels
