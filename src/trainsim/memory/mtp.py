"""What DeepSeek-V3's multi-token-prediction (MTP) modules keep on the last pipeline stage.

Megatron-core (NVIDIA/Megatron-LM@2edffadb, Megatron-Bridge v0.4.2's pin) runs each MTP depth
on the stage that computes the loss (megatron/core/transformer/multi_token_prediction.py): the
next tokens' embedding and the previous depth's hidden state are normed (``enorm``, ``hnorm``:
each keeps its 16-bit input), concatenated and projected by ``eh_proj`` (a column-parallel
linear that keeps its 2h-wide GEMM input: the 8-bit cast under fp8), run through a transformer
layer like the model's last, normed again (``final_layernorm``), and the decoder's and the
MTP depths' outputs are concatenated (``torch.cat(hidden_states_list)``) before the shared
output layer reads each chunk (keeping its 16-bit input). ``process_mtp_loss`` then computes
each depth's logits and cross-entropy loss before the main ones (gpt_model.py ``_postprocess``),
so at the backward every depth's logits are alive beside the main logits.
"""

from __future__ import annotations

from trainsim.config import RunConfig


def mtp_head_bytes(cfg: RunConfig, x: float) -> float:
    """Bytes per micro-batch the MTP depths keep beyond their transformer layers, on one rank
    of the last stage (``x``: bytes of a saved GEMM input): the two norms' inputs, the
    projection's 2h-wide input, the final norm's input and the output layer's input, each h
    wide per token (on the local tokens under sequence parallelism, as the head's)."""
    m, p, t = cfg.model, cfg.parallel, cfg.training
    tokens = t.micro_batch_size * t.seq_length / p.cp / (p.tp if p.sequence_parallel else 1)
    return m.mtp_num_layers * tokens * m.hidden_size * (2 + 2 + 2 * x + 2 + 2)


def loss_logit_sets(cfg: RunConfig) -> int:
    """Sets of logits (with what the loss keeps of them) alive at the last stage's backward: the
    main head's and one per MTP depth."""
    return 1 + cfg.model.mtp_num_layers
