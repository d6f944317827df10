"""NCCL's NVLink SHARP (NVLS) buffers: device memory each communicator of a run maps on an
NVSwitch node, outside PyTorch's allocator, whose size depends on the NCCL release.

Read from NVIDIA/nccl ``src/transport/nvls.cc`` (and ``src/graph/search.cc``, ``connect.cc``)
at the tags named:

- *Which communicators.* ``ncclNvlsInit`` turns NVLS on where the GPUs support multicast
  (``NCCL_NVLS_ENABLE`` default 2: where ``CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED``, i.e.
  Hopper and Blackwell behind NVSwitch) for a communicator with more than two of its GPUs on
  the node (``gpuCount <= 2`` returns, v2.18.1-1 L239 to v2.28.3-1). v2.17.1-1 set it up for
  two or more on a one-node communicator only (``localRanks <= 1 || nNodes > 1``, L232, default
  ``NCCL_NVLS_ENABLE`` 1); v2.20.3-1 / v2.20.5-1 left multi-node communicators out again
  (``comm->nNodes > 1``, L240); v2.18, v2.19 and v2.21 on set it up on every node of a
  multi-node one.
- *How much.* Each GPU binds ``nvlsTotalSize = nChannels x 2 x (buffSize + memSize) x nHeads``
  of its own memory to the multicast group (``nvlsGroupBindMem``: one ``cuMemCreate`` of that
  size a GPU): a reduce and a broadcast buffer per channel and head. ``nChannels`` is
  ``NCCL_NVLS_NCHANNELS`` 16 (v2.17-v2.24), then 16 on SM90 and 32 on SM100 (v2.25.1-1
  ``NVLS_NCHANNELS_SM90`` / ``_SM100``), 24 within one Blackwell NVLink domain from v2.27.3-1
  (``NVLS_NCHANNELS_SM100_NVL``). ``buffSize`` is the Simple protocol's ``NCCL_BUFFSIZE`` 4 MiB
  to v2.20 and ``NCCL_NVLS_CHUNKSIZE`` 128 KiB x ``NCCL_STEPS`` 8 = 1 MiB from v2.21.5-1 (L311);
  ``memSize`` is ``NVLS_MEM_ALIGN_SIZE`` 2 MiB to v2.21 and moves out of the buffer from
  v2.22.3-1 (L264: 16 bytes of credits). ``nHeads`` is the NVLS graph's channel count, every
  GPU of the communicator on the node where the node has no NIC in its topology
  (search.cc ``minChannels = maxChannels = GPU count``, v2.19.4-1 L887-889) and at most that
  many with NICs (one head per NIC:GPU pair found); at most ``NCCL_MAX_NVLS_ARITY`` (8 to
  v2.20, 32 from v2.21.5-1). Heads are taken as the communicator's GPUs on the node: exact on
  one node, an upper bound across nodes (reached with a NIC a GPU, as DGX H100 has).

At v2.18 / v2.19 (NGC containers 23.09-24.02) that is 192 MiB a head, 1.5 GiB for a communicator
of 8 GPUs on the node; at v2.21, 96 MiB a head; from v2.22, 32 MiB (256 MiB for 8). From
v2.22.3-1 the buffers are mapped at the communicator's first NVLS collective (runtime connect)
rather than at its creation: counted for every communicator, an upper bound for one whose
collectives never pick NVLS. Not counted: NVLS+tree's network buffers, and a communicator split
from a parent that shares its resources (``NCCL_COMM_SPLIT_SHARE_RESOURCES``, off by default).
"""

from __future__ import annotations

from trainsim.config import RunConfig
from trainsim.config.nccl_release import nccl_release

MiB = 2**20
NCCL_BUFFSIZE = 4 * MiB
"""The Simple protocol's buffer (src/init.cc ``DEFAULT_BUFFSIZE``), NVLS's buffer to v2.20."""
NVLS_CHUNK_STEPS = 128 * 1024 * 8
"""``NCCL_NVLS_CHUNKSIZE`` x ``NCCL_STEPS``: NVLS's buffer from v2.21.5-1."""
NVLS_MEM_ALIGN_SIZE = 2 * MiB
"""The head / tail words' slot beside each buffer, to v2.21 (2 MiB of alignment)."""


def nvls_head_bytes(release: tuple[int, int, int], sm: int, multi_node: bool) -> float:
    """Bytes one head of one communicator's NVLS buffer takes on each GPU (``nChannels x 2 x
    (buffSize + memSize)``), by NCCL release, GPU architecture and whether the communicator
    spans nodes; 0 before NVLS (v2.17)."""
    minor = release[1]
    if minor < 17:
        return 0.0
    if minor < 25 or sm < 100:  # NCCL_NVLS_NCHANNELS 16 to v2.24; 16 on SM90 since
        channels = 16
    else:  # Blackwell: 32, and 24 within one NVLink domain from v2.27
        channels = 24 if minor >= 27 and not multi_node else 32
    buff = NCCL_BUFFSIZE if minor <= 20 else NVLS_CHUNK_STEPS
    mem = NVLS_MEM_ALIGN_SIZE if minor <= 21 else 0
    return channels * 2.0 * (buff + mem)


def nvls_applies(release: tuple[int, int, int], local: int, multi_node: bool) -> bool:
    """Whether NCCL ``release`` sets NVLS up for a communicator with ``local`` of its GPUs on
    each node (multicast-capable GPUs behind NVSwitch assumed)."""
    minor = release[1]
    if minor < 17:
        return False
    if minor == 17:
        return local >= 2 and not multi_node
    if minor == 20:
        return local >= 3 and not multi_node
    return local >= 3


def nvls_bytes(cfg: RunConfig, communicators: list[tuple[int, int]]) -> float:
    """Device bytes of the NVLS buffers of ``communicators`` ((size, GPUs of it on one node)
    each) on one GPU: 0 where the run states no NCCL release (``cluster.nccl_version``), turns
    NVLS off (``cluster.nvls``) or runs on GPUs without it (``gpu.nvls``)."""
    c = cfg.cluster
    if c.nccl_version is None or not c.nvls or not c.gpu.nvls:
        return 0.0
    release = nccl_release(c.nccl_version)
    arity = 8 if release[1] <= 20 else 32
    sm = c.gpu.sm_arch or 90
    total = 0.0
    for size, local in communicators:
        multi = size > local
        if nvls_applies(release, local, multi):
            total += nvls_head_bytes(release, sm, multi) * min(local, arity)
    return total


def ranks_on_node(size: int, stride: int, gpus_per_node: int) -> int:
    """GPUs of a group of ``size`` ranks spaced ``stride`` apart in rank order that share a node
    of ``gpus_per_node`` (ranks fill nodes in order): all of them where they fit, one where the
    spacing is a node or more."""
    if stride >= gpus_per_node:
        return 1
    return max(1, min(size, gpus_per_node // stride))
