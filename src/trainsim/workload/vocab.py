"""The vocabulary a rank's embedding, output layer, logits and cross-entropy are built with.

Megatron pads the tokenizer's vocabulary before it builds the model: ``_vocab_size_with_padding``
takes ``multiple = make_vocab_size_divisible_by * tensor_model_parallel_size`` and rounds the
vocabulary up to it (NVIDIA/Megatron-LM megatron/tokenizer/tokenizer.py, later
megatron/training/tokenizer/tokenizer.py; default 128 from megatron/arguments.py
``--make-vocab-size-divisible-by``), and the stacks on it do the same (NeMo's
``make_vocab_size_divisible_by``, Megatron-Bridge's ``calculate_padded_vocab_size`` behind
``should_pad_vocab``, Megatron-DeepSpeed's copy of the tokenizer). Which framework pads, and to
what, is its profile's ``vocab_divisible_by``; a framework without it (Hugging Face-based
stacks: llm-foundry, torchtitan, DeepSpeed on HF models) keeps the tokenizer's vocabulary.
``model.vocab_size`` is the tokenizer's vocabulary (validation/README.md); the ids a batch
draws stay within it (``workload.token_ids``), only the tables and logits are padded.
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog.frameworks import framework_feature


def padded_vocab(cfg: Any) -> int:
    """The whole vocabulary the run's model is built with: ``model.vocab_size`` rounded up to a
    multiple of the profile's ``vocab_divisible_by`` x TP, or as it is where the framework
    does not pad (or the run names no framework)."""
    vocab, tp = int(cfg.model.vocab_size), int(cfg.parallel.tp)
    t = cfg.training
    divisor = framework_feature(t.framework, t.framework_version, "vocab_divisible_by") \
        if t.framework else None
    if not divisor:
        return vocab
    multiple = int(divisor) * tp
    return -(-vocab // multiple) * multiple


def rank_vocab(cfg: Any) -> float:
    """The vocabulary rows one tensor-parallel rank holds: the padded vocabulary / TP (a
    fraction only where the framework does not pad and TP does not divide the vocabulary)."""
    return padded_vocab(cfg) / cfg.parallel.tp
