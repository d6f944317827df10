"""Praxis's own layers as XLA compiles them: a Paxml run without Transformer Engine's layers
(``training.xla_layers``: ENABLE_TE=0 in NVIDIA's JAX-Toolbox Pax containers). Its LayerNorm is
XLA's reduction fusions (``workload.elementwise``'s ``xla`` entries: :func:`xla_norms`); its
dot-product attention, below.

``ops.Attention`` with ``impl="unfused"`` prices Megatron's core: the QK^T and PV batched
matmuls around one fused 16-bit softmax (8 bytes a score forward, 14 backward), which is what
Transformer Engine's JAX ``DotProductAttention`` runs unfused (its ``Softmax`` a CUDA kernel of
its own). Praxis's ``DotProductAttention._dot_atten`` (google/praxis@fc68027, the last commit
before the 23.10 release, praxis/layers/attentions.py L1506-1543; unchanged at 08fed24, 2024-04)
runs instead, after the bf16 QK^T einsum: ``logits.astype(jnp.float32)`` ("Attention softmax is
always carried out in fp32", L1528), ``py_utils.apply_mask_to_logits`` (a ``jnp.where`` on the
mask: praxis/py_utils.py L722-744, written so that XLA keeps the predicate, not fp32 values),
``jax.nn.softmax`` in fp32, ``.astype(key.dtype)`` and the bf16 PV einsum. The run's scripts
turn XLA's Triton softmax fusion off (google/paxml@04516ac and @715f93c paxml/contrib/gpu/
scripts_gpu/run_pile_multinode.sh L29-33 ``--xla_gpu_enable_triton_softmax_fusion=false``), so
the softmax is XLA's own reduction fusions. JAX 0.4.20 and 0.4.26 (the 23.10 / 24.04 containers'
generation) differentiate ``jax.nn.softmax`` as ``exp(x - stop_gradient(max)) / sum``: the
saved residuals (``jax.ad_checkpoint.print_saved_residuals`` of that code, RESULTS jax61) are
the fp32 ``exp`` output, its row sums and the bf16 probabilities.

Per score, inferred from that program and XLA's fusion rules (cheap converts and selects fuse
into each consumer; an ``exp`` read by several fusions is written once; the compiled HLO was
not read): forward, the QK^T output written (2, the core's), a max reduction reading it (2),
the exp-and-sum fusion reading it and writing the fp32 exp (2 + 4), the normalizing fusion
reading the exp and writing bf16 probabilities (4 + 2), PV reading them (2, the core's): 18
bytes in three softmax kernels where the core's fused softmax moves 4 in one: 10 bytes and two
kernels more. Backward: dP written and P read for dV (2 + 2, the core's), a row reduction of
``dP * exp`` (2 + 4), the fusion writing the scores' gradient from dP and the exp (2 + 4 + 2),
dQ and dK reading it (4, the core's): 22 bytes in two kernels where the core's softmax backward
moves 6 in one: 8 bytes and one kernel more. The layer keeps the fp32 exp beside the bf16
probabilities (``memory.scores``): 4 bytes a score more, as an fp32 PyTorch softmax keeps.
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.workload.ops import Attention, Elementwise

XLA_SOFTMAX_EXTRA = ((10.0, 2), (8.0, 1))
"""(bytes per score, kernels) beyond the unfused core's, forward then backward (module
docstring)."""
XLA_SOFTMAX_SAVED_BYTES = 4.0
"""The fp32 ``exp`` output a score keeps for the softmax's backward (module docstring)."""
XLA_CORE_OPS = frozenset({"xla_softmax_fp32"})
"""Names of the ops built here: inside the core attention, re-run with it
(``workload.recompute``)."""


def xla_layers(cfg: RunConfig) -> bool:
    """The run states Praxis's own layers (``training.xla_layers``) under a framework whose
    profile has them (``xla_layers``; the config reader refuses it elsewhere)."""
    return cfg.training.xla_layers and profile_supports(cfg, "xla_layers")


def xla_norms(cfg: RunConfig) -> bool:
    """Whether the model's norms are Praxis's ``LayerNorm`` as XLA fuses it (``workload.
    elementwise``, implementation ``xla``): a LayerNorm model run with :func:`xla_layers`."""
    return xla_layers(cfg) and cfg.model.normalization == "layernorm"


def xla_softmax_in_fp32(cfg: RunConfig) -> bool:
    """Whether the run's materialized attention is Praxis's, its softmax XLA's fp32 fusions."""
    return cfg.training.attention == "unfused" and xla_layers(cfg)


def xla_softmax_ops(cfg: RunConfig, core: Attention) -> list[Elementwise]:
    """The softmax passes Praxis's attention runs under XLA beyond ``core``'s fused 16-bit
    softmax (module docstring); empty for any other attention."""
    if core.impl != "unfused" or not xla_layers(cfg):
        return []
    scores = core.batch * core.heads * core.pairs
    (fwd, fwd_k), (bwd, bwd_k) = XLA_SOFTMAX_EXTRA
    return [Elementwise("xla_softmax_fp32", bytes=fwd * scores, kernels=fwd_k,
                        bwd_bytes=bwd * scores, bwd_kernels=bwd_k)]
