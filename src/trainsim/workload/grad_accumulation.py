"""The pass a framework runs over a rank's weight gradients after each micro-batch's backward,
where the weight-gradient GEMM does not accumulate them itself: DeepSpeed's fp32 copies,
autograd's ``AccumulateGrad``, nanotron's and early Megatron-LM's fp32 adds, FSDP2's unsharded
accumulator. Op lists only; the simulator decides where they run."""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.workload.ops import Elementwise, Op
from trainsim.workload.sharding import _grad_tensors
from trainsim.workload.wgrad_fusion import unfused_grad_accumulation

FP32_ACCUMULATION = "bf16_grads_to_fp32"
"""Name of the op that adds a backward's 16-bit weight gradients into fp32 ones."""
GRAD16_ACCUMULATION = "grads_accumulate_16bit"
"""Name of the op that adds a backward's weight gradients into the 16-bit ``.grad``."""
AUTOGRAD_FP32_ADD = "autograd_grad_add_fp32"
"""Name of the op by which autograd's ``AccumulateGrad`` adds a backward's fp32 weight gradients
into the existing fp32 ``.grad`` (DDP under autocast)."""
FP32_GRAD_ADD = "grads_add_into_fp32"
"""Name of the op that adds a backward's 16-bit weight gradients into an fp32 buffer, one
mixed-dtype ``add_`` kernel a tensor (profile feature ``fp32_grad_add``)."""


def fp32_grad_accumulation(cfg: RunConfig, layers: range | list[int], first: bool,
                           last: bool) -> list[Op]:
    """The pass DeepSpeed's engine (ZeRO 0-1) runs over the weight gradients after every
    backward pass of a micro-batch, one parameter tensor at a time.

    * bf16 with fp32 accumulation (the BF16 optimizer): ``hp_grad.add_(lp.grad.to(fp32))``
      (deepspeed/runtime/bf16_optimizer.py ``update_hp_grads``, called by the PipelineEngine
      after each micro-batch's backward). Per element: the cast reads 2 and writes 4 bytes, the
      add reads 4 + 4 and writes 4; two kernels per tensor.
    * 16-bit gradients (fp16, or bf16 without fp32 accumulation): the weight-gradient GEMM
      writes a fresh tensor and autograd's ``AccumulateGrad`` adds it into the parameter's
      ``.grad`` in place (``variable_grad += new_grad``, torch/csrc/autograd/functions/
      accumulate_grad.h, torch 1.x-2.x), since DeepSpeed's ZeRO-1 keeps the gradients in
      ``param.grad`` until the boundary (deepspeed/runtime/zero/stage_1_and_2.py v0.5.10:
      stage 1 forces ``contiguous_gradients`` off and reduces only at the boundary). Per
      element: reads 2 + 2, writes 2 bytes; one kernel per tensor. (The first micro-batch's
      gradient is stolen, not added; the pass is priced on every backward.)

    * profile feature ``fp32_grad_add`` (nanotron), 16-bit gradients accumulated in fp32:
      ``fp32_grad.add_(half_param.grad)`` per parameter after every micro-batch's backward
      (huggingface/nanotron@e24d2483 src/nanotron/optim/gradient_accumulator.py
      ``FP32GradientAccumulator.backward`` / ``_accumulate_grad`` L204-L223; on ZeRO-0's
      synchronising micro-batch the same ``add_`` in DDP's ``fp32_accum_hook``, L338-L341),
      then ``half_param.grad = None``. One kernel per tensor, PyTorch's mixed-dtype add: per
      element reads 2 + 4 and writes 4 bytes.

    * profile feature ``unfused_grad_accumulation`` (Megatron-LM before its fused wgrad
      accumulation): 16-bit gradients added by ``AccumulateGrad`` as above (6 bytes); fp32
      ``main_grad`` (bf16) by the local DDP's hook ``param.main_grad.add_(param.grad.data)``
      (megatron/model/distributed.py @a8d172b3), 10 bytes as nanotron's; "16bit": only the former.
      A run that states ``gradient_accumulation_fusion`` off reads "all" on any Megatron
      release (``workload.wgrad_fusion``): the DistributedOptimizer rows of Megatron-LLaMA,
      whose script passes ``--no-gradient-accumulation-fusion``.

    * DistributedDataParallel over fp32 parameters under ``torch.autocast`` (the ``pytorch``
      profile's ``ddp``, ZeRO 0, or 1 with ZeroRedundancyOptimizer over DDP's gradients): the
      cast's backward hands each parameter an fp32 gradient and ``AccumulateGrad`` adds it
      into ``.grad`` in place when one is there (reads 4 + 4,
      writes 4; one kernel per tensor): on every micro-batch where ``zero_grad`` zeroes the
      gradients (torch before 2.0), on all but the first where it sets them to None (profile
      feature ``grads_set_to_none``); spread evenly over the step's backward passes.

    Other stacks accumulate inside the weight-gradient GEMM (Megatron's
    ``gradient_accumulation_fusion``) or price their accumulation elsewhere: nothing to add."""
    p, t = cfg.parallel, cfg.training
    unfused = unfused_grad_accumulation(cfg)  # the profile's, or the run's stated fusion
    # (Megatron-FSDP, zero stage 3, copies its unfused gradients per unit: workload.megatron_fsdp)
    if unfused in ("16bit", "all") and p.data_parallel_impl == "megatron" \
            and p.zero_stage < 3:  # (fp8 GEMMs hand 16-bit weight gradients too)
        if not t.grad_reduce_in_fp32:
            tensors = _grad_tensors(cfg, layers, first, last)
            return [Elementwise(GRAD16_ACCUMULATION, bytes=6.0 * sum(tensors),
                                kernels=len(tensors))]
        if unfused == "all":
            tensors = _grad_tensors(cfg, layers, first, last)
            return [Elementwise(FP32_GRAD_ADD, bytes=10.0 * sum(tensors), kernels=len(tensors))]
    if profile_supports(cfg, "fp32_grad_add") and t.dtype in ("bf16", "fp16") \
            and t.grad_reduce_in_fp32:
        tensors = _grad_tensors(cfg, layers, first, last)
        return [Elementwise(FP32_GRAD_ADD, bytes=10.0 * sum(tensors), kernels=len(tensors))]
    if p.data_parallel_impl == "ddp":  # ZeRO-1 too: DDP's .grad, ZeroRedundancyOptimizer
        return _autocast_grad_accumulation(cfg, layers, first, last)
    if not (p.data_parallel_impl == "deepspeed" and p.zero_stage <= 1):
        return []
    tensors = _grad_tensors(cfg, layers, first, last)
    if t.dtype == "bf16" and t.grad_reduce_in_fp32:
        return [Elementwise(FP32_ACCUMULATION, bytes=18.0 * sum(tensors),
                            kernels=2 * len(tensors))]
    return [Elementwise(GRAD16_ACCUMULATION, bytes=6.0 * sum(tensors), kernels=len(tensors))]


