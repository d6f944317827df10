"""The ends of the model around the decoder layers: the (vocab-parallel) embedding, and the
head: final norm, logits GEMM (kept 16-bit under fp8) and cross-entropy as the framework runs
it (``training.cross_entropy``: fused, Megatron's unfused vocab-parallel pass, or eager on fp32
logits), with the tensor-parallel collectives each needs."""

from __future__ import annotations

from dataclasses import replace

from trainsim.catalog.framework_rules import deferred_microbatches
from trainsim.catalog.frameworks import framework_feature
from trainsim.config import RunConfig
from trainsim.workload.elementwise import (
    BACKWARD_IMPL,
    backward_bytes,
    full_wave_norm,
    memory_op,
    norm_impl,
    norm_op,
)
from trainsim.workload.layers import backward_of
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Comm, Elementwise, Gemm, Op
from trainsim.workload.shard import (
    AUTOCAST_CAST_BYTES,
    Shard,
    linear,
    tp_enter,
    wgrad_accumulates,
)
from trainsim.workload.token_ids import text_segments
from trainsim.workload.vocab import padded_vocab, rank_vocab


def cross_entropy_impl(cfg: RunConfig) -> str:
    """How the loss runs: PyTorch's ``F.cross_entropy`` on upcast logits for eager modules run
    as written (``eager``), also where the blocks are compiled but the framework leaves the loss
    out of the compile (profile ``compiled_loss`` false: OLMo-core before 00d34f693 cast the
    logits to fp32 in the model, ``self.w_out(h).float()``, and ran F.cross_entropy eagerly;
    the memory model already counts that loss's fp32 temporaries), else
    ``training.cross_entropy`` (fused, unfused or te). Time and memory both read it."""
    t = cfg.training
    if t.modules == "eager" and (not t.compile or bool(t.framework) and framework_feature(
            t.framework, t.framework_version, "compiled_loss") is False):
        return "eager"
    return t.cross_entropy


def shifted_logits_ops(cfg: RunConfig, elements: float, backward: bool) -> list[Op]:
    """The training loop's shift of the logits before the loss (profile feature
    ``shifted_logits_copy``): OLMo-core's ``Trainer._model_forward`` (allenai/OLMo-core
    src/olmo_core/train/trainer.py, the same at 8c03ca8a2 2024-09-26 and e27ba7455 2024-11-05)
    passes ``logits[..., :-1, :].contiguous()`` to its loss function. Forward: one copy (read,
    write) of the logits, except where the micro-batch is one sequence (the slice of a
    [1, s, v] tensor is already contiguous: ``contiguous()`` returns it). Backward, always:
    ``SliceBackward0`` fills a zero tensor of the logits' shape and copies the gradient into
    it (write; read, write), two kernels. The logits are fp32 there while the model casts them
    (``self.w_out(h).float()`` until 00d34f693, 2024-11-01, "move logits FP32 casting into loss
    function", the commit that adds the compiled loss: profile ``compiled_loss`` false), else
    16-bit. ``elements``: the rank's logits (tokens x vocabulary)."""
    t = cfg.training
    if not t.framework or not framework_feature(t.framework, t.framework_version,
                                                 "shifted_logits_copy"):
        return []
    width = 4 if framework_feature(t.framework, t.framework_version,
                                   "compiled_loss") is False else ACT
    if backward:
        return [Elementwise("logits_shift.bwd", bytes=3 * elements * width, kernels=2,
                            kernel="copy")]
    if t.micro_batch_size <= 1:
        return []
    return [Elementwise("logits_shift", bytes=2 * elements * width, kernel="copy")]


def onehot_lookup(cfg: RunConfig) -> bool:
    """Whether the model looks the tokens (and learned positions) up as a one-hot matrix times
    the table, a GEMM forward and a weight-gradient GEMM backward, not a gather and a
    scatter-add: the run says so (``training.onehot_embedding``: MaxText's ``use_iota_embed``,
    AI-Hypercomputer/maxtext@8e55ab1a MaxText/layers/embeddings.py L79-82, ``jnp.dot`` of the
    ``inputs == iota`` one-hot and the table), or its framework's models do by default
    (profile ``onehot_embedding``: Praxis's ``lookup_style 'matmul'``, which Paxml's
    TransformerLmSpmdAdam sets, google/paxml@e4fad960 paxml/tasks/lm/params/c4.py L344
    ``EMBEDDING_LOOKUP_STYLE = 'matmul'``, inherited by the GPU GPT configs)."""
    t = cfg.training
    return t.onehot_embedding or bool(t.framework) and bool(
        framework_feature(t.framework, t.framework_version, "onehot_embedding"))


