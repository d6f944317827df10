"""Context parallelism as PyTorch's experimental ``context_parallel`` runs it (torchtitan's CP),
and, at the end of the file, as Transformer Engine's ring attention runs it (Megatron-core's).

torch.distributed.tensor.experimental._attention (pytorch/pytorch, read at 0123248a; the
torch 2.6-era copy, ROCm/pytorch 10b22ea5's pre-merge side, has the same lines) turns one
causal SDPA into a loop over the ring, ``_templated_ring_attention``:

- sequence sharding is round-robin load-balanced (``enable_load_balance = True``): each rank
  holds chunks r and 2cp-1-r of the 2cp chunks;
- step 0 runs SDPA on the local Q, K, V with ``is_causal=True`` (the diagonal); steps 1..cp-1
  run it with ``is_causal=False`` on half the pairs: ``key.chunk(2)[0]`` against all local
  queries where ``i <= rank``, ``query.chunk(2)[1]`` against all local keys otherwise;
- K and V are concatenated and exchanged by a rotater: ``_AllGatherRotater`` (the default
  ``rotate_method = ALL_GATHER``, torchtitan ``--experimental.context_parallel_rotate_method``
  default "allgather" @ 9dec370a) all-gathers once, issued before step 0's SDPA and waited
  before step 1's; ``_AllToAllRotater`` permutes to the next rank before each step's SDPA;
- ``_SDPAMerger`` merges each step's output by its log-sum-exp in fp32
  (``convert_to_f32 = True``): ``out - sigmoid(block_lse - lse) * (out - block_out)``;
- the backward (``_templated_ring_attention_backward``) runs the same loop: K and V again
  through the rotater, one SDPA backward per step, dQ, dK, dV accumulated in fp32, and the
  dK/dV accumulator passed on to the next rank every step through an all-to-all rotater
  (``dkv_rotater = _create_rotater(..., method=_RotateMethod.ALL_TO_ALL)``, fp32): the
  exchange issued at step i is waited on after step i+1's SDPA backward, the last one after
  the loop.

torchtitan compiles each TransformerBlock with ``torch.compile(transformer_block,
fullgraph=True)`` (parallelisms/parallelize_llama.py apply_compile @ 9dec370a), so a compiled
CP run has the whole ring, functional collectives included, in the block's graph and Inductor
fuses each step's merge; uncompiled, the merges run op by op.

Compiled, the ring's collectives are waited where they are issued: a functional collective
traced by Dynamo/AOTAutograd returns ``wait_tensor(out)`` at once ("wait_tensor() op is
immediately called, no AsyncTensor subclass needed", torch/distributed/_functional_collectives.py
``_maybe_wrap_tensor``: ``if _are_we_tracing(): return wait_tensor(self)``), and only Inductor's
``reorder_for_compute_comm_overlap`` pass (off by default, torch/_inductor/config.py; torchtitan
9dec370a sets only ``_micro_pipeline_tp``) would sink the wait past the step's SDPA. So the
all-gather and each dK/dV permute run exposed, between the ring's kernels (as profiled in
pytorch/pytorch#179858: all_to_all_single interleaved with matmuls in a fullgraph compile runs
synchronously); eager, the ``AsyncCollectiveTensor`` is waited at first use and hides under
the next SDPA.

The rank that sets the pace is the last one (``i <= rank`` at every step: all local queries
against half the keys); every layer's exchange makes the others wait for it.

Where the model repeats GQA's K and V heads before SDPA (torchtitan's ``repeat_kv``, profile
``sdpa_repeat_kv``), every ring step's kernel sees as many K/V heads as query heads: a
FlashAttention-2 backward then has no KV-head groups to sum (the per-call ``dk_expanded`` sum of
``compute.attention.gqa_group_sum_bytes``); the repeat's own backward (``expand``'s: a sum over
the repeated heads) sums the layer's dK and dV once, after the ring. The repeat's forward copy
and, eager, the ring's ``key.contiguous()`` / ``value.contiguous()`` of the transposed
(``xk.transpose(1, 2)``) inputs are priced here too (``repeat_kv_ops``).
"""

