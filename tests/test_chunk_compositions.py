"""``chunks.chunks`` assembles the virtual stages of one composition (first, last, the layer
kinds in order: ``chunks.composition``) once and hands them the same ``Chunk`` (issue 21,
chunk46). Each virtual stage's priced passes are, to the bit, those assembled for it alone,
and stages that differ in anything the key holds (first or last, a layer's routed experts,
window or recompute) get chunks of their own."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import moe_layer_cfg, random_and_public_configs

from trainsim import chunks as chunks_mod
from trainsim.chunks import chunks, composition
from trainsim.pricing import Pricer, shared
from trainsim.workload.schedule import combined_1f1b
from trainsim.workload.shard import shard_of


def _bits(priced) -> tuple:
    """The segments, compared exactly (floats by value: the same arithmetic gives the same
    bits; the board's JSON files check the bits of what they report)."""
    return priced.segments


def _chunk_bits(ch) -> tuple:
    return (tuple(map(_bits, ch.fwd_parts)), _bits(ch.bwd_head),
            tuple(map(_bits, ch.bwd_layers)), _bits(ch.bwd_tail), ch.pair_sides,
            _bits(ch.fwd), _bits(ch.bwd))


def _alone(cfg, monkeypatch, pricer=None) -> dict:
    """Every virtual stage assembled for itself: no two compositions equal."""
    with monkeypatch.context() as m:
        m.setattr(chunks_mod, "composition", lambda first, last, kinds: object())
        return chunks(cfg, pricer or Pricer(cfg), shard_of(cfg))


def _windowed_moe():
    """Twelve layers on pp 2 x vpp 3, two layers a virtual stage: the first dense
    (``moe_first_dense_layers``), every third full attention, the others windowed; the first
    layer of each chunk recomputed (``recompute_num_layers`` 1): virtual stages of several
    compositions, some of them repeated."""
    from trainsim.config import RunConfig

    base = moe_layer_cfg("alltoall", ep=2, experts=8, topk=2, gpus=8)
    model = replace(base.model, num_layers=12, moe_first_dense_layers=1, sliding_window=512,
                    window_attn_skip_freq=3)
    return RunConfig(model=model, cluster=base.cluster,
                     training=replace(base.training, global_batch_size=64, seq_length=2048),
                     parallel=replace(base.parallel, pipeline_model_parallel_size=2,
                                      virtual_pipeline_model_parallel_size=3, recompute="full",
                                      recompute_num_layers=1))


def _configs() -> list:
    return [*random_and_public_configs(46, 30), _windowed_moe()]


def test_every_virtual_stage_is_priced_as_if_assembled_alone(monkeypatch):
    configs = _configs()
    assert len(configs) > 100
    assert any(combined_1f1b(c) for c in configs)
    shared_some = 0
    for cfg in configs:
        pricer = Pricer(cfg)  # one pricer: the second call reads its priced op lists
        got = chunks(cfg, pricer, shard_of(cfg))
        want = _alone(cfg, monkeypatch, pricer)
        assert got.keys() == want.keys()
        for v in got:
            assert _chunk_bits(got[v]) == _chunk_bits(want[v]), (cfg.model.name, v)
        shared_some += len({id(c) for c in got.values()}) < len(got)
    assert shared_some > len(configs) // 3  # the memo is used, not just exact


def test_inside_shared_prices_too(monkeypatch):
    """Inside ``pricing.shared`` (the tuner's and the search's pricers) the same to the bit."""
    cfg = _windowed_moe()
    with shared(object()):
        got = chunks(cfg, Pricer(cfg), shard_of(cfg))
    with shared(object()):
        want = _alone(cfg, monkeypatch)
    assert [_chunk_bits(got[v]) for v in got] == [_chunk_bits(want[v]) for v in want]


def test_a_stage_that_differs_in_a_field_the_key_holds_gets_its_own_chunk():
    cfg = _windowed_moe()
    m, rec = cfg.model, cfg.recomputed_layers
    ranges = cfg.virtual_stage_layers()
    got = chunks(cfg, Pricer(cfg), shard_of(cfg))
    kinds = {v: [(m.is_moe_layer(i), m.layer_window(i) is not None, i in rec) for i in r]
             for v, r in enumerate(ranges)}
    # the fixture holds stages that differ in each field, and stages that repeat
    assert {k[0][0] for k in kinds.values()} == {False, True}
    assert {k[0][1] for k in kinds.values()} == {False, True}
    for v, w in ((v, w) for v in got for w in got if v < w):
        same = composition(v == 0, v == len(ranges) - 1, kinds[v]) == \
            composition(w == 0, w == len(ranges) - 1, kinds[w])
        assert (got[v] is got[w]) == same, (v, w)
    assert len({id(c) for c in got.values()}) < len(got)
    # and a key that dropped any one field would hand a stage another's chunk: they differ
    inner = [v for v in kinds if v not in (0, len(ranges) - 1)]
    assert got[0].fwd.segments != got[inner[0]].fwd.segments  # first (embedding) vs not
    by_kinds = {tuple(kinds[v]): got[v] for v in inner}
    assert len({ch.fwd.segments for ch in by_kinds.values()}) == len(by_kinds) > 1
    assert {ch.bwd.segments for ch in by_kinds.values()} and \
        len({ch.bwd.segments for ch in by_kinds.values()}) == len(by_kinds)


@pytest.mark.parametrize("field", ["recompute", "first", "last", "moe", "window"])
def test_composition_tells_apart_each_field(field):
    kinds = [(False, False, False), (True, True, False)]
    base = composition(False, False, kinds)
    changed = {
        "recompute": composition(False, False, [kinds[0], (True, True, True)]),
        "first": composition(True, False, kinds),
        "last": composition(False, True, kinds),
        "moe": composition(False, False, [(True, False, False), kinds[1]]),
        "window": composition(False, False, [(False, True, False), kinds[1]]),
    }[field]
    assert changed != base
    assert composition(False, False, list(kinds)) == base
    assert composition(False, False, kinds[::-1]) != base  # the order is the key's too
