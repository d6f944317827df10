"""Model-state layouts that tests/test_memory_state.py does not cover, each against a hand
calculation from the framework's source, and the NCCL communicators a pipeline rank holds
(issue 16, acceptance 3)."""

from __future__ import annotations

import pytest

import trainsim
from trainsim.memory import estimate_stage_memory
from trainsim.memory.allocator import (
    CUDA_CONTEXT_BYTES,
    NCCL_GROUP_COMM_BYTES,
    NCCL_PAIR_COMM_BYTES,
    communicator_sizes,
    freed_logits_hole,
)
from trainsim.memory.estimate import activation_bytes_per_layer
from trainsim.memory.params import stage_layer_params, stage_params
from trainsim.memory.state import DEEPSPEED_PREFETCH_BUCKET, DEEPSPEED_REDUCE_BUCKET, model_state
from trainsim.model.counts import layer_params


def cfg_of(*, impl="megatron", zero=0, do=False, dp=8, tp=1, pp=1, dtype="bf16",
           fp32_grads=True, optimizer="adam", preset="llama3-8b", tied=None, vpp=1):
    model = {"preset": preset}
    if tied is not None:
        model["tied_embeddings"] = tied
    return trainsim.run_config_from_dict({
        "model": model,
        "parallel": {"tp": tp, "pp": pp, "vpp": vpp, "zero_stage": zero,
                     "distributed_optimizer": do, "data_parallel_impl": impl},
        "training": {"global_batch_size": 16 * dp, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": dtype, "grad_reduce_in_fp32": fp32_grads, "optimizer": optimizer},
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": tp * pp * dp, "gpus_per_node": 8},
    })


def test_deepspeed_zero1_step_holds_three_gradient_partitions():
    """DeepSpeed v0.5.10 stage_1_and_2.py, ZeRO-1 with contiguous_gradients (its default): at
    the boundary the reduced gradients of the rank's partition are copied into one contiguous
    16-bit buffer (copy_grads_in_partition) and every per-parameter gradient is freed
    (zero_grad); step() flattens that partition (2 bytes) and casts it to fp32 (4 bytes) while
    averaged_gradients still holds the buffer: the step holds 2P + 12P/dp + (2 + 2 + 4) P/dp
    (+ the reduce bucket when dp > 1) and no per-parameter gradient."""
    dp = 4
    cfg = cfg_of(impl="deepspeed", zero=1, dp=dp, dtype="fp16", fp32_grads=False)
    P = stage_params(cfg, 0)
    s = model_state(cfg, 0)
    step = dict(s.step)
    assert step["contiguous 16-bit gradient partition"] == pytest.approx(2 * P / dp)
    assert step["flat 16-bit gradient partition"] == pytest.approx(2 * P / dp)
    assert step["fp32 gradient partition"] == pytest.approx(4 * P / dp)
    assert s.step_gradients == 0.0
    # one data-parallel rank (no reduction, no bucket): the step is the peak
    one = cfg_of(impl="deepspeed", zero=1, dp=1, dtype="fp16", fp32_grads=False)
    m = estimate_stage_memory(one, 0)
    P1 = stage_params(one, 0)
    assert m.peak_at == "optimizer step" and m.gradients == 0.0
    assert m.allocated == pytest.approx(2 * P1 + 12 * P1 + 8 * P1)


def test_deepspeed_zero3_layout():
    """DeepSpeed stage3.py: 16-bit parameters, 16-bit gradients, fp32 master and Adam moments
    all partitioned (2 + 2 + 12 bytes over dp); a layer's backward holds the submodule it
    gathered plus up to stage3_prefetch_bucket_size (5e7) elements prefetched; the step casts
    the gradient partition to fp32 (4 over dp); the reduce bucket (5e8 elements) persists."""
    dp = 8
    cfg = cfg_of(impl="deepspeed", zero=3, dp=dp)
    P = stage_params(cfg, 0)
    s = model_state(cfg, 0)
    assert (s.weights, s.gradients, s.optimizer) == pytest.approx((2 * P / dp, 2 * P / dp,
                                                                   12 * P / dp))
    m = cfg.model
    largest = max(m.hidden_size * (m.q_size + 2 * m.kv_size), 2 * m.ffn_size * m.hidden_size)
    gathered = dict(s.backward)["gathered submodule parameters (current + prefetched)"]
    assert gathered == pytest.approx(2 * (largest + DEEPSPEED_PREFETCH_BUCKET))
    assert dict(s.step)["fp32 gradient partition"] == pytest.approx(4 * P / dp)
    assert dict(s.persistent)["reduce bucket"] == pytest.approx(2 * DEEPSPEED_REDUCE_BUCKET)


def test_megatron_fsdp_layout():
    """Megatron-FSDP (megatron/core/distributed/fsdp, ``--use-megatron-fsdp`` with
    ``optim_grads_params``): 16-bit parameters, reduce-dtype gradients, fp32 main parameters and
    Adam moments all sharded over dp; a transformer layer is all-gathered for its compute with
    the next one prefetched (2 x 2 bytes per layer parameter) and its unsharded gradient is held
    until the reduce-scatter (4 bytes with fp32 reduction)."""
    dp = 8
    cfg = cfg_of(zero=3, dp=dp)
    P = stage_params(cfg, 0)
    s = model_state(cfg, 0)
    assert s.weights + s.gradients + s.optimizer == pytest.approx((2 + 4 + 12) * P / dp)
    layer = layer_params(cfg.model, 0)
    back = dict(s.backward)
    assert back["gathered layer parameters (current + prefetched)"] == pytest.approx(4 * layer)
    assert back["unsharded layer gradients"] == pytest.approx(4 * layer)
    half = model_state(cfg_of(zero=3, dp=dp, fp32_grads=False), 0)
    assert dict(half.backward)["unsharded layer gradients"] == pytest.approx(2 * layer)


@pytest.mark.parametrize(("optimizer", "moments"), [("adam", 8), ("lamb", 8), ("sgd", 4)])
def test_optimizer_states(optimizer, moments):
    """torch.optim.Adam / apex FusedAdam and apex FusedLAMB keep exp_avg and exp_avg_sq (two
    fp32 moments, 8 bytes); torch.optim.SGD with momentum keeps momentum_buffer (4 bytes).
    Megatron's distributed optimizer shards them with the fp32 main parameter over dp."""
    dp = 8
    cfg = cfg_of(do=True, dp=dp, optimizer=optimizer)
    P = stage_params(cfg, 0)
    assert model_state(cfg, 0).optimizer == pytest.approx((4 + moments) * P / dp)


def test_pipeline_ranks_hold_the_model_parallel_and_embedding_groups():
    """With pp > 1 every rank all-reduces the gradient norm in the model-parallel group
    (tp x pp; Megatron clip_grad_norm_fp32); with tied embeddings the first and last stage also
    hold the two-rank embedding group; the middle stages do not."""
    cfg = cfg_of(tp=2, pp=4, dp=2, preset="gpt3-175b")
    assert cfg.model.tied_embeddings
    assert sorted(communicator_sizes(cfg, 0)) == sorted([16, 2, 2, 8, 2])
    assert sorted(communicator_sizes(cfg, 1)) == sorted([16, 2, 2, 8])
    untied = cfg_of(tp=2, pp=4, dp=2, preset="gpt3-175b", tied=False)
    assert sorted(communicator_sizes(untied, 3)) == sorted([16, 2, 2, 8])
    ctx = estimate_stage_memory(cfg, 0).context - estimate_stage_memory(cfg, 1).context
    assert ctx == pytest.approx(NCCL_PAIR_COMM_BYTES)


def test_deepspeed_pipeline_engine_builds_its_own_groups():
    """DeepSpeed's PipelineParallelGrid (runtime/pipe/topology.py, v0.5.10) gathers stage outputs
    in its own slice group (the tp ranks again) and broadcasts the loss in the pipeline group:
    two more communicators than a Megatron rank of the same layout."""
    ds = cfg_of(impl="deepspeed", zero=1, tp=8, pp=4, dp=2, preset="gpt3-175b")
    mg = cfg_of(tp=8, pp=4, dp=2, preset="gpt3-175b")
    extra = sorted(communicator_sizes(ds, 1))
    for g in communicator_sizes(mg, 1):
        extra.remove(g)
    assert extra == [4, 8]
    sizes = communicator_sizes(ds, 1)  # world, tp, dp (2 ranks), tp x pp, slice, pp
    assert estimate_stage_memory(ds, 1).context == pytest.approx(
        CUDA_CONTEXT_BYTES + NCCL_GROUP_COMM_BYTES * (len(sizes) - 1) + NCCL_PAIR_COMM_BYTES)


def test_deepspeed_bf16_optimizer_keeps_fp32_gradients_of_every_parameter():
    """DeepSpeed's BF16 optimizer (runtime/bf16_optimizer.py, v0.6.3; ZeRO 0-1, bf16 with fp32
    gradient accumulation): bf16 parameters 2, bf16 gradients 2, a flat fp32 gradient of every
    parameter 4 (zeros_like the bf16 flat buffer), fp32 master partition and Adam moments 12
    over dp; the optimizer steps on views of the fp32 gradients, so the step adds nothing. The
    fp16 ZeRO-1 optimizer keeps 2 + 2 bytes and copies partitions at the step instead."""
    dp = 8
    cfg = cfg_of(impl="deepspeed", zero=1, dp=dp, dtype="bf16", fp32_grads=True)
    P = stage_params(cfg, 0)
    s = model_state(cfg, 0)
    assert (s.weights, s.gradients, s.optimizer) == pytest.approx((2 * P, 6 * P, 12 * P / dp))
    assert s.step == () and s.persistent == ()
    fp16 = model_state(cfg_of(impl="deepspeed", zero=1, dp=dp, dtype="fp16", fp32_grads=False), 0)
    assert fp16.gradients == pytest.approx(2 * P) and fp16.step


def _titan(pp: int, version: str = "2024-12"):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 1, "pp": pp, "zero_stage": 3, "data_parallel_impl": "fsdp2"},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "grad_reduce_in_fp32": True,
                     "framework": "torchtitan", "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp, "gpus_per_node": 8},
    })


