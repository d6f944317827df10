"""Buffers of PyTorch's experimental ring attention at a layer's backward (profile feature
``cp_sdpa_ring``: torchtitan's context parallelism).

torch/distributed/tensor/experimental/_attention.py (torch 2.6, as torchtitan 9dec370a ran it),
``_templated_ring_attention_backward``, per ring step of one layer's attention backward:

* the rotater made for K and V: the all-gather one (``_AllGatherRotater``, torchtitan's default
  ``context_parallel_rotate_method = "allgather"``) gathers every rank's concatenated K and V
  once and keeps the whole ``cp x`` buffer until the function returns; the all-to-all one
  (``_AllToAllRotater``, ``p2p``) holds the K and V received from the previous rank;
* ``torch.cat([key.flatten(), value.flatten()])``: a 16-bit copy of the local K and V made at
  every step to be sent on;
* the gradient accumulators in fp32 (``_cp_options.convert_to_f32``, True): ``grad_query``
  stays one; ``grad_key`` and ``grad_value`` become views of the fp32 buffer received from the
  dK/dV all-to-all rotater, while the concatenation sent on (``next_grad_kv``) is another fp32
  copy of both;
* the SDPA backward's own 16-bit dQ, dK and dV of the step.

K and V are the tensors SDPA sees: every query head's when the model repeats GQA's K/V heads
before SDPA (profile ``sdpa_repeat_kv``, torchtitan's ``repeat_kv``), the KV heads otherwise.
"""

from __future__ import annotations

from trainsim.config import RunConfig

__all__ = ["ring_backward_bytes"]


def _widths(cfg: RunConfig, kv_repeat: bool) -> tuple[float, float]:
    """Bytes per local token of Q and of K (= of V) on one rank, in 16 bits."""
    m, t = cfg.model, cfg.parallel.tp
    q = 2.0 * m.q_size / t
    k = q if kv_repeat else 2.0 * max(m.kv_size / t, m.kv_channels)
    return q, k


def ring_backward_bytes(cfg: RunConfig, kv_repeat: bool, recomputed_inputs: float) -> float:
    """Bytes alive on one rank at a layer's ring-attention backward beyond the micro-batches
    in flight (0 when CP is not torch's ring: cp 1 or Ulysses all-to-all).

    ``recomputed_inputs``: bytes per local token of the attention block's saved inputs before
    SDPA (norm input, QKV GEMM input) that a fully recomputed layer holds again at that moment;
    with ``recompute == "full"`` SDPA's own saved q, k, v and output and the incoming output
    gradient are alive too (the MLP's recomputed tensors are consumed by then:
    torch.utils.checkpoint's non-reentrant unpack hook drops each one as it is used)."""
    p, tr = cfg.parallel, cfg.training
    if p.cp <= 1 or p.cp_comm_type == "a2a":
        return 0.0
    q, k = _widths(cfg, kv_repeat)
    kv = 2 * k  # K and V
    received = p.cp * kv if p.cp_comm_type == "all_gather" else kv
    per_token = (received  # gathered (or received) K and V
                 + kv  # the 16-bit K/V concatenation sent on
                 + 2 * q  # fp32 dQ accumulator
                 + 2 * 2 * kv  # fp32 dK/dV received and the fp32 copy sent on
                 + q + kv)  # the step's 16-bit dQ, dK, dV
    if p.recompute == "full":
        per_token += q + kv + q + q + recomputed_inputs  # q, k, v, out, d(out); block inputs
    return tr.micro_batch_size * tr.seq_length / p.cp * per_token
