"""A Megatron-core MoE layer's partial CUDA graph (cuda_graph_scope moe_router[, moe_preprocess])
keeps its static outputs from the layer's forward to its backward (TransformerEngine v2.14
graph.py, Megatron-LM@2edffadb moe_utils.py get_early_return_outputs): beyond the eager
layer, the shared experts' output and the routing probabilities (memory.graph_outputs),
counted here by hand."""

from __future__ import annotations

import dataclasses

import pytest

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.memory.estimate import activation_bytes_per_layer, estimate_stage_memory
from trainsim.memory.graph_outputs import moe_graph_output_bytes

H, E, K, SEQ = 1024, 64, 4, 2048
ROUTER = ("attn", "moe_router")
PREPROCESS = ("attn", "moe_router", "moe_preprocess")


def _cfg(scope: tuple[str, ...] = PREPROCESS, dispatcher: str = "hybridep", tp: int = 1,
         shared: bool = True, router_dtype: str | None = "fp32", graphs: bool | None = None,
         **par) -> RunConfig:
    """A 4-layer MoE (64 experts, top-4, a shared expert unless told) on 16 H100, EP 4."""
    extra = {"moe_shared_expert_intermediate_size": 1024} if shared else {}
    model = ModelConfig(name="m", hidden_size=H, num_layers=4, num_attention_heads=16,
                        num_kv_heads=4, ffn_hidden_size=2048, vocab_size=32000,
                        activation="swiglu", normalization="rmsnorm", position_embedding="rope",
                        add_bias_linear=False, num_experts=E, moe_router_topk=K,
                        moe_ffn_hidden_size=512, **extra)
    training = TrainingConfig(global_batch_size=16, micro_batch_size=1, seq_length=SEQ,
                              framework="megatron-bridge", framework_version="26.02",
                              cuda_graphs=bool(scope) if graphs is None else graphs,
                              cuda_graph_scope=scope)
    parallel = ParallelConfig(tensor_model_parallel_size=tp, expert_model_parallel_size=4,
                              sequence_parallel=tp > 1, moe_token_dispatcher_type=dispatcher,
                              moe_router_dtype=router_dtype, **par)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def test_hybridep_preprocess_keeps_shared_output_and_dense_probs():
    """HybridEP: the shared experts' bf16 output [tokens, h] and token_probs [tokens, experts]
    in the router's fp32."""
    assert moe_graph_output_bytes(_cfg()) == SEQ * (2 * H + 4 * E)


def test_deepep_preprocess_keeps_topk_probs_and_indices():
    """DeepEP's setup_metadata: torch.topk of the probabilities, fp32 values and int64 indices."""
    assert moe_graph_output_bytes(_cfg(dispatcher="deepep")) == SEQ * (2 * H + K * (4 + 8))


def test_alltoall_preprocess_keeps_the_permuted_tokens():
    """The all-to-all dispatcher's preprocess returns the locally permuted 16-bit token copies
    and their probabilities, the all-to-all's inputs."""
    assert moe_graph_output_bytes(_cfg(dispatcher="alltoall")) == \
        SEQ * (2 * H + K * (2 * H + 4))


def test_router_only_keeps_the_routers_probs_in_its_dtype():
    """Only the router captured: its [tokens, experts] probabilities, 16-bit where
    moe_router_dtype is unset."""
    assert moe_graph_output_bytes(_cfg(scope=ROUTER, router_dtype=None)) == \
        SEQ * (2 * H + 2 * E)


def test_overlapped_shared_experts_are_not_a_graph_output():
    """moe_shared_expert_overlap runs the shared experts beside the all-to-all, outside the
    router graph; a model with no shared expert has no such output."""
    overlapped = _cfg(scope=ROUTER, dispatcher="alltoall", moe_shared_expert_overlap=True)
    assert moe_graph_output_bytes(overlapped) == SEQ * 4 * E
    assert moe_graph_output_bytes(_cfg(shared=False)) == SEQ * 4 * E


def test_sequence_parallel_splits_tokens_and_flex_spans_tp_times_experts():
    """TP 2 with SP: each rank's MoE block sees 1/2 of the tokens; HybridEP's token_probs are
    expanded over the TPxEP domain, [tokens, tp * experts], and so is its bool routing map, a
    copy once tp > 1 (token_dispatcher.py _initialize_metadata, cudagraph_attrs L1381)."""
    assert moe_graph_output_bytes(_cfg(tp=2)) == SEQ / 2 * (2 * H + 4 * 2 * E + 2 * E)


def test_alltoall_overlap_under_fp8_sp_keeps_the_shared_experts_gathered_input():
    """All-to-all preprocess with shared-expert overlap, TP 2 and SP: the shared experts'
    sequence-parallel gather (cached_fc1_input, [SEQ, h] 16-bit) is a graph output; eagerly
    fc1 saves that same tensor in bf16, so only fp8 (which saves its fp8 cast) adds it."""
    base = {"dispatcher": "alltoall", "tp": 2, "moe_shared_expert_overlap": True}
    bf16 = moe_graph_output_bytes(_cfg(**base))
    assert bf16 == SEQ / 2 * K * (2 * H + 4)
    fp8 = _cfg(**base)
    fp8 = dataclasses.replace(fp8, training=dataclasses.replace(fp8.training, dtype="fp8"))
    assert moe_graph_output_bytes(fp8) - bf16 == SEQ * H * 2


