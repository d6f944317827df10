"""Writes benchmarks/training_tinyllama.csv: jzhang38/TinyLlama's published pretraining throughput
(README.md @ 09baa9e, 2023-09-04, "first commit"; unchanged at the mirror's HEAD bf122247, 2024-02):
"24k tokens per second per A100-40G GPU" for TinyLlama-1.1B on the 16 A100-40G GPUs of its
pretraining run, a lit-gpt stack (Lightning Fabric FSDP) with flash-attention 2 and fused kernels.
lit-gpt has no trainsim profile: the row names it (``lit-gpt``) and is predicted by the no-profile
path (catalog/fallback.py).

    python benchmarks/source63b_tinyllama_rows.py > benchmarks/training_tinyllama.csv
    python benchmarks/source63b_tinyllama_rows.py --check   # README lines, config, script settings

What the README and pretrain/tinyllama.py @ 09baa9e say (line numbers there): the model (README
L73: 22 layers, 32 heads, 4 query groups, embedding 2048, SwiGLU 5632; lit_gpt/config.py L250-265
``tiny_LLaMA_1b``: vocabulary 32000, FusedRMSNorm, no biases), sequence 2048 (L74), a batch of
"2 million tokens (2048 * 1024)" (L75) on "16 A100-40G GPUs" (L83), "a per-gpu batch size of 16k
tokens" (L102: 8 sequences, the script's ``micro_batch_size = 8`` L34, with
``global_batch_size = 512`` over ``num_of_devices = 8`` L32-33 a node's 64 sequences a rank, 8
accumulation steps L51-52; PRETRAIN.md L58-77 launches two nodes of 8), "without activation
checkpointing" (L102; FSDPStrategy ``activation_checkpointing_policy=None`` L91), FSDP wrapped per
Block (L90), flash-attention 2 with fused RMSNorm, SwiGLU, rotary and cross-entropy kernels
(L90-98 of the README's list), precision from ``get_default_supported_precision(training=True)``
(lit_gpt/utils.py L503-504: "bf16-mixed" on a bf16 GPU), ``torch.optim.AdamW(..., foreach=False)``
(L144-146). Step = 1024 x 2048 / (24,000 x 16) s. "24k" is rounded; the README's own "3456" A100
GPU hours for 300B tokens (L108) is 24,113 tokens/s a GPU, the same figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header(vocab_size=["tied_embeddings"])
TL_DIR, TL = "jzhang38+TinyLlama", "jzhang38/TinyLlama"
COMMIT = "09baa9e"
"""The commit that wrote the figure (``git log -S'24k' -- README.md``: the first commit)."""
SEQ, GLOBAL, MICRO, GPUS, TPS = 2048, 1024, 8, 16, 24000.0


def rows() -> list[dict[str, object]]:
    r = {k: "" for k in HEADER}
    r.update(
        id="tinyllama2309-1.1b-a100-40g-16", model="tinyllama-1.1b", hidden_size=2048,
        num_layers=22, num_attention_heads=32, num_kv_heads=4, ffn_hidden_size=5632,
        vocab_size=32000, tied_embeddings=0, seq_length=SEQ, activation="swiglu",
        gpu="a100-sxm-40gb", num_gpus=GPUS, gpus_per_node=8, tp=1, pp=1, cp=1, ep=1,
        sequence_parallel=0, recompute="none", zero_stage=3, distributed_optimizer=0,
        global_batch_size=GLOBAL, micro_batch_size=MICRO, dtype="bf16", options="fused_kernels",
        framework="lit-gpt", framework_version="2023-09-04", attention="flash2",
        measured_iteration_s=round(GLOBAL * SEQ / (TPS * GPUS), 4),
        source=(f"{TL} README.md @ {COMMIT} (2023-09-04, 'first commit'; unchanged at bf122247, "
                "2024-02-04) L102 ('Blazingly Fast'), the model table L73-83; the run's settings "
                f"from pretrain/tinyllama.py, lit_gpt/config.py and PRETRAIN.md at the same commit"),
        note=(f"published '24k tokens per second per A100-40G GPU' ('56% model flops utilization "
              "without activation checkpointing', L102) on the pretraining run's '16 A100-40G "
              f"GPUs' (L83): {GLOBAL} x {SEQ} tokens a step (L75, '2048 * 1024') / (24,000 x "
              f"{GPUS}) = {GLOBAL * SEQ / (TPS * GPUS):.4f} s ('24k' rounded; L108's 3456 GPU "
              "hours for 300B tokens is 24,113 tokens/s a GPU); TinyLlama-1.1B: 22 layers, 32 "
              "heads, 4 query groups, 2048, SwiGLU 5632 (L73), vocabulary 32000, FusedRMSNorm, "
              "untied (lit_gpt/config.py L250-265); micro-batch 8 ('a per-gpu batch size of 16k "
              "tokens', L102; pretrain/tinyllama.py micro_batch_size 8 L34), 8 accumulation steps "
              "(global_batch_size 512 over num_of_devices 8 a node, L32-33, L51-52), two nodes of "
              "8 (PRETRAIN.md L58-77); Lightning Fabric FSDPStrategy(auto_wrap_policy={Block}, "
              "activation_checkpointing_policy=None, limit_all_gathers=True) (L89-95), its "
              "default full sharding; 'bf16-mixed' (lit_gpt/utils.py L503-504); flash-attention "
              "2 and fused RMSNorm / rotary / cross-entropy (Dao-AILab kernels) and xformers' "
              "fused SwiGLU (README L90-98); torch.optim.AdamW(foreach=False) (L144-146); "
              "gradients kept unsynchronised across accumulation (fabric.no_backward_sync "
              "L221); torch 2.1.0 nightly (PRETRAIN.md L7); the reduce dtype (Lightning's FSDP "
              "bf16-mixed policy) and the inter-node network are not stated"))
    return [r]


def check() -> list[str]:
    """The README's figure, model table, hardware and batch at ``COMMIT`` and HEAD; the config,
    the script's batch, FSDP and precision settings and PRETRAIN.md's two-node launch."""
    bad = []
    for commit in (COMMIT, "HEAD"):
        readme = " ".join(mirror_rows.show(TL_DIR, commit, "README.md").split())
        for want in ("we achieve a throughput of **24k** tokens per second per A100-40G GPU",
                     "without activation checkpointing",
                     "train with a per-gpu batch size of 16k tokens",
                     "| Hardware | 16 A100-40G GPUs |", "| Sequence Length | 2048 |",
                     "2 million tokens (2048 * 1024)",
                     ("Layers: 22, Heads: 32, Query Groups: 4, Embedding Size: 2048, "
                      "Intermediate Size (Swiglu): 5632"), "|TinyLlama-1.1B | 3456 |"):
            if want not in readme:
                bad.append(f"README.md @ {commit}: no {want!r}")
    cfg = " ".join(mirror_rows.show(TL_DIR, COMMIT, "lit_gpt/config.py").split())
    want_cfg = ('name="tiny_LLaMA_1b", block_size=2048, vocab_size=32000, padding_multiple=64, '
                'n_layer=22, n_head=32, n_embd=2048, rotary_percentage=1.0, '
                'parallel_residual=False, bias=False, _norm_class="FusedRMSNorm", norm_eps=1e-5, '
                '#Llama 2 use 1e-5. Llama 1 use 1e-6 _mlp_class="LLaMAMLP", '
                'intermediate_size=5632, n_query_groups=4,')
    if want_cfg not in cfg:
        bad.append(f"lit_gpt/config.py @ {COMMIT}: tiny_LLaMA_1b is not as read")
    script = " ".join(mirror_rows.show(TL_DIR, COMMIT, "pretrain/tinyllama.py").split())
    for want in ("num_of_devices = 8", "global_batch_size = 512", "micro_batch_size = 8",
                 "batch_size = global_batch_size // num_of_devices",
                 "gradient_accumulation_steps = batch_size // micro_batch_size",
                 "auto_wrap_policy={Block}, activation_checkpointing_policy=None",
                 "get_default_supported_precision(training=True, tpu=tpu)",
                 "foreach=False", "loss_func = FusedCrossEntropyLoss()"):
        if want not in script:
            bad.append(f"pretrain/tinyllama.py @ {COMMIT}: no {want!r}")
    utils = " ".join(mirror_rows.show(TL_DIR, COMMIT, "lit_gpt/utils.py").split())
    if 'return "bf16-mixed" if training else "bf16-true"' not in utils:
        bad.append(f"lit_gpt/utils.py @ {COMMIT}: the default training precision is not bf16-mixed")
    pre = " ".join(mirror_rows.show(TL_DIR, COMMIT, "PRETRAIN.md").split())
    if "--devices=8 \\ --num-nodes=2 \\ pretrain/tinyllama.py --devices 8" not in pre:
        bad.append(f"PRETRAIN.md @ {COMMIT}: no two-node launch of 8 devices")
    hours = 300e9 / TPS / 3600  # GPU-seconds for 300B tokens at TPS a GPU, in hours
    if abs(hours / 3456 - 1) > 0.01:
        bad.append(f"24k tokens/s a GPU is {hours:.0f} GPU hours for 300B tokens, not 3456")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "README figure, config and script settings as in the mirror")
