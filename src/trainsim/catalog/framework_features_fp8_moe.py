"""The ``features`` keys of a framework profile that name precision (fp8, MXFP8, NVFP4) and
mixture-of-experts mechanisms, with their validators; ``catalog.framework_schema.FEATURES``
holds them beside the others. Each key names a mechanism, never a speed multiplier.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainsim.catalog.schema_checks import MOE_DISPATCHERS, _bool, _list_of, _nullable

FP8_MOE_FEATURES: dict[str, Callable[[Any], str | None]] = {
    "moe_dispatchers": _nullable(_list_of(MOE_DISPATCHERS, "MoE token dispatchers")),
    # fp8 under sequence parallelism: each rank casts its own rows of a column-parallel GEMM's
    # input (and of a row-parallel GEMM's output gradient) and all-gathers the fp8 data
    # (Transformer Engine Linear/LayerNormLinear/LayerNormMLP, v1.5..v2.8; workload.shard)
    "fp8_cast_before_gather": _nullable(_bool),
    # per-tensor fp8 quantizers write no transpose where the GPU's fp8 GEMMs take non-TN layouts
    # (sm100+): Transformer Engine >= 2.0 csrc quantizer.cpp ``columnwise_usage &&
    # !nvte_is_non_tn_fp8_gemm_supported()``; TE 1.x cast_transpose always writes it
    "fp8_non_tn_layouts": _nullable(_bool),
    # the norm of a norm-and-linear module quantizes its own output (TE LayerNormLinear and
    # LayerNormMLP: fp8 written by the norm under delayed scaling, amax computed by it under
    # current scaling, TE >= 2.7; workload.shard ``Shard.fp8_norm_quantize``)
    "fp8_norm_quantize": _nullable(_bool),
    # MXFP8 GEMM operands whose E8M0 scales Transformer Engine's GEMM call swizzles into the
    # layout cuBLASLt reads, one small kernel each, at every GEMM: the weights' (until TE 2.18
    # quantizes them into that layout), every activation's and gradient's (until TE 2.12's
    # quantizers write it), and those sequence parallelism all-gathers (TE 2.12-2.18 leave
    # them compact); workload.shard ``Shard.mxfp8_swizzled``
    "mxfp8_swizzle_weights": _nullable(_bool),
    "mxfp8_swizzle_activations": _nullable(_bool),
    "mxfp8_swizzle_gathered": _nullable(_bool),
    # fp8 tensor parallelism through DTensor float8 casts (torchao's Float8ColwiseParallel,
    # Float8RowwiseParallel, PrepareFloat8ModuleInput): every dynamic per-tensor cast of a
    # TP-sharded activation or gradient all-reduces its amax over TP, and a module's input is
    # cast once for all the projections that read it, compiled or not (workload.shard)
    "fp8_dtensor_tp": _nullable(_bool),
    # the dgrad's fp8 GEMM takes the row-major fp8 weight as its second operand, which
    # torch._scaled_mm wants column-major: a copy of the weight per backward (torchao
    # float8_ops.preprocess_addmm; workload.layers.backward_of)
    "fp8_weight_transpose_copy": _nullable(_bool),
    # routing probabilities applied inside the expert, the combine saving no token copies
    # (Megatron-core >= 0.12.1, "memory efficient token permutation")
    "moe_probs_in_expert": _nullable(_bool),
    # fp8 experts pad each expert's rows to the fp8 alignment with a copy in and out
    # (TEGroupedMLP's Fp8Padding/Fp8Unpadding); with the second, DeepEP's permute pads them
    "moe_fp8_padding": _nullable(_bool),
    "moe_deepep_permute_pads": _nullable(_bool),
    "moe_te_permute_maps": _nullable(_bool),  # TE >= 2.6 permute kernels (workload.moe_dispatch)
    "moe_router_force_balance": _nullable(_bool),  # random router logits (workload.moe_router)
    # an expert tensor parallelism the run leaves unset is the TP (Megatron-core >= 0.10
    # ModelParallelConfig: expert_tensor_parallel_size None -> tensor_model_parallel_size; 0.9
    # splits each expert over TP): validate.row_settings reads an empty etp cell so
    "moe_etp_unset_is_tp": _nullable(_bool),
    # the expert-parallel group is carved from the data-parallel ranks of one rank order
    # tp-cp-ep-dp-pp, stride TP x CP (Megatron-core 0.9); null/false: the experts' own order,
    # stride the expert TP (core >= 0.10; workload.moe_dispatch.ep_stride)
    "moe_ep_stride_tp_cp": _nullable(_bool),
    # the Megatron-core a run is built on computes the shared experts in combined 1F1B's
    # attention node (core_v0.16.0 on: fine_grained_callables.py submodule_attn_forward), not in
    # its MLP node (core_v0.14-v0.15 submodule_moe_forward); null: the MLP node (ep_pairs)
    "moe_shared_experts_attn_node": _nullable(_bool),
    # the framework turns its fp8 all-gather of FSDP units (``fp8_param_gather``) on only
    # where the data-parallel ranks shard the model (dp_shard > 1: torchtitan's Float8Handler);
    # a run sharded over CP alone gathers its weights in 16 bits (workload.fp8_gather)
    "fp8_gather_needs_dp_shard": _nullable(_bool),
    # the framework's fp8 all-gather of FSDP units exists for per-tensor scaling only (torchtitan:
    # Float8LinearConfig(enable_fsdp_float8_all_gather) for the default tensorwise converter, none
    # for a float8 recipe_name nor the MX converter): a block- or MX-scaled run gathers 16 bits
    "fp8_gather_per_tensor_only": _nullable(_bool),
    # Megatron-core's TE modules take is_first_microbatch: each 16-bit fp8 weight is cast into
    # TE's cached workspace once per iteration, in its first forward; fp8 parameters get their
    # transposes once per iteration, in the first backward before TE 1.8 (the te_version),
    # else the first forward (workload.te_weight_cache)
    "te_weight_cache": _nullable(_bool),
    # its own MoE router's gate GEMM runs under autocast to fp32 (workload.moe_titan): the
    # input and weight cast up, an fp32 GEMM (no TF32), the gradients cast back
    "moe_gate_fp32": _nullable(_bool),
    # the token dispatchers whose combine its own MoE layer issues asynchronously before the
    # shared experts and waits for after them: they hide it in the forward, not in the
    # backward (workload.moe_titan.shared_beside_combine)
    "moe_shared_combine_overlap": _nullable(_list_of(MOE_DISPATCHERS, "MoE token dispatchers")),
    # the experts' activation is torch.compile'd with its clamp (no eager clamp before it)
    "moe_act_compiled": _nullable(_bool),
    # the experts' biases (model.add_bias_linear) as NeMo Automodel adds them
    # (workload.moe_block; nemo_automodel/components/moe/layers.py @ 89e3a9fd): with the DeepEP
    # dispatcher (GroupedExpertsDeepEP) the grouped GEMMs have no bias epilogue, so fc1's and
    # fc2's biases are added one expert at a time (fc2's weighted by the routing probabilities;
    # workload.elementwise expert_fc*_bias); with any other dispatcher (GroupedExperts) both
    # are added inside the compiled activation, no bias kernel at all, which also drops the
    # separate fc2 bias kernel a multi_stream experts implementation adds otherwise
    "moe_bias_loop": _nullable(_bool),
    # Megatron-core's later CUDA-graph scopes ``mlp`` / ``moe`` / ``moe_router`` /
    # ``moe_preprocess`` and the Mamba layers' ``mamba`` (transformer/enums.py ``CudaGraphScope``,
    # added 2025-12-30 by 2b343d739f, first in core_v0.16.0; core_v0.15.0's ``cuda_graph_scope``
    # is a string: full, attn, full_iteration); false: a config naming them is refused; null:
    # not recorded (allowed)
    "moe_graph_scopes": _nullable(_bool),
    # the whole-iteration CUDA graph, ``cuda_graph_scope: full_iteration`` (NVIDIA/Megatron-LM
    # e7c55de99e, 2025-08-01, first in core_v0.14.0: megatron/training/full_cuda_graph.py);
    # false refuses a config naming it (catalog.run_framework.graph_scopes_problem, robust60
    # lead 1); null: not recorded (allowed)
    "full_iteration_graph": _nullable(_bool),
    # fp8 delayed scaling updates each Transformer Engine module's amax history and scales at
    # the start of its forward and of its backward (TE <= 1.5; ``workload.layers``)
    "fp8_module_scale_update": _nullable(_bool),
    # a full recompute runs outside the framework's fp8 context: torch's checkpoint re-runs
    # each block in the backward, where Transformer Engine reads fp8 as off, so the recompute
    # and the backward GEMMs run in 16 bits (``workload.recompute.recompute_drops_fp8``)
    "fp8_recompute_16bit": _nullable(_bool),
    # fp8 delayed scaling's amax reduction kept to the TP group and asynchronous (TE < 1.6 with
    # NVTE_DP_AMAX_REDUCE_INTERVAL=0, NVTE_ASYNC_AMAX_REDUCTION=1): no stage-wide blocking
    # all-reduce per chunk pass (``workload.elementwise.fp8_amax_reductions``)
    "fp8_amax_tp_async": _nullable(_bool),
    # fp8 delayed scaling's amax reduction over the tensor-and-context-parallel ranks only
    # (Megatron-core TransformerConfig ``tp_only_amax_red``), not the whole pipeline stage
    "fp8_amax_tp_only": _nullable(_bool),
    # Megatron-core's DDP under fp8 parameters: the fp8 weights' buffer bucketed alone, every
    # bucket of the other buffer grouped with its last (``workload.ddp_buckets.
    # fp8_bucket_groups``); null/false: one buffer
    "ddp_fp8_bucket_groups": _nullable(_bool),
    # Megatron-core's distributed optimizer under fp8_param_gather: after the step, one MAX
    # all-reduce of every fp8 weight's amax over the data-parallel group (core_v0.9-0.11
    # distrib_optimizer.py _update_fp8_scale_inv_and_amax; core_v0.12+ fp8_utils.
    # quantize_param_shard -> TE cast_master_weights_to_fp8): ``workload.fp8_gather.
    # amax_all_reduce_bytes``, ``optimizer_tasks.OptimizerTasks.amax_all_reduces``
    "fp8_param_amax_all_reduce": _nullable(_bool),
    # Megatron-core's DDP keeps NVFP4 weights (fp4_param_gather) packed, two per byte, in the
    # parameter buffer the distributed optimizer all-gathers (#4005, 2026-04-14, first in
    # core_v0.18.0: param_and_grad_buffer.py ``nvfp4_packed_numel``): ``workload.fp8_gather.
    # param_gather_width``; null/false: NVFP4 weights are gathered 16-bit
    "nvfp4_param_buffer": _nullable(_bool),
}
