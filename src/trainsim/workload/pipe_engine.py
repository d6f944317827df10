"""What DeepSpeed's PipelineEngine adds around each pass: how it exchanges activations and
gradients between stages, and the TP all-gathers that rebuild what it received; and what
``DeepSpeedEngine.backward`` (both engines) does with the loss before autograd starts
(``deepspeed_loss_read``).

Read at microsoft/DeepSpeed v0.5.10 (the engine under BigScience's Megatron-DeepSpeed, 2022),
deepspeed/runtime/pipe/schedule.py ``TrainSchedule`` and deepspeed/runtime/pipe/engine.py:

* Every schedule step is a forward or a backward, and opens with a pair of blocking transfers
  with one neighbour: a forward step ``RecvActivation`` then ``SendGrad`` (of the previous
  micro-batch), a backward step ``SendActivation`` then ``RecvGrad``. ``p2p.send``/``recv``
  are ``torch.distributed.send``/``recv`` with ``async_op`` refused, so the two run one after
  the other, not both ways at once as Megatron's ``send_forward_recv_backward`` batches them.
  The simulator places the passes step by step (``train_schedule``, ``trainsim.ds_lockstep``):
  each step's transfers a rendezvous of the two stages that make them, as blocking NCCL
  sends and receives run. Where that placement does not apply (interleaving, other schedules,
  ZeRO-3 units; ``ds_lockstep.lockstep_applies``) a pass that sends is folded with two
  transfers, its own and the one it receives in the same step (``deepspeed_pipe_exchange``).
* With TP > 1 the first output is split over the TP group (``PartitionedTensor``,
  ``is_pipe_partitioned``): each rank sends its 1/tp slice and a small meta tensor (two sends).
  The receiver all-gathers the slices before its forward (``part_input.full()``); a backward
  all-gathers twice: the output it partitioned after its forward (``_exec_backward_pass``
  restores it) and the partitioned gradient it received (``part_grad.full()``).

* Rebuilding a partitioned tensor is more than the all-gather (deepspeed/runtime/utils.py
  ``PartitionedTensor``): ``from_meta`` reads the received meta tensor with ``meta.tolist()``
  (a device-to-host copy: the host waits for the GPU); ``full()`` fills a flat buffer with
  ``torch.zeros``, copies its own slice in, calls ``dist.all_gather`` with a list of per-rank
  views of that buffer (ProcessGroupNCCL gathers into a flat buffer of its own, then copies
  each rank's piece out: one copy per rank, pytorch/pytorch#33924) and returns a ``.clone()``
  of the whole. ``_exec_recv_activations`` and ``_exec_forward_pass`` each ``.clone()`` what
  was received (the meta and the 1/tp slice) before the forward uses it.

* The first and the last stage load a micro-batch at every forward step
  (schedule.py ``TrainSchedule.steps``, "First/last stage loads", before the ``ForwardPass``):
  ``_exec_load_micro_batch`` calls the model's ``batch_fn`` (``_next_batch``) and the first
  stage clones the inputs it returns; ``_exec_forward_pass`` clones them once more
  (``deepspeed_load_micro_batch``).

The attention mask is not sent: Megatron-DeepSpeed keeps the constant causal mask in
``args.attn_mask`` (pretrain_gpt.py ``model_provider``), so only the hidden states travel.

Not modelled: the ``.clone()`` of the 1/tp slice a sender partitions and its ``to_meta()``
host-to-device copy (a stream synchronisation on the sending pass, next to a transfer the
step blocks on anyway).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsim.catalog.frameworks import profile_supports
from trainsim.workload.ops import ACT_BYTES, Comm, Elementwise, Op
from trainsim.workload.sharding import list_all_gather_ops

if TYPE_CHECKING:
    from trainsim.config import RunConfig
    from trainsim.workload.shard import Shard

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


Step = tuple[tuple[str, ...], tuple[str, int] | None]
"""One step of ``TrainSchedule`` on one stage: its transfers in order (the instructions'
names) and its pass (``("F", micro-batch)``, ``("B", micro-batch)``) or None."""


def train_schedule(stage: int, stages: int, micro_batches: int) -> list[Step]:
    """DeepSpeed's ``TrainSchedule(micro_batches, stages, stage_id).steps()`` read as steps
    (microsoft/DeepSpeed v0.5.10, 3293cf72, deepspeed/runtime/pipe/schedule.py L189-283): of
    ``2 (micro_batches + stages - 1)`` steps, even stages run forwards on even steps and odd
    stages on odd ones, backwards on the others (``_step_to_micro_batch``; a micro-batch id
    outside ``[0, micro_batches)`` is no pass). A forward step opens with ``RecvActivation``
    of its micro-batch then ``SendGrad`` of the previous step's (both with the previous
    stage), a backward step with ``SendActivation`` of the previous step's micro-batch then
    ``RecvGrad`` of its own (both with the next stage); ``LoadMicroBatch`` and the reductions
    after the last step are no transfers. Every step's transfers are with one neighbour, and
    that neighbour's step makes the same ones in the same order."""
    out: list[Step] = []
    prev = -1
    for step in range(2 * (micro_batches + stages - 1)):
        forward = step % 2 == stage % 2
        if forward:
            mb = (step - stage) // 2  # _even/_odd_step_forward_id
        else:
            mb = (step - 2 * stages + stage + 1) // 2  # _even/_odd_step_backward_id
        valid, was = 0 <= mb < micro_batches, 0 <= prev < micro_batches
        if forward and stage > 0:
            transfers = ("RecvActivation",) * valid + ("SendGrad",) * was
        elif not forward and stage < stages - 1:
            transfers = ("SendActivation",) * was + ("RecvGrad",) * valid
        else:
            transfers = ()
        out.append((transfers, ("F" if forward else "B", mb) if valid else None))
        prev = mb
    return out