def onehot_gemms(cfg: RunConfig, sh: Shard, backward: bool) -> list[Op]:
    """The one-hot lookups' GEMMs (:func:`onehot_lookup`), in 16 bits: the token table (this
    rank's vocabulary) and a learned position table (``max_position_embeddings`` rows).
    Forward: [tokens x rows] one-hot times [rows x h]; backward: the tables' gradients, the
    one-hot transposed times the output gradient. The one-hot operands XLA writes for cuBLAS
    (tokens x rows 16-bit values) are not priced apart."""
    h = cfg.model.hidden_size
    tables = [("embedding_onehot", int(rank_vocab(cfg)))]
    if cfg.model.position_embedding == "learned":
        tables.append(("position_onehot", cfg.model.max_position_embeddings))
    if backward:
        return [Gemm(f"{name}.wgrad", m=rows, n=h, k=sh.tokens) for name, rows in tables]
    return [Gemm(name, m=sh.tokens, n=h, k=rows) for name, rows in tables]


def embedding_forward(cfg: RunConfig, sh: Shard) -> list[Op]:
    h = cfg.model.hidden_size
    ops: list[Op] = [Elementwise("embedding_lookup", bytes=sh.tokens * h * ACT * 2,
                                 kernel="embedding")]
    if onehot_lookup(cfg):
        ops = onehot_gemms(cfg, sh, backward=False)
    if sh.tp > 1:  # vocab-parallel embedding: partial rows summed over TP
        kind = "reduce_scatter" if sh.sp else "all_reduce"
        ops.append(Comm(f"embedding.{kind}", kind, sh.tokens * h * ACT, "tp",
                        in_tp_overlap=False))
    if cfg.model.position_embedding == "learned" or cfg.model.hidden_dropout > 0:
        ops.append(Elementwise("embedding_add_dropout", bytes=sh.norm_tokens * h * ACT * 3,
                               kernel="residual_add"))
    return ops


def embedding_backward(cfg: RunConfig, sh: Shard) -> list[Op]:
    h = cfg.model.hidden_size
    ops: list[Op] = []
    if sh.tp > 1 and sh.sp:
        ops.append(Comm("embedding.all_gather.bwd", "all_gather", sh.tokens * h * ACT, "tp",
                        in_tp_overlap=False))
    if onehot_lookup(cfg):
        return ops + onehot_gemms(cfg, sh, backward=True) + dense_embedding_grad_ops(cfg, sh)
    ops.append(embedding_zero_fill(rank_vocab(cfg), h))
    ops.append(embedding_scatter(sh.tokens, h, cfg.model.vocab_size, sh.tp))
    ops.extend(dense_embedding_grad_ops(cfg, sh))
    return ops


def embedding_scatter(tokens: int, hidden: int, vocab: int, tp: int) -> Elementwise:
    """The scatter-add of the tokens' gradient rows into the (vocab / tp) x hidden table that
    PyTorch's dense embedding backward runs after its fill (``embedding_zero_fill``): the sorted
    path's radix sort and two segment-reduction kernels, or the feature kernel at most 3072
    ids, priced from how those kernels are written (``compute.embedding_bwd``, fitted to an
    H200). ``bytes``: the gradient read, the fp32 partial sums written and read back."""
    distinct, partials, top, chunk = text_segments(tokens, vocab, tp)
    return Elementwise("embedding_grad", bytes=tokens * hidden * (ACT + 2 * 4),
                       kernel="embedding.bwd", scatter=(float(tokens), float(hidden), distinct,
                                                        partials, top, chunk))


EMBEDDING_ZERO_FILL = "embedding_grad.zeros"
"""Name of the op that zeroes a dense embedding gradient before PyTorch's backward adds the
tokens' rows into it (``embedding_zero_fill``)."""