def test_torchtitan_fsdp_under_pipeline_keeps_the_stage_unsharded():
    """torchtitan applies fully_shard(reshard_after_forward=False) when PP is on
    (parallelisms/parallelize_llama.py apply_fsdp, 2024-07 on), and torch.distributed.pipelining
    (stage.py backward_maybe_with_nosync) turns off gradient sync and reshard-after-backward
    until the last micro-batch, so FSDP2 keeps each unsharded 16-bit gradient as an fp32
    accumulator (_fsdp_param.py to_accumulated_grad_if_needed): through the schedule a rank
    holds its fp32 shard (4 P/dp), the stage's 16-bit parameters (2 P) and fp32 gradients (4 P);
    the step holds the fp32 gradient shard (4 P/dp) instead. Without PP the units reshard."""
    dp = 8
    cfg = _titan(pp=2)
    P = stage_params(cfg, 0)
    s = model_state(cfg, 0)
    assert s.weights == pytest.approx(4 * P / dp + 2 * P)
    assert s.gradients == pytest.approx(4 * P)
    assert s.optimizer == pytest.approx(8 * P / dp)
    assert s.step_gradients == pytest.approx(4 * P / dp)
    flat = model_state(_titan(pp=1), 0)
    P1 = stage_params(_titan(pp=1), 0)
    assert flat.weights == pytest.approx(4 * P1 / dp)
    assert flat.gradients == pytest.approx(4 * P1 / dp)
    # before torchtitan had pipeline parallelism (2024-04 profile) the mechanism is not selected
    old = model_state(_titan(pp=2, version="2024-05"), 0)
    assert old.gradients == pytest.approx(4 * P / dp)


