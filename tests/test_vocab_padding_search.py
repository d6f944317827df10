"""The padded vocabulary (``workload.vocab``) where the simulation is not run: the lower bounds
(``trainsim.bound``, ``search.lower_bounds``) and the search's memory check read the vocabulary
the simulation prices, and a run may state Megatron's ``--make-vocab-size-divisible-by``
itself (``training.vocab_divisible_by``), which overrides the framework profile."""

from __future__ import annotations

import dataclasses
import random

import pytest
from helpers import TINY_MODEL

import trainsim
from trainsim.bound import lower_bound_s as graph_bound_s
from trainsim.errors import ConfigError
from trainsim.search import Base, SearchSpace, evaluate
from trainsim.search.lower_bounds import BOUND_SAFETY, Bounds, lower_bound_s, peak_gemm_rate
from trainsim.search.memory_check import check_memory
from trainsim.search.space import MemoryKey
from trainsim.workload.vocab import padded_vocab, rank_vocab

# GPT-2's tokenizer: 50,257 is odd, so every TP pads it (51,200 at TP 8 under 128 x TP)
VOCAB = 50_257


def _config(tp=2, pp=2, tied=True, framework="megatron-core", **training):
    return trainsim.run_config_from_dict({
        "model": {**TINY_MODEL, "vocab_size": VOCAB, "tied_embeddings": tied},
        "parallel": {"tp": tp, "pp": pp},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "bf16", "framework": framework, **training},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}})


def _base(batch=32, **training) -> Base:
    cfg = _config(**training)
    return Base(cfg.model, dataclasses.replace(cfg.training, global_batch_size=batch),
                cfg.cluster)


def test_graph_bound_stays_below_the_padded_simulation():
    """trainsim.bound prices the tied embedding's all-reduce at the padded rank's rows, as
    the simulator does; the bound stays below the simulated time."""
    for tp, pp in ((2, 2), (8, 2), (4, 4)):
        cfg = _config(tp=tp, pp=pp)
        assert rank_vocab(cfg) * tp == padded_vocab(cfg) > VOCAB
        bound = graph_bound_s(cfg)
        assert 0 < bound <= trainsim.simulate(cfg).iteration_time_s


def test_search_bounds_stay_below_the_padded_simulation():
    """Both search bounds stay below the simulation on a padded vocabulary (megatron-core,
    50,257 tokens: padded at every TP)."""
    b = _base()
    space = SearchSpace(recompute=("none", "full"), zero=(0, 1), max_micro_batch=2)
    keys = list(space.memory_keys(b, 16))
    assert any(k.tp > 1 for k in keys)
    bounds = Bounds(b)
    for k in random.Random(1).sample(keys, 12):
        c = space.variants(k)[0]
        t = evaluate(c, b).iteration_time_s
        assert lower_bound_s(k, b) < t
        assert bounds.refined(c) < t
    assert bounds.failed is None


def test_flop_bound_reads_the_padded_vocabulary():
    """The FLOP bound's logit layer is 6 x padded vocabulary x hidden x tokens / TP: the
    profile's 128 x 8 (51,200) against a stated divisor of 1 (a multiple of 8: 50,264)."""
    key = MemoryKey(16, 8, 2, 1, 1, 1, "none", True, 1)
    profile, stated = _base(), _base(vocab_divisible_by=1)
    gap = lower_bound_s(key, profile) - lower_bound_s(key, stated)
    n_micro = 32 // (key.dp * key.micro_batch)
    head_flops = 6.0 * (51_200 - 50_264) * TINY_MODEL["hidden_size"] * 2048 / 8 * n_micro
    assert gap == pytest.approx(BOUND_SAFETY * head_flops / peak_gemm_rate(profile))


@pytest.mark.parametrize("tied", (True, False))
def test_search_memory_is_the_simulated_peak_with_padding(tied):
    """The search's memory verdict of a padded group is the simulated peak memory."""
    b = _base(tied=tied)
    key = MemoryKey(16, 8, 2, 1, 1, 1, "none", True, 1)
    mc = check_memory(key, b)
    e = evaluate(SearchSpace().variants(key)[-1], b)
    assert mc is not None
    assert mc.peak_bytes == pytest.approx(e.peak_memory_bytes, rel=1e-12)
    less = check_memory(key, _base(tied=tied, vocab_divisible_by=1))  # 50,264: 936 rows fewer
    assert less is not None and less.peak_bytes < mc.peak_bytes


def test_a_run_states_its_divisor():
    """training.vocab_divisible_by overrides the profile: Megatron-Bridge without
    should_pad_vocab (1: a multiple of TP), DeepSeek-V3's 1,280 (Megatron-Bridge
    deepseek_v3_bridge.py), or a framework that does not pad by itself."""
    assert padded_vocab(_config(tp=8)) == 51_200
    assert padded_vocab(_config(tp=8, vocab_divisible_by=1)) == 50_264
    assert padded_vocab(_config(tp=2, vocab_divisible_by=1280)) == 51_200
    assert padded_vocab(_config(tp=2, framework="torchtitan")) == VOCAB
    assert padded_vocab(_config(tp=2, framework="torchtitan", vocab_divisible_by=128)) == 50_432
    for bad in (0, -128, 1.5, "x"):
        with pytest.raises(ConfigError, match="vocab_divisible_by"):
            _config(vocab_divisible_by=bad)


def test_nanotron_pads_to_a_multiple_of_tp():
    """nanotron's init_model pads to make_vocab_size_divisible_by (default 1) x TP."""
    assert padded_vocab(_config(tp=8, pp=1, framework="nanotron")) == 50_264
    assert padded_vocab(_config(tp=1, pp=1, framework="nanotron")) == VOCAB
