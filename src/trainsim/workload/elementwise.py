"""Memory-bound ops as each implementation runs them: the bytes every kernel moves and how many
kernels it launches, derived from the sequence of PyTorch ops the implementation issues.

A fused kernel reads its input once and writes its output once. An eager implementation runs
one kernel per PyTorch op, each reading and writing a whole tensor, often upcast to fp32: Hugging
Face's ``LlamaRMSNorm`` moves 9x the bytes of a fused RMSNorm in 8 kernels, which is why the
published eager rows run ~10x slower (Liger-Kernel's benchmark data; the H100 rows of
``kernels_h100_measured.csv``). Bytes are per element of the op's tensor; ``e`` is the input
element size (2 for bf16/fp16, 4 for fp32); reductions over a row write a negligible T values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from trainsim.workload.expert_bias import (  # noqa: F401 - re-exported: the experts' bias loops
    EXPERT_BIAS_BYTES,
    EXPERT_BIAS_KERNELS,
    EXPERT_FC1_BIAS_BYTES,
    ExpertBiasCost,
    expert_bias_bytes,
    expert_fc1_bias,
    expert_fc2_bias,
)
from trainsim.workload.fp8_delayed import (  # noqa: F401 - re-exported: fp8 delayed scaling
    FP8_AMAX_BYTES_PER_LAYER,
    FP8_SCALE_UPDATE_KERNEL,
    FP8_SCALE_UPDATE_KERNELS,
    TE_BULK_AMAX,
    fp8_amax_reductions,
    fp8_scale_update_op,
)
from trainsim.workload.hf_activations import hf_activation_op
from trainsim.workload.ops import ACT_BYTES, Elementwise

F32 = 4

# (family, implementation) -> (bytes per element as a function of e, kernels)
IMPLEMENTATIONS: dict[tuple[str, str], tuple[Callable[[int], float], int]] = {
    # fused norm: read x, write y, the row held in registers (Transformer Engine's
    # rmsnorm_fwd_tuned_kernel / ln_fwd_tuned_kernel, apex contrib's FastLayerNorm, Liger's
    # Triton kernels); torch's native norms are two_pass, apex's FusedLayerNorm scalar_two_pass
    ("rmsnorm", "fused"): (lambda e: 2 * e, 1),
    ("layernorm", "fused"): (lambda e: 2 * e, 1),
    # two-pass norm, one block per row: a first loop over the row for its statistics, then a
    # second loop that reads the row again to write y (PyTorch's native layer norm,
    # aten/src/ATen/native/cuda/layer_norm_kernel.cu: compute_stats, then the normalising
    # loop; vLLM's rms_norm_kernel, csrc/layernorm_kernels.cu: the variance loop, then the
    # output loop). Rows too long for L1 come from L2 or HBM again: read twice, write once.
    # Measured on H100 (kernels_h100_measured.csv, 16384 x 8192 bf16): torch's layer norm
    # and F.rms_norm take 1.57x and 1.51x a copy of the same bytes (3/2 = 1.5).
    ("rmsnorm", "two_pass"): (lambda e: 3 * e, 1),
    ("layernorm", "two_pass"): (lambda e: 3 * e, 1),
    # HF LlamaRMSNorm: x.to(fp32) (e + 4), pow(2) (8), mean (4), + eps and rsqrt on T values
    # (2 tiny kernels), x * rsqrt (8), .to(dtype) (4 + e), weight * x (2e)
    ("rmsnorm", "eager"): (lambda e: (e + F32) + 8 + 4 + 8 + (F32 + e) + 2 * e, 8),
    # the same module as constructed, its weight left at torch's default fp32
    # (``nn.Parameter(torch.ones(hidden_size))``, moved with ``.to("cuda")`` only) on a 16-bit
    # input: type promotion makes ``weight * x.to(dtype)`` an fp32 product, so the last kernel
    # writes 4 bytes an element, not e (Liger-Kernel benchmark/scripts/benchmark_rms_norm.py
    # @26a578e8 ``LlamaRMSNorm``, the module of its A100 rows)
    ("rmsnorm", "eager_f32_weight"): (lambda e: (e + F32) + 8 + 4 + 8 + (F32 + e) + (e + F32), 8),
    # the same kernels written with one 16-bit load per thread per element (no 128-bit vector
    # loads; ``SCALAR_LOADS``): vLLM's early rotary, SiluAndMul and two-pass RMSNorm kernels
    # (csrc/pos_encoding_kernels.cu, activation_kernels.cu, layernorm_kernels.cu: a loop of
    # ``input[token * d + idx]`` over idx), priced at ``compute.roofline.SCALAR_HBM_EFFICIENCY``;
    # apex's FusedLayerNorm/FusedRMSNorm and Megatron's copy, MixedFusedLayerNorm
    # (csrc/layer_norm_cuda_kernel.cu and megatron/fused_kernels/layer_norm_cuda_kernel.cu
    # cuApplyLayerNorm: cuWelfordMuSigma2's loop of ``lvals[l + k]``, 16-bit loads (half2 for
    # fp16), then ``curr = lvals[i]`` over the row again, one element per thread)
    ("rope", "scalar"): (lambda e: 2 * e, 1),
    ("swiglu", "scalar"): (lambda e: 3 * e, 1),
    ("rmsnorm", "scalar_two_pass"): (lambda e: 3 * e, 1),
    ("layernorm", "scalar_two_pass"): (lambda e: 3 * e, 1),
    # Praxis's LayerNorm as XLA fuses it (a Paxml run with ENABLE_TE=0, training.xla_layers;
    # google/praxis@fc68027 praxis/layers/normalizations.py L368-382: ``mean``, then
    # ``mean(square(x - mean))``, then ``(x - mean) * rsqrt(var + eps)``, scale and bias): two
    # dependent row reductions (each reads x, e) and the normalizing fusion (reads x, writes
    # y: 2e); inferred from the program, the compiled HLO not read
    ("layernorm", "xla"): (lambda e: 4 * e, 3),
    # a pointwise op (GELU, a copy, the kernels files' residual add of a tensor to itself,
    # x + x): one kernel, read, write
    ("gelu", "fused"): (lambda e: 2 * e, 1),
    ("copy", "fused"): (lambda e: 2 * e, 1),
    ("residual_add", "fused"): (lambda e: 2 * e, 1),
    # SwiGLU per output element: fused reads gate and up, writes the product; eager runs
    # silu(gate) (read, write) and then the product (read two, write)
    ("swiglu", "fused"): (lambda e: 3 * e, 1),
    ("swiglu", "eager"): (lambda e: 2 * e + 3 * e, 2),
    # the same two kernels on the halves of one [T, 2f] tensor (``x.chunk(2, -1)``, as
    # ``trainsim profile`` and Megatron's unfused ``swiglu`` run them): each half is a strided
    # view, so both run PyTorch's non-vectorized path (``STRIDED_LOADS``)
    ("swiglu", "eager_chunked"): (lambda e: 2 * e + 3 * e, 2),
    # Megatron-core's ``bias_swiglu_impl`` (megatron/core/fusions/fused_bias_swiglu.py
    # ``swiglu``: ``torch.chunk(y, 2, -1)``, ``F.silu(y_1) * y_2``) under ``@jit_fuser``, which
    # is ``torch.compile`` from torch 2.2 (megatron/core/jit.py): Inductor fuses it into one
    # kernel (read both halves, write the product). Called again at a new width in the same
    # process (a benchmark sweep), Dynamo recompiles with that width symbolic
    # (``torch._dynamo.config.automatic_dynamic_shapes``), and Inductor tells Triton a size
    # is divisible by 16 only where it is statically known to be (torch/_inductor/codegen/
    # triton_utils.py ``config_of``/``is_aligned``), so the halves' index ``x0 + 2*ks0*x1``
    # (``x0 = xindex % ks0``) cannot be proven contiguous: one 16-bit load per element, the
    # access pattern of ``SCALAR_LOADS``. Measured (Liger-Kernel's megatron_swiglu sweep,
    # H100): 1.86-1.89 TB/s from the second width on; its first width, compiled static, runs
    # at Liger's vectorized rate.
    ("swiglu", "inductor_dynamic"): (lambda e: 3 * e, 1),
    # cross-entropy per logit, forward. Fused (Megatron's vocab-parallel CE, flash-attn's):
    # read the 16-bit logit, keep the fp32 softmax for the backward. PyTorch's
    # F.cross_entropy(logits.float()): the upcast (e + 4), log_softmax reading its input three
    # times (max, sum of exp, output) and writing fp32 (16); the loss gathers T values.
    ("cross_entropy", "fused"): (lambda e: e + F32 + F32, 1),
    ("cross_entropy", "eager"): (lambda e: (e + F32) + 3 * F32 + F32, 3),
    # the same F.cross_entropy outside torch.autocast, on 16-bit logits: log_softmax reads the
    # 16-bit row three times and writes it (fp32 only in registers), then the loss's gather
    ("cross_entropy", "eager_16bit"): (lambda e: 3 * e + e, 2),
    # Megatron's unfused vocab-parallel CE (megatron/mpu/cross_entropy.py, 2021-2023, on
    # ``logits.float()``): the upcast (e + 4), max (4), sub_ (8), exp out= (8), sum (4), div_
    # keeping the softmax (8); 6 passes, 10 more kernels over T values (the target mask,
    # masked target, gather of the target logits, log and the loss)
    ("cross_entropy", "unfused"): (lambda e: (e + F32) + F32 + 2 * F32 + 2 * F32 + F32 + 2 * F32,
                                   16),
    # Transformer Engine's parallel_cross_entropy (transformer_engine/common/triton/
    # cross_entropy.py, pytorch/triton/cross_entropy.py): online_softmax_kernel reads the
    # logits for the row max and sum, cross_entropy_kernel reads them again and writes the
    # gradient over them in place (3 passes); the backward's element_mul_kernel scales that
    # gradient in place (read, write)
    ("cross_entropy", "te"): (lambda e: 3 * e, 2),
    ("cross_entropy.bwd", "te"): (lambda e: 2 * e, 1),
    # flash-attn's Triton cross-entropy (Dao-AILab/flash-attention v2.4.2
    # flash_attn/ops/triton/cross_entropy.py, behind flash_attn/losses/cross_entropy.py):
    # cross_entropy_fwd_kernel reads each row of 16-bit logits once (one block up to 64K
    # columns) and stores only the loss and log-sum-exp per row; cross_entropy_bwd_kernel reads
    # the logits again and writes their 16-bit gradient (a new tensor unless inplace_backward)
    ("cross_entropy", "flash_attn"): (lambda e: e, 1),
    ("cross_entropy.bwd", "flash_attn"): (lambda e: 2 * e, 1),
    # ... and its backward: fused reads the saved softmax and writes the 16-bit gradient;
    # eager zero-fills the fp32 gradient of log-probs and scatters -1 (4), log_softmax backward
    # reads gradient (twice: the row sum, then the output) and output, writes (16), the upcast's
    # backward casts down (4 + e)
    ("cross_entropy.bwd", "fused"): (lambda e: F32 + e, 1),
    ("cross_entropy.bwd", "eager"): (lambda e: F32 + 4 * F32 + (F32 + e), 4),
    # unfused: the target's -1 (an index_put on T values), mul_ by the loss gradient (8), the
    # upcast's backward casting the gradient down (4 + e)
    ("cross_entropy.bwd", "unfused"): (lambda e: 2 * F32 + (F32 + e), 6),
    # rotary embedding per element of Q and K: a fused kernel (TE, apex, Megatron) reads and
    # writes; Hugging Face's rotate-half runs x * cos (read, write), the negated half and the
    # concatenation (read and write half, then all), x' * sin (read, write) and the sum (read
    # two, write), cos and sin being small tables: five kernels per call, called for Q and for
    # K (``apply_rotary_pos_emb``; ``trainsim profile``'s apply_rope likewise: the H100
    # database's 16 layer records count 4 mul, 2 neg, 2 cat and 2 add kernels for it)
    ("rope", "fused"): (lambda e: 2 * e, 1),
    ("rope", "eager"): (lambda e: 2 * e + e + 2 * e + 2 * e + 3 * e, 10),
    # Megatron-core's unfused RoPE (core_v0.15.0-v0.17.0 models/common/embeddings/rope_utils.py
    # _apply_rotary_pos_emb_bshd), called for Q and for K: the same rotate-half products plus
    # the closing torch.cat((t, t_pass)) (read, write); per call its cos and sin tables cost six
    # small kernels (cos, * mscale, .to; sin, * mscale, .to) beside the seven over t
    ("rope", "unfused"): (lambda e: 2 * e + e + 2 * e + 2 * e + 3 * e + 2 * e, 26),
    # AdamW per fp32 parameter. Fused (apex, torch fused=True): read p, g, m, v; write p, m, v.
    # torch's foreach AdamW: p *= 1 - lr wd (8), m.lerp_(g) (12), v *= b2 (8), v += (1-b2) g g
    # (12), sqrt(v) (8), / bias correction (8), + eps (8), p.addcdiv_(m, denom) (16)
    ("adamw", "fused"): (lambda e: 7 * F32, 1),
    ("adamw", "foreach"): (lambda e: 8 + 12 + 8 + 12 + 8 + 8 + 8 + 16, 8),
}


SCALAR_LOADS = frozenset({"scalar", "scalar_two_pass", "eager_chunked", "inductor_dynamic",
                          "eager_broadcast"})
"""Implementations whose kernels load one 16-bit element per thread per instruction (vLLM's
early kernels, PyTorch's non-vectorized path, Inductor's kernels over a symbolic width): they
keep too few bytes in flight to saturate HBM (``compute.roofline.SCALAR_HBM_EFFICIENCY``).
``eager_broadcast``: one PyTorch op whose operands include a broadcast one, all its bytes on
that path (the ``STRIDED_LOADS`` rule for a whole op; ``workload.softmax``'s masked fill)."""


STRIDED_LOADS: dict[tuple[str, str], Callable[[int], float]] = {
    # HF LlamaRMSNorm: ``hidden_states * torch.rsqrt(variance + eps)`` broadcasts the [T, 1]
    # statistics (8 bytes per element) and ``self.weight * hidden_states.to(dtype)`` the [h]
    # weight (2e)
    ("rmsnorm", "eager"): lambda e: 8 + 2 * e,
    ("rmsnorm", "eager_f32_weight"): lambda e: 8 + e + F32,
}
"""Bytes per element that an eager implementation moves through kernels with a broadcast or
strided operand. PyTorch's elementwise kernels take the vectorized path only when every
operand is contiguous; otherwise they index each element through an ``OffsetCalculator``,
one element per thread per load (aten/src/ATen/native/cuda/CUDALoops.cuh,
``gpu_kernel_impl_nocast``: ``if (contiguous) launch_vectorized_kernel ... else
launch_legacy_kernel``), the access pattern of ``SCALAR_LOADS``. Measured on H100
(kernels_h100_measured.csv): the chunked eager SwiGLU moves its bytes at 1.7-1.8 TB/s,
against 3.0-3.1 TB/s for a contiguous add or copy."""


def strided_share(op: Elementwise) -> float:
    """Share of ``op``'s bytes moved by non-vectorized kernels (``SCALAR_LOADS``: all;
    ``STRIDED_LOADS``: its broadcast kernels, per element of ``op.elem_bytes``, over all its
    bytes per element; otherwise none)."""
    if op.impl in SCALAR_LOADS:
        return 1.0
    per = STRIDED_LOADS.get((op.kernel, op.impl))
    if per is None or (op.kernel, op.impl) not in IMPLEMENTATIONS:
        return 0.0
    return per(op.elem_bytes) / IMPLEMENTATIONS[(op.kernel, op.impl)][0](op.elem_bytes)


BACKWARD: dict[tuple[str, str], tuple[Callable[[int], float], int]] = {
    # HF LlamaRMSNorm's autograd backward, per element: weight * y (dy: read, write 2e; dw:
    # product and row sums, 3e + e), y.to(dtype) (e + 4), x_f * rsqrt (dx: 8; d rsqrt: product
    # and row sums, 16), pow(2) (8), the two paths into x_f summed (12), x.to(fp32) (4 + e).
    # Kernels, as autograd's formulas issue them (tools/autograd/derivatives.yaml; counted by
    # dispatching HF's and torchtitan's RMSNorm, the same code, under TorchDispatchMode): the
    # weight product's mul, mul and sum; the cast back; x_f * rsqrt's mul, mul and row sum;
    # rsqrt's pow(r, 3), * -0.5 and mul; mean's division; pow(2)'s pow(x, 1), * 2 and mul; the
    # sum of the two paths; the cast to fp32: 16
    ("rmsnorm", "eager"): (lambda e: 2 * e + 4 * e + (e + F32) + 8 + 16 + 8 + 12 + (F32 + e), 16),
    # Megatron-core's unfused RoPE, per call (Q, K): the gradient times cos and times sin (read,
    # write each), the negation's backward (half read, half written), the halves re-joined
    # (read, write) and the two paths summed (read two, write); the tables need no gradient
    ("rope", "unfused"): (lambda e: 2 * e + 2 * e + e + 2 * e + 3 * e, 10),
    # a two-pass norm's backward is its library's one backward kernel (torch's
    # layer_norm_grad_input_kernel, apex's cuComputeGradInput), read and written as the fused
    # norm's backward is (3 bytes per 2 of the fused forward): the H100 database's
    # ``rmsnorm.bwd``/``fused`` records are torch's own (compute.database.PROFILED_IMPL)
    ("rmsnorm", "two_pass"): (lambda e: 3 * e, 1),
    ("layernorm", "two_pass"): (lambda e: 3 * e, 1),
    ("layernorm", "scalar_two_pass"): (lambda e: 3 * e, 1),
    # its JAX autodiff backward under XLA: the scale's and bias's column reductions over the
    # tokens (read the gradient and x: 2e), the row reduction of the gradient times x - mean
    # for the variance's gradient (2e), the row mean of the centred gradient (2e; it needs the
    # first), and the fusion writing dx (reads both, writes: 3e); x - mean is recomputed from
    # x in each (a cheap producer fused into its consumers)
    ("layernorm", "xla"): (lambda e: 9 * e, 4),
}
"""Backward of memory-bound ops whose kernels the generic rule (read the saved input and the
output gradient, write the input gradient: 1.5x the forward's bytes) misses."""
BACKWARD_IMPL = {"two_pass": "fused", "scalar_two_pass": "fused"}
"""Implementation label of a backward whose kernel count, not its passes, names it (as the
database's backward records are labelled)."""
BACKWARD_OF_FORWARD = 1.5


INDUCTOR_PERSISTENT_MAX = 1024
"""Longest row Inductor reduces in one persistent pass (``should_use_persistent_reduction``:
``ReductionHint.INNER`` threshold 1024, in torch/_inductor/codegen/triton.py from torch 2.0 and
torch/_inductor/choices.py since; without ``multi_kernel``). A compiled norm over longer rows is
a looped reduction: one loop over the row for its statistics, a second that loads the row again
to write the output, the ``two_pass`` kernel; over shorter rows, one fused pass."""


def backward_bytes(op: Elementwise) -> tuple[float, int]:
    """(bytes, kernels) of the backward of ``op``: ``BACKWARD`` where it has the op's family
    and implementation (scaled from the forward's bytes at 16-bit elements), else the op's own
    ``bwd_bytes``/``bwd_kernels`` where it states them, else 1.5x its bytes and its kernels."""
    entry = BACKWARD.get((op.kernel, op.impl))
    if entry is None or (op.kernel, op.impl) not in IMPLEMENTATIONS:
        nbytes = op.bytes * BACKWARD_OF_FORWARD if op.bwd_bytes is None else op.bwd_bytes
        return nbytes, op.kernels if op.bwd_kernels is None else op.bwd_kernels
    per_bwd, kernels = entry  # an op of several calls states its kernels (``norm_op``)
    return op.bytes * per_bwd(2) / IMPLEMENTATIONS[(op.kernel, op.impl)][0](2), \
        kernels if op.bwd_kernels is None else op.bwd_kernels


def bytes_relative_to_fused(family: str, impl: str) -> float:
    """Bytes ``impl`` moves for ``family`` (forward or ``.bwd``) per byte its fused kernel
    moves (1 where the table has no entry): how a record of an eager kernel whose size was
    written as the fused op's bytes is restated in its own implementation's bytes."""
    base = family if (family, impl) in IMPLEMENTATIONS else family.removesuffix(".bwd")
    if impl == "fused" or (base, impl) not in IMPLEMENTATIONS \
            or (base, "fused") not in IMPLEMENTATIONS:
        return 1.0
    return IMPLEMENTATIONS[(base, impl)][0](2) / IMPLEMENTATIONS[(base, "fused")][0](2)


def memory_op(name: str, family: str, impl: str, elements: float, elem_bytes: int = 2
              ) -> Elementwise:
    """``family`` run by ``impl`` over ``elements`` elements of ``elem_bytes`` each."""
    per, kernels = IMPLEMENTATIONS[(family, impl)]
    return Elementwise(name, bytes=elements * per(elem_bytes), kernels=kernels, kernel=family,
                       impl=impl, elem_bytes=elem_bytes)


_STEP_FRAME_BYTES = 4 + 8 + (4 + 2) + 4
"""Bytes per local parameter around any optimizer in Megatron's step: gradient-norm read of the
fp32 main gradient (4), clipping scale in place (8), copying master weights to the 16-bit model
weights (4 + 2) and zeroing the gradient buffer (4)."""

OPTIMIZER_BYTES_PER_PARAM = {
    # fused Adam: read the gradient, read/write the fp32 master weight and both moments
    "adam": _STEP_FRAME_BYTES + IMPLEMENTATIONS[("adamw", "fused")][0](F32),
    # apex FusedLAMB (csrc/multi_tensor_lamb.cu): per-tensor weight norms (read 4), stage 1
    # reads gradient, weight and both moments and writes the moments and the update over the
    # gradient (16 + 12), per-tensor update norms (read 4), stage 2 reads weight and update and
    # writes the weight (8 + 4)
    "lamb": _STEP_FRAME_BYTES + 4 + 28 + 4 + 12,
    # SGD with momentum: read gradient, read/write weight and momentum
    "sgd": _STEP_FRAME_BYTES + 4 + 2 * 8,
}
"""Megatron's optimizer step, bytes moved per local parameter, by optimizer: memory-bound
multi-tensor kernels (Adam 50, LAMB 70, SGD 42)."""


OPTIMIZER_KERNEL = {"adam": "adamw", "lamb": "lamb", "sgd": "sgd"}
"""The kernel family of each optimizer's multi-tensor step (what a database keys it by)."""


PLAIN_STEP_FRAME_BYTES = 4 + 8
"""A plain PyTorch loop's frame around the optimizer (fp32 parameters, no master copy):
``clip_grad_norm_`` reads each gradient (4) and scales it in place (8); ``zero_grad`` sets the
gradients to None (torch >= 2.0), which frees rather than writes them."""

CLIP_BYTES = 4 + 8
"""The gradient clipping inside either frame (norm read 4, scale in place 8), left out where
the loop does not clip (``training.no_grad_clip``)."""

OPTIMIZER_IMPLS = ("fused", "foreach", "for_loop")
"""How an Adam step runs (framework profile ``optimizer_impl``): one fused multi-tensor kernel;
torch's ``_multi_tensor_adam`` (``IMPLEMENTATIONS[("adamw", "foreach")]``: eight multi-tensor
kernels, 80 bytes per fp32 parameter); torch's ``_single_tensor_adam`` (the same eight passes,
each one kernel per parameter tensor: pytorch/pytorch torch/optim/adam.py)."""


def optimizer_step(local_params: float, optimizer: str, master_weights: bool = True,
                   impl: str = "fused", tensors: int = 1, clip: bool = True) -> Elementwise:
    """The optimizer step over ``local_params`` parameters in ``tensors`` parameter tensors:
    the optimizer's kernels and the frame around them (Megatron's
    ``OPTIMIZER_BYTES_PER_PARAM``; without master weights, a plain loop's
    ``PLAIN_STEP_FRAME_BYTES``; without clipping, ``CLIP_BYTES`` less), keyed as the
    optimizer's kernel so a database prices the step at its measured efficiency. Adam runs
    as ``impl`` says (``OPTIMIZER_IMPLS``); LAMB and SGD as their fused kernels."""
    if impl not in OPTIMIZER_IMPLS:
        raise ValueError(f"optimizer_impl {impl!r} is not one of {OPTIMIZER_IMPLS}")
    per = OPTIMIZER_BYTES_PER_PARAM[optimizer]
    if not master_weights:
        per += PLAIN_STEP_FRAME_BYTES - _STEP_FRAME_BYTES
    if not clip:
        per -= CLIP_BYTES
    if optimizer != "adam" or impl == "fused":
        return Elementwise("optimizer_step", bytes=local_params * per,
                           kernel=OPTIMIZER_KERNEL[optimizer])
    fused_bytes, _ = IMPLEMENTATIONS[("adamw", "fused")]
    step_bytes, kernels = IMPLEMENTATIONS[("adamw", "foreach")]
    per += step_bytes(F32) - fused_bytes(F32)
    return Elementwise("optimizer_step", bytes=local_params * per,
                       kernels=kernels * (tensors if impl == "for_loop" else 1),
                       kernel="adamw", impl="foreach")


def norm_impl(normalization: str, row: int, eager: bool, compiled: bool, kernel: str) -> str:
    """How a norm over rows of ``row`` elements runs. Eager modules: Hugging Face's
    ``LlamaRMSNorm`` (``eager``) or ``nn.LayerNorm``, torch's native kernel (``two_pass``:
    aten/src/ATen/native/cuda/layer_norm_kernel.cu reads each row twice); ``torch.compile``d:
    Inductor's persistent one-pass reduction up to ``INDUCTOR_PERSISTENT_MAX`` elements a row,
    its looped two-pass one beyond; the framework's own modules: ``kernel``
    (``training.norm``)."""
    if compiled:
        return "two_pass" if row > INDUCTOR_PERSISTENT_MAX else "fused"
    if eager:
        return "eager" if normalization == "rmsnorm" else "two_pass"
    return kernel


def full_wave_norm(impl: str, compiled: bool) -> bool:
    """Whether a norm run by ``impl`` (``norm_impl``) launches one full wave of the GPU
    (``Elementwise.full_wave``): the framework's own ``fused`` norm modules, Transformer
    Engine's and apex contrib's kernels, size their grid by the SM count; Inductor's compiled
    norm (``fused`` too) and torch's native kernels launch a block per row. Liger's Triton
    norm, which ``training.norm`` ``fused`` also names, launches a program per row and is
    counted with Transformer Engine's here (no training row runs it beside an exchange)."""
    return impl == "fused" and not compiled


def norm_op(name: str, normalization: str, elements: float, impl: str,
            elem_bytes: int = 2, full_wave: bool = False, calls: int = 1) -> Elementwise:
    """A norm over ``elements`` elements of ``elem_bytes`` run by ``impl`` (``norm_impl``);
    ``full_wave``: launched as one full wave of the GPU (``full_wave_norm``). ``calls``: the
    norm module is called that many times over parts of the elements (``QK_NORM_CALLS``),
    each call its implementation's kernels, forward and backward."""
    op = memory_op(name, normalization, impl, elements, elem_bytes)
    if calls > 1:
        op = replace(op, kernels=op.kernels * calls, bwd_kernels=backward_bytes(op)[1] * calls)
    return replace(op, full_wave=True) if full_wave else op


QK_NORM_CALLS = 2
"""Calls of a per-head query/key norm a layer makes: one module for the queries and one for the
keys, each its own norm kernel(s) forward and backward. Megatron-core: ``q_layernorm(query)``,
then ``k_layernorm(key)`` (NVIDIA/Megatron-LM core_v0.15.0 megatron/core/transformer/
attention.py ``SelfAttention.get_query_key_value_tensors`` L1107-1111; the same at d7288711,
Megatron-Bridge 26.04's pin), each a ``TENorm``; Hugging Face's Qwen3 / OLMo 2 attention:
``self.q_norm(...)`` and ``self.k_norm(...)``. A compiled layer may fuse them (left at one)."""


ROPE_EAGER_BWD_KERNELS = 14
"""Backward kernels of Hugging Face's ``apply_rotary_pos_emb`` for Q and K: per call the
gradient times cos and times sin, the negation's ``neg``, a ``slice_backward`` for each half
(``x[..., :d/2]``, ``x[..., d/2:]``) and two adds joining the three paths into x: 7 (counted by
dispatching transformers 5.23's function under TorchDispatchMode; ``trainsim profile``'s
``chunk`` form runs one ``cat`` for the two halves and one add: 5 per call, as the H100
database's layer records count)."""

ROPE_COMPLEX_KERNELS = (6, 8)
"""(forward, backward) kernels of torchtitan's ``apply_rotary_emb`` for Q and K
(pytorch/torchtitan@e846b6946 torchtitan/models/llama/model.py): per call ``x.float()``, the
complex product with ``freqs_cis`` and ``type_as`` (views between them: ``view_as_complex``,
``view_as_real``, ``flatten``); backward, per call, the two casts' gradients, the product with
the conjugate and the conjugate's materialising copy (counted under TorchDispatchMode). The
bytes match rotate-half's at 16-bit elements (2 + 4, 4 + 4 and 4 + 2 per element: 20)."""


ROPE_FUSED_CALLS = 2
"""Launches of a fused rotary embedding per pass: one kernel for the queries and one for the
keys, forward and backward. Megatron-core applies it to each tensor in turn (core_v0.15.0
megatron/core/transformer/attention.py ``Attention.forward`` L826-849: ``query =
apply_rotary_pos_emb(query, q_pos_emb, ...)``, then ``key = apply_rotary_pos_emb(key,
k_pos_emb, ...)``; models/common/embeddings/rope_utils.py L268-291 routes each call under
``apply_rope_fusion`` to Transformer Engine's ``fused_apply_rotary_pos_emb``, one
``FusedRoPEFunc``: one forward kernel, one backward); the same at d7288711. One launch for
both needs Megatron-core's ``fused_single_qkv_rope`` (off by default, and refused with q/k
norms: attention.py L703-726), which no profile here selects."""


def rope_op(name: str, elements: float, eager: bool, unfused: bool = False,
            complex_rope: bool = False, compiled: bool = False) -> Elementwise:
    """Rotary embedding of ``elements`` query and key elements: a fused kernel per tensor
    (``ROPE_FUSED_CALLS``), Hugging Face's ``apply_rotary_pos_emb`` (rotate-half in five
    PyTorch ops per call) or, where the profile says ``complex_rope``, torchtitan's
    ``apply_rotary_emb`` on complex views (three per call; ``ROPE_COMPLEX_KERNELS``), or
    Megatron-core's unfused function (``unfused``). ``compiled``: Inductor's kernel for both
    (left at one)."""
    impl = "eager" if eager else "unfused" if unfused else "fused"
    op = memory_op(name, "rope", impl, elements)
    if impl == "eager":
        fwd, bwd = ROPE_COMPLEX_KERNELS if complex_rope else (op.kernels, ROPE_EAGER_BWD_KERNELS)
        op = replace(op, kernels=fwd, bwd_kernels=bwd)
    elif impl == "fused" and not compiled:
        op = replace(op, kernels=ROPE_FUSED_CALLS, bwd_kernels=ROPE_FUSED_CALLS)
    return op


SWIGLU_EAGER_BWD_KERNELS = {"eager": 3, "eager_chunked": 4}
"""Backward kernels of ``silu(gate) * up``: the product's two (gradient times up, gradient
times silu(gate)) and ``silu_backward``; on ``chunk`` halves of one fused fc1 output also the
``cat`` that joins the halves' gradients (the H100 database's 16 layer records: one
silu_backward, three mul kernels with the forward's, and a cat for the chunk). Separate gate and
up GEMMs sum their input gradients in ``grad_sum`` (``workload.layers.backward_of``)."""


def activation_op(gated: bool, elements: float, eager: bool, fused_fc1: bool = False,
                  hidden_act: str | None = None, autocast: bool = False) -> Elementwise:
    """The MLP's activation over ``elements`` outputs: SwiGLU fused (one kernel) or eager
    (``act_fn(gate) * up``: two), on two separate GEMM outputs or, when one fused fc1 wrote
    gate and up as halves of one tensor (``fused_fc1``), on its strided ``chunk`` views
    (``eager_chunked``). The eager backward (``SWIGLU_EAGER_BWD_KERNELS``) has more kernels
    than the forward. GeLU is one kernel (``F.gelu``, Megatron's and Transformer Engine's
    fused GeLU, Inductor's), but where the model's own eager modules run a Hugging Face
    ``hidden_act`` written as a Python formula (``gelu_new``, ...; ``ModelConfig.hidden_act``)
    it is that formula's kernels (``workload.hf_activations``), under ``autocast`` with
    ``pow`` in fp32; so is a gated MLP's gate (``act_fn(gate) * up``, ``hf_activations.
    gated_chain``), where the name is not one kernel (Gemma's ``gelu_pytorch_tanh`` is: the
    eager SwiGLU's two)."""
    if gated:
        chain = hf_activation_op(hidden_act, elements, autocast, gated=True,
                                 chunked=fused_fc1) if eager and hidden_act else None
        if chain is not None:
            return chain
        impl = "fused" if not eager else "eager_chunked" if fused_fc1 else "eager"
        op = memory_op("swiglu", "swiglu", impl, elements)
        return replace(op, bwd_kernels=SWIGLU_EAGER_BWD_KERNELS[impl]) if eager else op
    chain = hf_activation_op(hidden_act, elements, autocast) if eager and hidden_act else None
    return chain or memory_op("gelu", "gelu", "fused", elements)


def clamp_op(name: str, rows: int, width: int) -> Elementwise:
    """The clamp of a gated MLP's ``[rows, 2 * width]`` input before its fused activation, as
    Megatron-core's ``weighted_bias_quick_geglu_impl`` runs it for gpt-oss (core_v0.15.0-v0.17.0
    megatron/core/fusions/fused_bias_geglu.py, ``clamp_value``): ``chunk``, the gate's and the
    linear half's ``clamp`` (each reads and writes ``width``) and ``torch.cat`` of the two (reads
    and writes ``2 * width``), eager, outside the fused function: 8 ``width`` elements moved in 3
    kernels. The backward: each clamp's gradient reads the gradient and its saved input and
    writes (3 each), and the chunk's gradient concatenates them (4): 10 in 3 kernels."""
    elements = rows * width * ACT_BYTES
    return Elementwise(name, bytes=8 * elements, kernels=3, bwd_bytes=10 * elements,
                       bwd_kernels=3, kernel="copy", impl="eager")


LAYER_SCALAR_SYNCS = ("moe_loss_scalar", "mlp_bias_scalar")
"""The two device scalars Megatron-DeepSpeed's ``ParallelTransformerLayer.forward`` makes
between its post-attention norm and its MLP on every call, a dense layer's included:
``moe_loss = torch.tensor(0.0, device=layernorm_output.device, ...)`` and ``mlp_bias =
torch.tensor(0.0, ...)`` (the latter then replaced by the MLP's bias). Added with MoE support,
microsoft/Megatron-DeepSpeed@50b32515 (2022-06-07, #48); megatron/model/transformer.py L537-538
on branch before_rebase @ 9446eaac, L1126-1127 @ 7f7cea32, L1163-1164 @ 99d1eead, L1319-1320 @
c08e2cc2 and cc3a94c6, L1426-1427 @ f4157bea (2024-12-24)."""


def scalar_tensor_sync_op(name: str) -> Elementwise:
    """A tensor made from a Python scalar on a CUDA device: ``torch.tensor(x, device=...)``
    copies from pageable memory with ``non_blocking=False``, a ``cudaMemcpyAsync`` followed by
    a stream synchronisation, so the host waits for the queued work before it issues the next
    op (pytorch/pytorch#120996: ``torch.tensor(3.14, device=dev)`` trips
    ``set_sync_debug_mode``; #190217, open, asks to avoid it; ngimel in #40161: a copy to the
    GPU "will synchronize, unless your cpu tensor is pinned"). One 16-bit scalar moved; the
    cost is the drained queue (``compute.host``)."""
    return Elementwise(name, bytes=float(ACT_BYTES), kernels=1, host_sync=True)


def glu_offset_sync_op(name: str) -> Elementwise:
    """The host-to-device copy of the GLU's linear offset that Megatron-core's
    ``weighted_bias_quick_geglu_impl`` makes on every call, right after the clamp and before
    the fused quick-GEGLU: ``torch.tensor(linear_offset, dtype=..., device=input.device)``
    (core_v0.15.0-core_v0.19.0 megatron/core/fusions/fused_bias_geglu.py; the Megatron-LM
    commits Megatron-Bridge v0.2.0-v0.6.0 pin hold the same line): a
    :func:`scalar_tensor_sync_op` right after the experts' fc1 and the clamp. Its backward
    reads the saved tensor."""
    return scalar_tensor_sync_op(name)


MLA_EAGER_ROPE_KERNELS = (9, 12)
"""(forward, backward) kernels of ``mla_eager_rope_op``: the complex RoPE of the query's and the
shared key's rotary parts (three each: ``ROPE_COMPLEX_KERNELS``), the query's and the key's
``torch.cat`` and V's copy to a contiguous tensor; backward, each RoPE's four, the
concatenations of the split gradients of Q and of the joint key/value (and of the
down-projection's two parts) and the sum of the expanded rotary key over the heads."""


def mla_eager_rope_op(tokens: int, heads: int, nope: int, rope: int, v: int) -> Elementwise:
    """Multi-head latent attention's rotary embedding and the copies around it as plain PyTorch
    runs them (NeMo Automodel nemo_automodel/components/models/deepseek_v3/layers.py @ 89e3a9fd
    ``MLA.forward``, with moe/rope_utils.py ``apply_rotary_emb``), per token and head:

    * ``apply_rotary_emb`` on the query's ``rope`` dims: ``x.float()``, the complex product and
      the cast back, 20 bytes per element (``ROPE_COMPLEX_KERNELS``); the key's rotary part is
      one head wide (left out);
    * ``torch.cat([q_nope, q_pe])`` and ``torch.cat([k_nope, k_pe.expand(...)])``: each reads
      and writes ``nope + rope`` elements (8 bytes per element of the two);
    * Transformer Engine's ``get_qkv_layout`` (TE 2.5 dot_product_attention/utils.py): V is a
      strided slice of ``kv_b_proj``'s output whose strides differ from K's, a layout it does
      not take, so it makes Q, K and V contiguous: V is copied (4 bytes per element).

    Backward: the query's RoPE gradient (20 bytes per element), the ``split`` gradients that
    concatenate the query's two parts (4 bytes per element of ``nope + rope``) and the key's
    and V's (4 of ``nope + v``), and the expanded rotary key summed over the heads (2 per
    element of ``rope``)."""
    per = heads * tokens
    fwd = per * (20 * rope + 8 * (nope + rope) + 4 * v)
    bwd = per * (20 * rope + 4 * (nope + rope) + 4 * (nope + v) + 2 * rope)
    return Elementwise("rope", bytes=float(fwd), kernels=MLA_EAGER_ROPE_KERNELS[0],
                       kernel="copy", bwd_bytes=float(bwd),
                       bwd_kernels=MLA_EAGER_ROPE_KERNELS[1], impl="eager")