def deepspeed_lockstep(cfg: RunConfig) -> bool:
    """Whether the run's pipeline passes are placed step by step as DeepSpeed's PipelineEngine
    runs ``TrainSchedule`` (``ds_lockstep``): DeepSpeed's data parallelism with pipeline
    stages, Megatron's 1F1B order (what the schedule's steps give) and no interleaving."""
    p = cfg.parallel
    return p.data_parallel_impl == "deepspeed" and p.pp > 1 and p.vpp == 1 and \
        p.pipeline_schedule in (None, "1f1b")


def partitioned_full(cfg: RunConfig, full_bytes: float) -> list[Op]:
    """``PartitionedTensor.from_meta(...).full()`` of a tensor of ``full_bytes`` over the TP
    group: the meta read by the host, the zero-filled flat buffer, the rank's own slice copied
    in, the all-gather into per-rank views (gathered flat, then one copy out per rank) and the
    clone returned."""
    tp = cfg.parallel.tp
    own = Elementwise("pipe_partition_local_copy", bytes=2 * full_bytes / tp)
    return [
        Elementwise("pipe_partition_meta_tolist", bytes=META_BYTES, host_sync=True),
        *list_all_gather_ops("pipe_partition", full_bytes, tp, "tp", before_gather=[own]),
        Elementwise("pipe_partition_clone", bytes=2 * full_bytes),
    ]


def deepspeed_pipe_gathers(cfg: RunConfig, sh: Shard) -> tuple[list[Op], list[Op]]:
    """(forward, backward) ops of a stage that receives under DeepSpeed's PipelineEngine with
    TP > 1: a forward that received its input clones what arrived (twice: the receive and the
    forward each clone the meta and the slice) and rebuilds it once; a backward that received
    its output's gradient rebuilds twice (the output it partitioned, the gradient). Empty
    otherwise."""
    p = cfg.parallel
    if p.data_parallel_impl != "deepspeed" or p.pp < 2 or p.tp < 2:
        return [], []
    full = sh.tokens * cfg.model.hidden_size * ACT_BYTES
    clones = Elementwise(
        "pipe_received_clones", bytes=2 * 2 * (full / p.tp + META_BYTES), kernels=4
    )
    return [clones, *partitioned_full(cfg, full)], [*partitioned_full(cfg, full)] * 2


MAX_DATA_DIM = 5
"""``_MAX_DATA_DIM`` of Megatron's mpu/data.py: the int64 sizes vector ``broadcast_data`` sends
holds this many entries per key (one key, ``'text'``, in ``get_batch_pipe``)."""

