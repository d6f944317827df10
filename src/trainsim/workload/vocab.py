"""The vocabulary a rank's embedding, output layer, logits and cross-entropy are built with.

Megatron pads the tokenizer's vocabulary before it builds the model: ``_vocab_size_with_padding``
takes ``multiple = make_vocab_size_divisible_by * tensor_model_parallel_size`` and rounds the
vocabulary up to it (NVIDIA/Megatron-LM megatron/tokenizer/tokenizer.py, later
megatron/training/tokenizer/tokenizer.py; default 128 from megatron/arguments.py
``--make-vocab-size-divisible-by``), and the stacks on it do the same (NeMo's
``make_vocab_size_divisible_by``, Megatron-Bridge's ``calculate_padded_vocab_size`` behind
``should_pad_vocab``, Megatron-DeepSpeed's copy of the tokenizer, nanotron's own
``_vocab_size_with_padding`` with a default of 1). Which framework pads, and to what, is its
profile's ``vocab_divisible_by``; a run that sets the flag itself says so in
``training.vocab_divisible_by``, which overrides the profile. A framework without it
(Hugging Face-based stacks: llm-foundry, torchtitan, OLMo-core) keeps the vocabulary it is
given. ``model.vocab_size`` is the tokenizer's vocabulary (validation/README.md); the ids a
batch draws stay within it (``workload.token_ids``), only the tables and logits are padded.
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog.frameworks import framework_feature


def vocab_divisor(training: Any) -> int | None:
    """The run's ``make_vocab_size_divisible_by``: ``training.vocab_divisible_by`` where the
    run states it, else its framework profile's ``vocab_divisible_by``; None where neither
    pads (or the run names no framework)."""
    stated = training.vocab_divisible_by
    if stated:
        return int(stated)
    if not training.framework:
        return None
    divisor = framework_feature(training.framework, training.framework_version,
                                "vocab_divisible_by")
    return int(divisor) if divisor else None


def padded_size(vocab: int, tp: int, divisor: int | None) -> int:
    """``vocab`` rounded up to a multiple of ``divisor`` x ``tp`` (as it is without a divisor)."""
    if not divisor:
        return int(vocab)
    multiple = int(divisor) * int(tp)
    return -(-int(vocab) // multiple) * multiple


def padded_vocab(cfg: Any) -> int:
    """The whole vocabulary the run's model is built with: ``model.vocab_size`` rounded up to a
    multiple of the run's divisor (:func:`vocab_divisor`) x TP, or as it is where the run
    does not pad."""
    return padded_size(cfg.model.vocab_size, cfg.parallel.tp, vocab_divisor(cfg.training))


def rank_vocab(cfg: Any) -> float:
    """The vocabulary rows one tensor-parallel rank holds: the padded vocabulary / TP (a
    fraction only where the framework does not pad and TP does not divide the vocabulary)."""
    return padded_vocab(cfg) / cfg.parallel.tp
