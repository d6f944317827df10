"""Nemotron 3 Nano rows of the Megatron-Bridge performance archive: the model FLOPs per token
behind their "Model TFLOP / sec / GPU" column, against trainsim's count (a diagnostic; the rows'
step time is not simulated yet: RunConfig refuses a hybrid_layer_pattern).

    PYTHONPATH=src python benchmarks/nemotron3_flops.py

For each Nano row of ``bridge_archive_rows.TABLE`` (NVIDIA-NeMo/Megatron-Bridge@067f987d
docs/performance-summary-archive.md): the archive's TFLOP/s / (tokens/s) = its FLOPs per token;
Megatron-Bridge's hybrid formula, re-derived here from its terms
(src/megatron/bridge/training/utils/flop_utils.py ``hybrid_flops``, lines 849-940, with
``mamba_layer_flops`` 801-823, ``attn_layer_flops`` 734-751, ``moe_layer_flops`` 708-732): three
times the forward of 4 q (h + h g / a) + 2 q s per attention layer (q = heads x head width, g the
query groups: the attention core counted causal-halved), 2 h (2 d_in + 2 G N + H) + 7 d_in N +
2 d_in h per Mamba layer with d_in = 2 h (not H P), 4 h f k + 4 h f_shared per MoE layer (no
router), 2 h V for the logits; and trainsim's ``model_flops_per_token`` (the convention of its
MFU: attention core not halved, the Mamba mixer's own widths, the router, the SSD scan's chunk
matmuls). Nothing is fitted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bridge_archive_rows as archive

from trainsim import catalog
from trainsim.config import ModelConfig
from trainsim.config.hybrid import mamba_heads
from trainsim.model.counts import model_flops_per_token

PRESET = "nemotron-3-nano-30b-a3b"


def bridge_flops_per_token(m: ModelConfig, s: int) -> float:
    """Megatron-Bridge's hybrid model FLOPs per token (module docstring), forward x 3."""
    h, p = m.hidden_size, m.hybrid_layer_pattern or ""
    q, a, g = m.num_attention_heads * m.kv_channels, m.num_attention_heads, m.kv_heads
    d_in, n, groups, heads = 2 * h, m.mamba_state_dim, m.mamba_num_groups, mamba_heads(m)
    attn = 4 * q * (h + h * g / a) + 2 * q * s
    mamba = 2 * h * (2 * d_in + 2 * groups * n + heads) + 7 * d_in * n + 2 * d_in * h
    moe = 4 * h * m.expert_ffn_size * m.moe_router_topk + \
        4 * h * (m.moe_shared_expert_intermediate_size or 0)
    mlp = 4 * h * m.ffn_size
    fwd = p.count("*") * attn + p.count("M") * mamba + p.count("E") * moe + \
        p.count("-") * mlp + 2 * h * m.vocab_size
    return 3.0 * fwd


def main() -> None:
    m = catalog.model(PRESET)
    print(f"{'section':9s} {'system':10s} {'gpus':>4s} {'prec':5s} {'tok/s/GPU':>9s} "
          f"{'TFLOP/s':>7s} {'archive':>8s} {'bridge':>8s} {'trainsim':>8s}  (GFLOP/token)")
    for t in archive.table():
        if t["model"] != "Nemotron_3_Nano":
            continue
        s = int(t["seq"])
        tok, tf = float(t["tokens"]), float(t["tflops"])
        print(f"{t['section']:9s} {t['system']:10s} {t['gpus']:>4s} {t['precision']:5s} "
              f"{tok:9.0f} {tf:7.0f} {tf * 1e3 / tok:8.3f} "
              f"{bridge_flops_per_token(m, s) / 1e9:8.3f} "
              f"{model_flops_per_token(m, s) / 1e9:8.3f}")


if __name__ == "__main__":
    main()