TOKEN_BYTES = 8
"""The token ids travel and are sliced as int64 (``datatype = torch.int64``)."""


def megatron_batch_fn(b: int, s: int, tp: int) -> list[Op]:
    """What Megatron-DeepSpeed's ``get_batch_pipe`` (pretrain_gpt.py) runs for a micro-batch
    of ``b`` sequences of ``s`` tokens, on every TP rank of a stage that loads (read at
    bigscience-workshop/Megatron-DeepSpeed@ae6277f5, 2022-02-21):

    * ``mpu.broadcast_data`` (megatron/mpu/data.py): ``_build_key_size_numel_dictionaries``
      makes the sizes vector with ``torch.cuda.LongTensor(sizes)`` (a host-to-device copy from
      pageable memory, which synchronises the stream: pytorch/pytorch#120996), broadcasts it
      over the TP group and reads it back with ``sizes_cuda.cpu()`` (the host waits); TP rank 0
      then moves the ``b x (s + 1)`` token ids with ``.cuda()`` (synchronising again) and
      broadcasts them over the TP group.
    * ``labels = tokens_[:, 1:].contiguous()`` and ``tokens = tokens_[:, :-1].contiguous()``:
      two copies of ``b x s`` int64.
    * ``get_ltor_masks_and_position_ids`` (megatron/utils.py), no reset flags: the causal mask
      ``torch.tril(torch.ones((1, s, s)))`` in fp32 (a fill, then tril reads and writes it),
      ``loss_mask = torch.ones(b, s)`` (fp32), ``torch.arange(s)`` (int64, expanded as a view)
      and ``attention_mask < 0.5`` (reads fp32, writes bool).

    Rank 0's data-loader ``next()`` (host only, prefetched by workers) is not priced, nor the
    broadcasts over a TP group of one rank."""
    sizes = float(TOKEN_BYTES * MAX_DATA_DIM)
    data = float(TOKEN_BYTES * b * (s + 1))
    ss = float(s) * s

    def bcast(name: str, nbytes: float) -> list[Op]:
        return [Comm(name, "broadcast", nbytes, "tp")] if tp > 1 else []

    return [
        Elementwise("batch_sizes_h2d", bytes=sizes, host_sync=True, kernel="copy"),
        *bcast("batch_sizes.broadcast", sizes),
        Elementwise("batch_sizes_d2h", bytes=sizes, host_sync=True, kernel="copy"),
        Elementwise("batch_tokens_h2d", bytes=data, host_sync=True, kernel="copy"),
        *bcast("batch_tokens.broadcast", data),
        Elementwise("batch_tokens_labels", bytes=2 * 2 * TOKEN_BYTES * b * s, kernels=2,
                    kernel="copy"),
        Elementwise("batch_ltor_masks", bytes=4 * ss + 2 * 4 * ss + 4 * b * s
                    + TOKEN_BYTES * s + (4 + 1) * ss, kernels=5),
    ]


def first_stage_input_clones(b: int, s: int) -> Elementwise:
    """The first stage's copies of the (tokens, position_ids, attention_mask) tuple the batch
    function returns (DeepSpeed v0.5.10 deepspeed/runtime/pipe/engine.py): ``_exec_load_micro_
    batch`` stores ``x.clone().detach().to(self.device)`` of each (L764-769; the position ids
    are an expanded view, so their clone reads ``s`` ids and writes ``b x s``), and
    ``_exec_forward_pass`` runs the forward on ``t.clone()`` of each stored tensor
    (L607-608). Bytes read plus written; the bool mask is ``s x s``."""
    tokens = 2.0 * TOKEN_BYTES * b * s
    mask = 2.0 * s * s
    load = tokens + TOKEN_BYTES * (b * s + s) + mask
    forward = tokens + tokens + mask
    return Elementwise("pipe_input_clones", bytes=load + forward, kernels=6, kernel="copy")


