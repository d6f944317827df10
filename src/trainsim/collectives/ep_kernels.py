"""The NVLink stage of DeepEP's and HybridEP's token exchange: copy kernels, not NCCL.

Inside one NVLink domain the flex dispatcher's exchange is a kernel of the dispatcher's own
(deepseek-ai/DeepEP v1.2.1 csrc/kernels/intranode.cu ``dispatch``/``combine``; the hybrid-ep
branch's csrc/hybrid_ep/ kernels), which writes the tokens into the peers' buffers with its
own SMs. Two bounds limit it, each with a constant fitted by ``benchmarks/fit_ep_exchange.py``
on the published exchange figures (``benchmarks/moe_exchange_published.csv``):

- the NVLink wires: the copies these kernels make reach ``EP_NVLINK_EFFICIENCY`` of the link
  rate, less than NCCL's all-to-all (``network.analytical.NVLINK_EFFICIENCY``). DeepEP's
  README gives 153 / 158 GB/s on H800 (about 134 GB/s over the wires of a 200 GB/s GPU, the
  rest is the rank's own tokens); the hybrid-ep README's B200 and GB200 kernel-only HybridEP
  rows stay at 612-764 GB/s of NVLink 5's 900 whatever the SM count (16 or 32);
- the SMs, for DeepEP only: its intranode kernel moves every token with warps of the
  ``num_sms`` blocks it is given (``Buffer.set_num_sms``, Megatron-core
  ``moe_deepep_num_sms``, 20 by default; even blocks send, odd blocks receive), at
  ``DEEPEP_COPY_BPS_PER_SM`` each. At 16-32 SMs on Blackwell this is the binding bound: the
  hybrid-ep README's DeepEP B200 rows rise from 348 GB/s (bf16 dispatch, 16 SMs) to 619
  (32 SMs), about 20 GB/s per SM, before they meet the wires near 640. HybridEP's kernels
  move data with TMA from a few warps and stay on the wires at 16 SMs (above), so no SM bound
  is priced for them.

The fp8 dispatch (fewer bytes per token) and the combine (which also reduces the copies)
reach fewer bytes per SM than the bf16 dispatch on the same SMs (B200, 16 SMs: 246, 348 and
302 GB/s): one constant per SM prices them all, fitted over the three.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.collectives.nccl import GroupSpan, intra_link_kind
from trainsim.collectives.p2p_channels import all_to_all_channels, net_count_by_bw

if TYPE_CHECKING:
    from trainsim.config import RunConfig

EP_NVLINK_EFFICIENCY = 0.65
"""Fraction of a GPU's NVLink rate DeepEP's and HybridEP's exchange kernels move over the
wires: ``python benchmarks/fit_ep_exchange.py --holdout ''`` fits 0.646 over the 97 priced rows
of ``benchmarks/moe_exchange_published.csv`` (0.602 with the GB200 rows held out)."""

DEEPEP_COPY_BPS_PER_SM = 17.1e9
"""Bytes per second one SM of DeepEP's intranode kernels moves (sent bytes, the rank's own
tokens included: what its test counts): the same fit gives 17.07e9 (16.93e9 with the GB200
rows held out, which then price at 11.4 %, 20.5 % as an NCCL all-to-all)."""

SM_BOUND = frozenset({"deepep"})
"""Dispatchers whose NVLink exchange is bounded by the SMs it is given."""


def domain_exchange_s(dispatcher: str, size_bytes: float, ranks: int, nvlink_Bps: float,
                      sms: int | None) -> float:
    """Seconds of a rank's part of an exchange of ``size_bytes`` (sent by each rank, its own
    share included) among ``ranks`` GPUs of one NVLink domain by the dispatcher's kernels on
    ``sms`` SMs: the slower of the wire and the SM bound."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    wire = (ranks - 1) / ranks * size_bytes / (nvlink_Bps * EP_NVLINK_EFFICIENCY)
    if dispatcher in SM_BOUND and sms:
        return max(wire, size_bytes / (sms * DEEPEP_COPY_BPS_PER_SM))
    return wire


def ep_a2a_sms(cfg: RunConfig, span: GroupSpan) -> int:
    """SMs an NCCL all-to-all (the ``alltoall`` dispatcher's exchange,
    ``torch.distributed.all_to_all_single``: one ncclSend and one ncclRecv per peer inside one
    ncclGroup) holds beside compute: one block per p2p channel it has work on
    (``p2p_channels.all_to_all_channels``): the whole pool of 32 inside an NVLink node, far fewer
    across nodes, where NCCL puts all the peers of one node on that node's channels (EP 16 on
    two nodes of 8: 4). ``cluster.nics_per_gpu`` adds channels only on a GPU linked to the CPU
    directly (``host_link_bw_Bps``: GB200's NVLink-C2C), as ``p2p_channels.net_count_by_bw`` says. The ``allgather`` dispatcher exchanges by all-gather and
    reduce-scatter, collectives that ``price_ops`` prices at a ring's share (``COMM_SMS``)."""
    cluster = cfg.cluster
    nics = cluster.nics_per_gpu
    return all_to_all_channels(span.nodes, span.per_node,
                               link=intra_link_kind(cluster.gpu.nvlink_bw_Bps),
                               net_count=net_count_by_bw(nics, cluster.nic_bw_Bps / nics,
                                                         cluster.gpu.host_link_bw_Bps))
