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
