"""Megatron and the stacks on it pad the vocabulary to a multiple of 128 x TP before they build
the embedding and output layer (profile feature ``vocab_divisible_by``, workload.vocab);
Hugging Face-based stacks keep the tokenizer's vocabulary."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.catalog.frameworks import framework_feature
from trainsim.memory.params import stage_param_split
from trainsim.workload.head import head_forward
from trainsim.workload.shard import shard_of
from trainsim.workload.vocab import padded_vocab, rank_vocab

PADS = ("megatron-lm", "megatron-core", "nemo", "megatron-bridge", "mlperf-nemo",
        "megatron-deepspeed", "deepspeed")  # deepspeed: its Megatron-LM v1.1.5 reference model
KEEPS = ("llm-foundry", "torchtitan", "olmo-core")


def cfg(framework: str | None, tp: int = 8, vocab: int = 128_256):
    training = {"framework": framework} if framework else {}
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 2, "vocab_size": vocab},
        "parallel": {"tp": tp},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096,
                     "dtype": "bf16", **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": tp, "gpus_per_node": 8}})


@pytest.mark.parametrize("framework", PADS)
def test_megatron_family_pads_to_128_times_tp(framework):
    """Llama 3's 128,256 tokens at TP 8: multiple 1,024, padded to 126 x 1,024 = 129,024."""
    assert framework_feature(framework, None, "vocab_divisible_by") == 128
    c = cfg(framework)
    assert padded_vocab(c) == 129_024 and rank_vocab(c) == 16_128
    assert padded_vocab(cfg(framework, tp=1)) == 128_256  # already a multiple of 128
    assert padded_vocab(cfg(framework, tp=2, vocab=50_257)) == 50_432  # 197 x 256


@pytest.mark.parametrize("framework", (*KEEPS, None))
def test_hf_based_stacks_keep_the_tokenizers_vocabulary(framework):
    if framework:
        assert not framework_feature(framework, None, "vocab_divisible_by")
    c = cfg(framework)
    assert padded_vocab(c) == 128_256 and rank_vocab(c) == pytest.approx(128_256 / 8)


def test_output_gemm_n_is_the_padded_vocabulary_over_tp():
    megatron, plain = cfg("megatron-core"), cfg(None)
    n = {c.training.framework: next(op for op in head_forward(c, shard_of(c))
                                    if op.name == "logits").n for c in (megatron, plain)}
    assert n["megatron-core"] == 129_024 // 8
    assert n[None] == 128_256 // 8


def test_padded_rows_are_held_as_parameters():
    """The first stage's embedding and the last stage's output layer (untied) hold the padding
    rows too: 2 x 768 rows x hidden / TP more parameters per rank."""
    pad, plain = cfg("megatron-core"), cfg(None)
    extra = stage_param_split(pad, 0)[0] - stage_param_split(plain, 0)[0]
    assert not pad.model.tied_embeddings
    assert extra == pytest.approx(2 * (129_024 - 128_256) * pad.model.hidden_size / 8)