def test_torchtitan_pipeline_reserves_the_gradient_shards_in_the_reduce_scatter_pool():
    """FSDP2 allocates each reduce-scatter output, the gradient shard the optimizer steps on, on
    its reduce-scatter stream (_fsdp_collectives.py: "The RS output is allocated in the RS
    stream", pytorch 01d66d21 and 010ae4a8); torchtitan's zero_grad at the start of the step
    (train.py @ 9dec370a) frees the shards into that stream's pool, which the default stream,
    where the unsharded fp32 accumulators live under PP, cannot reuse. Hand calculation for
    Llama 3 8B, PP 2 x FSDP 8, stage 0 (the embedding and 16 layers): the pool holds
    4 bytes x (V h + 16 x layer) / 8 at the backward's peak, on top of the all-gather pool; the
    allocated peak is unchanged. Without PP the shards are counted as allocated gradients."""
    cfg = _titan(pp=2)
    m = cfg.model
    hd = m.hidden_size // m.num_attention_heads
    layer = (2 * m.hidden_size * m.hidden_size + 2 * m.hidden_size * m.num_kv_heads * hd
             + 3 * m.hidden_size * m.ffn_hidden_size + 2 * m.hidden_size)
    assert len(cfg.virtual_stage_layers()[0]) == 16
    shard = (m.vocab_size * m.hidden_size + 16 * layer) / 8
    s = model_state(cfg, 0)
    assert s.grad_pool == pytest.approx(4 * shard)
    mem = estimate_stage_memory(cfg, 0)
    assert not mem.peak_at.startswith("optimizer")
    assert mem.reserved - mem.allocated == pytest.approx(s.side_pool + 4 * shard)
    # not without PP (the shards are allocated gradients there), nor where the profile's PP
    # units regather (2024-05: no fsdp_pp_unsharded)
    assert model_state(_titan(pp=1), 0).grad_pool == 0.0
    assert model_state(_titan(pp=2, version="2024-05"), 0).grad_pool == 0.0


