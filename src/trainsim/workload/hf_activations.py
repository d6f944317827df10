"""Hugging Face transformers' GELU-family and ``relu2`` activation modules as their eager kernels,
alone (a two-matrix MLP) or as a gated MLP's gate (``act_fn(gate) * up``: :func:`gated_chain`).

A model that runs its own eager modules (``training.modules == "eager"``, not compiled) runs the
activation its config names through transformers' ``ACT2FN`` (transformers 5.24.0
src/transformers/activations.py L324-349; GPT-2's ``GPT2MLP.act = ACT2FN[config.
activation_function]``, default ``gelu_new``, configuration_gpt2.py L83). Some of those modules
are one fused PyTorch function (``gelu``: ``nn.functional.gelu``, L70-89; ``gelu_pytorch_tanh``:
``gelu(approximate="tanh")``, L30-51); the others are Python formulas, one kernel per PyTorch op
forward and one per op of autograd's backward formulas (tools/autograd/derivatives.yaml):

* ``gelu_new`` (``NewGELUActivation``, L59-66), ``gelu_python_tanh`` and ``gelu_accurate``
  (L47-48, L151-164): ``0.5 * x * (1 + tanh(c * (x + 0.044715 * pow(x, 3))))``, eight ops. The
  backward: the product's two ``mul``, ``tanh_backward``, the two scalar products' ``mul``,
  ``pow``'s ``grad * 3 * x**2`` (``pow``, ``mul``, ``mul``), ``0.5 * x``'s ``mul`` and the two
  ``add`` that sum x's three gradient paths: eleven.
* ``gelu_fast`` (L106-113): ``0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x)))``,
  nine ops forward, thirteen backward.
* ``quick_gelu`` (L116-123): ``x * sigmoid(1.702 * x)``: three forward; backward the product's
  two ``mul``, ``sigmoid_backward``, the scalar's ``mul`` and the sum of the two paths: five.
* ``gelu_python`` (L81-86): ``x * 0.5 * (1 + erf(x / sqrt(2)))``: five forward; erf's backward
  ``2 / sqrt(pi) * exp(-x**2) * grad`` (``pow``, ``neg``, ``exp``, two ``mul``) among ten.
* ``gelu_10`` (``ClippedGELUActivation``, L126-148): ``clip(gelu(x), -10, 10)``: two forward;
  ``clamp_backward`` (``ge``, ``le``, ``logical_and_``, a zero scalar, ``where``) and
  ``gelu_backward``: six.

Under ``torch.autocast`` on CUDA ``pow`` is on the fp32 list (pytorch/pytorch@008ec6b1
aten/src/ATen/autocast_mode.cpp ``AT_FORALL_FP32(_KERNEL_CUDA_FP32)``, autocast_mode.h
``_(pow, Tensor_Scalar)``): a 16-bit ``x`` is cast to fp32 first (one more kernel), the chain
after ``pow`` runs in fp32 by type promotion, and the fp32 output is cast back to 16 bits by the
next GEMM's autocast (one more), whose gradient is cast up again in the backward, where the
engine also casts each fp32 gradient reaching a 16-bit input down: ten kernels forward and
fifteen backward for the ``pow`` formulas. The other formulas have no op on the list.

What autograd keeps for the backward: each op saves what its derivative formula
reads (derivatives.yaml): ``pow`` its input, ``tanh`` and ``sigmoid`` their output, ``erf`` and
``clamp`` their input, a tensor-by-tensor ``mul`` both operands, a product by a Python scalar
and every ``add`` nothing. ``gelu_new`` under autocast keeps the fp32 ``pow`` input, the fp32
tanh output, the fp32 ``1 + tanh`` and the 16-bit ``0.5 * x``: 12 + e bytes an element where
the fused GELU keeps its e-byte input (4e without autocast: x, tanh, ``0.5 * x``, ``1 +
tanh``); ``gelu_fast`` 7e, ``gelu_python`` 3e (not x: erf keeps ``x / sqrt(2)``),
``quick_gelu`` and ``gelu_10`` 2e. Checked with ``torch.autograd.graph.saved_tensors_hooks``
on transformers' own modules (tests/test_torcheager60_saved.py); ``memory.layer_activations``
keeps them in place of the GELU's input where this chain is priced.

Bytes per element of the activation's input: every tensor an op reads plus what it writes, at
``e`` bytes for a 16-bit tensor and 4 for fp32. Every count is checked against the kernels and
bytes of transformers' own modules dispatched on the meta device (tests/test_gelu60_
hf_activations.py). Under ``torch.compile`` Inductor fuses the chain into one kernel, and Megatron
and Transformer Engine run their own fused GELU: the one-kernel op of ``workload.elementwise``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trainsim.workload.ops import ACT_BYTES, Elementwise

F32 = 4


@dataclass(frozen=True)
class EagerChain:
    """An activation module's eager kernels, forward and backward, and the bytes they move per
    element of the activation's input (a function of its element size ``e``)."""

    kernels: int
    bytes_per_element: Callable[[int], float]
    bwd_kernels: int
    bwd_bytes_per_element: Callable[[int], float]
    saved_per_element: Callable[[int], float] = lambda e: e
    """Bytes autograd keeps for the backward per element of the input, each tensor once."""
    out_bytes: int | None = None
    """Bytes an element of the module's output holds where the next op reads it: None for the
    input's width, 4 where the chain ends in fp32 under autocast (the ``pow`` formulas,
    ``relu2``), cast down only by the next GEMM's autocast, so a gated MLP's product reads and
    writes fp32 (:func:`gated_chain`)."""


