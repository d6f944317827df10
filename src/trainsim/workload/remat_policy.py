"""What a layer re-runs and keeps under a stated JAX remat policy (``parallel.remat_policy``:
MaxText's ``remat_policy``, Paxml's ``CHECKPOINT_POLICY``; ``config.remat_policies``).

``jax.checkpoint`` with a policy keeps the layer's inputs and the values the policy saves;
partial evaluation stages everything else and DCEs the staged forward to what the backward reads
(jax-ml/jax@2ff90382 jax/_src/ad_checkpoint.py ``remat_partial_eval`` L536-540). In a dense
pre-norm layer (MaxText ``layers/llama2.py`` L70-153: norm, attention, ``inputs +
attention_lnx``, norm, MLP, ``mlp_lnx + intermediate_inputs``) the backward reads:

- each norm's input and output (the projections after it take the output for their weight
  gradient): the norms, and the attention's residual add (the second norm's input), always
  re-run; so does the fp8 cast of every projection's input, which its weight gradient reads;
- Q, K, V (after RoPE) for the attention's backward: a projection re-runs unless the policy
  keeps its output, RoPE unless it keeps the rotated query and key (MaxText names them after
  RoPE: attentions.py L1268-1281);
- the attention's output and its softmax statistics: the attention re-runs under every policy
  but ``save_everything`` (a fused kernel is a custom call whose residuals carry no name, and
  ``context`` names only the output: Paxml's TE helper asserts such a policy only with
  attention dropout, te_helper.py L241-269);
- the output projection's output, on the way to the second norm's input: re-run unless kept;
- the MLP's input projections' outputs (the activation's inputs) unless kept, and the
  activation's output (the last projection's input) always;
- never the MLP's last projection, its reduction and the residual add after it, whose outputs
  only the layer's output (the next layer's input, held anyway) reads.

An MoE layer re-runs all but the attention projections the policy keeps (the combine reads
the experts' outputs). The layer keeps its 16-bit input and each kept output
(:func:`kept_bytes_per_token`).
"""

from __future__ import annotations

from dataclasses import replace

from trainsim.catalog.frameworks import profile_supports
from trainsim.config import RunConfig
from trainsim.config.remat_policies import DOTS, EVERYTHING, remat_policy_names
from trainsim.workload.ops import Attention, Comm, Gemm, Op
from trainsim.workload.shard import separate_projections

NAME_OPS = {"query_proj": "q_proj", "key_proj": "k_proj", "value_proj": "v_proj",
            "qkv_proj": "qkv_proj", "combined_qkv_proj": "qkv_proj", "out_proj": "out_proj",
            "mlpwi": "fc1", "mlpwi_0": "gate_proj", "mlpwi_1": "up_proj", "mlpwo": "fc2",
            "context": "attn_core"}
"""Checkpoint name -> the op (of ``workload.layers``) whose output it is."""
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "qkv_proj", "out_proj", "fc1", "gate_proj",
               "up_proj", "fc2")
NEVER = frozenset({"fc2", "mlp_bias_dropout_add", "mlp.reduce_scatter", "mlp.all_reduce"})
"""What no gradient reads: the MLP's last projection and what follows it."""
OUTPUT_SIDE = ("bias_add", "bias_grad")
"""Ops after a projection (``<name>.<suffix>``) that go with its output, not its input."""


def remat_policy(cfg: RunConfig) -> str | None:
    """The run's stated JAX remat policy (``parallel.remat_policy``), or None: none stated, or
    a framework whose recompute is not ``jax.checkpoint`` (profile ``remat_dce`` off; the config
    reader warns it is ignored: ``catalog.run_framework.remat_policy_ignored``)."""
    p = cfg.parallel
    if p.remat_policy is None or p.recompute == "none":
        return None
    return p.remat_policy if profile_supports(cfg, "remat_dce") else None