def embedding_zero_fill(rows: float, cols: int, elem_bytes: int = ACT) -> Elementwise:
    """The ``at::zeros({num_weights, dim}, grad.options())`` that PyTorch's dense embedding
    backward starts from, on every backward of an ``F.embedding`` (``sparse=False``):
    pytorch/pytorch@1c94016e aten/src/ATen/native/cuda/Embedding.cu
    ``embedding_dense_backward_cuda`` (the small-index path, ``num_indices <= 3072``) and
    EmbeddingBackwardKernel.cu ``embedding_backward_cuda_kernel`` (the sorted path: the table
    zeroed, then the sorted indices' segments reduced in fp32 partials and added into it). One
    fill kernel writing the (``rows`` = vocabulary / TP) x ``cols`` table in the gradient's
    dtype (the parameters' 16 bits), priced at the memory-bound rate like any write: no
    constant. A measured ``embedding.bwd`` record timed the fill with the rest of the backward;
    the database takes this op's price off it (``compute.database``, the record's ``zeroed``
    table), so the two together are the record on its GPU and the table is the rank's own."""
    return Elementwise(EMBEDDING_ZERO_FILL, bytes=rows * cols * elem_bytes)


def dense_embedding_grad_ops(cfg: RunConfig, sh: Shard) -> list[Op]:
    """What a dense embedding gradient costs after PyTorch's backward, on every micro-batch.

    PyTorch's ``F.embedding`` (``sparse=False``, the default every framework here keeps:
    Megatron-core ``VocabParallelEmbedding.forward``, NVIDIA/Megatron-LM@d98e8a64
    megatron/core/tensor_parallel/layers.py L362) returns a gradient of the whole (vocab/tp)
    x hidden table: ``embedding_dense_backward_cuda`` starts from ``at::zeros({num_weights,
    dim})`` (pytorch/pytorch@1c94016e aten/src/ATen/native/cuda/Embedding.cu; the sorted path's
    ``embedding_backward_cuda_kernel`` in EmbeddingBackwardKernel.cu the same): that fill is
    ``embedding_zero_fill``, priced apart from the scatter (``embedding_grad``) on every GPU.

    What no record holds is the gradient's way into the buffer the optimizer reads. Where the
    other weights' gradients are accumulated by their weight-gradient GEMM (Megatron's fused
    accumulation, ``shard.wgrad_accumulates``), the embedding's is not: Megatron-core's DDP
    hook adds it (``param.main_grad.add_(param.grad.data)``, distributed_data_parallel.py
    ``_make_backward_post_hook`` L575-L578, for a parameter whose ``grad_added_to_main_grad``
    is unset; Megatron-LM's local DDP from @a8d172b3 megatron/model/distributed.py L174),
    reading the 16-bit gradient and the buffer, writing the buffer. A tied output layer on
    the same stage (pp 1: language_module.py L267 sets ``zero_out_wgrad``) hands autograd a
    zeroed dummy of the table's shape (layers.py L738-L762; TransformerEngine@d0067d0d
    pytorch/module/base.py ``get_dummy_wgrad`` L146-L147 ``fill_(0)``; write), which autograd
    adds to the embedding's gradient before the hook (read, read, write), and the hook adds
    the sum (L576: ``zero_out_wgrad``). Stacks that add every gradient outside the GEMM
    (DeepSpeed, nanotron, the unfused Megatron-LM) already price the embedding's add with the
    rest (``workload.grad_accumulation``). Sharded data parallelism gets nothing here: it
    reduce-scatters the dense table with the rest of its unit after every micro-batch's
    backward, and only the 1/dp shard accumulates, which ``workload.sharding`` already prices
    with the vocabulary matrices (``end_matrices``). FSDP2 under torchtitan
    (pytorch/torchtitan@000204a4 torchtitan/train.py L453 runs ``forward_backward_step`` per
    micro-batch, L437 ``loss.backward()``, never ``set_requires_gradient_sync(False)``;
    torchtitan/models/llama3/infra/parallelize.py L411 leaves ``tok_embeddings`` in the root
    ``fully_shard`` unit): the root group's post-backward copies the table into the
    reduce-scatter input and reduce-scatters it (``fsdp2_copies``). DeepSpeed ZeRO 3
    (microsoft/DeepSpeed@38327e07 deepspeed/runtime/zero/stage3.py L1177 a hook per parameter
    on every backward, L1275 ``__add_grad_to_ipg_bucket``, L1481-L1487 the partition copied on
    the first micro-batch and added after; engine.py L2073 refuses ``no_sync`` under gradient
    partitioning): ``sharding_grads.zero3_reduce_bucket_ops``. A learned position table is a dense
    embedding too (``max_position_embeddings`` rows, not vocabulary-parallel)."""
    main = wgrad_accumulates(cfg)
    if not main:
        return []
    h = cfg.model.hidden_size
    vocab = rank_vocab(cfg) * h
    elements = vocab
    if cfg.model.position_embedding == "learned":
        elements += cfg.model.max_position_embeddings * h
    ops: list[Op] = []
    if cfg.model.tied_embeddings and cfg.parallel.pp == 1:
        ops.append(Elementwise("embedding_grad.tied_dummy", bytes=vocab * 4 * ACT, kernels=2))
    ops.append(Elementwise("embedding_grad.main_grad_add", bytes=elements * (ACT + 2 * main)))
    return ops


