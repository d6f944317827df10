"""What one recorded aten op is: its kind, FLOPs and bytes (no torch import here).

FLOPs are counted for matrix multiplications and attention only, exactly, as multiply-adds
times two (the convention of Megatron-LM, PaLM Appendix B and ``torch.utils.flop_counter``):

* ``mm``/``addmm`` ``[m, k] @ [k, n]``: ``2 m n k`` (the bias add of ``addmm`` is not counted);
  ``bmm``/``baddbmm`` ``[B, m, k] @ [B, k, n]``: ``2 B m n k``; ``_grouped_mm`` likewise over
  its groups.
* Fused attention (``_scaled_dot_product_flash_attention`` and its cuDNN, memory-efficient and
  CPU siblings, ``_flash_attention_forward``): forward ``2 P (d_qk + d_v)`` per head for ``P``
  query-key pairs (``QK^T`` and ``PV``); backward ``2 P (3 d_qk + 2 d_v)``: the five matmuls
  of FlashAttention-2's backward, which recomputes ``QK^T`` (Dao 2023, §3.1), i.e. 2.5 x the
  forward when ``d_qk = d_v``. With ``is_causal`` (PyTorch's top-left alignment: query ``i``
  sees keys ``0..i``) only the unmasked pairs count, as FlashAttention skips masked blocks.

Bytes are what a kernel reads and writes: every tensor argument and result, at most its
storage's size (a broadcast view is read once). Pure views and aliases move nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["gemm", "attention", "memory", "unknown"]

GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "_grouped_mm", "_scaled_mm"}
ATTENTION_FWD = {"_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                 "_scaled_dot_product_cudnn_attention",
                 "_scaled_dot_product_flash_attention_for_cpu",
                 "_flash_attention_forward", "_efficient_attention_forward"}
ATTENTION_BWD = {f"{n}_backward" for n in ATTENTION_FWD} | {"_flash_attention_backward",
                                                           "_efficient_attention_backward"}
FREE_OPS = {"detach", "alias", "lift_fresh", "empty", "empty_like", "empty_strided",
            "new_empty", "new_empty_strided", "_unsafe_view", "view", "_reshape_alias",
            "set_", "resize_", "_local_scalar_dense", "sym_size", "sym_stride", "sym_numel",
            "is_same_size", "_has_compatible_shallow_copy_type", "_to_dense"}
"""Metadata-only ops: no kernel runs (allocations are not kernels either)."""

MEMORY_BOUND = {
    # norms, activations, softmax and their backwards
    "native_layer_norm", "native_layer_norm_backward", "_fused_rms_norm",
    "_fused_rms_norm_backward", "rms_norm", "_softmax", "_softmax_backward_data",
    "_safe_softmax", "_log_softmax", "_log_softmax_backward_data", "silu_backward",
    "gelu_backward", "tanh_backward", "sigmoid_backward", "threshold_backward",
    "native_dropout", "native_dropout_backward",
    # losses
    "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward",
    # data movement
    "_to_copy", "copy_", "clone", "cat", "stack", "constant_pad_nd", "index_select",
    "index", "index_put", "index_put_", "index_add", "index_add_", "scatter", "scatter_add",
    "scatter_add_", "gather", "embedding", "embedding_dense_backward", "slice_backward",
    "select_backward", "narrow_copy", "repeat", "repeat_interleave", "tril", "triu",
    "masked_fill", "masked_fill_", "where", "topk", "sort", "one_hot", "contiguous",
    "new_zeros", "new_ones", "new_full", "zeros", "ones", "full", "zeros_like", "ones_like",
    "full_like", "fill_", "zero_", "arange", "scalar_tensor", "_unsafe_index",
    "_unsafe_index_put", "unfold_backward", "expand_copy", "permute_copy",
    # reductions
    "sum", "mean", "amax", "amin", "max", "min", "var_mean", "var", "std", "norm",
    "linalg_vector_norm", "logsumexp", "cumsum", "argmax", "any", "all",
    # random fills (dropout masks)
    "bernoulli", "uniform", "normal", "rand", "randn", "rand_like", "randn_like", "exponential",
}
"""Non-pointwise ops that are memory-bound in practice; pointwise ops are known by their tag."""


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    """Bytes the kernel touches for this tensor (elements viewed, at most the storage)."""


@dataclass
class KernelRecord:
    """One aten op as it ran on the meta device."""

    index: int
    op: str
    """Overload name, e.g. ``aten.mm.default``."""
    phase: Literal["forward", "backward"]
    module: str
    """Dotted path of the innermost module running it ("" at top level)."""
    kind: Kind
    flops: float
    bytes: float
    inputs: tuple[TensorMeta, ...]
    outputs: tuple[TensorMeta, ...]
    args: dict = field(default_factory=dict)
    """Non-tensor arguments that size the work (is_causal, dropout_p, ...)."""
    input_storage: int | None = None
    """Identity of the first input's storage (to see which GEMMs share an input)."""

    @property
    def short_op(self) -> str:
        return self.op.split(".")[1] if self.op.startswith("aten.") else self.op

    def to_dict(self) -> dict:
        return {"index": self.index, "op": self.op, "phase": self.phase, "module": self.module,
                "kind": self.kind, "flops": self.flops, "bytes": self.bytes,
                "inputs": [[list(t.shape), t.dtype] for t in self.inputs],
                "outputs": [[list(t.shape), t.dtype] for t in self.outputs],
                **({"args": self.args} if self.args else {})}