def _pow_formula(autocast: bool) -> EagerChain:
    """``0.5 * x * (1 + tanh(c * (x + 0.044715 * pow(x, 3))))`` (module docstring)."""
    if not autocast:
        # forward: 0.5 * x (2e), pow (2e), * 0.044715 (2e), x + (3e), * c (2e), tanh (2e),
        # 1 + (2e), the product (3e); backward: the product's two mul (3e each),
        # tanh_backward (3e), * c and * 0.044715 (2e each), pow(x, 2), * 3 (2e each), * grad
        # (3e), the first path sum (3e), 0.5 * grad (2e), the second sum (3e)
        return EagerChain(8, lambda e: 18 * e, 11, lambda e: 28 * e, lambda e: 4 * e)
    # forward: 0.5 * x (2e); the cast up (e + 4); pow, * 0.044715 (8 each); x + (e + 8); * c,
    # tanh, 1 + (8 each); the 16-bit by fp32 product (e + 8); the next GEMM's cast down (4 + e).
    # backward: that cast's gradient up (e + 4); the product's gradient to 0.5 * x (12) and its
    # cast down (4 + e); to the tanh side (e + 8); tanh_backward (12); * c (8); the gradient to
    # x's direct path cast down (4 + e); * 0.044715 (8); pow's pow, * 3 (8 each), * grad (12);
    # the cast's gradient down (4 + e); the two path sums and 0.5 * grad in 16 bits (3e, 2e, 3e)
    return EagerChain(10, lambda e: 2 * e + (e + F32) + 16 + (e + 8) + 24 + (e + 8) + (F32 + e),
                      15, lambda e: (e + F32) + 12 + (F32 + e) + (e + 8) + 12 + 8 + (F32 + e)
                      + 8 + 8 + 8 + 12 + (F32 + e) + 3 * e + 2 * e + 3 * e,
                      lambda e: 3 * F32 + e, F32)