def mtp_input_forward(cfg: RunConfig, sh: Shard) -> list[Op]:
    """What a multi-token-prediction module runs before its ``eh_proj``, each depth on the
    micro-batch's tokens (NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/
    multi_token_prediction.py): ``_get_embeddings`` looks the shifted tokens up in the shared
    word embedding (L1302 ``embedding(input_ids=...)``: the gather and its TP reduction, as
    the first stage's), and ``_concat_embeddings`` normalises the embedding and the hidden
    states (L1335 ``enorm``, L1337 ``hnorm``) and concatenates them (L1341 ``torch.cat``: read
    both, write the 2h rows) for the projection; DeepSeek-V3 report §2.2 eq. 21 (the embedding
    and output head shared with the main model). The rolls of the token and position ids
    (tens of kilobytes) are not priced."""
    h = cfg.model.hidden_size
    impl = norm_impl(cfg.model.normalization, h, sh.eager_norms, sh.compiled, sh.norm)
    return [*embedding_forward(cfg, sh), *mtp_norms(cfg, sh, impl),
            Elementwise("mtp_concat", bytes=4 * sh.norm_tokens * h * ACT)]


def mtp_norms(cfg: RunConfig, sh: Shard, impl: str) -> list[Elementwise]:
    """The MTP module's ``enorm`` and ``hnorm`` (``mtp_input_forward``)."""
    h = cfg.model.hidden_size
    return [norm_op(f"mtp_{name}", cfg.model.normalization, sh.norm_tokens * h, impl,
                    sh.stream_bytes, full_wave_norm(impl, sh.compiled))
            for name in ("enorm", "hnorm")]


def mtp_input_backward(cfg: RunConfig, sh: Shard, again: bool = False) -> list[Op]:
    """The backward of ``mtp_input_forward``: the two norms' backward (the concatenation's
    gradient is two views of the projection's input gradient: no kernel), then the shared
    embedding's dense backward (``embedding_backward``: the table zeroed and the tokens' rows
    added). Where the module shares the first stage's rank (pp 1), the embedding is one
    parameter used twice, and autograd sums the two dense table gradients before the
    parameter's hook (torch/csrc/autograd/input_buffer.cpp ``InputBuffer::add``: read, read,
    write) instead of a second hook's add; on a later stage the module's copy of the table
    (GPTModel builds it where ``mtp_process``) takes its own add (``dense_embedding_grad_ops``)
    once: each further depth (``again``) looks the same copy up again, and autograd sums that
    lookup's table gradient into it as at pp 1."""
    h = cfg.model.hidden_size
    impl = norm_impl(cfg.model.normalization, h, sh.eager_norms, sh.compiled, sh.norm)
    ops: list[Op] = []
    for norm in mtp_norms(cfg, sh, impl):
        nbytes, kernels = backward_bytes(norm)
        ops.append(Elementwise(f"{norm.name}.bwd", bytes=nbytes, kernels=kernels,
                               kernel=f"{norm.kernel}.bwd",
                               impl=BACKWARD_IMPL.get(norm.impl, norm.impl),
                               full_wave=norm.full_wave))
    emb = embedding_backward(cfg, sh)
    if cfg.parallel.pp == 1 or again:
        dense = {op.name for op in dense_embedding_grad_ops(cfg, sh)}
        emb = [op for op in emb if op.name not in dense]
        emb.append(Elementwise("mtp_embedding_grad.sum",
                               bytes=3 * rank_vocab(cfg) * h * ACT))
    return ops + emb


