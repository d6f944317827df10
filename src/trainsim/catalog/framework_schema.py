"""What a framework profile may say: the vocabulary of its values, the validator of every
``features`` and ``defaults`` key, and the keys a profile may leave out.

The value vocabulary and the single-value validators live in ``catalog.schema_checks``, the
``defaults`` keys' validators in ``catalog.defaults_schema`` (``DEFAULTS``, re-exported here), the
precision and MoE ``features`` keys' in ``catalog.framework_features_fp8_moe``.
``catalog.frameworks`` reads the YAML files against these tables and answers queries on the
result; adding a mechanism to the profiles is adding its key and validator here. A key names a
mechanism or a default, never a speed or efficiency multiplier (``FORBIDDEN_KEY_WORDS``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainsim.catalog.defaults_schema import DEFAULTS  # noqa: F401 - re-exported
from trainsim.catalog.framework_features_fp8_moe import FP8_MOE_FEATURES
from trainsim.catalog.schema_checks import (
    ATTENTION,
    MOE_DISPATCHERS,
    UNEVEN_PIPELINE,
    _backend_gpus,
    _bool,
    _bool_or_stages,
    _by_arch_of,
    _deferral_rule,
    _enum,
    _int,
    _list_of,
    _nullable,
    _release,
    _roles,
    _stage_releases,
    _stages,
    _str,
)

#: words that would make a key a speed knob; a profile may not contain them.
FORBIDDEN_KEY_WORDS = ("efficiency", "factor", "speed", "mfu")


UB_RS_SITE_NAMES = ("proj", "fc2")
UB_RS_METHOD_NAMES = ("pipeline", "atomic", "ring_exchange")


def _ub_rs_overlap(v: Any) -> str | None:
    """``{proj|fc2: {method: pipeline|atomic|ring_exchange, num_sm: N}}`` (TE ub_cfgs)."""
    if not isinstance(v, dict) or not v:
        return "expected a mapping of proj / fc2 to {method, num_sm}"
    for site, spec in v.items():
        if site not in UB_RS_SITE_NAMES:
            return f"{site!r} is not one of {list(UB_RS_SITE_NAMES)}"
        if not isinstance(spec, dict) or set(spec) != {"method", "num_sm"}:
            return f"{site}: expected {{method, num_sm}}"
        if spec["method"] not in UB_RS_METHOD_NAMES:
            return f"{site}: method {spec['method']!r} is not one of {list(UB_RS_METHOD_NAMES)}"
        if _int(spec["num_sm"]) is not None or spec["num_sm"] < 1:
            return f"{site}: num_sm must be a positive integer"
    return None


FEATURES: dict[str, Callable[[Any], str | None]] = {
    "sequence_parallel": _nullable(_bool),
    "interleaved_pipeline": _nullable(_bool),
    # torch.distributed.pipelining's ScheduleLoopedBFS reachable by name (parallel.
    # pipeline_schedule=looped_bfs; catalog.defaults refuses it unless the profile says true)
    "looped_bfs_schedule": _nullable(_bool),
    "pipeline_parallel": _nullable(_bool),  # pp > 1 at all (catalog.defaults refuses it)
    # tp > 1 and cp > 1 at all, as pipeline_parallel (catalog.defaults refuses them)
    "tensor_parallel": _nullable(_bool),
    "context_parallel": _nullable(_bool),
    # the first release that runs each ZeRO stage where a release older than the profile's
    # first entry lacks it (catalog.defaults.zero_engine refuses the stage before it)
    "zero_stage_releases": _nullable(_stage_releases),
    "distributed_optimizer": _nullable(_bool),
    "tp_comm_overlap": _nullable(_bool),
    "cuda_graphs": _nullable(_bool),
    # data-parallel reduction can overlap the backward, the parameter gather the forward:
    # true/false as recorded (not checked), or the ZeRO stages at which it can ([]: none),
    # which catalog.defaults.overlap_problem checks (refused at another stage where it acts)
    "overlap_grad_reduce": _nullable(_bool_or_stages),
    "overlap_param_gather": _nullable(_bool_or_stages),
    # the framework setting the overlap_grad_reduce stages hold under (where another setting
    # of it would overlap at more stages): the loader's refusal ends with it
    "overlap_grad_reduce_setting": _nullable(_str),
    # the ZeRO stages (ParallelConfig.effective_zero_stage) the framework runs where they are
    # fewer than its engines run (config.validity.ZERO_STAGES); null: every stage they run
    "zero_stages": _nullable(_stages),
    # hybrid sharded data parallelism (parallel.dp_replicate > 1): state sharded inside a
    # replica, gradient shards all-reduced across replicas; null: not recorded (allowed)
    "hybrid_shard": _nullable(_bool),
    "uneven_pipeline": _nullable(_enum(UNEVEN_PIPELINE)),
    # the rule that places the layers of a model with MTP layers which do not split evenly
    # (``catalog.framework_rules.uneven_layout``; ``filled``: config.layout.filled_layout); null:
    # the framework's rule for any model
    "mtp_uneven_pipeline": _nullable(_enum(("balanced", "filled"))),
    # the attention implementations and the MoE token dispatchers the user may pick
    "attention_kernels": _nullable(_list_of(ATTENTION, "attention implementations")),
    # the backends the framework's own ``sdpa_kernel`` list lets PyTorch's SDPA dispatch to
    # (a run stating one of them runs it through SDPA: ``workload.shard.sdpa_kernels``)
    "sdpa_backends": _nullable(_list_of(ATTENTION, "SDPA backends")),
    # the attention kernel the framework's model runs for a model with attention-logit
    # soft-capping (``ModelConfig.attn_logit_softcapping``), whatever the default: Megatron-
    # Bridge's Gemma 2 layer spec builds ``core_attention=Gemma2DotProductAttention  # use unfused
    # SDPA for attn logit softcapping`` (catalog.defaults.softcap_attention); null: the chosen one
    "softcap_attention": _nullable(_enum(ATTENTION)),
    # the widest attention head (query/key and value) the framework's Transformer Engine runs
    # on cuDNN in training on Blackwell (sm100+), and whether MLA's (192, 128) heads pass all
    # the same (TE >= 2.5 with cuDNN >= 9.11); wider heads run FlashAttention 2 or unfused
    # (catalog.te_attention, sources there). Null: not checked, the kernel named is kept
    "cudnn_sm100_head_dim_max": _nullable(_int),
    "cudnn_sm100_mla": _nullable(_bool),
    # an unfused (materialized-score) attention computes every score of a sliding-window layer
    # and masks the keys outside the window afterwards, so it pays the full q x kv work
    # (workload.ops.Attention.pairs): Hugging Face's eager_attention_forward adds its window mask
    # to the full matmul; Megatron-Bridge's/NeMo's Gemma2DotProductAttention runs the full
    # baddbmm and applies get_swa's mask in the softmax. Null/false: the windowed work only (a
    # kernel that skips the keys outside the window, as MegaScale's Table 4 ablation implies)
    "masked_window_scores": _nullable(_bool),
    # false: the framework's unfused (local) attention takes no sliding window, so a windowed
    # model cannot run on it: Megatron-core's DotProductAttention.__init__ asserts
    # ``config.window_size is None`` ("Sliding Window Attention is only supported by
    # TEDotProductAttention!", catalog.defaults.window_attention_problem). Null: not checked
    "unfused_sliding_window": _nullable(_bool),
    "recompute_modules": _nullable(_bool),  # Megatron-core --recompute-modules (selective sets)
    # recompute is JAX's jax.checkpoint: the backward re-runs only the forward values its
    # gradients read (remat_partial_eval DCEs the rest), so a dense layer's last projection,
    # whose output only the residual add and the next layer's kept input take, is never re-run
    # (workload.recompute.remat_dce)
    "remat_dce": _nullable(_bool),
    # the models look tokens and learned positions up as a one-hot matrix times the table (a
    # GEMM, and a weight-gradient GEMM backward), not a gather (workload.head.onehot_lookup)
    "onehot_embedding": _nullable(_bool),
    # the model builds a preset's multi-token-prediction layers (false: the framework's model
    # class never reads them, so the run has none)
    "mtp": _nullable(_bool),
    # selective recompute of ``core_attn`` checkpoints a fused (flash, cuDNN) attention too, so
    # its forward runs again before its backward (Megatron-core attention.py
    # _checkpointed_attention_forward, whatever the backend); false: only an attention that keeps
    # the score matrix is checkpointed (legacy Megatron-LM transformer.py: ``if not
    # self.use_flash_attn: if self.checkpoint_core_attention``); null: not recorded (as false)
    "checkpointed_fused_attention": _nullable(_bool),
    # every tensor-parallel rank holds its own share of the KV heads (query groups), so tp must
    # divide them: Megatron-core attention.py Attention.__init__ num_query_groups_per_partition
    # = divide(num_query_groups, tp) (utils.divide asserts); false/null:
    # KV heads fewer than tp are replicated over the ranks (workload.layers)
    "kv_heads_split": _nullable(_bool),
    # the MoE dispatchers that need ep x expert tp >= 2 ranks: Megatron-core token_dispatcher.py
    # MoEFlexTokenDispatcher asserts TPxEP > 1 (deepep and hybridep; from core_v0.18.0 deepep
    # only); null: none is checked (config.validity.dispatcher_fits)
    "flex_dispatchers_two_ranks": _nullable(_list_of(MOE_DISPATCHERS, "MoE token dispatchers")),
    # the GPUs each flex dispatcher backend is accepted on, by catalog name or compute-capability
    # major (cc9); a backend left out is not restricted (catalog.framework_rules.flex_backend_runs)
    "flex_backend_gpus": _nullable(_backend_gpus),
    # schedule nodes of an MoE layer under Megatron-core's combined 1F1B, each backward an
    # autograd engine call of its own (workload.schedule_nodes); null: not recorded
    "ep_overlap_moe_nodes": _nullable(_int),
    # each pipeline exchange is one torch.distributed.batch_isend_irecv on the pipeline group's
    # communicator (Megatron's batch_p2p_comm), not lone isend / irecv on two-rank communicators
    "batched_p2p": _nullable(_bool),
    # pipeline sends and receives may run on a stream of their own, under compute
    # (overlap_p2p_comm): Megatron-LM's --overlap-p2p-communication from f9283c5a (merged
    # 2023-05-31, e6d7e098); false: every exchange blocks and the loader refuses the switch
    "p2p_overlap": _nullable(_bool),
    # the schedule without interleaving sends and receives blocking whatever
    # overlap_p2p_comm says, the interleaved one overlapping them: Megatron-core's
    # forward_backward_pipelining_without_interleaving raises on it (schedules.py, from
    # e6d7e098 and core_r0.5.0 .. core_v0.16.0) and Megatron-LM's arguments.py sets it False
    # when no virtual pipeline size is given (core_r0.6.0 .. core_v0.16.0)
    "p2p_overlap_interleaved_only": _nullable(_bool),
    # overlap_param_gather under the interleaved schedule with align_param_gather: the schedule
    # calls each chunk's start_param_sync (every bucket group at once, in buffer order, so the
    # first layers' bucket last), chunks 0 and 1 at its start, so the first forward waits for
    # the whole first chunk; without interleaving align is off and the forward pre-hooks
    # gather bucket after bucket (simulator ``pass_specs``)
    "align_param_gather": _nullable(_bool),
    # Transformer Engine's userbuffer pipeline and bulk overlaps launch their GEMM for all SMs
    # beside communication kernels that hold 16 (``set_sm_margin`` 0: initialize_ub's default
    # through TE v1.13, taken where the framework passes no ub_cfgs); false or null: the GEMM
    # runs on the SMs the communication leaves (TE >= 2.0's default for those methods)
    "ub_gemm_all_sms": _nullable(_bool),
    # the same for the bulk overlaps only, where a framework's ub_cfgs set ``set_sm_margin`` 0
    # for the bulk methods and 1 for the pipeline ones (NVIDIA's MLPerf GPT-3 tp_overlap
    # configs): the pipeline GEMMs keep the margin (``pricing.Pricer.ub_bulk_all_sms``)
    "ub_bulk_all_sms": _nullable(_bool),
    # how the framework's ub_cfgs run the two forward reduce-scatter overlaps (TE names
    # proj_fprop, fc2_fprop): method and the SMs their communication takes with set_sm_margin
    # 1 (gemm_overlap.ub_rs_sites); null: TE's default pipeline on UB_COMM_SMS
    "ub_rs_overlap": _nullable(_ub_rs_overlap),
    # MLA's down-projections are TELinear 'duplicated' on the SP rows, the up-projections gather
    # the compressed latents (Megatron-core >= 0.14; ``workload.shard.Shard.mla_local_down``)
    "mla_down_proj_duplicated": _nullable(_bool),
    "cpu_offloading": _nullable(_bool),  # Megatron-core --cpu-offloading-num-layers (memory.offload)
    # with pipeline parallelism every FSDP unit stays unsharded from its first forward to the
    # last micro-batch's backward, its gradients accumulated unsharded in the reduce dtype
    # (torchtitan: reshard_after_forward=False under PP; torch.distributed.pipelining no-sync)
    "fsdp_pp_unsharded": _nullable(_bool),
    # how many local pipeline stages the pipeline runtime keeps gathered under that no-sync:
    # torch's _PipelineScheduleRuntime (multi-stage schedules from torch 2.10.0) UNSHARDs the
    # next N stages to compute from the step's start and RESHARDs a stage leaving that window
    # (_add_unshard_reshard, max_active_stages=3; workload.unshard_window); null: no window,
    # each chunk gathered by its first forward and kept through the step
    "pp_unshard_window": _nullable(lambda v: _int(v) or (None if v >= 1 else "expected a "
                                                          "positive integer or null")),
    # with pipeline parallelism FSDP units are not resharded after the forward, yet gradients
    # are reduce-scattered, and units resharded, after every micro-batch's backward (the stage's
    # module is no FSDP module, so torch.distributed.pipelining's no-sync is skipped): one
    # gather per unit and micro-batch, none again before the backward (sharded_passes)
    "fsdp_pp_sync_every_microbatch": _nullable(_bool),
    # FSDP2 keeps one reduce-scatter input buffer: each unit's post_backward makes the compute
    # stream wait for the previous unit's reduce-scatter before its copy-in, so the backward
    # of the unit after it starts only once that reduce-scatter is done (simulator)
    "fsdp2_reduce_scatter_wait": _nullable(_bool),
    # the distributed optimizer's gradient hooks reduce-scatter every micro-batch's buckets as
    # the backward fills them, on a side stream, after copying each gradient in (no no-sync:
    # Megatron-LLaMA's OverlappedDistributedOptimizer; workload.sharding
    # ``reduces_every_microbatch``, ``bucket_copy_in``)
    "dp_reduce_every_microbatch": _nullable(_bool),
    # DeepSpeed's ZeRO-2 (and Fast-LLM's, run on that engine) reduces each micro-batch's
    # gradient buckets in its backward, not at the accumulation boundary alone
    # (workload.sharding ``zero2_reduces_every_microbatch``)
    "zero2_reduce_every_microbatch": _nullable(_bool),
    # Megatron-FSDP under a recipe with gradient_accumulation_fusion off: each unit's
    # post-backward hook copies the 16-bit weight gradients into its gradient bucket on the
    # compute stream, every micro-batch (workload.megatron_fsdp)
    "megatron_fsdp_unfused_wgrad": _nullable(_bool),
    # Megatron-FSDP runs keep 16-bit weights whatever fp8_param_gather says (NeMo 25.04's perf
    # scripts turn it off under FSDP; Megatron-LM refuses FSDP with fp8 params before TE 2.3):
    # workload.fp8_gather.fp8_weights_gathered
    "megatron_fsdp_16bit_params": _nullable(_bool),
    # data_parallel_impl fsdp2 is torch's fully_shard: its all-gather copy-out and
    # reduce-scatter copy-in on the compute stream (workload.fsdp2_copies), and at zero stage 2
    # (reshard_after_forward False) a gather and reduce-scatter per unit and micro-batch, or
    # under pipelining the profile's fsdp_pp_* mode as at zero 3
    "fsdp2_copies": _nullable(_bool),
    # an MoE model's FSDP units reduce their gradients in fp32, its experts' own units in the
    # parameters' 16-bit dtype (a mixed-precision policy on the first, none on the second)
    "fsdp_moe_reduce_fp32": _nullable(_bool),
    # ``recompute: selective`` is per-op selective checkpointing: the block's input and the
    # outputs of every other matmul, attention and reduce-scatter are saved, the rest recomputed
    "per_op_sac": _nullable(_bool),
    # that policy's save list names the flash and memory-efficient SDPA kernels but not cuDNN's
    # (``_scaled_dot_product_cudnn_attention``): under per-op checkpointing a cuDNN attention's
    # forward runs again before its backward and its output is not kept
    "per_op_sac_reruns_cudnn": _nullable(_bool),
    # with torch.compile the loss (the fp32 upcast, log-softmax and NLL) is compiled too
    "compiled_loss": _nullable(_bool),
    # the training loop shifts the logits for the loss with ``logits[..., :-1, :].contiguous()``
    # outside the loss function: a copy of the logits (none where the micro-batch is one
    # sequence: the slice is then contiguous) and the slice's backward (zero-fill, copy)
    "shifted_logits_copy": _nullable(_bool),
    # the training loop drops the 16-bit logits before ``loss.backward()`` (torchtitan's
    # ``del pred``): the eager loss's fp32 buffers then sit above a freed hole
    "logits_freed_before_backward": _nullable(_bool),
    # Megatron's vocab-parallel cross-entropy subtracts the logits' maximum out of place
    # (``vocab_parallel_logits - logits_max``) on an fp32 copy made by the caller
    # (``.float()``): the loss's forward holds 16-bit logits, their fp32 copy and the shifted
    # fp32 logits at once (memory.estimate ``_loss_temporary``)
    "ce_shift_copy": _nullable(_bool),
    # the training loop frees the gradients after each step (``zero_grad(set_to_none=True)``):
    # a step of one micro-batch reaches its backward's peak before any gradient exists
    "grads_set_to_none": _nullable(_bool),
    # with TP the cross-entropy runs on vocab-sharded DTensor logits under
    # torch.distributed.tensor.parallel.loss_parallel (its decomposed backward)
    "loss_parallel": _nullable(_bool),
    # pipeline stages of torch.distributed.pipelining: receive buffers per micro-batch, the last
    # stage's outputs kept until the step returns
    "pipelining_buffers": _nullable(_bool),
    # the model's attention projects Q, K and V with three separate linears (not one fused QKV
    # GEMM): under RoPE the unrotated Q and K are freed, no fused buffer stays alive beside V
    "separate_qkv": _nullable(_bool),
    # Megatron-core's Transformer Engine layer spec (gpt_layer_specs.py
    # get_gpt_layer_with_transformer_engine_spec): the input norm fused into linear_qkv and a
    # dense layer's pre-MLP norm into linear_fc1 (TELayerNormColumnParallelLinear, the norms
    # IdentityOp), the core attention TE's DotProductAttention, which hands its kernel
    # contiguous Q, K and V (memory.te_spec)
    "te_layer_spec": _nullable(_bool),
    # FSDP shards a model already cast to the 16-bit training dtype: 16-bit shards and
    # gradients, no fp32 master copy, torch.optim's moments in that dtype too
    "params_16bit": _nullable(_bool),
    # the model repeats GQA's K and V heads to every query head before SDPA (torchtitan's
    # repeat_kv): what a context-parallel exchange of K and V moves (only under the ``sdpa``
    # kernel; training.sdpa_enable_gqa turns it off)
    "sdpa_repeat_kv": _nullable(_bool),
    # the model repeats them before its eager (``unfused``/``eager``) attention's matmuls
    # (transformers' eager_attention_forward), whose backward then sums dK and dV per KV head
    "unfused_repeat_kv": _nullable(_bool),
    # its materialized (``unfused``) attention runs the softmax in fp32 and casts the result
    # to the 16-bit dtype: the fp32 softmax output (softmax_backward reads it) is kept beside
    # the 16-bit probabilities the value matmul keeps, 4 more bytes a score (memory.scores)
    "softmax_fp32_saved": _nullable(_bool),
    # a run may state the framework's own layers compiled by XLA in place of Transformer
    # Engine's (training.xla_layers: Paxml ENABLE_TE=0, Praxis's DotProductAttention with its
    # fp32 softmax as XLA fusions, workload.xla_layers); not true: the option is refused
    "xla_layers": _nullable(_bool),
    # a run may state its decoder layers as separate parameters, not one scanned stack
    # (training.unscanned_layers: MaxText scan_layers=false), whose HSDP replica all-reduces
    # XLA's combiner joins in sorted-name order (workload.xla_combine); not true: refused
    "unscanned_layers": _nullable(_bool),
    # context parallelism is torch.distributed.tensor.experimental's context_parallel: one SDPA
    # per ring step, outputs merged by log-sum-exp in fp32, fp32 dK/dV passed around the ring
    "cp_sdpa_ring": _nullable(_bool),
    # the attention kernels whose context parallelism with cp_comm_type p2p is Transformer
    # Engine's ring (AttnFuncWithCPAndKVP2P, workload.context_parallel.te_ring_forward): those
    # TE's DotProductAttention runs (flash-attn, cuDNN fused attention); other kernels and
    # frameworks without it keep one kernel over the whole sequence beside a hidden exchange
    "cp_te_ring": _nullable(_list_of(ATTENTION, "attention implementations")),
    # sequence parallelism by DTensor: the block's input is redistributed from sequence-sharded
    # to replicated before the column-parallel linears (PrepareModuleInput), so each of them
    # saves the all-gathered, full-length input for its backward (not a 1/tp shard gathered
    # again in the backward, as Megatron's linears do)
    "sp_gathered_gemm_inputs": _nullable(_bool),
    # the Transformer Engine release the entry's stack runs (its container's, or the pin of the
    # framework's own CI / pyproject), MAJOR.MINOR: mechanisms that changed with a TE release
    # read it (``catalog.frameworks.te_at_least``; ``workload.shard`` the placeholder weight
    # gradient, ``compute.host.PARAM_GRAD_S``); null: not recorded (or no TE)
    "te_version": _nullable(_release),
    # interleaved 1F1B is torch.distributed.pipelining's ScheduleInterleaved1F1B: its warm-up,
    # (vpp-1) pp + 2 (pp-1-rank) forwards, holds even when m == pp, where Megatron runs every
    # forward first
    "torch_interleaved_warmup": _nullable(_bool),
    # which interleaved group sizes N the user may set (parallel.microbatch_group_rule):
    # ``megatron`` (--microbatch-group-size-per-virtual-pipeline-stage, pp <= N <= m),
    # ``flexible`` (the same, m < pp as one group, and N tuned per run), ``none`` (N = pp)
    "microbatch_group_size": _nullable(_enum(("none", "megatron", "flexible"))),
    # RoPE is fused only for plain RoPE positions: a scaled one (YaRN) runs Megatron-core's
    # unfused _apply_rotary_pos_emb_bshd (Megatron-LM arguments.py and Megatron-Bridge's
    # validate_rope_fusion_compatibility turn apply_rope_fusion off for another type)
    "scaled_rope_unfused": _nullable(_bool),
    # Megatron-core's fused quick-GEGLU (gpt-oss's clamped experts) makes its linear offset a
    # device tensor on every call, a synchronising host-to-device copy
    # (workload.elementwise.glu_offset_sync_op)
    "glu_offset_host_sync": _nullable(_bool),
    # every transformer layer's forward makes two scalars on the device from Python
    # (Megatron-DeepSpeed's moe_loss / mlp_bias ``torch.tensor(0.0, device=...)``), two
    # synchronising host-to-device copies (workload.elementwise.scalar_tensor_sync_op)
    "layer_scalar_syncs": _nullable(_bool),
    # multi-head latent attention's RoPE, its concatenations and V's contiguous copy run as
    # eager PyTorch ops (workload.elementwise.mla_eager_rope_op), not one fused kernel
    "mla_eager_rope": _nullable(_bool),
    # eager RoPE on complex views (torchtitan's apply_rotary_emb), not HF's rotate-half
    "complex_rope": _nullable(_bool),
    # the gated MLP's activation runs eager, act(gate) * up on the two halves of one fused
    # gate_up output, whatever ``modules`` says of the norms and RoPE (nanotron's
    # GLUActivation beside its TritonRMSNorm; workload.elementwise ``eager_chunked``)
    "eager_glu": _nullable(_bool),
    # the framework swaps its own norm kernel into the model whose other modules run eager
    # (``modules: eager``); ``norm`` says how it runs (Colossal-AI shardformer's FusedRMSNorm
    # in place of Hugging Face's LlamaRMSNorm; workload.shard ``Shard.eager_norms``)
    "fused_norm_modules": _nullable(_bool),
    # the unfused attention casts its scores to fp32, scales them and masks them with
    # torch.where before an fp32 softmax (Fast-LLM's _attn_fused; workload.where_scores), in
    # place of Hugging Face's eager chain where ``softmax_fp32_saved`` holds
    "fp32_where_scores": _nullable(_bool),
    # the fused qkv output is laid out for flash-attn by PyTorch copies (nanotron's
    # CausalSelfAttention: Q, K, V permuted contiguous, K and V concatenated and permuted
    # contiguous again for the rotary kernel), the attention output transposed back to
    # [seq, batch] before out_proj (workload.layers ``qkv_relayout_op``)
    "qkv_relayout_copies": _nullable(_bool),
    # 16-bit weight gradients added into fp32 buffers by one eager add_ a tensor after every
    # micro-batch's backward, outside the wgrad GEMM (nanotron's FP32GradientAccumulator;
    # workload.grad_accumulation ``fp32_grad_accumulation``)
    "fp32_grad_add": _nullable(_bool),
    # every micro-batch's weight gradients added into the accumulated ones by a kernel a
    # tensor outside the wgrad GEMM, for the gradient dtypes named: "16bit" (fp16 gradients
    # only), "all" (16-bit and fp32 ``main_grad`` buffers); "none" where the wgrad GEMM
    # accumulates (Megatron-LM's gradient_accumulation_fusion; workload.sharding
    # ``fp32_grad_accumulation``)
    "unfused_grad_accumulation": _nullable(_enum(("none", "16bit", "all"))),
    # ZeRO-1's gradient clipping takes its norm and scales over the whole (unsharded) fp32
    # gradient buffers, not the optimizer's shard (nanotron's clip_grad_norm on the
    # accumulator's buffers; workload.sharding ``unsharded_clip``)
    "clip_unsharded_grads": _nullable(_bool),
    # ZeRO-1's parameter all-gather after the step goes through a list all_gather of every
    # tensor's per-rank slices: a flatten a rank, the process group's copy out of its flat
    # buffer a rank, one copy back per rank and tensor (nanotron's all_gather_coalesced;
    # workload.sharding ``zero1_gather_copies``)
    "zero1_gather_copies": _nullable(_bool),
    # each pipeline tensor travels after two blocking metadata messages, one tensor at a time,
    # and a forward exchange carries the sequence mask beside the hidden states (nanotron's
    # P2P.send_tensors; workload.p2p_meta ``exchange_messages``)
    "p2p_tensor_metadata": _nullable(_bool),
    # Megatron's FusedScaleMaskSoftmax.is_kernel_available passes get_batch_per_block its
    # arguments out of order, so the kernel's rows per block follow the heads per TP rank and
    # some micro-batch sizes run the PyTorch softmax in fp32 (workload.softmax)
    "softmax_args_swapped": _nullable(_bool),
    # the unfused attention is Megatron's own (legacy CoreAttention / ParallelSelfAttention,
    # Megatron-core's local DotProductAttention): its ops launch one kernel each
    # (compute.host.MEGATRON_UNFUSED_LAUNCHES, sources there). Null/false: one launch counted
    # (an unfused path whose ops were not read: nanotron's, eager SDPA), except Transformer
    # Engine's (te_unfused_attention below)
    "megatron_unfused_ops": _nullable(_bool),
    # the unfused attention is Transformer Engine's UnfusedDotProductAttention
    # (TEDotProductAttention over TE's DotProductAttention): Megatron's core ops one launch
    # each, plus the full mask TE >= 2.0 builds every call, the mask its softmax reads and its
    # fp32 fallback (workload.te_unfused)
    "te_unfused_attention": _nullable(_bool),
    # the legacy model (megatron/model/transformer.py ParallelTransformer) gives a chunk left
    # with no transformer layer a NoopTransformerLayer, whose forward is hidden_states.clone()
    # (chunks.noop_layer_clone); Megatron-core's TransformerBlock has none
    "noop_layer_clone": _nullable(_bool),
    # the model's batch function under DeepSpeed's PipelineEngine is Megatron's get_batch_pipe:
    # mpu.broadcast_data over the TP group (its sizes read back by the host) and the causal
    # mask and position ids built per micro-batch (workload.pipe_engine.megatron_batch_fn)
    "megatron_batch_fn": _nullable(_bool),
    # DeepSpeedEngine.backward reads the loss to the host (``loss.mean().item()``) before
    # autograd starts, on the stage that holds the loss, every micro-batch: the host waits for
    # the forward to drain, then launches the backward (workload.pipe_engine.deepspeed_loss_read)
    "ds_loss_item_sync": _nullable(_bool),
    # the linears (by LINEAR_ROLES) whose bias the framework adds in an elementwise kernel of
    # its own after the GEMM, its gradient a sum over the tokens in the backward: Megatron's
    # local (non-Transformer-Engine) linears for a bias they do not hand to a fused
    # bias-activation or bias-dropout-add (skip_bias_add False); empty or null: every bias is
    # in a GEMM epilogue (Transformer Engine) or in such a fused kernel (workload.layers)
    "linear_bias_kernels": _nullable(_roles),
    # the linears whose bias the GEMM adds (a cuBLASLt bias epilogue) but whose bias gradient
    # is a kernel of its own, a sum of the output gradient over the tokens: torch.nn.Linear
    # (F.linear -> addmm on the flattened input; autograd reduces addmm's broadcast ``self``
    # gradient with sum_to); Megatron's skip_bias_add biases whose fused consumer leaves the sum
    # to autograd (GeLUFunction.backward's ``tmp, tmp``; ``bias.expand_as(residual)`` into the
    # jit bias-dropout-add); Transformer Engine's linears fuse it into the wgrad GEMM instead
    "linear_bias_grad_kernels": _nullable(_roles),
    # the optimizer loops over parameter tensors in Python and reads each one's step count from
    # the GPU (Composer's DecoupledAdamW: ``state_steps[i].item()``), after FSDP's per-gradient
    # norm clipping; FSDP1 with use_orig_params hands it each tensor's piece of the local shard
    "per_tensor_optimizer": _nullable(_bool),
    # how the framework's Adam runs when the run states nothing (workload.elementwise
    # ``optimizer_step``): ``fused`` one multi-tensor kernel (apex/TE FusedAdam, DeepSpeed
    # FusedAdam, torch ``fused=True``), ``foreach`` torch's _multi_tensor_adam (eight
    # multi-tensor kernels, each a pass over the state), ``for_loop`` torch's
    # _single_tensor_adam (the same passes, one kernel each per parameter tensor); null: not
    # recorded, priced fused (per_tensor_optimizer, where set, prices the step instead)
    "optimizer_impl": _nullable(_enum(("fused", "foreach", "for_loop"))),
    # the framework's optimizer can run Megatron-core's precision-aware optimizer (TE FusedAdam
    # under Megatron-core's distributed optimizer, ``use_precision_aware_optimizer``); false
    # where the data-parallel optimizer is another one (Apex DistributedFusedAdam in NeMo 1.x);
    # null: not recorded (allowed)
    "precision_aware_optimizer": _nullable(_bool),
    # a bf16 (or fp8) run may reduce its gradients in bf16 by a flag, where the framework's
    # default (profile ``grad_reduce_dtype``) is fp32: Megatron-LM's --grad-reduce-in-bf16
    # (validate_args sets accumulate_allreduce_grads_in_fp32 False; else --bf16 forces it
    # True). An empty grad_reduce_dtype cell is then the user's choice, the default kept unless
    # the fastest setting needs the smaller buffer (``validate.row_unknowns.bf16_reduce``);
    # null/false: the profile's dtype holds
    "grad_reduce_bf16_flag": _nullable(_bool),
    # the data-parallel optimizer is Apex's DistributedFusedAdam as NeMo 1.x sets it up
    # (megatron_base_model.py setup_optimization): its state in ``training.optimizer_dtype``,
    # master parameters kept only where that dtype is wider than the model's (int16 remainders
    # for bf16 models and fp32 state), memory.state._apex_state_bytes; null: not recorded
    "apex_distributed_adam": _nullable(_bool),
    # the model unpads Q, K and V before FlashAttention's varlen kernel and pads its output,
    # every layer, waiting for the GPU twice per unpad (llm-foundry's MPT, ``workload.unpad``)
    "flash_unpad": _nullable(_bool),
    # the trainer updates its train metrics on every micro-batch's logits after the backward:
    # how many full cross-entropies over [tokens, vocab] they run (Composer's
    # LanguageCrossEntropy and LanguagePerplexity for llm-foundry's MPT: 2;
    # ``workload.head.train_metric_ops``)
    "train_metric_losses": _nullable(_int),
    # the training dtypes whose precision context enters torch.autocast, where the train
    # metrics' cross-entropy upcasts the logits to fp32; under the others it runs on the 16-bit
    # logits as they are (Composer's amp_fp8 enters Transformer Engine's fp8_autocast only;
    # ``workload.head.train_metric_ops``). Null: autocast assumed
    "autocast_dtypes": _nullable(_list_of(("fp32", "fp16", "bf16", "fp8"), "training dtypes")),
    # the MLP's GELU runs in cuBLASLt epilogues, by GPU architecture (a key holds from it up
    # to the next): forward in fc1's GEMM (GELU_AUX_BIAS, writing the activation and its
    # input), backward in fc2's dgrad GEMM (DGELU_BGRAD): flash-attn's FusedDenseGeluDense /
    # FusedMLP (workload.act_epilogue); null or false: the GELU is a kernel of its own
    "gelu_gemm_epilogue": _nullable(_by_arch_of((True, False), "true or false")),
    # the MLP's fc1 and fc2 are separate Transformer Engine Linear modules (one fp8 scaling
    # update each), not one LayerNormMLP (llm-foundry's MPT with fc_type te)
    "te_linear_mlp": _nullable(_bool),
    # Megatron DDP before each bucket's collective: norm, isnan/isinf host waits, 1/dp scaling
    "ddp_nan_check": _nullable(_bool),
    "ddp_nan_check_syncs": _nullable(_int),
    "ddp_grad_scale": _nullable(_bool),
    # Megatron's DDP without overlap_grad_reduce has one bucket per gradient buffer (bucket
    # size None), so one collective per buffer after the backward (``workload.sharding.
    # unbucketed_without_overlap``); null/false: the buckets hold either way
    "ddp_unbucketed_without_overlap": _nullable(_bool),
    # with the distributed optimizer, Megatron-core's DDP copies each parameter into its
    # contiguous 16-bit buffer and frees the parameter's own storage (core_v0.6.0 on): the
    # caching allocator keeps those blocks (memory.megatron_step); null/false: not modelled
    "ddp_param_buffer": _nullable(_bool),
    "zero3_avg_scatter_grads": _nullable(_bool),  # DeepSpeed >= 0.6 ZeRO-3 reduce (sharding)
    # DeepSpeed ZeRO-3's persistent parameters gathered again after each step
    # (``workload.zero3_persistent``): a Python copy per parameter and rank, or one small
    # _all_gather_base per parameter; null: not modelled
    "zero3_persistent_regather": _nullable(_enum(("python_loop", "coalesced"))),
    # the vocabulary is padded before the embedding and output layer are built, to a multiple of
    # this value x TP (Megatron's _vocab_size_with_padding, --make-vocab-size-divisible-by;
    # workload.vocab); null: the tokenizer's vocabulary as it is (Hugging Face-based stacks)
    "vocab_divisible_by": _nullable(_int),
    # the run config's rule for Megatron-core's defer_embedding_wgrad_compute where the run
    # does not set it (``catalog.framework_rules.deferred_microbatches``): every micro-batch's
    # output-layer weight gradient deferred to the pipeline drain where pp > 1, the rank's
    # share of the global batch is at most ``max_local_batch`` and the micro-batch is
    # ``micro_batch_size`` sequences (MLPerf GPT-3 v4.0 / v4.1 conf/custom.yaml); null: none
    "embedding_wgrad_deferral": _nullable(_deferral_rule),
    # the framework has Megatron-core's defer_embedding_wgrad_compute at all (NVIDIA/Megatron-LM
    # f16be74ff3, 2024-04-03): false refuses a run that states it on (catalog.run_framework.
    # deferral_settings); null: not recorded (allowed)
    "output_wgrad_deferral": _nullable(_bool),
    # the framework has Megatron-core's ``cuda_graph_scope`` (CUDA graphs of parts of a layer:
    # full / attn from NVIDIA/Megatron-LM@a606486ece, 2025-03-18, first in core_v0.12.0; the
    # later scopes: ``moe_graph_scopes``): false refuses a stated scope as the config is read
    # (catalog.defaults.apply_framework); null: not recorded (allowed)
    "graph_scopes": _nullable(_bool),
    # the precision (fp8 / MXFP8 / NVFP4) and MoE mechanisms: catalog.framework_features_fp8_moe
    **FP8_MOE_FEATURES,
}

#: keys an entry may leave out even when it is the first one.
OPTIONAL_KEYS = {"apex_distributed_adam", "looped_bfs_schedule", "embedding_wgrad_deferral",
    "output_wgrad_deferral", "graph_scopes", "remat_dce", "onehot_embedding", "vocab_divisible_by", "mtp_uneven_pipeline", "attention_by_arch", "hybrid_shard", "zero_stage", "zero_stage_engines",
    "zero_stages", "overlap_param_gather", "overlap_grad_reduce_setting",
    "zero_stage_releases", "pipeline_parallel", "tensor_parallel", "context_parallel",
    "pipeline_partition_method", "expandable_segments", "fp8_param_gather",
    "fp8_cast_before_gather", "fp8_non_tn_layouts", "fp8_norm_quantize",
    "mxfp8_swizzle_weights", "mxfp8_swizzle_activations", "mxfp8_swizzle_gathered",
    "mla_down_proj_duplicated", "fp8_dtensor_tp", "fp8_weight_transpose_copy", "sdpa_by_arch",
    "sdpa_backends", "moe_gate_fp32", "moe_shared_combine_overlap",
    "modules", "cpu_offloading", "moe_probs_in_expert", "moe_fp8_padding",
    "moe_deepep_permute_pads", "grouped_gemm", "grouped_gemm_by_arch", "moe_experts", "moe_te_permute_maps",
    "moe_router_force_balance", "moe_etp_unset_is_tp", "moe_ep_stride_tp_cp",
    "delay_wgrad_compute",
    "moe_shared_experts_attn_node",
    "moe_recipe_options", "run_options", "tuned_options", "cp_comm_type", "scaled_rope_unfused",
    "complex_rope", "eager_glu", "fused_norm_modules", "fp32_where_scores", "qkv_relayout_copies", "fp32_grad_add",
    "unfused_grad_accumulation",
    "clip_unsharded_grads", "zero1_gather_copies", "p2p_tensor_metadata",
    "softmax_args_swapped", "megatron_batch_fn", "ds_loss_item_sync", "fsdp_pp_unsharded", "pp_unshard_window",
    "fp8_gather_needs_dp_shard",
    "fp8_gather_per_tensor_only",
    "fsdp_pp_sync_every_microbatch", "fsdp_moe_reduce_fp32", "fsdp2_reduce_scatter_wait",
    "dp_reduce_every_microbatch", "zero2_reduce_every_microbatch",
    "megatron_fsdp_unfused_wgrad", "te_weight_cache", "megatron_fsdp_16bit_params",
    "fsdp2_copies", "glu_offset_host_sync", "layer_scalar_syncs", "moe_act_compiled", "moe_bias_loop",
    "mla_eager_rope", "softcap_attention", "cudnn_sm100_head_dim_max", "cudnn_sm100_mla",
    "masked_window_scores", "unfused_sliding_window",
    "per_op_sac", "per_op_sac_reruns_cudnn",
    "compiled_loss", "shifted_logits_copy", "logits_freed_before_backward", "ce_shift_copy",
    "grads_set_to_none",
    "loss_parallel", "pipelining_buffers",
    "separate_qkv", "zero3_avg_scatter_grads", "zero3_persistent_regather", "params_16bit",
    "sdpa_repeat_kv",
    "unfused_repeat_kv", "softmax_fp32_saved", "xla_layers", "unscanned_layers", "cp_sdpa_ring", "cp_te_ring",
    "sp_gathered_gemm_inputs", "te_version", "torch_interleaved_warmup", "microbatch_group_size",
    "per_tensor_optimizer", "optimizer_impl", "precision_aware_optimizer", "moe_graph_scopes", "full_iteration_graph", "flash_unpad", "train_metric_losses",
    "grad_reduce_bf16_flag",
    "autocast_dtypes",
    "te_linear_mlp", "fp8_recompute_16bit", "fp8_module_scale_update", "fp8_amax_tp_async", "fp8_amax_tp_only",
    "ddp_nan_check",
    "ddp_nan_check_syncs", "ddp_grad_scale", "ddp_unbucketed_without_overlap", "ddp_param_buffer",
    "ddp_fp8_bucket_groups", "fp8_param_amax_all_reduce", "nvfp4_param_buffer",
    "tp_comm_overlap_method", "zero1_grad_reduce", "zero1_param_sync", "zero3_grad_reduce",
    "cross_entropy", "norm",
    "dp_buckets", "pipeline_microbatches", "pipeline_stages_per_rank", "batched_p2p",
    "p2p_overlap", "p2p_overlap_interleaved_only", "align_param_gather", "ub_gemm_all_sms",
    "ub_bulk_all_sms", "ub_rs_overlap",
    "checkpointed_fused_attention", "te_layer_spec", "megatron_unfused_ops", "noop_layer_clone",
    "te_unfused_attention", "moe_hybridep_num_sms",
    "kv_heads_split", "flex_dispatchers_two_ranks", "flex_backend_gpus", "ep_overlap_moe_nodes", "linear_bias_kernels",
    "linear_bias_grad_kernels", "gelu_gemm_epilogue"}
#: nested mappings a later entry merges key by key into the one before
MERGED_KEYS = {"grad_reduce_dtype", "attention_by_arch", "sdpa_by_arch",
               "grouped_gemm_by_arch"}
