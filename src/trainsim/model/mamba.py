"""The Mamba-2 mixer of a hybrid layer (``M``): its parameter tensors and its work per token.

Shapes as Megatron-core builds the mixer (NVIDIA/Megatron-LM@d98e8a64
megatron/core/ssm/mamba_mixer.py ``MambaMixer.__init__``, lines 218-448):

- ``in_proj``: one column-parallel linear h -> 2 d_inner + 2 G N + H, packing z (the gate),
  x, B, C and dt (line 284), without bias (``assert not bias``, line 276);
- ``conv1d``: a depthwise causal convolution over x, B and C, ``conv_dim = d_inner + 2 G N``
  channels of ``d_conv`` taps, with a bias (``assert conv_bias``; lines 321-335);
- ``dt_bias``, ``A_log`` and ``D``: H each (``D_has_hdim`` False, Megatron's default;
  lines 390-420);
- ``norm``: a gated RMSNorm over d_inner, grouped per B/C group (lines 422-433);
- ``out_proj``: a row-parallel linear d_inner -> h, without bias (lines 437-452).

d_inner = H P (heads x head width; ``mamba_num_heads * mamba_head_dim``, line 248), G the groups
(``mamba_num_groups``), N the state size (``mamba_state_dim``). The layer's pre-norm is fused
into ``in_proj`` (``TELayerNormColumnParallelLinear``; Megatron-Bridge's Nemotron-H mapping
``decoder.layers.*.mixer.in_proj.layer_norm_weight`` -> ``backbone.layers.*.norm.weight``) and
counted with the layer, not here. Hugging Face's ``NemotronHMamba2Mixer`` holds the same tensors
(transformers 5.24.0 modeling_nemotron_h.py lines 405-448).

Work (Dao & Gu 2024, "Transformers are SSMs", arXiv:2405.21060, §6 and its Listing 1, the SSD
chunked algorithm, as ``mamba_chunk_scan_combined`` runs it): per chunk of Q tokens, per group
the scores C B^T (Q x N by N x Q), per head the masked scores times x (Q x Q by Q x P), the chunk's
state B^T x (N x Q by Q x P) and the states' output C h (Q x N by N x P); the recurrence across
chunks is N P per head per chunk (under 1 % here, left out). Like the attention core, the
score block is counted whole (causal half not taken off), the convention of the model FLOPs.
"""

from __future__ import annotations

from trainsim.config import ModelConfig
from trainsim.config.hybrid import mamba_heads


def inner(m: ModelConfig) -> int:
    """d_inner = H P: the width of x, z and the scan's output."""
    return mamba_heads(m) * m.mamba_head_dim


def conv_channels(m: ModelConfig) -> int:
    """Channels of the depthwise conv1d: x, B and C (``d_inner + 2 G N``)."""
    return inner(m) + 2 * m.mamba_num_groups * m.mamba_state_dim


def in_proj_width(m: ModelConfig) -> int:
    """Output width of ``in_proj``: z, x, B, C and dt (``2 d_inner + 2 G N + H``)."""
    return inner(m) + conv_channels(m) + mamba_heads(m)


def mixer_tensors(m: ModelConfig) -> list[tuple[int, bool]]:
    """The mixer's parameter tensors as (elements, is a linear layer's weight), in Megatron's
    order: in_proj, conv1d weight and bias, dt_bias, A_log, D, norm, out_proj."""
    h, d, heads, c = m.hidden_size, inner(m), mamba_heads(m), conv_channels(m)
    return [(h * in_proj_width(m), True), (c * m.mamba_conv_kernel, False), (c, False),
            (heads, False), (heads, False), (heads, False), (d, False), (d * h, True)]


def mixer_params(m: ModelConfig) -> int:
    """Parameters of one Mamba-2 mixer (the layer's pre-norm not included)."""
    return sum(n for n, _ in mixer_tensors(m))


def matmul_params(m: ModelConfig) -> int:
    """Weights of the mixer's two projections (what ``6 N`` counts of it)."""
    return m.hidden_size * (in_proj_width(m) + inner(m))


def scan_flops(m: ModelConfig, seq_length: int) -> float:
    """Forward FLOPs per token of the SSD chunk scan's batched matmuls (module docstring):
    ``2 G Q N`` for C B^T, ``2 H Q P`` for the scores times x, ``2 H N P`` each for the chunk
    state and the state's output; Q the chunk, at most the sequence."""
    q = min(m.mamba_chunk_size, seq_length)
    heads, p, n = mamba_heads(m), m.mamba_head_dim, m.mamba_state_dim
    return 2.0 * m.mamba_num_groups * q * n + 2.0 * heads * q * p + 4.0 * heads * n * p
