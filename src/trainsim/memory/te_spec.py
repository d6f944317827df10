"""What Megatron-core's Transformer Engine layers keep for backward where they differ from
separate norm, QKV and attention modules (framework profile ``te_layer_spec``).

**Q, K and V.** Megatron splits the fused QKV GEMM output into strided views
(attention.py ``get_query_key_value_tensors``) and, under RoPE, rotates Q and K into new
tensors (the fused RoPE saves only its frequencies); V stays a view of the fused buffer.
Before the kernel, TE's ``DotProductAttention`` matches the three against the layouts it
supports and, finding none (V's strides are the fused buffer's, Q's and K's their own),
copies all three contiguous: NVIDIA/TransformerEngine v1.8 pytorch/attention.py
``_get_qkv_layout`` (L2262, ``q, k, v = [x.contiguous() for x in [q, k, v]]`` L2373, called
from ``DotProductAttention.forward`` L4855 before any backend is chosen), v2.3
pytorch/attention/dot_product_attention/utils.py ``get_qkv_layout`` L1525-1698 (copy L1696,
called at dot_product_attention.py L810/L825). Megatron-core 0.9-0.13 makes the copies itself
under RoPE fusion (extensions/transformer_engine.py ``TEDotProductAttention.forward``, "WAR
for peak memory usage", core_v0.12.1 L777-780). The kernel saves the copies (v2.3
dot_product_attention/backends.py ``FusedAttnFunc.forward`` L1073 ``(q, k, v, out_save)``;
flash-attn saves its q, k, v likewise), so nothing keeps the fused output: the layer holds
rotated Q, rotated K and V's copy, as many bytes as one fused QKV buffer. Without RoPE the
bytes are the same (views of one buffer kept, or copies of all three). Where the core
attention is checkpointed (selective recompute of ``core_attn``), Megatron's
``CheckpointFunction`` saves the Q, K and V it is handed (attention.py
``_checkpointed_attention_forward``), V the fused buffer's view: the copies are made inside.

**Norms.** The spec fuses the input norm into ``linear_qkv`` and, in a dense layer, the pre-MLP
norm into ``linear_fc1`` (``TELayerNormColumnParallelLinear``; the layer's ``input_layernorm``
and ``pre_mlp_layernorm`` are ``IdentityOp``: gpt_layer_specs.py core_v0.12.1 L136-166,
core_v0.19.0 L138-157; an MoE layer's pre-MLP norm is a ``TENorm``, MLA's input norm too, while
MLA's dense layers fuse their pre-MLP norm as any: ``workload.recompute.input_norm_fused`` and
``pre_mlp_norm_fused``).
TE's LayerNormLinear saves the norm's input and its output, the GEMM input (v1.8
module/layernorm_linear.py ``_LayerNormLinear.forward`` L308-318 ``inputmat, ..., ln_out``;
v2.3 L390-400, fp8 ``ln_out`` as its quantized copy), which is what a separate norm and linear
keep too; but ``--recompute-modules layernorm`` checkpoints only norms that are not
``IdentityOp`` (transformer_layer.py core_v0.14.0 L406-415, core_v0.19.0 L450-502), so in this
spec it frees neither the QKV input nor a dense layer's FC1 input, and re-runs neither norm
(the two rules the time path reads too).
"""

from __future__ import annotations

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.workload.recompute import input_norm_fused, pre_mlp_norm_fused

__all__ = ["input_norm_fused", "pre_mlp_norm_fused", "qkv_copies"]


def qkv_copies(cfg: RunConfig, recompute: str) -> bool:
    """Whether the attention keeps contiguous copies of Q, K and V and no fused QKV output:
    a ``te_layer_spec`` run whose core attention is not checkpointed (``recompute``: the
    layer's mode)."""
    if not profile_supports(cfg, "te_layer_spec") or cfg.model.is_mla:
        return False
    modules = cfg.parallel.recompute_modules or ("core_attn",)
    return not (recompute == "selective" and "core_attn" in modules)


