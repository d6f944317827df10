"""Launches between the QKV GEMM and the attention kernel, counted from the frameworks' code
(``workload.qkv_split``, ``elementwise.ROPE_FUSED_CALLS``, ``elementwise.QK_NORM_CALLS``): the
query's reshape copy, the q/k norms' input copies and V's contiguous copy, the gradients' cat,
RoPE and the q/k norms once per tensor."""

from __future__ import annotations

from trainsim import run_config_from_dict
from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.workload.elementwise import backward_bytes, norm_op
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

SEQ = 2048


def _cfg(framework: str = "megatron-bridge", version: str = "26.02", tp: int = 2,
         **model) -> RunConfig:
    """A dense 1,024-wide model of 16 heads of 64 (4 KV heads unless told) at TP ``tp`` (SP)."""
    fields = {"num_kv_heads": 4, "position_embedding": "rope", **model}
    m = ModelConfig(name="m", hidden_size=1024, num_layers=4, num_attention_heads=16,
                    ffn_hidden_size=2048, vocab_size=32000, activation="swiglu",
                    normalization="rmsnorm", add_bias_linear=False, **fields)
    t = TrainingConfig(global_batch_size=16, micro_batch_size=1, seq_length=SEQ,
                       framework=framework, framework_version=version)
    p = ParallelConfig(tensor_model_parallel_size=tp, sequence_parallel=tp > 1)
    c = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8)
    return RunConfig(model=m, parallel=p, training=t, cluster=c)


def _op(cfg: RunConfig, name: str, backward: bool = False):
    sh = shard_of(cfg)
    ops = layer_forward(cfg, sh)
    if backward:
        ops = backward_of(ops, sh)
    found = [op for op in ops if op.name == name]
    return found[0] if found else None


def test_gqa_split_copies_query_and_v_and_cats_the_gradients():
    """TP 2: 8 query heads in 2 groups of 4 on each rank (query 512, key 128 columns): the
    query's reshape cannot view the split (group stride 6 x 64, not 4 x 64) and copies it; under
    RoPE V is copied contiguous for TE's attention; backward one cat of dQ, dK and dV."""
    c = _cfg()
    op, bwd = _op(c, "qkv_split"), _op(c, "qkv_split.bwd", backward=True)
    q, kv = 16 * 64 // 2, 4 * 64 // 2
    assert op.kernels == 2 and op.bytes == 2 * SEQ * (q + kv) * 2
    assert bwd.kernels == 1 and bwd.bytes == 2 * SEQ * (q + 2 * kv) * 2


def test_qk_norms_copy_their_strided_inputs():
    """Per-head q/k norms: TE's norm makes Q (already a copy here) and K contiguous: Q, K and V
    each copied once; the norm op launches once for Q and once for K, each way."""
    c = _cfg(qk_layernorm=True)
    q, kv = 16 * 64 // 2, 4 * 64 // 2
    op = _op(c, "qkv_split")
    assert op.kernels == 3 and op.bytes == 2 * SEQ * (q + 2 * kv) * 2
    assert (_op(c, "qk_norm").kernels, _op(c, "qk_norm.bwd", backward=True).kernels) == (2, 2)
    mha = _cfg(num_kv_heads=16, qk_layernorm=True)  # the query a view: the norm copies it
    assert _op(mha, "qkv_split").kernels == 3


def test_views_left_as_views():
    """One head per group (MHA) or one group per rank (4 KV heads at TP 4): the reshape views;
    only V is copied under RoPE. Learned positions and no q/k norms (MHA): TE takes the three
    views as ``sbh3d``, nothing is counted. A framework outside Megatron-core's TE layers (torch
    eager, torchtitan) or an unfused-QKV model has no such op."""
    assert _op(_cfg(num_kv_heads=16), "qkv_split").kernels == 1
    assert _op(_cfg(tp=4), "qkv_split").kernels == 1
    assert _op(_cfg(num_kv_heads=16, position_embedding="learned"), "qkv_split") is None
    assert _op(_cfg(num_kv_heads=16, position_embedding="learned"), "qkv_split.bwd",
               backward=True) is None
    assert _op(_cfg("torchtitan", "2024-12"), "qkv_split") is None
    plain = run_config_from_dict({"model": "llama3-8b", "parallel": {"tp": 1},
                                  "training": {"global_batch_size": 4, "micro_batch_size": 1,
                                               "seq_length": SEQ, "framework": "pytorch"},
                                  "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 4,
                                              "gpus_per_node": 8}})
    assert _op(plain, "qkv_split") is None


def test_fused_rope_once_per_tensor():
    """Megatron-core calls the fused RoPE for the query and then the key: two launches each way
    (one where Inductor compiles the layer)."""
    c = _cfg()
    assert (_op(c, "rope").kernels, _op(c, "rope.bwd", backward=True).kernels) == (2, 2)
    compiled = run_config_from_dict({"model": "llama3-8b", "parallel": {"tp": 1},
                                     "training": {"global_batch_size": 4, "micro_batch_size": 1,
                                                  "seq_length": SEQ, "framework": "torchtitan",
                                                  "framework_version": "2024-12",
                                                  "compile": True},
                                     "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 4,
                                                 "gpus_per_node": 8}})
    assert _op(compiled, "rope").kernels == 1


def test_norm_calls_scale_every_implementation():
    """``norm_op(calls=2)``: each call its implementation's kernels, forward and backward, the
    eager backward's table count included (HF's RMSNorm: 8 and 16 a call)."""
    eager = norm_op("qk_norm", "rmsnorm", 1e6, "eager", calls=2)
    assert eager.kernels == 16 and backward_bytes(eager)[1] == 32
    one = norm_op("qk_norm", "rmsnorm", 1e6, "eager")
    assert backward_bytes(one) == (backward_bytes(eager)[0], 16)
    assert norm_op("x", "rmsnorm", 1e6, "fused", calls=2).kernels == 2


def test_audit_rows_match_the_code_where_this_session_counted():
    """``benchmarks/launches51_audit.py`` on its two public rows (the bundled file where the
    shared one is absent): trainsim's launches equal the code's for the QKV split, RoPE and
    q/k norms; the fused router is the one part trainsim counts above the code."""
    from pathlib import Path

    from tests.helpers import load_script

    audit = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "launches51_audit.py")
    layers = {kind: audit._layer(kind) for kind in audit.ROWS}
    for kind, part, names, code, _, _ in audit.AUDIT:
        fwd, bwd = layers[kind]
        ours = (audit._count(fwd, names, False), audit._count(bwd, names, True))
        if names[0].startswith(("qkv_split", "rope", "qk_norm")):
            assert ours == code, part
        if names == ("router_topk_softmax",):
            assert ours[0] > code[0] and ours[1] > code[1]
