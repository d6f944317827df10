"""The catalog's YAML read by libyaml's parser (``safe_load._FastLoader``, issue 21 item 3:
~0.6 s less per validating process) gives exactly what the pure-Python reader gives, and a
file it would refuse is refused in the pure reader's words."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from trainsim import catalog
from trainsim.config import safe_load
from trainsim.errors import ConfigError

pytestmark = pytest.mark.skipif(safe_load._CParser is None, reason="PyYAML without libyaml")


def _same(a: object, b: object, where: str) -> None:
    """Equal as data and as written: the same types (a ``Written`` float keeps its text), the
    same keys in the same order, the same repr and str of every leaf."""
    assert type(a) is type(b), where
    if isinstance(a, dict):
        assert list(a) == list(b), where  # type: ignore[arg-type]
        for key in a:
            _same(a[key], b[key], f"{where}/{key}")  # type: ignore[index]
    elif isinstance(a, list):
        assert len(a) == len(b), where  # type: ignore[arg-type]
        for i, (x, y) in enumerate(zip(a, b)):  # type: ignore[call-overload]
            _same(x, y, f"{where}[{i}]")
    elif not (isinstance(a, float) and math.isnan(a)):
        assert (a, repr(a), str(a)) == (b, repr(b), str(b)), where


def _files(*kinds: str) -> list[Path]:
    root = Path(catalog.__file__).parent
    return sorted(p for kind in kinds for p in (root / kind).rglob("*.yaml"))


def _check(paths: list[Path]) -> None:
    assert paths
    for path in paths:
        text = path.read_text(encoding="utf-8")
        _same(safe_load.parse(text, str(path), fast=True), safe_load.parse(text, str(path)),
              path.name)


def test_the_release_table_and_a_profile_read_the_same_by_both_parsers():
    """Two of the files every validated training row reads (the others: -m slow below)."""
    root = Path(catalog.__file__).parent
    _check([root / "framework_releases.yaml", root / "frameworks" / "nemo.yaml"])


@pytest.mark.slow
def test_every_catalog_file_reads_the_same_by_both_parsers():
    _check(_files("."))


def test_a_refused_file_is_refused_in_the_pure_readers_words():
    for text in ("tp: 2\ntp: 8\n", "a: [1, 2\n", "a: !!binary aGVsbG8=\n", "a: 0b11\n",
                 "a: 1_000\n", "x: &a [*a]\n"):
        errors = []
        for fast in (True, False):
            try:
                safe_load.parse(text, "t.yaml", fast=fast)
                errors.append(None)
            except ConfigError as exc:
                errors.append(str(exc))
        assert errors[0] == errors[1], text


def test_catalog_files_go_through_libyaml(monkeypatch):
    """The catalog reads its files with ``fast`` (the speed-up is there, not only tested)."""
    seen = []
    monkeypatch.setattr(safe_load, "_yaml_load",
                        lambda text, fast: seen.append(fast) or {"name": "x"})
    monkeypatch.setattr(catalog, "load_file", safe_load.load_file)
    catalog._read_yaml(_files("frameworks")[0])
    assert seen == [True]