def _autocast_grad_accumulation(cfg: RunConfig, layers: range | list[int], first: bool,
                                last: bool) -> list[Op]:
    """Autograd's in-place fp32 ``+=`` into DDP's ``.grad`` (``fp32_grad_accumulation``), per
    micro-batch: 12 bytes an element and a kernel a tensor, times the share of the step's
    backward passes that add (the same op stands for every micro-batch of the step: where the
    first backward's gradients are stolen, its kernels are not launched either, so the step
    counts ``tensors x adds`` kernels, not ``tensors x n``)."""
    t = cfg.training
    if t.dtype not in ("bf16", "fp16") or not t.grad_reduce_in_fp32:
        return []
    n = cfg.num_microbatches
    adds = n - 1 if profile_supports(cfg, "grads_set_to_none") else n
    tensors = _grad_tensors(cfg, layers, first, last)
    if not tensors or adds <= 0:
        return []
    share = adds / n
    return [Elementwise(AUTOGRAD_FP32_ADD, bytes=12.0 * share * sum(tensors),
                        kernels=len(tensors) * share if adds < n else len(tensors))]


def fsdp2_unsharded_grad_accumulation(cfg: RunConfig, layers: range | list[int], first: bool,
                                       last: bool) -> list[Op]:
    """What FSDP2 runs over a stage's unsharded weight gradients after each micro-batch's
    backward when gradient sync is off (the pipeline stage's no-sync, profile
    ``fsdp_pp_unsharded``), one parameter at a time in ``FSDPParamGroup.post_backward``
    (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, _fsdp_param.py; read in the
    installed torch 2.13, the same calls in the 2024 FSDP2): with a reduce dtype other than the
    gradient's, the first backward's gradient is cast into the unsharded accumulator
    (``to_accumulated_grad_if_needed``: reads 2, writes 4 bytes per element) and every later
    one added into it (``accumulate_unsharded_grad_if_needed``, ``acc += grad``: reads 4 + 2,
    writes 4); with the same dtype autograd's AccumulateGrad adds each later gradient into
    ``.grad`` (reads 2 + 2, writes 2). One kernel per tensor; the step's bytes spread evenly
    over its micro-batches' backward passes."""
    t = cfg.training
    n = cfg.schedule_microbatches
    tensors = _grad_tensors(cfg, layers, first, last)
    per_step = 6.0 + 10.0 * (n - 1) if t.grad_reduce_in_fp32 else 6.0 * (n - 1)
    if not tensors or per_step == 0:
        return []
    return [Elementwise("fsdp_unsharded_grad_accumulation", bytes=per_step / n * sum(tensors),
                        kernels=len(tensors))]
