"""SMs a context-parallel ring hop holds beside the attention call it hides under: Transformer
Engine's ring (``AttnFuncWithCPAndKVP2P``) sends each step's K/V (and, backward, dK/dV) to the
next CP rank while the step's attention runs, and the NCCL kernels of those transfers take SMs
from it (``pricing.Pricer``, ``sm_share['cp']``)."""

from __future__ import annotations

from trainsim.collectives.nccl import GroupSpan


def cp_hop_sms(span: GroupSpan, comm_sms: int, p2p_sms: int) -> int:
    """SMs one rank's context-parallel ring hop (a K/V or dK/dV send and receive hidden under
    an attention call) holds beside it; ``comm_sms`` a collective's (``pricing.COMM_SMS``),
    ``p2p_sms`` a network peer's send (``pricing.P2P_SMS``). Transformer Engine's ring
    (``AttnFuncWithCPAndKVP2P``, v2.8 attention/dot_product_attention/context_parallel.py
    ``flash_attn_p2p_communicate``) sends to the next CP rank and receives from the previous one
    with a lone ``isend`` and ``irecv`` above CP 2, which PyTorch's ProcessGroupNCCL runs on the
    two-rank communicator of each peer pair (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp
    ``pointToPoint``: a single P2P keeps the ``getKeySendRecv`` "low:high" communicator; at CP
    2, one ``batch_isend_irecv`` on the group's own, also two ranks). Where every CP peer is in
    another node (``span.per_node`` 1: TP fills the node), each of those communicators reaches
    its peer over the network, on NCCL's channels per network peer: 2
    (NCCL_NCHANNELS_PER_NET_PEER, ``collectives.nccl``'s note on network peers), one thread
    block each, as a pipeline send: one kernel at CP 2, a send's and a receive's above. A ring
    with a neighbour in the same node keeps a collective's share: the NVLink pair's
    communicator gives the send 16 channels or more
    (``collectives.p2p_channels.batched_p2p_channels``); ``mixed_ring_hop_sms`` says for how
    long where the other neighbour is across the network."""
    if span.nodes > 1 and span.per_node == 1:
        return p2p_sms if span.size == 2 else 2 * p2p_sms
    return comm_sms


def mixed_ring(span: GroupSpan, p2p_ranks: int) -> bool:
    """A Transformer Engine ring above CP 2 (``Comm.p2p_ranks`` 2: a lone ``isend`` and a lone
    ``irecv``, each on its peer pair's two-rank communicator) whose CP group has two or more
    ranks a node and spans nodes: a rank at a node's edge, which sets the ring's pace, has one
    neighbour in its node (NVLink) and one in the next (the network)."""
    return span.nodes > 1 and span.per_node > 1 and p2p_ranks == 2


def mixed_ring_hop_sms(comm_s: float, inside_s: float, comm_sms: int, p2p_sms: int) -> float:
    """Mean SMs a hop of ``comm_s`` seconds holds in a ``mixed_ring``: its two kernels run on
    two communicators at once, the network peer's on ``p2p_sms`` (2 channels of a network
    peer, NCCL_NCHANNELS_PER_NET_PEER) for the whole hop, the NVLink peer's on a collective's
    ``comm_sms`` only while its own transfer runs (``inside_s``, the pair's send over NVLink):
    an NCCL kernel returns its SMs when its transfer is done. Above ``comm_sms`` when the two
    take as long (both kernels resident the whole hop), ``p2p_sms`` as the NVLink share
    vanishes."""
    if comm_s <= 0:
        return float(p2p_sms)
    return (comm_sms * min(inside_s, comm_s) + p2p_sms * comm_s) / comm_s
