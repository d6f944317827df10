"""What the CUDA caching allocator and the driver add to the bytes a training step allocates.

Three figures describe one rank's memory, and published runs report any of them:

- ``allocated``: bytes in live tensors at the peak (``torch.cuda.max_memory_allocated``);
- ``reserved``: bytes the caching allocator holds from the driver at its peak
  (``torch.cuda.max_memory_reserved``);
- ``device``: what ``nvidia-smi`` shows: reserved plus the CUDA context, the libraries' kernel
  images and workspaces, and NCCL's communication buffers.

The caching allocator (c10/cuda/CUDACachingAllocator.cpp) serves a request from a cached free
block of the same pool that is at least as large, splitting it; a request larger than every
cached block gets a new ``cudaMalloc`` segment of its own (rounded to 2 MiB), and segments are
never merged. The activations of a step are many tensors of a few sizes, so the forward of the
next micro-batch reuses the blocks the last backward freed; the optimizer step, though, makes a
few buffers as large as a whole gradient partition, larger than any freed activation block, so
they come from new segments and the reserved pool ends up holding both the backward's peak and
the step's buffers. With ``expandable_segments`` the allocator maps pages into one growing
segment per stream and the freed activation pages serve the step: reserved stays at the
allocated peak.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.memory.megatron_step import applies as megatron_applies
from trainsim.memory.megatron_step import reserve_bytes as megatron_reserve
from trainsim.memory.nccl_buffers import nvls_bytes, ranks_on_node
from trainsim.memory.plain_step import fragmentation_bytes
from trainsim.workload.vocab import rank_vocab

CUDA_CONTEXT_BYTES = 1573 * 2**20
"""CUDA context with PyTorch's, cuBLAS's and cuDNN's kernels loaded: 1573 MiB measured by
nvidia-smi on an A100 with nothing allocated (bigscience-workshop/bigscience
train/tr11-176B-ml/chronicles-prequel.md, the BLOOM team's 2022 stack; 1271 MiB on a V100).
CUDA 11.7's lazy loading lowers it (pytorch/pytorch#86509: 666 -> 287 MB for one tensor), but
the kernels a training step uses load anyway. No published figure gives a training process's
context on H100 with CUDA 12/13 (benchmarks/RESULTS.md 2026-11-25 ctxmem), so it is kept for all."""
NCCL_PAIR_COMM_BYTES = 544e6
NCCL_GROUP_COMM_BYTES = 688e6
"""Device memory of one NCCL communicator once it has run a collective: ~544 MB for two ranks
and ~688 MB for three or more on A100s with NVLink (NVIDIA/nccl#964, 2023): channel buffers
for each protocol (NCCL_BUFFSIZE 4 MiB for Simple, plus LL and LL128) per peer and channel.
H100s use more channels: this is no upper bound there. NCCL's NVLS buffers on NVSwitch nodes are
counted apart, where the run states its NCCL release (``memory.nccl_buffers``)."""


DEEPEP_NVL_RECV_TOKENS = {2: 256, 4: 256, 8: 256, 16: 288, 24: 288, 32: 288, 64: 288,
                          128: 560, 144: 720, 160: 720}
"""``num_max_nvl_chunked_recv_tokens`` of DeepEP's recommended dispatch and combine configs by
EP group size (deepseek-ai/DeepEP v1.2.1 deep_ep/buffer.py ``get_dispatch_config`` /
``get_combine_config``; both give the same receive sizes, and every one keeps 128 RDMA receive
tokens)."""
DEEPEP_RDMA_RECV_TOKENS = 128
DEEPEP_NUM_SMS = 20
"""``Buffer.num_sms`` (Megatron-core ``moe_deepep_num_sms`` default): a channel per 2 SMs."""
NVL_PEERS = 8


def deepep_buffer_bytes(cfg: RunConfig) -> float:
    """Device bytes of DeepEP's communication buffer, which Megatron-core's flex dispatcher
    sizes for the EP group before the first dispatch (megatron/core/transformer/moe/
    fused_a2a.py ``get_buffer``: the larger of the dispatch and combine configs' hints for
    ``hidden * max(element_size, 2)`` bytes per token) and keeps for the whole run. Both
    buffers are allocated outside PyTorch's allocator (CUDA IPC memory for NVLink peers,
    NVSHMEM for RDMA). The hints are DeepEP v1.2.1 csrc/config.hpp: per channel and peer, a
    ring of received tokens with the token, its 8-byte source meta, 128 top-k indices (int64)
    and weights (fp32) and 128 fp32 scales; the RDMA ring is doubled (send and receive)."""
    p = cfg.parallel
    ranks = p.ep * p.etp
    if p.moe_token_dispatcher_type != "deepep" or ranks <= 1:
        return 0.0
    key = min(DEEPEP_NVL_RECV_TOKENS, key=lambda k: (abs(k - ranks), k))
    channels = DEEPEP_NUM_SMS // 2
    hidden = cfg.model.hidden_size * 2
    extra = 8 + 128 * 8 + 128 * 4 + 128 * 4
    nvl_ranks, rdma_ranks = min(ranks, NVL_PEERS), max(ranks // NVL_PEERS, 1)
    nvl = channels * nvl_ranks * (DEEPEP_NVL_RECV_TOKENS[key] * (hidden + extra)
                                  + (2 * rdma_ranks + 3) * 4)
    rdma = 0.0
    if ranks > NVL_PEERS:
        rdma = channels * rdma_ranks * (DEEPEP_RDMA_RECV_TOKENS * (hidden + extra + 16) * 2
                                        + (NVL_PEERS * 2 + 2) * 2 * 4)
    return nvl + rdma


def hybridep_buffer_bytes(cfg: RunConfig) -> float:
    """Device bytes of HybridEP's communication buffer (Megatron-core's flex dispatcher with
    ``moe_flex_dispatcher_backend="hybridep"``). Megatron-core sizes it at the first dispatch for
    the rank's tokens (megatron/core/transformer/moe/fused_a2a.py ``init_hybrid_ep_buffer(...,
    seq_len=x.shape[-2])``, NVIDIA/Megatron-LM@2edffadb) and keeps it for the run; HybridEP
    allocates it for the worst case, every token of every rank of the NVLink domain routed to one
    rank (deepseek-ai/DeepEP branch hybrid-ep @a0d27f1, 2026-03-31, csrc/hybrid_ep/buffer/
    intranode.cu: ``max_num_of_tokens = max_num_of_tokens_per_rank * num_of_ranks_per_node *
    num_of_nodes``): with the default shared buffer (deep_ep/hybrid_ep_buffer.py
    ``use_shared_buffer=True``) one 16-bit token buffer and one fp32 probability per expert of
    the domain, shared by dispatch and combine, plus the dispatch's fp32 scale per 128 elements.
    It is fabric memory mapped for the NVLink peers, outside PyTorch's allocator. Buffers for
    ranks beyond the NVLink domain (RDMA) are not counted."""
    p, m, t = cfg.parallel, cfg.model, cfg.training
    ranks = p.ep * p.etp
    if p.moe_token_dispatcher_type != "hybridep" or ranks <= 1:
        return 0.0
    domain = max(1, min(ranks, cfg.cluster.gpus_per_domain))
    tokens = t.micro_batch_size * t.seq_length / p.cp / (p.tp if p.sequence_parallel else 1)
    worst = tokens * ranks  # per rank, times the ranks of the domain, times the domains
    experts = (m.num_experts or 0) / ranks * domain
    return worst * (2 * m.hidden_size + 4 * experts + 4 * m.hidden_size / 128)


def communicator_sizes(cfg: RunConfig, stage: int = 0) -> list[int]:
    """Sizes of the NCCL communicators one rank of pipeline stage ``stage`` holds once a step
    has run a collective in each (NCCL allocates a communicator's buffers when it is created,
    and PyTorch creates it at the group's first collective):

    - the world group (startup barrier) and each parallel group of more than one rank;
    - with pipeline parallelism, the model-parallel group (tp x pp) in which Megatron and
      DeepSpeed all-reduce the gradient norm and the overflow flag (Megatron
      ``clip_grad_norm_fp32`` / ``_unscale_main_grads_and_check_for_nan``; DeepSpeed
      ``get_grad_norm_direct``), and, with tied embeddings, the two-rank group in which the
      first and last stage all-reduce the word embedding's gradient (Megatron's embedding
      group, DeepSpeed's ``tied_comms``);
    - under fp8 with delayed scaling on Megatron, Transformer Engine's amax reduction group
      (the tensor-, context- and data-parallel ranks of a stage, a group of its own);
    - DeepSpeed's pipeline engine builds its own groups beside the model's
      (deepspeed/runtime/pipe/topology.py ``PipelineParallelGrid``, v0.5.10): it gathers the
      stage outputs in its slice group (the tensor-parallel ranks again) and broadcasts the loss
      in the pipeline group (runtime/pipe/engine.py).

    Pipeline sends and receives are not counted: PyTorch gives each (rank, peer) pair a
    communicator of its own that holds only point-to-point buffers, whose size no measurement
    here gives."""
    return [size for size, _ in communicators(cfg, stage)]


def communicators(cfg: RunConfig, stage: int = 0) -> list[tuple[int, int]]:
    """(size, GPUs of it on one node) of each communicator of :func:`communicator_sizes`, in
    Megatron's rank order (tensor-parallel ranks adjacent, then context-, data- and
    pipeline-parallel: ``RankGenerator`` order ``tp-cp-ep-dp-pp``; an expert group's ranks
    adjacent after its expert-tensor-parallel ones), ranks filling nodes in order."""
    p, n = cfg.parallel, cfg.cluster.gpus_per_node
    dp_stride = p.tp * p.cp
    pp_stride = dp_stride * cfg.dp

    def group(size: int, stride: int) -> tuple[int, int]:
        return size, ranks_on_node(size, stride, n)

    groups = [group(cfg.cluster.num_gpus, 1), group(p.tp, 1), group(p.cp, p.tp),
              group(cfg.dp, dp_stride)]
    if p.dp_replicate > 1:
        # HSDP's two groups: the replica's shard group and the replicas of a shard (FSDP1
        # _init_intra_and_inter_node_groups; Megatron's intra- and inter-instance groups)
        groups += [group(cfg.shard_ranks, dp_stride),
                   group(p.dp_replicate, dp_stride * cfg.shard_ranks)]
    if p.ep > 1:
        groups += [group(p.ep, p.etp), group(cfg.edp, p.etp * p.ep)]
    t = cfg.training
    if p.data_parallel_impl == "megatron" and t.dtype == "fp8" and t.fp8_recipe == "delayed":
        # Transformer Engine's delayed scaling all-reduces the amaxes in the fp8 group Megatron
        # hands it, the tensor-, context- and data-parallel ranks of a stage (core_v0.6.0
        # transformer_block.py L349 get_amax_reduction_group(with_context_parallel=True);
        # TE v1.3 pytorch/fp8.py reduce_tensor_across_group_op_max L333): a group of its own
        groups.append(group(dp_stride * cfg.dp, 1))
    if p.pp > 1:
        local_tp = ranks_on_node(p.tp, 1, n)
        groups.append((p.tp * p.pp, local_tp * ranks_on_node(p.pp, pp_stride, n)))
        if stage in (0, p.pp - 1) and cfg.model.tied_embeddings:
            groups.append(group(2, pp_stride * (p.pp - 1)))
        if p.data_parallel_impl == "deepspeed":
            groups += [group(p.tp, 1), group(p.pp, pp_stride)]
    return [g for g in groups if g[0] > 1]


def reserved_bytes(cfg: RunConfig, backward_peak: float, step_peak: float,
                   step_temporaries: float, side_pool: float = 0.0,
                   grad_pool: float = 0.0) -> float:
    """Bytes the caching allocator holds at the end of a step. A plain PyTorch step on one GPU
    (``memory.plain_step.applies``) replays its allocations through the allocator's rules
    (``memory.caching_allocator``) and adds the replay's reserved-minus-allocated to the larger
    phase's peak. Elsewhere: the larger phase's peak, plus,
    without expandable segments, the step's buffers that could not reuse freed blocks, plus
    what side streams keep in pools of their own (``side_pool``; blocks, and expandable
    segments, belong to one stream); ``grad_pool``: gradient shards a side stream allocated,
    free (reserved) at the backward's peak and allocated again at the step's. Megatron-core's
    reserve is :func:`replayed_reserve`'s, read when asked for."""
    excess = fragmentation_bytes(cfg)
    if excess is not None:  # a plain PyTorch step: its allocations replayed (memory.plain_step)
        peak = max(backward_peak, step_peak)
        # a cudaMalloc that fails makes the allocator free its cached segments and retry
        # (release_cached_blocks): it never holds more than the device has
        room = cfg.cluster.gpu.hbm_bytes - context_bytes(cfg)
        return max(peak, min(peak + excess, room)) + side_pool
    backward = backward_peak + grad_pool
    held = max(backward, step_peak)
    if cfg.training.expandable_segments:
        return held + side_pool
    return max(held, backward + step_temporaries) + side_pool