def causal_pairs(q_len: int, kv_len: int) -> float:
    """Query-key pairs under a top-left-aligned causal mask: sum over i < q of min(i + 1, kv)."""
    full = min(q_len, kv_len)
    pairs = full * (full + 1) / 2.0
    if q_len > kv_len:
        pairs += (q_len - kv_len) * float(kv_len)
    return pairs


def gemm_flops(name: str, inputs: tuple[TensorMeta, ...]) -> float:
    """2 m n k (times the batch) of a GEMM-like aten op."""
    shapes = [t.shape for t in inputs]
    if name in ("mm", "_scaled_mm"):
        (m, k), (_, n) = shapes[0], shapes[1]
        return 2.0 * m * n * k
    if name == "addmm":
        (m, k), (_, n) = shapes[1], shapes[2]
        return 2.0 * m * n * k
    if name == "bmm":
        (b, m, k), (_, _, n) = shapes[0], shapes[1]
        return 2.0 * b * m * n * k
    if name == "baddbmm":
        (b, m, k), (_, _, n) = shapes[1], shapes[2]
        return 2.0 * b * m * n * k
    if name == "_grouped_mm":  # [M, k] x [G, k, n] (offsets split M) or [G, m, k] x [G, k, n]
        a, b = shapes[0], shapes[1]
        if len(a) == 2 and len(b) == 3:
            return 2.0 * a[0] * a[1] * b[2]
        if len(a) == 3 and len(b) == 3:
            return 2.0 * a[0] * a[1] * a[2] * b[2]
        if len(a) == 2 and len(b) == 2:  # weight-gradient form: [k, M] x [M, n] per group
            return 2.0 * a[0] * a[1] * b[1]
    return 0.0


def attention_flops(name: str, q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...],
                    causal: bool) -> float:
    """Exact matmul FLOPs of a fused attention kernel on [b, h, s, d] query/key/value."""
    b, h, q_len, d_qk = q
    kv_len, d_v = k[-2], v[-1]
    pairs = causal_pairs(q_len, kv_len) if causal else float(q_len) * kv_len
    per_pair = (3 * d_qk + 2 * d_v) if name in ATTENTION_BWD else (d_qk + d_v)
    return 2.0 * b * h * pairs * per_pair


def classify(name: str, pointwise: bool) -> Kind:
    if name in GEMM_OPS:
        return "gemm"
    if name in ATTENTION_FWD or name in ATTENTION_BWD:
        return "attention"
    if pointwise or name in MEMORY_BOUND or name.rstrip("_") in MEMORY_BOUND:
        return "memory"
    return "unknown"