def deepspeed_load_micro_batch(cfg: RunConfig, first: bool, last: bool) -> list[Op]:
    """The ``LoadMicroBatch`` instruction of DeepSpeed's PipelineEngine before a forward of the
    first or last stage (pipeline parallel only), under a framework whose batch function
    is Megatron's ``get_batch_pipe`` (profile feature ``megatron_batch_fn``): that function on
    both, the first stage's input clones on the first (DeepSpeed v0.5.10 schedule.py
    L221-224, engine.py ``_exec_load_micro_batch`` L750-786, ``_next_batch`` L591-601: every
    rank calls ``batch_fn``; the last stage keeps the labels and loss mask without a copy,
    ``.to(device)`` of a tensor already there). A single stage too: bigscience-workshop/
    Megatron-DeepSpeed@ae6277f5 pretrain_gpt.py ``model_provider`` builds ``GPTModelPipe``
    whenever ``--deepspeed`` is set (a PipelineModule, so deepspeed.initialize returns a
    PipelineEngine, training.py L391-393 hands it the batch function), and the engine at one
    stage only leaves out the p2p (v0.5.10 engine.py L125): the stage, first and last, loads
    every micro-batch, clones included. Empty for other stages and engines."""
    p, t = cfg.parallel, cfg.training
    if not (first or last) or p.data_parallel_impl != "deepspeed" \
            or not profile_supports(cfg, "megatron_batch_fn"):
        return []
    b, s = t.micro_batch_size, t.seq_length
    ops = megatron_batch_fn(b, s, p.tp)
    return ops + [first_stage_input_clones(b, s)] if first else ops


LOSS_BYTES = 4
"""The loss is an fp32 scalar: Megatron's cross-entropy runs on ``.float()`` logits and
averages over the loss mask in fp32."""


def deepspeed_loss_read(cfg: RunConfig) -> list[Op]:
    """What ``DeepSpeedEngine.backward`` runs on the loss before autograd starts, on the stage
    that holds the loss (the PipelineEngine's last stage calls it, ``_exec_backward_pass``:
    ``super().backward(self.loss)``; the other stages call ``torch.autograd.backward`` on their
    outputs; the plain engine calls it on every rank), for every micro-batch, under a DeepSpeed
    release whose profile has ``ds_loss_item_sync``:

    * ``_scale_loss_by_gas``: the loss divided by the gradient-accumulation steps (one kernel,
      where there are more than one);
    * ``loss.mean().item()`` (microsoft/DeepSpeed 4d269c6e, 2023-05-11, first in v0.9.3,
      deepspeed/runtime/engine.py ``backward``: ``self.losses.append(loss.mean().item())`` on
      micro-steps that are not the accumulation boundary; eeab613a, 2023-07-25, v0.10.1:
      ``self.losses += loss.mean().item()`` on every micro-step): a mean and a 4-byte copy to
      the host, which waits for the forward to finish before it launches the backward;
      fac1df99 (2024-02-15, first in v0.13.3, PR #5135 "item() causes device/host
      synchronization") keeps the sum on the device;
    * fp16: the loss scaler's ``scaled_loss = loss * loss_scale`` (fp16/loss_scaler.py
      ``LossScaler.backward``; fp16/fused_optimizer.py ``FP16_Optimizer.backward`` multiplies
      ``loss.float()`` by ``cur_scale``) before ``scaled_loss.backward()``.

    v0.9.3-v0.10.0 skip the read on the boundary micro-step (1 of the step's micro-batches):
    priced on every one. Priced by ``compute.host``: after the wait, the backward's first
    launches are exposed."""
    t = cfg.training
    if cfg.parallel.data_parallel_impl != "deepspeed" \
            or not profile_supports(cfg, "ds_loss_item_sync"):
        return []
    ops: list[Op] = []
    if cfg.num_microbatches > 1:
        ops.append(Elementwise("ds_loss_scale_by_gas", bytes=2 * LOSS_BYTES))
    ops += [Elementwise("ds_loss_mean", bytes=2 * LOSS_BYTES),
            Elementwise("ds_loss_item", bytes=LOSS_BYTES, host_sync=True, kernel="copy")]
    if t.dtype == "fp16":
        ops.append(Elementwise("ds_loss_scale", bytes=2 * LOSS_BYTES))
    return ops