def _moe(*, pp: int, vpp: int, overlap: bool):
    return trainsim.run_config_from_dict({
        "model": {"preset": "qwen3-30b-a3b"},
        "parallel": {"tp": 1, "pp": pp, "vpp": vpp, "ep": 8, "moe_overlap_ep_comm": overlap,
                     "distributed_optimizer": True},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096,
                     "dtype": "bf16"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp, "gpus_per_node": 8},
    })


@pytest.mark.parametrize(("pp", "vpp"), [(1, 1), (2, 2)])
def test_expert_a2a_overlap_keeps_one_more_forward_in_flight(pp, vpp):
    """Megatron-core's EP all-to-all overlap (overlap_moe_expert_parallel_comm) runs one
    micro-batch's forward beside another's backward, layer k beside layer L-1-k
    (model_chunk_schedule_plan.py ``run``), each backward freeing what the forward adds: one
    layer more than the plain schedule's peak, with or without pipelining. (With interleaving
    the extra warm-up forward of schedules.py get_pp_rank_microbatches takes the place of the
    plain 1F1B's forward ahead of each backward; without pipelining it is not a second
    micro-batch.)"""
    off = estimate_stage_memory(_moe(pp=pp, vpp=vpp, overlap=False), 0)
    on = estimate_stage_memory(_moe(pp=pp, vpp=vpp, overlap=True), 0)
    cfg = _moe(pp=pp, vpp=vpp, overlap=True)
    extra = activation_bytes_per_layer(cfg, moe=True)
    assert on.activations - off.activations == pytest.approx(extra, rel=0.02)


