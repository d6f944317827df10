"""What DeepSpeed's PipelineEngine adds around each pass: how it exchanges activations and
gradients between stages, and the TP all-gathers that rebuild what it received.

Read at microsoft/DeepSpeed v0.5.10 (the engine under BigScience's Megatron-DeepSpeed, 2022),
deepspeed/runtime/pipe/schedule.py ``TrainSchedule`` and deepspeed/runtime/pipe/engine.py:

* Every schedule step is a forward or a backward, and opens with a pair of blocking transfers
  with one neighbour: a forward step ``RecvActivation`` then ``SendGrad`` (of the previous
  micro-batch), a backward step ``SendActivation`` then ``RecvGrad``. ``p2p.send``/``recv``
  are ``torch.distributed.send``/``recv`` with ``async_op`` refused, so the two run one after
  the other, not both ways at once as Megatron's ``send_forward_recv_backward`` batches them.
  A pass that sends therefore waits for two transfers: its own and the one it receives in the
  same step (the first and last stage, which exchange in only one kind of step, pay both there).
* With TP > 1 the first output is split over the TP group (``PartitionedTensor``,
  ``is_pipe_partitioned``): each rank sends its 1/tp slice and a small meta tensor (two sends).
  The receiver all-gathers the slices before its forward (``part_input.full()``); a backward
  all-gathers twice: the output it partitioned after its forward (``_exec_backward_pass``
  restores it) and the partitioned gradient it received (``part_grad.full()``).

The attention mask is not sent: Megatron-DeepSpeed keeps the constant causal mask in
``args.attn_mask`` (pretrain_gpt.py ``model_provider``), so only the hidden states travel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.workload.ops import ACT_BYTES, Comm, Op

if TYPE_CHECKING:
    from trainsim.config import RunConfig
    from trainsim.workload.layers import Shard

META_BYTES = 8 * 8
"""The partition's meta tensor (``PartitionedTensor.to_meta``: an int64 vector of the tensor's
number of dimensions, shape, partition count, rank and partition offsets; a few dozen bytes
for a 3-d activation over up to 8 ranks), sent before every partitioned slice."""


def deepspeed_pipe_exchange(cfg: RunConfig, act_bytes: float) -> list[list[Comm]]:
    """The transfers a sending pass waits for under DeepSpeed's PipelineEngine, in order: its
    send, then the transfer it receives in the same step, each a slice of ``act_bytes`` plus
    its meta tensor when TP partitions it. One list per transfer (priced as one segment)."""
    one = [Comm("p2p", "send_recv", act_bytes, "pp")]
    if cfg.parallel.tp > 1:
        one.append(Comm("p2p_meta", "send_recv", META_BYTES, "pp"))
    return [one, list(one)]


def deepspeed_pipe_gathers(cfg: RunConfig, sh: Shard) -> tuple[list[Op], list[Op]]:
    """(forward, backward) TP all-gathers of a stage that receives under DeepSpeed's
    PipelineEngine with TP > 1: one before a forward that received its input, two before a
    backward that received its output's gradient. Empty otherwise."""
    p = cfg.parallel
    if p.data_parallel_impl != "deepspeed" or p.pp < 2 or p.tp < 2:
        return [], []
    full = sh.tokens * cfg.model.hidden_size * ACT_BYTES
    gather = Comm("pipe_partition_all_gather", "all_gather", full, "tp")
    return [gather], [gather, gather]
