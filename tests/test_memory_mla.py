"""DeepSeek-V3 memory as Megatron-core (NVIDIA/Megatron-LM@2edffadb, Megatron-Bridge v0.4.2's pin)
and its MoE dispatchers allocate it, by hand (issue 16, acceptance 2): what the MLA projections
save (memory.mla), HybridEP's buffer (memory.allocator), and the MTP stage's word embedding
(memory.params.stage_param_split), saved inputs and logits (memory.mtp)."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.memory.allocator import context_bytes, hybridep_buffer_bytes
from trainsim.memory.estimate import _loss_temporary, activation_bytes_per_layer
from trainsim.memory.mla import mla_attention_bytes
from trainsim.memory.mtp import loss_logit_sets, mtp_head_bytes
from trainsim.memory.params import stage_param_split
from trainsim.model.counts import layer_expert_params, mtp_params

T = 4096  # tokens of one micro-batch
X = 1 + 1 / 32  # MXFP8: a byte per element and an E8M0 scale per 32
H, Q_LORA, KV_LORA = 7168, 1536, 512
QKV_PER_HEAD = 2 * (2 * 128 * 192 + 128 * 128)  # per-head Q, K (192 wide) and V (128), 16-bit


def ds(framework="megatron-bridge", modules=None, dtype="fp8", **parallel):
    p = {"pp": 4, "ep": 64, "distributed_optimizer": True, "recompute": "none",
         "pipeline_model_parallel_layout": "balanced", **parallel}
    if modules is not None:
        p.update(recompute="selective", recompute_modules=list(modules))
    training = {"global_batch_size": 4096, "seq_length": T, "dtype": dtype}
    if framework:
        training.update(framework=framework, framework_version="26.04")
    if dtype == "fp8":
        training["fp8_recipe"] = "mxfp8"
    return trainsim.run_config_from_dict({
        "model": {"preset": "deepseek-v3"}, "parallel": p, "training": training,
        "cluster": {"gpu": "gb200", "num_gpus": 256, "gpus_per_node": 64}})


def test_mla_projections_keep_their_own_fp8_copies():
    """Per token, no recompute: core attention's per-head Q, K, V (131,072 B); the two latents
    in 16-bit for the up-projections' norms (2 x 2,048); those norms' outputs, the fp8 inputs of
    the up-projections' weight gradients (TELayerNormColumnParallelLinear saves ``ln_out``:
    X x 2,048); and the second down-projection's own fp8 cast of the normed hidden state (two
    TELinear modules, X x 7,168)."""
    got = mla_attention_bytes(ds(), "none", X, 1)
    assert got == pytest.approx(QKV_PER_HEAD + 2 * 2048 + X * 2048 + X * H)
    assert got == pytest.approx(144_672)


@pytest.mark.parametrize("modules, dropped", [
    (("layernorm",), X * H),  # both down-projections save the discarded norm output
    (("mla_up_proj",), X * (Q_LORA + KV_LORA)),  # the up-projections run inside the checkpoint
    (("mla_up_proj", "layernorm", "moe_act"), X * (H + Q_LORA + KV_LORA)),
])
def test_selective_recompute_drops_the_copies_it_covers(modules, dropped):
    full = mla_attention_bytes(ds(), "none", X, 1)
    assert mla_attention_bytes(ds(modules=modules), "selective", X, 1) == \
        pytest.approx(full - dropped)


def test_bf16_down_projections_share_the_norm_output():
    """In 16-bit both down-projections save the one norm output (the layer counts it once), and
    the up-projections' ``ln_out`` is 16-bit."""
    got = mla_attention_bytes(ds(dtype="bf16"), "none", 2.0, 1)
    assert got == pytest.approx(QKV_PER_HEAD + 2 * 2048 + 2 * 2048)


def test_sequence_parallel_splits_the_latents():
    """Under sequence parallelism the latents are [s / TP, b, rank] (Megatron-LM@2edffadb
    multi_latent_attention.py ``_qkv_down_projection``): with TP 2 the norms' 16-bit inputs
    and outputs halve, the per-head Q, K, V halve by heads."""
    cfg = ds(dtype="bf16", tp=2, sequence_parallel=True)
    assert mla_attention_bytes(cfg, "none", 2.0, 2) == \
        pytest.approx(QKV_PER_HEAD / 2 + 2 * 2048 / 2 + 2 * 2048 / 2)


def test_other_frameworks_keep_the_former_count():
    """Without Megatron-core's TE modules (no framework named) only the per-head tensors and the
    16-bit latents, as before."""
    assert mla_attention_bytes(ds(framework=None), "none", X, 1) == \
        pytest.approx(QKV_PER_HEAD + 2 * 2048)


def test_the_layer_grows_by_the_copies():
    """The whole MoE layer, through activation_bytes_per_layer: T x (X x 7,168 + X x 2,048)
    more under the Megatron-Bridge profile than with no framework named, the MoE block being
    the same Megatron-core 0.13+ block in both."""
    diff = activation_bytes_per_layer(ds(), moe=True) - \
        activation_bytes_per_layer(ds(framework=None), moe=True)
    assert diff == pytest.approx(T * X * (H + Q_LORA + KV_LORA))