def test_no_router_graph_keeps_nothing_more():
    """Without moe_router in the scope (attention only, whole-layer graphs or none) the graph's
    outputs are tensors the eager layer saves anyway."""
    for cfg in (_cfg(scope=("attn",)), _cfg(scope=(), graphs=True), _cfg(scope=())):
        assert moe_graph_output_bytes(cfg) == 0.0


def test_only_moe_layers_carry_it_and_the_stage_peak_grows_by_it_per_layer_in_flight():
    """activation_bytes_per_layer adds it to an MoE layer only; a stage's activations grow by
    it times the MoE layers in flight (pp 1: every layer of the one micro-batch)."""
    with_graphs, without = _cfg(), _cfg(scope=("attn",))
    extra = SEQ * (2 * H + 4 * E)
    for moe, added in ((True, extra), (False, 0.0)):
        assert activation_bytes_per_layer(with_graphs, moe=moe) - \
            activation_bytes_per_layer(without, moe=moe) == pytest.approx(added)
    grown = estimate_stage_memory(with_graphs, 0).activations - \
        estimate_stage_memory(without, 0).activations
    assert grown == pytest.approx(4 * extra)


def test_router_graph_keeps_the_pre_mlp_norm_unless_alltoall_preprocess_without_overlap():
    """Megatron-core (transformer_layer.py can_recompute_pre_mlp_layernorm_for_cudagraph) turns
    off the pre-MLP norm's recompute under a moe_router graph unless moe_preprocess is captured
    with the all-to-all dispatcher and the shared experts do not overlap: ``layernorm`` then
    no longer frees the router's 16-bit input (bf16 here: SEQ * H * 2 per MoE layer)."""
    ln = {"recompute": "selective", "recompute_modules": ("layernorm",)}
    cases = (({"dispatcher": "hybridep"}, True), ({"dispatcher": "deepep"}, True),
             ({"dispatcher": "alltoall"}, False),
             ({"dispatcher": "alltoall", "moe_shared_expert_overlap": True}, True))
    for par, kept in cases:
        graphed, eager = _cfg(**par, **ln), _cfg(scope=("attn",), **par, **ln)
        grown = activation_bytes_per_layer(graphed, moe=True) - \
            activation_bytes_per_layer(eager, moe=True)
        assert grown == pytest.approx(moe_graph_output_bytes(graphed) + kept * SEQ * H * 2), par
        assert activation_bytes_per_layer(graphed, moe=False) == \
            activation_bytes_per_layer(eager, moe=False)


def test_moe_router_scope_exists_from_megatron_core_0_16_only():
    """CudaGraphScope moe_router / moe_preprocess arrived in Megatron-LM 2b343d739f
    (2025-12-30), first released in core_v0.16.0 (core_v0.15.0's cuda_graph_scope is a string:
    full, attn, full_iteration): an older release refuses the scope in one line."""
    import trainsim
    from trainsim.errors import ConfigError

    def run(framework, version):
        return trainsim.run_config_from_dict({
            "model": {"preset": "qwen3-30b-a3b"},
            "parallel": {"expert_model_parallel_size": 8, "distributed_optimizer": True},
            "training": {"global_batch_size": 64, "seq_length": 4096, "framework": framework,
                         "framework_version": version, "cuda_graphs": True,
                         "cuda_graph_scope": "attn;moe_router"},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    for framework, old, new in (("megatron-core", "0.15", "0.16"),
                                ("megatron-bridge", "25.11", "26.02"),
                                ("megatron-lm", "2025-12-07", "2026-01-16")):
        with pytest.raises(ConfigError, match="moe_router graph scope"):
            run(framework, old)
        assert "moe_router" in run(framework, new).training.cuda_graph_scope
    # the scope gate opens on the introducing commit's date (2b343d739f, 2025-12-30), reads
    # the scope case-blind as Megatron-core's parser does, and names that commit; NeMo's and
    # MLPerf's NeMo entries all pin a Megatron-core before it
    with pytest.raises(ConfigError, match="2b343d739f"):
        run("megatron-lm", "2025-12-29")
    assert "moe_router" in run("megatron-lm", "2025-12-31").training.cuda_graph_scope
    for framework, version in (("nemo", "25.04"), ("mlperf-nemo", "5.1")):
        with pytest.raises(ConfigError, match="moe_router graph scope"):
            run(framework, version)
    # NeMo 24.07 pins a Megatron-core before any cuda_graph_scope (profile feature graph_scopes)
    with pytest.raises(ConfigError, match="has no cuda_graph_scope"):
        run("nemo", "24.07")


def test_moe_graph_scope_gate_reads_the_scope_case_blind():
    """'attn;MOE_ROUTER' is the moe_router scope (graph_scope_checked lower-cases it): an
    older Megatron-core refuses it as it refuses the lower-case spelling."""
    import trainsim
    from trainsim.errors import ConfigError
    for scope in ("attn;MOE_ROUTER", ["attn", "Moe_Router"]):
        with pytest.raises(ConfigError, match="moe_router graph scope"):
            trainsim.run_config_from_dict({
                "model": {"preset": "qwen3-30b-a3b"},
                "parallel": {"expert_model_parallel_size": 8, "distributed_optimizer": True},
                "training": {"global_batch_size": 64, "seq_length": 4096,
                             "framework": "megatron-core", "framework_version": "0.15",
                             "cuda_graphs": True, "cuda_graph_scope": scope},
                "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