def _titan_layer(*, tp: int = 1, version: str = "2024-12", dtype: str = "bf16",
                 compile_: bool = False, recompute: str = "selective"):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": tp, "pp": 1, "zero_stage": 3, "data_parallel_impl": "fsdp2",
                     "sequence_parallel": tp > 1, "recompute": recompute},
        "training": {"global_batch_size": 16, "micro_batch_size": 2, "seq_length": 8192,
                     "dtype": dtype, "compile": compile_,
                     "framework": "torchtitan", "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })


@pytest.mark.parametrize("tp", [1, 2])
def test_torchtitan_per_op_sac_saves_every_other_matmul(tp):
    """torchtitan's selective AC 'op' (parallelize_llama.py no_recompute_list / _save_list and
    _custom_policy): the block keeps its input, the outputs of the 1st, 3rd, 5th and 7th mm
    (wq, wv, w1 and the row-parallel w2's full-width partial sum), SDPA's output and fp32
    log-sum-exp, and with sequence parallelism wo's and w2's reduce-scatter outputs. Llama 3
    8B per token: 2h/t + 2(q/t + kv/t + f/t + h) + 2q/t + 4 heads/t (+ 4h/t with SP)."""
    cfg = _titan_layer(tp=tp)
    m = cfg.model
    h, q, kv, f, heads = (m.hidden_size, m.q_size / tp, m.kv_size / tp, m.ffn_size / tp,
                          m.num_attention_heads / tp)
    per = 2 * h / tp + 2 * (q + kv + f + h) + 2 * q + 4 * heads + (4 * h / tp if tp > 1 else 0)
    assert activation_bytes_per_layer(cfg) == pytest.approx(2 * 8192 * per)


def test_torchtitan_compiles_its_loss_since_2025_04():
    """components/loss.py build_cross_entropy_loss (bbb1b616e, 2025-04) wraps the loss in
    torch.compile when training.compile is on: the fused upcast/log-softmax/NLL keeps the
    16-bit logits and writes a 16-bit gradient (4 bytes per logit at its backward) where the
    eager loss of 2024-12 (train.py: pred.float(), F.cross_entropy) peaks at 12."""
    tokens, vocab = 2 * 8192, 128256

    def loss_bytes(cfg):
        return dict(estimate_stage_memory(cfg, 0).temporaries).get("logits and fp32 softmax")

    assert loss_bytes(_titan_layer(version="2025-06", compile_=True, recompute="full")) == \
        pytest.approx(4 * tokens * vocab)
    assert loss_bytes(_titan_layer(version="2024-12", compile_=True, recompute="full")) == \
        pytest.approx(12 * tokens * vocab)
    assert loss_bytes(_titan_layer(version="2025-06", recompute="full")) == \
        pytest.approx(12 * tokens * vocab)


def test_torchtitan_loss_parallel_backward_holds_four_fp32_logit_tensors():
    """With TP, torchtitan trains under torch.distributed.tensor.parallel.loss_parallel
    (train.py; --training.enable_loss_parallel default True, later disable_loss_parallel
    default False), whose cross-entropy backward is decomposed (tensor/parallel/loss.py
    _nll_loss_and_log_softmax_backward): the saved fp32 log-softmax, zeros_like of it, its exp
    and their sum are alive at once, 16 bytes per local logit, where the native kernels of the
    eager loss without TP peak at 12."""
    tokens, vocab = 2 * 8192, 128256

    def loss_bytes(cfg):
        return dict(estimate_stage_memory(cfg, 0).temporaries).get("logits and fp32 softmax")

    assert loss_bytes(_titan_layer(tp=2, recompute="full")) == \
        pytest.approx(16 * tokens * vocab / 2)
    assert loss_bytes(_titan_layer(tp=1, recompute="full")) == pytest.approx(12 * tokens * vocab)


def test_torchtitan_pipelining_keeps_per_microbatch_buffers():
    """torch.distributed.pipelining stage.py: PipelineStage._prepare_forward_infra allocates a
    receive buffer per micro-batch for every stage but the first, _create_grad_recv_info one
    for the output gradient of every stage but the last, and the last stage appends each
    micro-batch's output to output_chunks until the step returns. A middle stage of 1F1B
    holds 2 n boundary tensors; the last stage n, plus n 16-bit logit tensors."""
    pp, dp = 4, 2
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 1, "pp": pp, "zero_stage": 3, "data_parallel_impl": "fsdp2",
                     "recompute": "full"},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": "torchtitan", "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp * dp, "gpus_per_node": 8},
    })
    n = cfg.num_microbatches
    boundary = 2 * 2048 * cfg.model.hidden_size
    middle = dict(estimate_stage_memory(cfg, 1).temporaries)
    assert middle["pipelining receive buffers (per micro-batch)"] == pytest.approx(2 * n * boundary)
    last = dict(estimate_stage_memory(cfg, pp - 1).temporaries)
    assert last["pipelining receive buffers (per micro-batch)"] == pytest.approx(n * boundary)
    assert last["last stage's outputs kept for the step"] == \
        pytest.approx(n * 2 * 2048 * cfg.model.vocab_size)