def kept_ops(cfg: RunConfig) -> frozenset[str] | None:
    """The projections (op names) whose outputs the policy keeps, ``attn_core`` for a kept
    ``context``, ``rope`` where the rotated query and key are both kept; None: everything."""
    names = remat_policy_names(str(cfg.parallel.remat_policy))
    if EVERYTHING in names:
        return None
    kept = {NAME_OPS[n] for n in names if n in NAME_OPS}
    if DOTS in names:  # the linears' outputs, before RoPE
        kept |= set(PROJECTIONS)
    if {"query_proj", "key_proj"} <= set(names):  # named after RoPE
        kept.add("rope")
    if {"query_proj", "key_proj", "value_proj"} <= set(names):  # a fused QKV's three parts
        kept.add("qkv_proj")
    if {"mlpwi_0", "mlpwi_1"} <= set(names) or DOTS in names:  # a fused gated fc1's halves
        kept.add("fc1")
    return frozenset(kept)


def policy_recompute(cfg: RunConfig, fwd: list[Op]) -> list[Op]:
    """The ops a layer (``fwd``, its forward) re-runs before its backward under the policy."""
    kept = kept_ops(cfg)
    if kept is None:
        return []
    moe = any(op.name.split(".")[0] == "router" for op in fwd)
    out = []
    for op in fwd:
        head, _, tail = op.name.partition(".")
        if isinstance(op, Attention):
            rerun = True
        elif moe:
            rerun = not (isinstance(op, Gemm) and op.name in kept and op.name in PROJECTIONS[:5])
        elif op.name in NEVER or head == "fc2" and tail in OUTPUT_SIDE:
            rerun = False
        elif isinstance(op, Gemm) and op.name in PROJECTIONS or \
                head in PROJECTIONS and tail in OUTPUT_SIDE:
            rerun = head not in kept
        elif op.name == "rope":
            rerun = "rope" not in kept
        elif isinstance(op, Comm) and head == "attn" and tail != "all_gather":
            rerun = "out_proj" not in kept  # the out-projection's TP reduction
        else:
            rerun = True
        if rerun:
            out.append(replace(op, name="recompute." + op.name))
    return out


def kept_bytes_per_token(cfg: RunConfig) -> float | None:
    """Bytes per local token a dense layer keeps under the policy: its 16-bit input and each
    kept 16-bit output (the projections' by their width on this rank; ``context``, the
    attention's output); None where the policy keeps everything."""
    kept = kept_ops(cfg)
    if kept is None:
        return None
    m, t = cfg.model, cfg.parallel.tp
    q, kv, f = m.q_size / t, max(m.kv_size / t, m.kv_channels), m.ffn_size / t
    split, gated = separate_projections(cfg), m.activation == "swiglu"
    width = {"out_proj": m.hidden_size, "fc2": m.hidden_size, "attn_core": m.v_dim / t}
    width.update({"q_proj": q, "k_proj": kv, "v_proj": kv} if split else {"qkv_proj": q + 2 * kv})
    width.update({"gate_proj": f, "up_proj": f} if split and gated else
                 {"fc1": f * (2 if gated else 1)})
    layer_input = 2.0 * m.hidden_size / (t if cfg.parallel.sequence_parallel else 1)
    return layer_input + sum(2.0 * w for name, w in width.items() if name in kept)


def kept_matmul_params(cfg: RunConfig) -> tuple[float, float] | None:
    """For ``model.counts.hardware_flops_per_iteration``: the matmul parameters whose forward a
    dense layer does not re-run under the policy (the kept projections and the MLP's last),
    and those of an MoE layer (its kept attention projections); None where nothing re-runs."""
    kept = kept_ops(cfg)
    if kept is None:
        return None
    m = cfg.model
    h, q, kv, f = m.hidden_size, m.q_size, m.kv_size, m.ffn_size
    split, gated = separate_projections(cfg), m.activation == "swiglu"
    attn = {"q_proj": h * q, "k_proj": h * kv, "v_proj": h * kv} if split else \
        {"qkv_proj": h * (q + 2 * kv)}
    attn["out_proj"] = m.v_dim * h
    mlp = {"gate_proj": h * f, "up_proj": h * f} if split and gated else \
        {"fc1": h * f * (2 if gated else 1)}
    attn_kept = sum(v for k, v in attn.items() if k in kept)
    return attn_kept + sum(v for k, v in mlp.items() if k in kept) + f * h, attn_kept


def remat_kept_params(cfg: RunConfig) -> tuple[float, ...] | None:
    """:func:`kept_matmul_params` where the run states a policy (``()`` where it keeps
    everything), else None."""
    if remat_policy(cfg) is None:
        return None
    return kept_matmul_params(cfg) or ()
