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

from trainsim.config import RunConfig

CUDA_CONTEXT_BYTES = 1573 * 2**20
"""CUDA context with PyTorch's, cuBLAS's and cuDNN's kernels loaded: 1573 MiB measured by
nvidia-smi on an A100 with nothing allocated (bigscience-workshop/bigscience
train/tr11-176B-ml/chronicles-prequel.md, the BLOOM team's 2022 stack; 1271 MiB on a V100).
CUDA 11.7's lazy loading lowers it (pytorch/pytorch#86509: 666 -> 287 MB for one tensor), but
the kernels a training step uses load anyway."""
NCCL_PAIR_COMM_BYTES = 544e6
NCCL_GROUP_COMM_BYTES = 688e6
"""Device memory of one NCCL communicator once it has run a collective: ~544 MB for two ranks
and ~688 MB for three or more on A100s with NVLink (NVIDIA/nccl#964, 2023): channel buffers
for each protocol (NCCL_BUFFSIZE 4 MiB for Simple, plus LL and LL128) per peer and channel."""


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
    - DeepSpeed's pipeline engine builds its own groups beside the model's
      (deepspeed/runtime/pipe/topology.py ``PipelineParallelGrid``, v0.5.10): it gathers the
      stage outputs in its slice group (the tensor-parallel ranks again) and broadcasts the loss
      in the pipeline group (runtime/pipe/engine.py).

    Pipeline sends and receives are not counted: PyTorch gives each (rank, peer) pair a
    communicator of its own that holds only point-to-point buffers, whose size no measurement
    here gives."""
    p = cfg.parallel
    groups = [cfg.cluster.num_gpus, p.tp, p.cp, cfg.dp]
    if p.ep > 1:
        groups += [p.ep, cfg.edp]
    if p.pp > 1:
        groups.append(p.tp * p.pp)
        if stage in (0, p.pp - 1) and cfg.model.tied_embeddings:
            groups.append(2)
        if p.data_parallel_impl == "deepspeed":
            groups += [p.tp, p.pp]
    return [g for g in groups if g > 1]


def reserved_bytes(cfg: RunConfig, backward_peak: float, step_peak: float,
                   step_temporaries: float) -> float:
    """Bytes the caching allocator holds at the end of a step: the larger phase's peak, plus,
    without expandable segments, the step's buffers that could not reuse freed blocks."""
    allocated = max(backward_peak, step_peak)
    if cfg.training.expandable_segments:
        return allocated
    return max(allocated, backward_peak + step_temporaries)


def context_bytes(cfg: RunConfig, stage: int = 0) -> float:
    """Device memory outside PyTorch's allocator on one GPU of pipeline stage ``stage``: the CUDA
    context and NCCL's buffers."""
    nccl = sum(NCCL_PAIR_COMM_BYTES if g == 2 else NCCL_GROUP_COMM_BYTES
               for g in communicator_sizes(cfg, stage))
    return CUDA_CONTEXT_BYTES + nccl