from __future__ import annotations

from dataclasses import replace

from trainsim.workload.ops import ACT_BYTES, GQA_EXPANDED_BWD, Attention, Comm, Elementwise, Op

F32 = 4
FWD_MERGE_PASSES = (38, 10)
"""Bytes moved per output element by one step's ``_SDPAMerger.step`` + ``_merge_one``, eager
and compiled. Eager: ``out.to(float32)`` (read 2, write 4), ``out - block_out`` (read 8,
write 4), the sigmoid-weighted product (read 4, write 4), the subtraction (read 8, write 4):
38. Compiled, Inductor fuses them: read the fp32 accumulator and the 16-bit block, write the
accumulator: 10."""
FWD_MERGE_KERNELS = (5, 1)
BWD_ACC_PASSES = (52, 28)
"""Bytes per output element of one backward step's fp32 accumulation. Eager: ``grad_query +=``
the step's 16-bit dQ (read 6, write 4), ``_partial_update`` of dK and dV (the add on one chunk
and ``torch.cat``: 13 each), ``torch.cat`` of dK and dV into the buffer sent on (read 8,
write 8): 52. Compiled: read and write the dQ accumulator and the received dK/dV buffer once,
read the step's 16-bit gradients: 28."""
BWD_ACC_KERNELS = (8, 2)


def kv_width(diag: Attention, repeat_kv: bool) -> int:
    """K and V elements per token that SDPA receives: every query head's where the model
    repeats the KV heads before it (torchtitan's ``repeat_kv``)."""
    return 2 * (diag.heads if repeat_kv else diag.kv_heads) * diag.head_dim


def repeated(diag: Attention, repeat_kv: bool) -> Attention:
    """The SDPA call as the kernel sees it: K and V with every query head's where the model
    repeats them before SDPA."""
    return replace(diag, kv_heads=diag.heads) if repeat_kv else diag


REPEAT_KV = "attn_core.ring_repeat_kv"
"""The forward op of the model's ``repeat_kv`` (and the ring's ``contiguous`` copies) ahead of
the ring: named as a ring op, so ``workload.layers.backward_of`` leaves it to
``ring_backward``."""


def repeat_kv_ops(diag: Attention, tokens: int, compiled: bool) -> list[Op]:
    """Forward copies of K and V to every query head (``diag`` keeps the layer's KV heads).

    torchtitan models/llama/model.py @ 9dec370a Attention.forward: ``xq, xk =
    apply_rotary_emb(...)``, ``keys = repeat_kv(xk, n_rep)`` (``x[:, :, :, None, :].expand(...)
    .reshape(...)``: a copy), the same for ``xv``, then ``xk = keys.transpose(1, 2)`` into SDPA;
    ``_templated_ring_attention`` (and its backward) then runs ``key = key.contiguous()`` and
    ``value = value.contiguous()`` on those transposed views: one more copy of each (eager, in
    the forward and again in the backward). Compiled (the block in one graph), Inductor writes
    the repeated keys from the RoPE kernel and the values from one copy, already in the layout
    the ring wants: every head's K and V written once and V's KV heads read, less K's KV heads
    that the RoPE op (``workload.elementwise.rope_op``) already writes."""
    if diag.kv_heads >= diag.heads:
        return []
    row = tokens * diag.head_dim * ACT_BYTES  # bytes of one head's K (or V) over the tokens
    if compiled:
        return [Elementwise(REPEAT_KV, bytes=row * 2 * diag.heads, kernels=1)]
    # repeat_kv: read the KV heads, write every head (K and V); contiguous: read, write every head
    return [Elementwise(REPEAT_KV, bytes=2 * row * (diag.kv_heads + diag.heads)
                        + 2 * row * 2 * diag.heads, kernels=4)]