def _relu2(autocast: bool) -> EagerChain:
    """``ReLUSquaredActivation``: ``torch.square(nn.functional.relu(x))`` (transformers 5.24.0
    activations.py L206-214, ``ACT2CLS["relu2"]`` L340; Nemotron's two-matrix MLP,
    models/nemotron/modeling_nemotron.py L180-183 ``down_proj(act_fn(up_proj(x)))``, Persimmon's
    and Arcee's alike). ``square`` is a composite of ``pow(x, 2)`` (pytorch aten/src/ATen/
    native/UnaryOps.cpp ``Tensor square(const Tensor& self) { return at::pow(self, 2); }``;
    dispatched on the meta device it shows as ``pow``), whose call goes through the dispatcher
    again and meets autocast's fp32 kernel for ``pow``, so under autocast the relu
    output is cast up and squared in fp32. Forward: relu (2e), pow (2e); backward ``pow``'s
    ``grad * 2 * x.pow(1)`` (pow, mul, mul: 2e, 2e, 3e) and relu's ``threshold_backward``
    (3e, on the saved output, which ``pow`` saves too: e kept). Under autocast: relu (2e),
    the cast up (e + 4), pow (8), the next GEMM's cast down (4 + e); backward that cast's
    gradient up (e + 4), pow, mul (8 each), mul (12), the cast down (4 + e),
    threshold_backward (3e); kept: the relu output and its fp32 cast (e + 4)."""
    if not autocast:
        return EagerChain(2, lambda e: 4 * e, 4, lambda e: 10 * e, lambda e: e)
    return EagerChain(4, lambda e: 2 * e + (e + F32) + 8 + (F32 + e), 6,
                      lambda e: (e + F32) + 8 + 8 + 12 + (F32 + e) + 3 * e,
                      lambda e: e + F32, F32)


ONE_KERNEL = frozenset({"gelu", "gelu_pytorch_tanh"})
"""GELU-family names whose module is one PyTorch function (one kernel each way)."""

CHAINS: dict[str, Callable[[bool], EagerChain]] = {
    "gelu_new": _pow_formula,
    "gelu_python_tanh": _pow_formula,
    "gelu_accurate": _pow_formula,
    # four scalar products, x * x, 1 + (2e each but the two-tensor ones, 3e), tanh, 1 +, the
    # product: 9 ops, 21e; backward seven two-tensor mul or tanh_backward (3e), three scalar
    # mul (2e) and three path sums (3e): 13 ops, 36e
    "gelu_fast": lambda autocast: EagerChain(9, lambda e: 21 * e, 13, lambda e: 36 * e,
                                             lambda e: 7 * e),
    # 1.702 * x (2e), sigmoid (2e), the product (3e); backward two mul, sigmoid_backward (3e
    # each), * 1.702 (2e), the path sum (3e)
    "quick_gelu": lambda autocast: EagerChain(3, lambda e: 7 * e, 5, lambda e: 14 * e,
                                              lambda e: 2 * e),
    # * 0.5, / sqrt(2), erf, 1 + (2e each), the product (3e); backward the product's two mul
    # (3e each), pow, neg, exp, * 2/sqrt(pi) (2e each), * grad (3e), / sqrt(2), * 0.5 (2e
    # each), the path sum (3e)
    "gelu_python": lambda autocast: EagerChain(5, lambda e: 11 * e, 10, lambda e: 24 * e,
                                               lambda e: 3 * e),
    # gelu (2e), clamp (2e); backward ge, le (e + 1 each), logical_and_ (3), a zero scalar
    # (none per element), where (1 + 2e), gelu_backward (3e)
    "gelu_10": lambda autocast: EagerChain(2, lambda e: 4 * e, 6, lambda e: 7 * e + 6,
                                           lambda e: 2 * e),
    "relu2": _relu2,
}
"""Multi-kernel activation modules (the GELU family's and ``relu2``), by ``ACT2FN`` name,
given whether the run is under ``torch.autocast`` with 16-bit activations."""

HF_GELU_NAMES = ONE_KERNEL | frozenset(CHAINS) - {"relu2"}
"""Every GELU-family name of transformers' ``ACT2FN``."""
HF_ACT_NAMES = HF_GELU_NAMES | {"relu2"}
"""Every name ``ModelConfig.hidden_act`` takes: the GELU family and ``relu2``."""


