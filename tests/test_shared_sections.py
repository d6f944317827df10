"""Inside ``catalog.shared_sections.sections_shared`` (a validated row's tuning,
``validate.training.row_shared``) a config's model and cluster sections are built once per
distinct raw mapping (44th session, speed44); the configs are the same as built alone."""

from __future__ import annotations

import csv

import pytest

from trainsim import catalog
from trainsim.catalog import run_config_from_dict, shared_sections
from trainsim.catalog.shared_sections import frozen, kept_section, sections_shared
from trainsim.config.safe_load import Written
from trainsim.errors import ConfigError
from trainsim.validate import BUNDLED_DIR, training
from trainsim.validate.row_settings import counts_checked, training_base, with_choice
from trainsim.validate.vocab import normalized_training_row


def test_frozen_tells_types_and_signed_zeros_apart():
    """Values Python counts equal but a build may read differently are different keys."""
    keys = {frozen(v) for v in (1, 1.0, True, 0.0, -0.0, "1", None, [1], (1,), {"a": 1})}
    assert len(keys) == 10
    assert frozen({"a": [1, {"b": 2.5}]}) == frozen({"a": [1, {"b": 2.5}]})
    assert frozen({"a": 1, "b": 2}) != frozen({"b": 2, "a": 1})  # keys in their order
    for odd in (Written("0.10"), object(), {1, 2}):
        with pytest.raises(shared_sections.Unkept):
            frozen({"x": odd})


def test_kept_section_builds_once_inside_only():
    """Inside: one build per equal mapping and kind, a failed build not kept; outside (and
    after the block) every call builds."""
    built: list[int] = []

    def make(value):
        def build():
            built.append(value)
            if value < 0:
                raise ConfigError("bad")
            return object()
        return build

    first = kept_section("model", {"n": 1}, None, make(1))
    assert kept_section("model", {"n": 1}, None, make(1)) is not first and built == [1, 1]
    with sections_shared():
        a = kept_section("model", {"n": 1}, None, make(1))
        assert kept_section("model", {"n": 1}, None, make(1)) is a
        assert kept_section("cluster", {"n": 1}, None, make(1)) is not a  # another kind
        assert kept_section("model", {"n": 1}, "elsewhere", make(1)) is not a
        assert kept_section("model", {"n": 1.0}, None, make(1)) is not a
        for _ in range(2):
            with pytest.raises(ConfigError):
                kept_section("model", {"n": -1}, None, make(-1))
        assert kept_section("model", {"n": Written("1")}, None, make(1)) is not a
        with sections_shared():  # a nested block keeps its own
            assert kept_section("model", {"n": 1}, None, make(1)) is not a
        assert built.count(-1) == 2
    assert kept_section("model", {"n": 1}, None, make(1)) is not a
    assert not shared_sections._KEPT


def test_row_configs_equal_configs_built_alone(monkeypatch):
    """A tuned row's candidate configs, built inside ``row_shared`` (sections kept) and
    alone: equal, and inside, the model and cluster sections are built once."""
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "mlm-weak-7.1b-96")
    raw, unknown = training_base(counts_checked(normalized_training_row(row)[0]))
    choices = [{k: v[min(i, len(v) - 1)] for k, v in unknown.items()} for i in range(3)]
    alone = []
    for choice in choices:
        try:
            alone.append(run_config_from_dict(with_choice(raw, choice)))
        except ConfigError as exc:
            alone.append(str(exc))
    calls = {"model": 0, "cluster": 0}
    for name, fn in (("model", catalog._model_section), ("cluster", catalog._cluster_section)):
        def counted(*args, _fn=fn, _name=name):
            calls[_name] += 1
            return _fn(*args)
        monkeypatch.setattr(catalog, f"_{name}_section", counted)
    shared = []
    with training.row_shared():
        for choice in choices:
            try:
                shared.append(training._interned(run_config_from_dict(with_choice(raw, choice))))
            except ConfigError as exc:
                shared.append(str(exc))
    assert shared == alone and any(not isinstance(c, str) for c in shared)
    assert calls == {"model": 1, "cluster": 1}
