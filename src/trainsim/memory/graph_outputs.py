"""What Transformer Engine's CUDA graphs of a Megatron-core MoE layer keep beyond the eager
layer: the partial graph's static outputs, held from the layer's forward until its backward.

With ``cuda_graph_scope`` naming ``moe_router`` (Megatron-core's layer scopes run on
``cuda_graph_impl="transformer_engine"`` only), one graph per layer and micro-batch covers the
attention, the pre-MLP norm, the router, the shared experts (unless overlapped) and, with
``moe_preprocess``, the flex dispatcher's metadata; the dispatch, the routed experts and the
combine run eagerly. The graph returns its intermediate tensors as outputs
(NVIDIA/Megatron-LM@2edffadb, the commit Megatron-Bridge v0.4.2 pins:
megatron/core/transformer/transformer_layer.py ``_forward_mlp``, "return
list(mlp_output_with_bias) + [residual]" while capturing; moe/moe_utils.py
``MoECudaGraphPartialCaptureSignal.get_early_return_outputs``: the hidden states, the
routing probabilities (and the routing map when only the router is captured), the token
dispatcher's ``cudagraph_attrs`` under ``moe_preprocess``, then the shared experts' output).

Transformer Engine captures every (layer, micro-batch) graph in the pipeline schedule's order
into one memory pool and, with ``_reuse_graph_input_output_buffers`` (which Megatron-core sets
from TE 2.7, transformer/cuda_graphs.py ``get_make_graphed_callables_kwargs``), lets go of a
forward graph's static outputs only when that micro-batch's backward graph of the layer is
captured (TransformerEngine@v2.14 transformer_engine/pytorch/graph.py
``make_graphed_callables``: "Weak ref the static outputs of the forward pass of this backward.
It's no longer needed after the corresponding backward graph is built up"). Their blocks stay
the pool's for that whole span, every iteration the graphs replay: they live as long as the
layer's saved activations. Eagerly, most of them are saved anyway (the residual is the pre-MLP
norm's saved input, the hidden states the router's and the shared experts' GEMM input; the
router-only scope's routing map is the one the fused router saves for its backward, a bool
``[tokens, experts]`` that the activation model leaves out, eager or graphed), but these are
not:

- the shared experts' output, which the eager layer adds to the combined expert output and
  frees (moe_layer.py ``postprocess``);
- the routing probabilities the dispatch reads: the router's ``[tokens, experts]`` output
  (route only; flex HybridEP's ``token_probs`` is the same tensor reshaped,
  ``_initialize_metadata`` expanding it over TP, ``_HybridEPManager.setup_metadata``), or DeepEP's
  ``torch.topk`` of it, ``token_probs`` and int64 ``token_indices`` (``_DeepepManager.
  setup_metadata``); eagerly they live only until the dispatch has sent them;
- with the all-to-all dispatcher's preprocess captured, its locally permuted token copies and
  probabilities, which eagerly live only until the all-to-all has sent them.

- with HybridEP's preprocess captured and tp > 1, its routing map expanded over the TPxEP
  domain, a new bool ``[tokens, tp * experts]`` (``_initialize_metadata``'s ``.contiguous()``
  copy; with tp 1 the expansion is a view of the router's own map), one of its
  ``cudagraph_attrs`` (token_dispatcher.py L1381);
- with the all-to-all preprocess captured, shared-expert overlap and sequence parallelism, the
  shared experts' gathered 16-bit input ``cached_fc1_input`` (shared_experts.py
  ``pre_forward_comm``, L163-166; token_dispatcher.py L469 adds it to ``cudagraph_attrs``):
  eagerly TE's fc1 saves that very tensor in 16-bit training, but under fp8 it saves its fp8
  cast and the 16-bit copy is freed once fc1 has read it (without sequence parallelism
  ``copy_to_tensor_model_parallel_region`` returns the input itself).

The ``moe_router`` and ``moe_preprocess`` scopes exist from Megatron-core core_v0.16.0
(transformer/enums.py ``CudaGraphScope``; core_v0.15.0's ``cuda_graph_scope`` is a string of
"full", "attn" or "full_iteration"). Small integer metadata (split sizes, the all-to-all's
permutation map) is left out.
"""