def gated_chain(act: EagerChain | None, chunked: bool = False) -> EagerChain:
    """A gated MLP's ``act_fn(gate) * up`` (transformers 5.24.0 models/gemma/modeling_gemma.py
    L84-97 ``GemmaMLP``, models/llama/modeling_llama.py L163-164 ``LlamaMLP.forward``:
    ``down_proj(act_fn(gate_proj(x)) * up_proj(x))``, ``act_fn = ACT2FN[config.hidden_act]``)
    with the activation ``act`` (None: one kernel, the
    fused GELU or SiLU), per element of the gate: the activation's kernels and the product
    (reads the activation's output, o bytes, and the e-byte up, writes o); backward the
    product's two ``mul`` (the gate side's o + e + o, the up side's 3 o) and, where the product
    ran in fp32 (o = 4, autocast), the cast of up's gradient down (4 + e). ``chunked``: gate
    and up are halves of one fused projection's output (Phi-3's ``gate_up_proj(x).chunk(2,
    -1)``, models/phi3/modeling_phi3.py L61-62), whose gradients the backward joins with a ``cat`` (reads e + e, writes 2e). Kept:
    the activation's own, its output and up (the product, the down projection's input, is
    the caller's). Counted against transformers' modules dispatched on the meta device
    (tests/test_torcheager61.py)."""
    act = act or EagerChain(1, lambda e: 2 * e, 1, lambda e: 3 * e)

    def out(e: int) -> int:
        return e if act.out_bytes is None else act.out_bytes
    cast = act.out_bytes is not None  # fp32 (autocast, 16-bit e): up's gradient cast down
    return EagerChain(
        act.kernels + 1, lambda e: act.bytes_per_element(e) + out(e) + e + out(e),
        act.bwd_kernels + 2 + int(cast) + int(chunked),
        lambda e: act.bwd_bytes_per_element(e) + (2 * out(e) + e) + 3 * out(e)
        + ((out(e) + e) if cast else 0) + (4 * e if chunked else 0),
        lambda e: act.saved_per_element(e) + out(e) + e, act.out_bytes)


def eager_chain(name: str, autocast: bool) -> EagerChain | None:
    """The eager kernels of ``name``'s module (None where it is one kernel)."""
    chain = CHAINS.get(name)
    return None if chain is None else chain(autocast)


def gated_saved_beyond_fused(name: str | None, autocast: bool, elem_bytes: int = ACT_BYTES
                             ) -> float:
    """Bytes a gated MLP's eager ``act_fn(gate) * up`` keeps per gate element beyond what it
    keeps with a one-kernel activation (its gate, the activation's output and up: 3e, which
    ``memory.hf``'s per-token sums hold): 0 where ``name`` is None or one kernel."""
    chain = eager_chain(name, autocast and elem_bytes < F32) if name else None
    if chain is None:
        return 0.0
    return gated_chain(chain).saved_per_element(elem_bytes) - 3.0 * elem_bytes


def saved_bytes_per_element(name: str | None, autocast: bool, elem_bytes: int = ACT_BYTES
                            ) -> float:
    """Bytes the activation keeps for its backward per element of its input: the
    fused GELU's (and any one-kernel module's) 16-bit input where ``name`` is None or one
    kernel, else the eager chain's saved tensors, ``autocast`` as in ``hf_activation_op``."""
    chain = eager_chain(name, autocast and elem_bytes < F32) if name else None
    return float(elem_bytes) if chain is None else chain.saved_per_element(elem_bytes)


def hf_activation_op(name: str, elements: float, autocast: bool,
                     elem_bytes: int = ACT_BYTES, gated: bool = False,
                     chunked: bool = False) -> Elementwise | None:
    """The eager module ``name`` over ``elements`` fc1 outputs of ``elem_bytes`` each, forward
    and backward, as one ``Elementwise`` (kernel family ``gelu``, implementation ``eager``;
    ``gated``: with the product by up, :func:`gated_chain`, family ``swiglu``); None where the
    module is one kernel (the caller's fused GELU or eager SwiGLU)."""
    chain = eager_chain(name, autocast and elem_bytes < F32)
    if chain is None:
        return None
    family = "gelu"
    if gated:
        chain, family = gated_chain(chain, chunked), "swiglu"
    return Elementwise(family, bytes=elements * chain.bytes_per_element(elem_bytes),
                       kernels=chain.kernels,
                       bwd_bytes=elements * chain.bwd_bytes_per_element(elem_bytes),
                       bwd_kernels=chain.bwd_kernels, kernel=family, impl="eager",
                       elem_bytes=elem_bytes)