def head_forward(cfg: RunConfig, sh: Shard) -> list[Op]:
    """Final norm, logits (vocab-parallel GEMM) and cross-entropy (fp32 softmax)."""
    h, v = cfg.model.hidden_size, padded_vocab(cfg) // sh.tp
    impl = norm_impl(cfg.model.normalization, h, sh.eager_norms, sh.compiled, sh.norm)
    ops: list[Op] = [norm_op("final_norm", cfg.model.normalization, sh.norm_tokens * h, impl,
                             sh.stream_bytes, full_wave_norm(impl, sh.compiled))]
    dtype = "bf16" if sh.dtype == "fp8" else sh.dtype  # the output layer stays 16-bit
    tp_enter(ops, sh, h, "head", dtype, in_tp_overlap=False)  # blocking: Comm.in_tp_overlap
    if sh.autocast:
        ops.append(Elementwise("logits.autocast_weight", bytes=v * h * AUTOCAST_CAST_BYTES,
                               kernel="copy"))
    ops.append(Gemm("logits", m=sh.tokens, n=v, k=h, dtype=dtype))
    # fused: read the 16-bit logits once, keep the fp32 softmax for the backward; unfused:
    # Megatron's mpu/cross_entropy.py op by op on logits.float(); eager: F.cross_entropy on
    # logits upcast to fp32 (training.cross_entropy, training.modules)
    ce = cross_entropy_impl(cfg)
    ops.extend(shifted_logits_ops(cfg, sh.tokens * v, backward=False))
    ops.append(memory_op("cross_entropy", "cross_entropy", ce, sh.tokens * v, ACT))
    if sh.tp > 1:  # max, sum of exp and target logit, each T floats
        ops.append(Comm("cross_entropy.all_reduce", "all_reduce", 3 * sh.tokens * 4, "tp",
                        in_tp_overlap=False))
    return ops


def head_backward(cfg: RunConfig, sh: Shard, fwd: list[Op], deferred: bool = False) -> list[Op]:
    """The head's backward ops; ``deferred``: the output layer's weight gradient and its
    input's re-gather left to the drain (``deferred_wgrad_ops``), so the input gradient's
    reduction has no GEMM to hide behind (Megatron-LM 24.09-alpha.rc0 tensor_parallel/
    layers.py L426-445: ``wgrad_compute`` False skips both, and the reduce-scatter is waited
    for right after the dgrad)."""
    h, v = cfg.model.hidden_size, padded_vocab(cfg) // sh.tp
    ops: list[Op] = [memory_op("cross_entropy.bwd", "cross_entropy.bwd",
                               cross_entropy_impl(cfg),
                               sh.tokens * v, ACT)]
    ops.extend(shifted_logits_ops(cfg, sh.tokens * v, backward=True))
    logits = next(op for op in fwd if isinstance(op, Gemm))
    ops.append(Gemm("logits.dgrad", m=logits.m, n=logits.k, k=logits.n, dtype=logits.dtype))
    if not deferred:
        ops.extend(_regather_and_wgrad(sh, h, logits, overlapped=True))
    if sh.autocast:
        ops.append(Elementwise("logits.autocast_weight.bwd", bytes=v * h * AUTOCAST_CAST_BYTES,
                               kernel="copy"))
    if sh.tp > 1:
        kind = "reduce_scatter" if sh.sp else "all_reduce"
        ops.append(Comm(f"head.{kind}.bwd", kind, sh.tokens * h * ACT, "tp",
                        overlap_with_previous=not deferred, in_tp_overlap=False))
    impl = norm_impl(cfg.model.normalization, h, sh.eager_norms, sh.compiled, sh.norm)
    norm = norm_op("final_norm", cfg.model.normalization, sh.norm_tokens * h, impl,
                   sh.stream_bytes)
    nbytes, kernels = backward_bytes(norm)
    ops.append(Elementwise("final_norm.bwd", bytes=nbytes, kernels=kernels,
                           kernel=f"{norm.kernel}.bwd",
                           impl=BACKWARD_IMPL.get(norm.impl, norm.impl),
                           full_wave=full_wave_norm(impl, sh.compiled)))
    return ops


