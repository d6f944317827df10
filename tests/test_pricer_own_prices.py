"""A pricer outside ``pricing.shared`` prices an op list it priced before once (its own
prices, 36th session: the simulation of one candidate prices its passes for its bound, its
truncated steady-state runs and a fallback's graph), and framework profiles are shared by every
caller, read-only, with no copy made: every figure the same to the bit."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from test_shared_pricing import _configs, _fields

from trainsim import simulate
from trainsim.catalog import frameworks
from trainsim.catalog.frameworks import (
    framework_default,
    framework_names,
    framework_profile,
)
from trainsim.pricing import Pricer
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Elementwise
from trainsim.workload.shard import shard_of


class _Fresh(Pricer):
    """A subclass: never keeps its own prices (``Pricer._own`` is None), so every list is
    priced afresh, as every pricer outside ``shared`` did before."""


def test_own_prices_are_those_priced_afresh():
    """Twelve random candidates: an equal op list priced again by the same pricer is the same
    object, with the same segments as a fresh pricing; every result field of ``simulate`` with
    a pricer that keeps its own prices equals the one with a pricer that does not."""
    for cfg in _configs(12, seed=5):
        ops = layer_forward(cfg, shard_of(cfg), moe=False)
        pricer, fresh = Pricer(cfg), _Fresh(cfg)
        assert fresh._own is None
        first = pricer.price(ops)
        assert pricer.price(list(ops)) is first  # an equal list: the kept entry
        assert pricer.price([replace(op) for op in ops]) is first  # equal ops, other objects
        assert first.segments == fresh.price(ops).segments
        assert fresh.price(ops) is not fresh.price(ops)
        assert pricer.price_at(ops)[2] == fresh.price_at(ops)[2]
        assert _fields(simulate(cfg, pricer=Pricer(cfg))) == \
            _fields(simulate(cfg, pricer=_Fresh(cfg)))


def test_a_list_holding_one_op_twice_is_priced_afresh():
    """The positions ``price_at`` gives are those of the list asked (an op held twice maps to
    its last place, as ``_located`` reads identities), so such a list is not kept: an equal
    list of distinct ops priced earlier does not hand it its positions."""
    cfg = _configs(1, seed=9)[0]
    pricer = Pricer(cfg)
    a, b = Elementwise("x", bytes=1e6), Elementwise("x", bytes=1e6)
    assert pricer.price_at([a, b])[2][:2] == [0, 1]  # (then -1: the host's wait, if any)
    assert pricer.price_at([a, a])[2][:2] == [1, 1]
    assert len(pricer._own) == 1


def test_profiles_shared_read_only_and_as_the_yaml_reads():
    """Every framework's newest profile, and a dated one: one object for every caller, its
    features and defaults equal to the YAML's (a ``copy.deepcopy`` of them), every dict and
    list in them refusing change and ``copy.deepcopy`` giving a plain copy to change;
    ``framework_default`` reads the same value as the profile."""
    for name in framework_names():
        for version in (None, "2021-01" if frameworks._load(name).style == "date" else None):
            got = framework_profile(name, version)
            assert framework_profile(name, version) is got
            mine = copy.deepcopy(got.defaults)
            assert type(mine) is dict and mine == got.defaults
            mine["zero_stage"] = "changed"  # the caller's own copy: the profile keeps its value
            assert got.defaults.get("zero_stage") != "changed"
            for key, value in got.defaults.items():
                if isinstance(value, dict):
                    with pytest.raises(TypeError, match="shared by every caller"):
                        value["x"] = 1
                if isinstance(value, list):
                    with pytest.raises(TypeError, match="shared by every caller"):
                        value.append(1)
                expect = tuple(value) if isinstance(value, list) else value
                assert framework_default(name, version, key) == expect