from __future__ import annotations

from trainsim.config import RunConfig

ROUTER_PROB_BYTES = {None: 2, "fp32": 4, "fp64": 8}
"""Bytes of a routing probability: Megatron-core's ``moe_router_dtype`` (None: "no changes for
dtype", the run's 16-bit dtype)."""


def moe_graph_output_bytes(cfg: RunConfig) -> float:
    """Bytes one MoE layer's partial CUDA graph keeps, per micro-batch in flight on a rank,
    beyond what the eager layer saves for its backward (module docstring); 0 unless the run
    captures the router (``training.cuda_graphs`` with ``moe_router`` in ``cuda_graph_scope``)."""
    m, p, tr = cfg.model, cfg.parallel, cfg.training
    if not tr.cuda_graphs or "moe_router" not in tr.cuda_graph_scope:
        return 0.0
    T = tr.micro_batch_size * tr.seq_length / p.cp
    tokens = T / p.tp if p.sequence_parallel else T  # the MoE block's local tokens
    out = 0.0
    if m.moe_shared_expert_intermediate_size and not p.moe_shared_expert_overlap:
        # the shared experts' 16-bit output, [tokens, hidden] (row-parallel fc2: reduce-scattered
        # under sequence parallelism, all-reduced without)
        out += tokens * m.hidden_size * 2
    prob = ROUTER_PROB_BYTES[p.moe_router_dtype]
    experts = (m.num_experts or 0) * p.tp  # the flex dispatchers' TPxEP domain
    preprocess = "moe_preprocess" in tr.cuda_graph_scope
    dispatcher = p.moe_token_dispatcher_type
    if preprocess and dispatcher == "deepep":
        out += tokens * p.tp * m.moe_router_topk * (prob + 8)  # token_probs, token_indices
    elif preprocess and dispatcher == "hybridep":
        out += tokens * experts * prob
        if p.tp > 1:  # the expanded bool routing map, a copy only when tp > 1
            out += tokens * experts
    elif preprocess and dispatcher == "alltoall":
        # the locally permuted 16-bit token copies and their probabilities, the all-to-all's
        # inputs (``MoEAlltoAllTokenDispatcher.dispatch_preprocess`` returns them; its
        # ``cudagraph_attrs`` add the routing map the fused router keeps and per-expert counts)
        out += tokens * m.moe_router_topk * (2 * m.hidden_size + prob)
        if (m.moe_shared_expert_intermediate_size and p.moe_shared_expert_overlap
                and p.sequence_parallel and p.tp > 1 and tr.dtype == "fp8"):
            # the shared experts' gathered 16-bit input, which fp8's fc1 does not save
            out += tokens * p.tp * m.hidden_size * 2
    else:  # the router's own [tokens, experts] probabilities
        out += tokens * (m.num_experts or 0) * prob
    return out


def pre_mlp_norm_recomputed(cfg: RunConfig) -> bool:
    """Whether ``recompute_modules`` ``layernorm`` still recomputes an MoE layer's pre-MLP norm
    under this run's CUDA graphs. Megatron-core switches it off where the norm's output is a
    static graph output that cannot be freed (Megatron-LM@2edffadb transformer/
    transformer_layer.py L415-452 ``can_recompute_pre_mlp_layernorm_for_cudagraph``): with
    ``moe_router`` captured it stays on only when ``moe_preprocess`` is captured with the
    all-to-all dispatcher, and never with shared-expert overlap (the shared experts read the
    norm's output outside the graph)."""
    p, tr = cfg.parallel, cfg.training
    if not tr.cuda_graphs or "moe_router" not in tr.cuda_graph_scope:
        return True
    if cfg.model.moe_shared_expert_intermediate_size and p.moe_shared_expert_overlap:
        return False
    return "moe_preprocess" in tr.cuda_graph_scope and p.moe_token_dispatcher_type == "alltoall"
