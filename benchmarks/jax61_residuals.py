"""What JAX keeps for the backward of Praxis's dot-product attention and LayerNorm (jax61).

Re-states, in a few jnp lines, the ops of google/praxis@fc68027 praxis/layers/attentions.py
``DotProductAttention._dot_atten`` L1506-1543 (bf16 QK^T einsum, ``astype(float32)``, the
``jnp.where`` mask of praxis/py_utils.py ``apply_mask_to_logits`` L722-744, ``jax.nn.softmax``,
``astype`` back, the PV einsum) and of praxis/layers/normalizations.py ``LayerNorm.__call__``
L368-382, and prints ``jax.ad_checkpoint.print_saved_residuals`` for each: the residuals the
jitted backward reads (``workload.xla_layers`` counts the fp32 ``exp`` among them). Needs jax
(not a trainsim dependency): ``pip install 'jax[cpu]==0.4.20'`` (23.10's generation) or 0.4.26
(24.04's). The residual list is the program's, not XLA's buffer assignment: XLA may fuse a cheap
residual (a convert, a select) into its consumers instead of writing it.

    python benchmarks/jax61_residuals.py
"""

from __future__ import annotations

import sys


def main() -> int:
    try:
        import jax
        import jax.numpy as jnp
        from jax.ad_checkpoint import print_saved_residuals
    except ImportError:
        print("jax is not installed: pip install 'jax[cpu]==0.4.20'", file=sys.stderr)
        return 1

    def attention(q, k, v, mask):
        logits = jnp.einsum("BTNH,BSNH->BNTS", q, k).astype(jnp.float32)
        low = jnp.asarray(-0.7 * jnp.finfo(jnp.float32).max, jnp.float32)
        probs = jax.nn.softmax(jnp.where(mask >= low * 0.5, logits, low), axis=-1)
        return jnp.einsum("BNTS,BSNH->BTNH", probs.astype(k.dtype), v)

    def layer_norm(x, scale, bias):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * (1 + scale) + bias

    b, t, n, h = 2, 16, 4, 8
    q = jnp.ones((b, t, n, h), jnp.bfloat16)
    mask = jnp.zeros((b, 1, t, t), jnp.bfloat16)
    print(f"jax {jax.__version__}: attention (B={b}, T={t}, N={n}, H={h}), bf16 in")
    print_saved_residuals(lambda q, k, v: attention(q, k, v, mask).astype(jnp.float32).sum(),
                          q, q, q)
    x = jnp.ones((b * t, n * h), jnp.bfloat16)
    w = jnp.zeros((n * h,), jnp.bfloat16)
    print("layer norm, bf16 in")
    print_saved_residuals(lambda x, s, c: layer_norm(x, s, c).astype(jnp.float32).sum(), x, w, w)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