@dataclass(frozen=True)
class ReplayedReserve:
    """Reserved bytes of a Megatron-core rank (``memory.megatron_step.applies``): the larger
    phase's allocated peak ``held`` plus the replay of pipeline stage ``stage``'s construction,
    optimizer shards and activations (the blocks of the weights its DDP moved into its buffer,
    and what the step's tensors could not use of them), plus the side streams' pools. Computed
    when read, since nothing else (what fits, the time) depends on it: the replay costs tens of
    milliseconds a stage, which a search over memory groups would pay for every one."""

    cfg: RunConfig
    stage: int
    held: float
    side_pool: float

    def bytes(self) -> float:
        return self.held + (megatron_reserve(self.cfg, self.stage) or 0.0) + self.side_pool


def replayed_reserve(cfg: RunConfig, stage: int, backward_peak: float, step_peak: float,
                     side_pool: float = 0.0, grad_pool: float = 0.0) -> ReplayedReserve | None:
    """What :class:`ReplayedReserve` reads, for a run the replay applies to (without expandable
    segments); None elsewhere."""
    if cfg.training.expandable_segments or not megatron_applies(cfg):
        return None
    return ReplayedReserve(cfg, stage, max(backward_peak + grad_pool, step_peak), side_pool)


def context_bytes(cfg: RunConfig, stage: int = 0) -> float:
    """Device memory outside PyTorch's allocator on one GPU of pipeline stage ``stage``: the CUDA
    context, NCCL's buffers (each communicator's channel buffers, and its NVLS buffers where the
    run states its NCCL release: ``memory.nccl_buffers``) and DeepEP's or HybridEP's."""
    comms = communicators(cfg, stage)
    nccl = sum(NCCL_PAIR_COMM_BYTES if g == 2 else NCCL_GROUP_COMM_BYTES for g, _ in comms)
    return CUDA_CONTEXT_BYTES + nccl + nvls_bytes(cfg, comms) + deepep_buffer_bytes(cfg) \
        + hybridep_buffer_bytes(cfg)


