"""``ddp_buckets._buckets`` keeps the greedy pass's answers per process by what the pass reads
of the config. A search builds its configs around one model object, so a kept answer is found
again only for configs sharing the model: these tests share it, so that a field missing from
the key would hand a config another config's buckets."""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest

from trainsim import run_config_from_dict
from trainsim.workload import ddp_buckets as d

_MODELS = {
    "dense": {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
              "vocab_size": 32000, "activation": "swiglu", "normalization": "rmsnorm",
              "position_embedding": "rope", "tied_embeddings": True, "add_bias_linear": False},
    "moe": {"name": "tiny-moe", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
            "vocab_size": 32000, "activation": "swiglu", "normalization": "layernorm",
            "position_embedding": "learned", "tied_embeddings": False, "add_bias_linear": True,
            "num_experts": 8, "moe_ffn_hidden_size": 512, "moe_layer_freq": 2,
            "moe_first_dense_layers": 1, "moe_shared_expert_intermediate_size": 1024},
}


def _config(model, *, tp=1, etp=None, ep=1, pp=1, size=10_000_000, dist=True, fp8=False,
            version="0.14", gpus=64):
    """A config on the model object of ``model`` (a built config)."""
    c = run_config_from_dict({
        "model": _MODELS["moe" if model.model.num_experts else "dense"],
        "parallel": {"tp": tp, "expert_tensor_parallel_size": etp,
                     "expert_model_parallel_size": ep, "pp": pp,
                     "distributed_optimizer": dist, "overlap_grad_reduce": True,
                     "sequence_parallel": tp > 1,
                     "ddp_bucket_size": size},
        "training": {"global_batch_size": 256, "seq_length": 2048,
                     "framework": "megatron-core", "framework_version": version,
                     "dtype": "fp8" if fp8 else "bf16", "fp8_param_gather": fp8},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": gpus}})
    return dataclasses.replace(c, model=model.model)


def _base(kind):
    """A config whose model object the others share."""
    return run_config_from_dict({
        "model": _MODELS[kind], "training": {"global_batch_size": 64, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


@pytest.fixture
def empty_cache():
    kept = dict(d._BUCKETS)
    d._BUCKETS.clear()
    yield
    d._BUCKETS.clear()
    d._BUCKETS.update(kept)


# each field of the key: a config and a chunk, and the same with that field alone changed
_PAIRS = {
    "model": ({"kind": "dense"}, {"kind": "moe"}),
    "tp": ({}, {"tp": 2}),
    "etp": ({"kind": "moe", "tp": 2}, {"kind": "moe", "tp": 2, "etp": 2}),
    "ep": ({"kind": "moe"}, {"kind": "moe", "ep": 2}),
    "pp > 1": ({"size": 10**9, "first": True, "last": False},
               {"size": 10**9, "pp": 2, "first": True, "last": False}),
    "bucket size": ({}, {"size": 3_000_000}),
    "bucket size from dp": ({"size": None, "gpus": 32}, {"size": None, "gpus": 128}),
    "distributed optimizer": ({"size": 10**9, "pp": 2, "first": True, "last": False},
                              {"size": 10**9, "pp": 2, "first": True, "last": False,
                               "dist": False}),
    "fp8 bucket groups": ({"fp8": True, "version": "0.8"}, {"fp8": True}),
    "layers": ({"layers": range(3)}, {"layers": range(4)}),
    "layer kinds": ({"kind": "moe", "layers": range(2, 5)},
                    {"kind": "moe", "layers": range(1, 4)}),
    "layers as a list": ({"kind": "moe", "layers": [1, 2, 3]},
                         {"kind": "moe", "layers": [2, 3, 4]}),
    "first": ({"first": False}, {"first": True}),
    "last": ({"last": False}, {"last": True}),
}


def _case(models, kind="dense", layers=range(4), first=False, last=False, **fields):
    return _config(models[kind], **fields), layers, first, last


@pytest.mark.parametrize("field", list(_PAIRS))
def test_configs_apart_in_one_field_of_the_key_get_their_own_buckets(field, empty_cache):
    """Two configs on one model object differing in one field the pass reads: the pass gives
    them different buckets, and asked of one after the other the kept answers are each its
    own (so the key tells them apart), in either order."""
    models = {k: _base(k) for k in _MODELS}
    one, two = (_case(models, **fields) for fields in _PAIRS[field])
    assert d._bucketed(*one) != d._bucketed(*two)
    for a, b in ((one, two), (two, one)):
        d._BUCKETS.clear()
        assert d._buckets(*a) == d._bucketed(*a)
        assert d._buckets(*b) == d._bucketed(*b)


def test_kept_buckets_agree_with_the_pass_over_random_configs(empty_cache):
    """120 configs drawn over every field the pass reads, all on two model objects, asked in a
    random order (each twice, so both misses and hits): the kept answer is always the pass's,
    and the cache holds one answer per distinct key."""
    models = {k: _base(k) for k in _MODELS}
    rng = random.Random(27)
    chunks = [(range(a, b), f, la) for a, b in ((0, 2), (0, 4), (2, 5), (4, 8), (0, 8))
              for f, la in itertools.product((False, True), repeat=2)]
    asks = []
    for _ in range(120):
        kind = rng.choice(list(_MODELS))
        tp = rng.choice((1, 2))
        fields = {"tp": tp, "pp": rng.choice((1, 2)), "dist": rng.random() < 0.7,
                  "size": rng.choice((None, 2_000_000, 10_000_000, 10**9)),
                  "gpus": rng.choice((32, 64, 128)), "fp8": rng.random() < 0.4,
                  "version": rng.choice(("0.8", "0.14"))}
        if kind == "moe":
            fields.update(ep=rng.choice((1, 2, 4)), etp=rng.choice((None, tp)))
        layers, first, last = rng.choice(chunks)
        asks.append(_case(models, kind, layers, first, last, **fields))
    asks = asks * 2
    rng.shuffle(asks)
    for ask in asks:
        assert d._buckets(*ask) == d._bucketed(*ask)
    assert 0 < len(d._BUCKETS) <= len(asks) // 2


def test_a_caller_changing_its_buckets_leaves_the_kept_ones(empty_cache):
    """``bucket_ready`` sorts and extends the list it gets: the next ask still gets the pass's
    buckets, and ``bucket_ready`` the same answer twice."""
    c = _config(_base("moe"), tp=2, size=3_000_000)
    for layers, first, last in ((range(2), True, False), ([5, 6, 7], False, True)):
        want = d._bucketed(c, layers, first, last)
        for _ in range(2):  # the miss, then the kept answer
            got = d._buckets(c, layers, first, last)
            assert got == want
            got[0].append((99, 99, 0, 1.0))
            got[0].reverse()
        assert d.bucket_ready(c, layers, first, last) == d.bucket_ready(c, layers, first, last)


def test_the_cache_is_bounded(empty_cache, monkeypatch):
    """Past ``_BUCKETS_KEPT`` answers the cache starts again: a long search or service
    process keeps at most that many, and the answers stay the pass's."""
    monkeypatch.setattr(d, "_BUCKETS_KEPT", 5)
    base = _base("dense")
    for size in range(1_000_000, 13_000_000, 1_000_000):
        c = _config(base, size=size)
        assert d._buckets(c, range(4), False, False) == d._bucketed(c, range(4), False, False)
        assert len(d._BUCKETS) <= 5