@pytest.mark.parametrize("impl", ["fsdp1", "fsdp2"])
def test_fsdp_root_unit_stays_gathered_through_the_backward(impl):
    """FSDP does not reshard the root unit after its forward (FSDP2 _fsdp_state.py _lazy_init:
    the root's post_forward_mesh_info = None; FSDP1 _runtime_utils.py _post_forward_reshard
    frees the unsharded flat parameter only for non-root states), so what no wrapped layer owns
    (Llama 3 8B: the embedding, the final norm and the untied output layer) is held gathered in
    16 bits beside the two layers in flight: 2 (2 V h + h) bytes at tp 1."""
    cfg = cfg_of(impl=impl, zero=3, dp=8)
    m = cfg.model
    root = 2 * (2 * m.vocab_size * m.hidden_size + m.hidden_size)
    backward = dict(model_state(cfg, 0).backward)
    assert backward["gathered root parameters (embedding, head)"] == pytest.approx(root)
    # SHARD_GRAD_OP (zero 2) keeps every 16-bit parameter gathered already: nothing extra
    assert "gathered root parameters (embedding, head)" not in \
        dict(model_state(cfg_of(impl=impl, zero=2, dp=8), 0).backward)


def _bridge(*, gpu="gb200", dtype="fp8", fp8_param_gather=True, pp=1, version="26.04"):
    return trainsim.run_config_from_dict({
        "model": {"preset": "llama3-70b"},
        "parallel": {"tp": 1, "pp": pp, "zero_stage": 3, "recompute": "full"},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 8192,
                     "dtype": dtype, "fp8_recipe": "current", "fp8_param_gather": fp8_param_gather,
                     "framework": "megatron-bridge", "framework_version": version},
        "cluster": {"gpu": gpu, "num_gpus": 64 * pp, "gpus_per_node": 4},
    })


def test_megatron_fsdp_keeps_fp8_weights_with_fp8_param_gather():
    """Megatron-FSDP with --fp8-param-gather (Megatron-Bridge 26.04's fp8 recipes) stores the
    matmul weights as Float8Tensors in uint8 buffers (megatron_fsdp param_and_grad_buffer.py):
    the shard is 1 byte per matmul weight (Blackwell, per-tensor scaling: no transposed copy)
    and 2 for the rest; the two gathered units are 1 byte per element. Without it the shard is
    16-bit and each gathered unit is 16-bit plus its fp8 cast."""
    cfg = _bridge()
    s = model_state(cfg, 0)
    held, linear = stage_params(cfg, 0), stage_layer_params(cfg, 0)
    dp = cfg.dp
    assert s.weights == pytest.approx(2 * (held - linear) / dp + linear / dp)
    unit = layer_params(cfg.model, 0)
    assert dict(s.backward)["gathered layer parameters (current + prefetched)"] == \
        pytest.approx(2 * unit)
    plain = model_state(_bridge(fp8_param_gather=False), 0)
    assert plain.weights == pytest.approx(2 * held / dp)
    assert dict(plain.backward)["gathered layer parameters (current + prefetched)"] == \
        pytest.approx(2 * 2 * unit + unit)