def test_hybridep_buffer_is_sized_for_every_token_of_the_domain():
    """EP 64 inside one 64-GPU NVLink domain, 4,096 tokens per rank: the worst case is
    4,096 x 64 = 262,144 tokens, each with a 16-bit row of 7,168, an fp32 probability for each
    of the 256 experts of the domain and an fp32 scale per 128 elements (56):
    262,144 x (14,336 + 1,024 + 224) = 4,085,252,096 bytes (3.80 GiB), outside PyTorch's
    allocator."""
    want = 262_144 * (2 * H + 4 * 256 + 4 * 56)
    assert want == 4_085_252_096
    assert hybridep_buffer_bytes(ds(moe_token_dispatcher_type="hybridep")) == want
    # (Megatron-Bridge refuses DeepEP on GB200: no framework named for that case)
    assert hybridep_buffer_bytes(ds(framework=None, moe_token_dispatcher_type="deepep")) == 0
    assert context_bytes(ds(moe_token_dispatcher_type="hybridep")) - \
        context_bytes(ds(moe_token_dispatcher_type="alltoall")) == want


def test_hybridep_probabilities_cover_the_experts_of_one_domain():
    """EP 64 over 8-GPU domains: 8 ranks x 4 local experts = 32 probabilities per token, still
    the tokens of all 64 ranks (ranks per domain x domains)."""
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": "deepseek-v3"},
        "parallel": {"pp": 4, "ep": 64, "moe_token_dispatcher_type": "hybridep",
                     "pipeline_model_parallel_layout": "balanced"},
        "training": {"global_batch_size": 4096, "seq_length": T},
        "cluster": {"gpu": "b200-sxm-180gb", "num_gpus": 256, "gpus_per_node": 8}})
    assert hybridep_buffer_bytes(cfg) == 262_144 * (2 * H + 4 * 32 + 4 * 56)


def test_the_mtp_stage_holds_its_own_word_embedding():
    """Megatron-core's GPTModel builds a LanguageModelEmbedding on every rank with
    ``pre_process or mtp_process`` (gpt_model.py@2edffadb): with pipelining the last stage,
    which runs the MTP layer, holds a second 129,280 x 7,168 word embedding (untied model);
    without pipelining the one embedding serves both."""
    def last(mtp, pp):
        cfg = trainsim.run_config_from_dict({
            "model": {"preset": "deepseek-v3", "mtp_num_layers": mtp},
            "parallel": {"pp": pp, "ep": 8, "pipeline_model_parallel_layout": "balanced"},
            "training": {"global_batch_size": 256, "seq_length": T},
            "cluster": {"gpu": "b200-sxm-180gb", "num_gpus": 64, "gpus_per_node": 8}})
        dense, _ = stage_param_split(cfg, pp - 1)
        m = cfg.model
        return dense - (mtp_params(m) - mtp * layer_expert_params(m, m.num_layers - 1))

    assert last(1, 4) - last(0, 4) == 129_280 * 7168
    assert last(1, 1) == pytest.approx(last(0, 1))


def test_mtp_depth_keeps_its_norms_projection_and_head_inputs():
    """Per MTP depth and token (multi_token_prediction.py@2edffadb): enorm's and hnorm's 16-bit
    inputs (2 + 2 bytes x h), eh_proj's fp8 cast of the 2h-wide concatenation (2X), the final
    norm's input and the shared output layer's input (2 + 2): (8 + 2X) x 7,168 per token."""
    want = T * H * (8 + 2 * X)
    assert mtp_head_bytes(ds(), X) == pytest.approx(want)
    assert mtp_head_bytes(ds(), X) == pytest.approx(4096 * 72_128)


def test_the_last_stage_holds_the_mtp_logits_at_the_loss():
    """process_mtp_loss computes each depth's logits and TE cross-entropy before the main loss:
    at the backward two sets of 16-bit logits (2 bytes x 129,280 per token, gradient written in
    place) instead of one; the last stage's in-flight chunk also grows by mtp_head_bytes."""
    one = trainsim.run_config_from_dict({
        "model": {"preset": "deepseek-v3", "mtp_num_layers": 0},
        "parallel": {"pp": 4, "ep": 64, "pipeline_model_parallel_layout": "balanced"},
        "training": {"global_batch_size": 4096, "seq_length": T, "dtype": "fp8",
                     "fp8_recipe": "mxfp8", "framework": "megatron-bridge",
                     "framework_version": "26.04"},
        "cluster": {"gpu": "gb200", "num_gpus": 256, "gpus_per_node": 64}})
    assert loss_logit_sets(ds()) == 2 and loss_logit_sets(one) == 1
    assert _loss_temporary(ds()) == pytest.approx(2 * _loss_temporary(one))
    assert _loss_temporary(one) == pytest.approx(T * 129_280 * 2)