def _regather_and_wgrad(sh: Shard, h: int, logits: Gemm, overlapped: bool) -> list[Op]:
    """The output layer's weight gradient, after its sequence-parallel input is gathered
    again (column-parallel: as in backward_of), the gather hidden behind the GEMM before it
    where ``overlapped``."""
    ops: list[Op] = []
    if sh.tp > 1 and sh.sp and not sh.sp_gathered_saved:
        ops.append(Comm("head.all_gather.bwd_regather", "all_gather", sh.tokens * h * ACT, "tp",
                        overlap_with_previous=overlapped, in_tp_overlap=False))
    ops.append(Gemm("logits.wgrad", m=logits.k, n=logits.n, k=logits.m, dtype=logits.dtype))
    return ops


def deferred_wgrad_ops(cfg: RunConfig, sh: Shard, fwd: list[Op], n: int) -> list[Op]:
    """The drain of ``n`` deferred output-layer weight gradients on the last stage's compute
    stream after the schedule (Megatron-LM 24.09-alpha.rc0 core/utils.py L372-460
    ``drain_embedding_wgrad_compute``; core_v0.7.0.beta utils.py L269 on): the first input's
    gather waited for, then each GEMM with the next input's gather issued beside it (two
    buffers), each GEMM accumulating into the fp32 main gradient (gradient accumulation
    fusion, which Megatron-core requires for the deferral)."""
    logits = next(op for op in fwd if isinstance(op, Gemm))
    first = _regather_and_wgrad(sh, cfg.model.hidden_size, logits, overlapped=False)
    *gather, gemm = _regather_and_wgrad(sh, cfg.model.hidden_size, logits, overlapped=True)
    return first + (gather + [gemm]) * (n - 1) if gather else [gemm] * n


def deferred_wgrad_bytes(cfg: RunConfig) -> float:
    """Bytes the last stage holds for its deferred output-layer weight gradients when the
    drain starts: per deferred micro-batch the layer's input (its sequence-parallel shard)
    and its output gradient, 16-bit (Megatron's ``embedding_activation_buffer`` and
    ``grad_output_buffer``, kept past each backward)."""
    n = deferred_microbatches(cfg, cfg.schedule_microbatches)
    if not n:
        return 0.0
    p, t = cfg.parallel, cfg.training
    tokens = t.micro_batch_size * t.seq_length / p.cp
    width = cfg.model.hidden_size / (p.tp if p.sequence_parallel else 1)
    return n * ACT * tokens * (width + rank_vocab(cfg))


METRIC_SMALL_KERNELS = 3, 4
"""Kernels over a few values around the train metrics' cross-entropies (Composer v0.17.2): the
labels' shift in ``HuggingFaceModel.eval_forward`` (a clone, the copy back, the -100 fill),
then per metric ``LanguageCrossEntropy.update``'s ``(target != ignore_index).sum()`` (2) and
its two state additions (2)."""


