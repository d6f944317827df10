"""Operations of a per-rank workload: what runs, with its shapes, before any pricing.

Ops are small frozen records: a compute kernel (GEMM, attention, memory-bound elementwise) or
a communication (collective over a named process group, or pipeline point-to-point).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union, get_args

DTYPE_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}

AttentionImpl = Literal["unfused", "flash1", "flash2", "flash3", "flash4", "cudnn", "sdpa",
                        "triton", "flex"]
"""Attention kernels, each priced as its own kernel: ``unfused`` is Megatron's QK^T / softmax /
AV with the s*s score matrix in memory; ``flash1``-``flash4`` are Dao-AILab's FlashAttention
generations (FA3 is Hopper's, FA4 Blackwell's); ``cudnn`` is cuDNN's fused attention as
Transformer Engine calls it; ``sdpa`` is PyTorch's scaled_dot_product_attention (its flash
backend for 16-bit inputs without a mask); ``triton`` is the Triton FlashAttention-2 port
llm-foundry uses by default; ``flex`` is torch's FlexAttention (torchtitan)."""
ATTENTION_IMPLS: tuple[str, ...] = get_args(AttentionImpl)
FUSED_ATTENTION = frozenset(ATTENTION_IMPLS) - {"unfused"}

Group = Literal["tp", "cp", "dp", "dp_cp", "pp", "embd", "ep", "etp", "edp"]
"""Process groups, Megatron naming: dp_cp is data-parallel including context-parallel ranks;
embd joins the first and last pipeline stages (tied embedding gradients); ep / etp are the
expert-parallel and expert-tensor-parallel groups, edp the expert data-parallel group."""

Collective = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast",
                     "send_recv"]


@dataclass(frozen=True)
class Gemm:
    """C[m, n] = A[m, k] @ B[k, n], ``batch`` times."""

    name: str
    m: int
    n: int
    k: int
    dtype: str = "bf16"
    batch: int = 1

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k

    @property
    def bytes(self) -> float:
        e = DTYPE_BYTES[self.dtype]
        out = 2  # outputs are written in 16 bits (fp8 GEMMs too, as Transformer Engine does)
        return self.batch * ((self.m * self.k + self.k * self.n) * e + self.m * self.n * out)


@dataclass(frozen=True)
class Attention:
    """Scaled-dot-product attention core of one micro-batch on one rank.

    ``q_len`` local queries attend to ``kv_len`` keys; ``causal`` skips the masked half
    (FlashAttention computes only needed blocks); ``window`` limits the span.
    """

    name: str
    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    causal: bool = True
    window: int | None = None
    backward: bool = False
    impl: AttentionImpl = "flash2"
    dropout: bool = False

    @property
    def pairs(self) -> float:
        """Query-key pairs computed per head."""
        w = self.kv_len if self.window is None else min(self.window, self.kv_len)
        if self.impl == "unfused" or not self.causal:
            # unfused kernels compute every score in a query's span and mask the future after
            return float(self.q_len) * w
        # Causal: query i sees min(i + 1, window) keys. Local queries are a balanced share
        # of the sequence (load-balanced CP sharding), so take that share of the total.
        total = self.kv_len * w - w * (w - 1) / 2.0
        return total * self.q_len / self.kv_len

    @property
    def flops(self) -> float:
        fwd = 4.0 * self.batch * self.heads * self.pairs * self.head_dim
        # FlashAttention backward: 5 matmuls to forward's 2 (Dao 2023, FlashAttention-2 §3.1).
        return fwd * (2.5 if self.backward else 1.0)

    @property
    def bytes(self) -> float:
        qo = 2 * self.batch * self.q_len * self.heads * self.head_dim * 2
        kv = 2 * self.batch * self.kv_len * self.kv_heads * self.head_dim * 2
        if self.impl != "unfused":
            return (qo + kv) * (2 if self.backward else 1)
        # Unfused (Megatron's baddbmm + fused scale-mask-softmax + dropout + bmm), bytes per
        # score element: forward writes scores (2), softmax reads/writes (4), dropout reads,
        # writes and stores its mask (5), AV reads (2); backward: d(probs) written (2) and the
        # dropout output read for dV (2), dropout backward (5), softmax backward (6), dQK read (2).
        # Without attention dropout its 5 bytes drop out of each direction.
        per = (17.0 if self.backward else 13.0) - (0.0 if self.dropout else 5.0)
        return qo + kv + self.batch * self.heads * self.pairs * per


@dataclass(frozen=True)
class Elementwise:
    """A memory-bound kernel (norm, activation, dropout, residual, casts, optimizer)."""

    name: str
    bytes: float
    flops: float = 0.0
    kernels: int = 1
    """Kernel launches the op stands for (an eager multi-kernel norm, a copy per rank): each
    pays its launch cost (``compute.roofline.LAUNCH_S``) and the host's (``compute.host``)."""
    host_sync: bool = False
    """The host waits for this op's result before issuing the next (a device-to-host copy of
    values Python needs, e.g. dropless MoE's tokens per expert): see ``compute.host``."""


@dataclass(frozen=True)
class Comm:
    """A collective over a process group, or a pipeline send/recv (``send_recv`` on ``pp``)."""

    name: str
    kind: Collective
    bytes: float
    group: Group
    overlap_with_previous: bool = False
    """Runs concurrently with the preceding compute op (ring attention KV exchange, the async
    backward TP collectives under dgrad/wgrad): only the part longer than that op is exposed,
    plus the SMs it takes from it (``Pricer.hidden_behind``)."""
    grad_bytes: float | None = None
    """Bytes of its conjugate in the backward pass; None = ``bytes``. (Transformer Engine's fp8
    gathers move 1-byte tensors while the gradients they pair with reduce in 16 bits.)"""


Op = Union[Gemm, Attention, Elementwise, Comm]