def sdpa_repeat_kv_op(diag: Attention, tokens: int, compiled: bool) -> list[Op]:
    """The model's ``repeat_kv`` forward copies before one attention call without context
    parallelism (torchtitan models/llama/model.py @ 9dec370a Attention.forward runs it at every
    CP size, cp 1 included; transformers' LlamaSdpaAttention and ``eager_attention_forward``):
    eager, K and V each read at the KV heads and written at every query head (two kernels, no
    ring ``contiguous`` copies); compiled, as ``repeat_kv_ops``. Its backward (``expand``'s sum
    over each KV head's query heads: the expanded 16-bit dK and dV read, the grouped ones
    written) is the bytes ``compute.attention.gqa_group_sum_bytes`` prices for a kernel of
    ``GQA_EXPANDED_BWD`` (left to that op there); after any other kernel (eager attention's
    matmuls see every head) it is priced here, one sum per tensor (one kernel compiled)."""
    if diag.kv_heads >= diag.heads:
        return []
    row = tokens * diag.head_dim * ACT_BYTES
    nbytes = row * 2 * diag.heads if compiled else 2 * row * (diag.kv_heads + diag.heads)
    own_sum = diag.impl not in GQA_EXPANDED_BWD
    return [Elementwise("attn_core.repeat_kv", bytes=nbytes, kernels=1 if compiled else 2,
                        bwd_bytes=2.0 * row * (diag.heads + diag.kv_heads) if own_sum else 0.0,
                        bwd_kernels=(1 if compiled else 2) if own_sum else 0)]