def freed_logits_hole(cfg: RunConfig, stage: int) -> float:
    """Bytes the caching allocator keeps reserved, but free, at the eager loss's backward when
    the training loop drops the 16-bit logits before ``loss.backward()`` (profile feature
    ``logits_freed_before_backward``: torchtitan train.py ``del pred``, e29b6b4d4, 2024-06-12;
    without pipelining, whose schedule keeps each micro-batch's output). The forward lays
    out, at the segment's end, the logits (2 bytes per logit), their fp32 copy (4) and the
    fp32 log-softmax (4; loss_parallel's ``shifted`` and ``result`` likewise); the copy is
    freed after the forward and the logits by ``del pred``, a free block of 6. The backward's
    first fp32 buffer (``zeros_like``) takes 4 of it, so the next one finds 2 free where it
    needs 4 and maps (or, without expandable segments, mallocs) new memory: reserved stays
    2 bytes per logit above the allocated peak (c10/cuda/CUDACachingAllocator.cpp best-fit
    over free blocks of the stream's pool; the hand calculation in
    tests/test_memory_torchtitan.py). A compiled loss
    saves the logits themselves: nothing is freed."""
    p, t = cfg.parallel, cfg.training
    if (p.pp > 1 or stage != p.pp - 1 or t.modules != "eager"
            or not profile_supports(cfg, "logits_freed_before_backward")
            or (t.compile and profile_supports(cfg, "compiled_loss"))):
        return 0.0
    return 2.0 * t.micro_batch_size * t.seq_length / p.cp * rank_vocab(cfg)