def train_metric_ops(cfg: RunConfig, sh: Shard) -> list[Op]:
    """The training metrics a trainer updates on every micro-batch's logits after its backward
    (profile feature ``train_metric_losses``: how many cross-entropies over the whole logits).

    Composer (mosaicml/composer v0.17.2 composer/trainer/trainer.py ``_train_microbatch``:
    after ``loss.backward``, ``_eval_train_metrics`` under ``torch.no_grad`` and the precision
    context) hands the kept forward outputs to each train metric; llm-foundry's MPT
    (llmfoundry/models/mpt/modeling_mpt.py@5e85bd62 ``ComposerMPTCausalLM``: ``use_train_metrics``
    default True) has two, ``LanguageCrossEntropy`` and ``LanguagePerplexity`` (its subclass),
    each running ``torch.nn.CrossEntropyLoss(reduction='sum')`` over the [tokens, vocab]
    logits (composer/metrics/nlp.py). Under autocast ``cross_entropy`` runs in fp32: PyTorch's
    eager loss on upcast logits, priced as the ``eager`` cross-entropy (upcast, log_softmax,
    nll_loss), no backward. Composer's ``amp_fp8`` context enters only Transformer Engine's
    ``fp8_autocast``, no ``torch.autocast`` (composer/core/precision.py
    ``get_precision_context``), and FSDP computes in bf16 (mosaic_fsdp_utils.py: amp_fp8's
    param_dtype is bf16): the loss runs on the bf16 logits as they are (``eager_16bit``). The
    profile's ``autocast_dtypes`` says which training dtypes enter torch.autocast."""
    t = cfg.training
    if not t.framework:
        return []
    n = framework_feature(t.framework, t.framework_version, "train_metric_losses")
    if not n:
        return []
    autocast = framework_feature(t.framework, t.framework_version, "autocast_dtypes")
    loss = "eager" if autocast is None or t.dtype in autocast else "eager_16bit"
    v = padded_vocab(cfg) // sh.tp
    shift, per_metric = METRIC_SMALL_KERNELS
    ops: list[Op] = [Elementwise("train_metric.labels_shift", bytes=2.0 * sh.tokens * (8 + 8),
                                 kernels=shift, kernel="copy")]
    for i in range(int(n)):
        ops.append(memory_op(f"train_metric{i}.cross_entropy", "cross_entropy",
                             loss, sh.tokens * v, ACT))
        ops.append(Elementwise(f"train_metric{i}.count", bytes=sh.tokens * (8 + 1 + 1.0),
                               kernels=per_metric, kernel="copy"))
    return ops


def mtp_eh_proj(cfg: RunConfig, sh: Shard) -> tuple[list[Op], list[Op]]:
    """Forward and backward ops of one MTP module's ``eh_proj`` (2h -> h after the concat) as
    Megatron-core runs it (NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/
    multi_token_prediction.py): a column-parallel linear (L773-L780: TEColumnParallelLinear;
    L1174-L1187: built 2h -> h with ``gather_output=False``, buffer ``mtp_eh_proj``, for which
    extensions/transformer_engine.py L1176-L1186 turns TP overlap off), so each rank computes
    h / TP output columns; then ``_concat_embeddings`` (L1342-L1358) gathers the output along
    hidden (tensor_parallel/mappings.py L84-L100: an all-gather and a ``torch.cat`` copy; its
    backward L40-L57 copies the rank's columns out) and under SP takes the rank's rows back
    (L60-L81, a copy; its backward L295-L297 all-gathers along the sequence). The linear's own
    SP input gather, backward re-gather and reduce-scatter (or without SP the input gradient's
    all-reduce) and fp8 casts are the layers' column-parallel ones. At TP 1 it is the one
    h x 2h GEMM and its backward (46th session, mtp46; benchmarks/mtp46_eh_proj.py compares
    the unsharded pricing it replaced)."""
    h, tokens, name = cfg.model.hidden_size, sh.tokens, "mtp_proj"
    lin: list[Op] = []
    tp_enter(lin, sh, 2 * h, name, in_tp_overlap=False)
    linear(lin, sh, name, tokens, h // sh.tp, 2 * h, seq_parallel="gather")
    out_f: list[Op] = []
    out_b: list[Op] = []
    if sh.tp > 1:
        out_f += [Comm(f"{name}.output_all_gather", "all_gather", tokens * h * ACT, "tp",
                       in_tp_overlap=False),
                  Elementwise(f"{name}.output_cat", bytes=2 * tokens * h * ACT, kernel="copy")]
        if sh.sp:
            out_f.append(Elementwise(f"{name}.sp_split", bytes=2 * tokens / sh.tp * h * ACT,
                                     kernel="copy"))
            out_b.append(Comm(f"{name}.sp_split.bwd", "all_gather", tokens * h * ACT, "tp",
                              in_tp_overlap=False))
        out_b.append(Elementwise(f"{name}.output_split.bwd", bytes=2 * tokens * h / sh.tp * ACT,
                                 kernel="copy"))
    bwd = [replace(op, in_tp_overlap=False) if isinstance(op, Comm) else op
           for op in backward_of(lin, sh)]
    return lin + out_f, out_b + bwd