def ring_forward(diag: Attention, comm: str, cp: int, tokens: int, repeat_kv: bool,
                 compiled: bool) -> list[Op]:
    """Forward ops of one rank's ring attention: ``diag`` is step 0's causal SDPA on the local
    chunks, ``comm`` the rotate method (``all_gather``; ``p2p`` for the all-to-all rotater),
    ``tokens`` the rank's tokens, ``compiled`` whether torch.compile fuses the merges."""
    kv_bytes = tokens * kv_width(diag, repeat_kv) * ACT_BYTES
    out = diag.batch * diag.heads * diag.q_len * diag.head_dim
    k = 1 if compiled else 0
    step = replace(repeated(diag, repeat_kv), kv_len=diag.q_len // 2, causal=False)
    # step 0 keeps the layer's op (``ring_backward`` reads its KV heads); a forward kernel's
    # cost does not depend on whether query heads share K/V blocks
    ops: list[Op] = [*(repeat_kv_ops(diag, tokens, compiled) if repeat_kv else []), diag]
    # all-gather: once, under step 0; all-to-all: step i+1's KV moves under step i's SDPA
    hide = not compiled  # traced collectives are waited where they are issued
    ops.append(Comm("attn_core.ring_kv_all_gather", "all_gather", cp * kv_bytes, "cp",
                    overlap_with_previous=hide) if comm == "all_gather" else
               Comm("attn_core.ring1.kv_send", "send_recv", kv_bytes, "cp",
                    overlap_with_previous=hide))
    for i in range(1, cp):
        ops.append(replace(step, name=f"attn_core.ring{i}"))
        if comm != "all_gather" and i < cp - 1:
            ops.append(Comm(f"attn_core.ring{i + 1}.kv_send", "send_recv", kv_bytes, "cp",
                            overlap_with_previous=hide))
        ops.append(Elementwise(f"attn_core.ring{i}.merge", bytes=out * FWD_MERGE_PASSES[k],
                               kernels=FWD_MERGE_KERNELS[k]))
    # step 0's cast to fp32 and the final cast back to 16 bits
    ops.append(Elementwise("attn_core.ring_merge_casts", bytes=out * 2 * (ACT_BYTES + F32),
                           kernels=2))
    return ops


def ring_backward(diag: Attention, comm: str, cp: int, tokens: int, repeat_kv: bool,
                  compiled: bool) -> list[Op]:
    """Backward ops of one rank's ring attention (see the module docstring). With the
    all-to-all rotater, the KV for the next step and the dK/dV accumulator from the last one
    move together under each step's SDPA backward."""
    width = kv_width(diag, repeat_kv)
    kv_bytes, dkv_bytes = tokens * width * ACT_BYTES, tokens * width * F32
    out = diag.batch * diag.heads * diag.q_len * diag.head_dim
    k = 1 if compiled else 0
    acc = out * BWD_ACC_PASSES[k]
    kernel = repeated(diag, repeat_kv)  # no per-call KV-group sum where the model repeats
    step = replace(kernel, kv_len=diag.q_len // 2, causal=False, backward=True)
    ops: list[Op] = [replace(kernel, name="attn_core.bwd", backward=True)]
    hide = not compiled  # traced collectives are waited where they are issued
    ops.append(Comm("attn_core.ring_kv_all_gather.bwd", "all_gather", cp * kv_bytes, "cp",
                    overlap_with_previous=hide) if comm == "all_gather" else
               Comm("attn_core.ring1.kv_send.bwd", "send_recv", kv_bytes, "cp",
                    overlap_with_previous=hide))
    ops.append(Elementwise("attn_core.ring0.grad_acc", bytes=acc, kernels=BWD_ACC_KERNELS[k]))
    for i in range(1, cp):
        ops.append(replace(step, name=f"attn_core.ring{i}.bwd"))
        # the dK/dV accumulator sent at step i-1 arrives under this step's SDPA backward
        nbytes = dkv_bytes + (kv_bytes if comm != "all_gather" and i < cp - 1 else 0)
        ops.append(Comm(f"attn_core.ring{i}.dkv_send", "send_recv", nbytes, "cp",
                        overlap_with_previous=hide))
        ops.append(Elementwise(f"attn_core.ring{i}.grad_acc", bytes=acc,
                               kernels=BWD_ACC_KERNELS[k]))
    # the last step's dK/dV, waited on after the loop, and the casts back to 16 bits
    ops.append(Comm("attn_core.ring_dkv_send_last", "send_recv", dkv_bytes, "cp"))
    # repeat_kv's backward sums dK and dV over each KV head's query heads, once: compiled,
    # inside the casts' kernel (it writes the KV heads only); eager, a sum of its own per
    # tensor after the casts (and the backward's key/value ``contiguous`` copies before them)
    groups = repeat_kv and diag.kv_heads < diag.heads
    kv_out = tokens * (2 * diag.kv_heads * diag.head_dim if groups and compiled else width)
    if groups and not compiled:
        ops.append(Elementwise("attn_core.ring_kv_contiguous.bwd",
                               bytes=tokens * width * 2 * ACT_BYTES, kernels=2))
    ops.append(Elementwise("attn_core.ring_grad_casts",
                           bytes=out * (F32 + ACT_BYTES) + tokens * width * F32
                           + kv_out * ACT_BYTES, kernels=3))
    if groups and not compiled:
        ops.append(Elementwise("attn_core.ring_repeat_kv.bwd", kernels=2,
                               bytes=tokens * (width + 2 * diag.kv_heads * diag.head_dim)
                               * ACT_BYTES))
    return ops


def is_ring_op(op: Op) -> bool:
    """A forward op of the ring other than step 0's SDPA (``ring_backward`` replaces them)."""
    return op.name.startswith("attn_core.ring")


# --- Transformer Engine's ring attention (Megatron-core, NeMo, Megatron-Bridge, MLPerf NeMo) ---
#
# NVIDIA/TransformerEngine AttnFuncWithCPAndKVP2P: v2.2.1 transformer_engine/pytorch/attention.py
# L551 (corrections L228-260, backward loop L1739-1768, dq.add_ L2269), v2.8
# transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py L1056
# (corrections L102-170, forward loop L1341-1372, output correction loop L1613-1660, backward
# L1722-2312); the cp_comm_type "p2p" that Megatron-core's TEDotProductAttention runs
# (framework profile feature ``cp_te_ring``). (v1.9 attention.py AttnFuncWithCP L1183 runs the
# same loop, backward hops L1807-1820, but zero-fills the output and adds every step into it,
# 4 bytes an output element more; not told apart.) Sequences are load-balanced like torch's
# (each rank holds chunks r and 2cp-1-r). Forward, one rank runs a loop of cp attention calls:
# step 0 causal on the local chunks, steps 1..cp-1 not causal on half the pairs (all local
# queries against the first half of the received keys where i <= rank, the second half of the
# queries against all of them otherwise). Iteration i waits for step i's K/V, sends them on for
# step i+1, then issues step i's call, all on that call's stream: the hop for step i+1 runs
# under step i's call; step i-1's log-sum-exp merge (flash_attn_fwd_softmax_lse_correction)
# follows on the other stream. After the loop every step's partial output is rescaled into
# the output (flash_attn_fwd_out_correction_init for step 0, flash_attn_fwd_out_correction /
# _second_half_ for the others: ``jit_fuser`` functions, one fused kernel each). Without a
# causal mask (``no_mask``) every step runs all local queries against all received keys.
#
# The backward ring runs the other way (send_dst = rank - 1, v2.8 L1838) from the saved K/V
# (p2p_comm_buffers[-1], L1722), the steps in the forward's reverse order (the causal diagonal
# last). Iteration i sends before step i's attention backward and waits after it (v2.8
# L2098-2106, L2312): step 0 sends K/V only, steps 1..cp-2 K/V with the dK/dV accumulated so far
# (one [2, kv] buffer), step cp-1 only dK/dV; the buffer the last hop brings back is the rank's
# own dK/dV, so no hop follows the loop: 2cp-2 K/V-sized transfers in all, each under a call.
# dQ is copied (the pacing rank's step 0) then added (``dq.add_``); dK and dV of the half of
# the keys a half step saw (the whole of them at the diagonal step) are copied at step 0, added
# after, into the buffer just received. Without fp8 attention every buffer is in the
# activations' 16-bit dtype.
#
# Two calls in series: TE alternates consecutive steps on two CUDA streams "to resolve wave
# quantization" (v2.8 L1340-1341), so a call's tail may run beside the next call's head; the
# engine runs compute in series (``pricing._price_ops``), so the ring's compute here is an upper
# bound (by about a wave of each call). Not priced: TE <= v2.2.1 merges the log-sum-exp in
# fp64 (v2.2.1 attention.py L1374 ``.to(torch.double)``: 20 bytes a row, not 12; a few
# microseconds a layer, and a run's config does not say which TE it has); the
# ``.contiguous()`` copies of the half K/V (fused attention) and of the second half of the
# queries (ranks other than the pacing one).

TE_OUT_CORRECTION_BYTES = (4, 6)
"""Bytes per output element of TE's fused output corrections: step 0's init reads the 16-bit
partial output and writes the output (2 + 2); each later step reads the output and its own
partial output and writes the output back (2 + 2 + 2). The log-sum-exp terms are per row."""
TE_GRAD_ACC_BYTES = (4, 6)
"""Bytes per gradient element of the backward's accumulations: ``copy_`` at step 0 (read 2,
write 2), ``add_`` after (read 2 + 2, write 2)."""
TE_LSE_BYTES = 12
"""Bytes per query row and head of one log-sum-exp merge in fp32 (read two, write one)."""
TE_COPY_BYTES = 2 * ACT_BYTES
"""Bytes per K/V element of the copy into the ring's first send buffer: forward
``p2p_comm_buffers[0] = torch.cat((k.view(-1), v.view(-1)))`` before the loop (v2.8 L1349;
v1.9 and v2.2.1 cat the unsqueezed tensors), backward ``p2p_comm_buffers[0][0].copy_(kv)``
(v2.8 L2007, v2.2.1 attention.py L1684): read and write 16 bits."""


def _te_step(diag: Attention, backward: bool = False) -> Attention:
    """A later step's call on the pacing rank: all local queries against half the received
    keys (causal), or all of them (no mask)."""
    kv_len = diag.q_len // 2 if diag.causal else diag.kv_len
    return replace(diag, kv_len=kv_len, causal=False, backward=backward)


def te_ring_forward(diag: Attention, cp: int, tokens: int) -> list[Op]:
    """Forward ops of the rank that sets the pace (the last: ``i <= rank`` at every step) in
    Transformer Engine's ring attention; ``diag`` is step 0's call on the local tokens (causal
    or not). Each hop follows the call it runs under (``overlap_with_previous``)."""
    width = kv_width(diag, False)
    kv_bytes = tokens * width * ACT_BYTES
    out = diag.batch * diag.heads * diag.q_len * diag.head_dim
    rows = diag.batch * diag.heads * diag.q_len
    step = _te_step(diag)
    p2p = 0 if cp == 2 else 2

    def lse(i: int) -> Elementwise:
        return Elementwise(f"attn_core.te_ring{i}.lse_correction", bytes=rows * TE_LSE_BYTES)

    ops: list[Op] = [Elementwise("attn_core.te_ring_kv_cat", bytes=tokens * width * TE_COPY_BYTES)]
    for i in range(cp):
        ops.append(diag if i == 0 else replace(step, name=f"attn_core.te_ring{i}"))
        if i < cp - 1:  # step i+1's K and V, sent before step i's call on its stream
            ops.append(Comm(f"attn_core.te_ring{i + 1}.kv_send", "send_recv", kv_bytes, "cp",
                            overlap_with_previous=True, p2p_ranks=p2p))
        if i >= 2:  # step i-1's merge, on the other stream after step i's call is issued
            ops.append(lse(i - 1))
    ops.append(lse(cp - 1))
    first, later = TE_OUT_CORRECTION_BYTES
    ops.append(Elementwise("attn_core.te_ring_out_correction",
                           bytes=out * (first + later * (cp - 1)) + rows * F32 * 2 * cp,
                           kernels=cp))
    return ops


def te_ring_backward(diag: Attention, cp: int, tokens: int) -> list[Op]:
    """Backward ops of the same rank: the forward's steps in reverse (the diagonal last), each
    call followed by the hop sent before it and waited after it (K/V; K/V with dK/dV; dK/dV),
    then the step's dQ, dK, dV accumulation into the buffers just received."""
    width = kv_width(diag, False)
    kv_bytes = tokens * width * ACT_BYTES
    q_elems = diag.batch * diag.heads * diag.q_len * diag.head_dim
    kv_elems = tokens * width
    first, later = TE_GRAD_ACC_BYTES
    step = _te_step(diag, backward=True)
    p2p = 0 if cp == 2 else 2
    ops: list[Op] = [Elementwise("attn_core.te_ring_kv_copy.bwd", bytes=kv_elems * TE_COPY_BYTES)]
    for i in range(cp):
        last = i == cp - 1
        ops.append(replace(diag, name="attn_core.bwd", backward=True) if last
                   else replace(step, name=f"attn_core.te_ring{i}.bwd"))
        sent, what = ((kv_bytes, "kv_send") if i == 0 else (kv_bytes, "dkv_send") if last
                      else (2 * kv_bytes, "kv_dkv_send"))
        ops.append(Comm(f"attn_core.te_ring{i}.{what}.bwd", "send_recv", sent, "cp",
                        overlap_with_previous=True, p2p_ranks=p2p))
        # dQ in full; dK and dV on the keys this step saw (half of them at a causal half step)
        keys = kv_elems if last or not diag.causal else kv_elems // 2
        ops.append(Elementwise(f"attn_core.te_ring{i}.grad_acc",
                               bytes=(q_elems + keys) * (first if i == 0 else later), kernels=3))
    return ops


def is_te_ring_op(op: Op) -> bool:
    """A forward op of TE's ring other than step 0's call (``te_ring_backward`` replaces them)."""
    return op.name.startswith("attn_core.te_ring")