def _loss_bytes(framework: str, version: str) -> float:
    cfg = trainsim.run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 2, "pp": 1, "distributed_optimizer": True},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 8192,
                     "dtype": "bf16", "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    })
    return dict(estimate_stage_memory(cfg, 0).temporaries)["logits and fp32 softmax"]


def test_bridge_loss_is_te_cross_entropy():
    """Megatron-Bridge's perf configs set cross_entropy_fusion_impl 'te' with
    cross_entropy_loss_fusion on, so the loss is TE's parallel_cross_entropy, which saves the
    16-bit logits and writes their gradient into them: 2 bytes per local logit, where
    Megatron-core's vocab-parallel cross-entropy keeps an fp32 softmax beside them (2 + 4)."""
    local = 8192 * 128256 / 2
    assert _loss_bytes("megatron-bridge", "25.09") == pytest.approx(2 * local)
    assert _loss_bytes("megatron-core", "0.13") == pytest.approx(6 * local)


def test_fsdp2_all_gather_buffers_hold_a_pool_of_their_own():
    """FSDP2 all-gathers each unit into a flat 16-bit buffer allocated on its all-gather
    copy-in stream (_fsdp_collectives.py foreach_all_gather) and copies the parameters out into
    default-stream tensors; the previous buffer is freed only after the next one is allocated
    (_fsdp_param_group.py wait_for_unshard), and blocks belong to their stream, so the reserved
    memory holds the root unit's buffer plus the first layer's beside the default stream's
    peak: Llama 3 8B, 2 (2 V h + h + layer) bytes. FSDP1 gathers into the parameters' own
    flat storage (no second copy)."""
    cfg = _titan_layer()
    m = cfg.model
    root = 2 * m.vocab_size * m.hidden_size + m.hidden_size
    pool = 2 * (root + layer_params(m, 0))
    assert model_state(cfg, 0).side_pool == pytest.approx(pool)
    mem = estimate_stage_memory(cfg, 0)
    # expandable segments (2024-10 on); beside the pool, the hole ``del pred`` leaves below
    # the eager loss's fp32 buffers (tests/test_memory_torchtitan.py)
    hole = freed_logits_hole(cfg, 0)
    assert hole == 2 * (2 * 8192) * m.vocab_size  # 2 bytes a logit, micro-batch 2 x 8,192
    assert mem.reserved - mem.allocated == pytest.approx(pool + hole)
    assert model_state(cfg_of(impl="fsdp1", zero=3, dp=8), 0).side_pool == 0.0


def test_fsdp2_side_pool_follows_fully_shard_at_zero_2_and_not_the_engine_name():
    """The all-gather buffers' pool is torch's fully_shard's (``fsdp2_copies.applies``): at
    zero stage 2 (reshard_after_forward False) the units gather into the same copy-in-stream
    buffers, two layers' at a time (2 x 2 x layer bytes); Meta's own FSDP-style sharding of
    Llama 3, whose profile also says fsdp2 but has no ``fsdp2_copies``, keeps none."""
    def cfg(framework, version, zero):
        return trainsim.run_config_from_dict({
            "model": {"preset": "llama3-8b"},
            "parallel": {"tp": 1, "pp": 1, "zero_stage": zero, "data_parallel_impl": "fsdp2"},
            "training": {"global_batch_size": 16, "micro_batch_size": 2, "seq_length": 8192,
                         "framework": framework, "framework_version": version},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    two = cfg("torchtitan", "2024-12", 2)
    assert model_state(two, 0).side_pool == pytest.approx(2 * 2 * layer_params(two.model, 0))
    for zero in (2, 3):
        assert model_state(cfg("meta-llama3", None, zero), 0).side_pool == 0.0
