"""A tuned row's candidates that differ only in optimizer-side fields price their chunks once
(``memo.shared_chunks`` inside ``validate.training.row_shared``, bound44). The key leaves out
``memo.OPTIMIZER_SIDE``: the tests below record every config attribute that ``Pricer(cfg)``,
``shard_of(cfg)`` and ``chunks`` read for the public file's rows and fail if a left-out field
is among them, and show that a field they read, left out of the key, would make the memo
hand back wrong chunks."""

from __future__ import annotations

import csv
import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from trainsim import memo
from trainsim.catalog import run_config_from_dict
from trainsim.chunks import chunks
from trainsim.config import RunConfig
from trainsim.config.cached import cached
from trainsim.config.parallel import ParallelConfig
from trainsim.config.training import TrainingConfig
from trainsim.errors import TrainsimError
from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.row_settings import counts_checked, training_base, with_choice
from trainsim.validate.vocab import normalized_training_row
from trainsim.workload.shard import shard_of

SECTIONS = {"parallel": ParallelConfig, "training": TrainingConfig}
KEYED = (cached.__get__.__code__, RunConfig.__dict__["virtual_ranges"].func.__code__)
"""The code that reads a section's ``__dict__`` for one key of its own (a ``cached`` value
stored; the layer ranges the parallel section keeps beside its model), not for its fields."""
VARIED = ("distributed_optimizer", "zero_stage", "grad_reduce_dtype", "overlap_grad_reduce",
          "dp_overlap")
"""The unknowns whose every value is built (the others at their first candidate): the
optimizer-side choices the tuner makes."""


def _configs() -> list[RunConfig]:
    """Each public row's first candidate, and every value of its optimizer-side unknowns."""
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for row in rows:
        try:
            raw, unknown = training_base(counts_checked(normalized_training_row(row)[0]))
        except (TrainsimError, KeyError, ValueError):
            continue  # an empty tp or pp (layouts), or a row the config refuses
        first = {k: v[0] for k, v in unknown.items()}
        choices = [first] + [{**first, k: v} for k in VARIED for v in unknown.get(k, [])[1:]]
        for choice in choices:
            try:
                out.append(run_config_from_dict(with_choice(raw, choice)))
            except TrainsimError:
                continue
    return out


@pytest.fixture(scope="module")
def configs() -> list[RunConfig]:
    return _configs()


@contextmanager
def _recording(reads: set[tuple[str, str]]) -> Iterator[None]:
    """Every attribute read on a parallel or training section, as (section, name)."""
    owners = {cls: name for name, cls in SECTIONS.items()}
    added = []
    for cls, name in owners.items():
        assert "__getattribute__" not in cls.__dict__

        def getattribute(self, attr, _name=name):
            if attr != "__dict__" or sys._getframe(1).f_code not in KEYED:
                reads.add((_name, attr))
            return object.__getattribute__(self, attr)

        cls.__getattribute__ = getattribute  # type: ignore[method-assign]
        added.append(cls)
    try:
        yield
    finally:
        for cls in added:
            del cls.__getattribute__


def _uncached(cfg: RunConfig) -> RunConfig:
    """``cfg`` with every value its sections keep beside their fields (``cached`` values, the
    parallel section's layer ranges) dropped, so that the reads behind them are made (and
    recorded) again."""
    for section in (cfg, cfg.parallel, cfg.training):
        fields = {f.name for f in dataclasses.fields(section)}
        for name in list(vars(section)):
            if name not in fields:
                del section.__dict__[name]
    return cfg


def _fields_read(cfgs: list[RunConfig]) -> set[tuple[str, str]]:
    reads: set[tuple[str, str]] = set()
    for cfg in cfgs:
        cfg = _uncached(cfg)
        with _recording(reads):
            chunks(cfg, Pricer(cfg), shard_of(cfg))
    return reads


def _left_out_read(reads: set[tuple[str, str]], left_out: dict[str, tuple[str, ...]]) -> set:
    """The left-out fields among ``reads`` (``__dict__``, read wholesale, counts as every one)."""
    return {(s, f) for s, fields in left_out.items() for f in fields
            if (s, f) in reads or (s, "__dict__") in reads}


def _prices(ch: dict) -> list:
    return [(v, c.fwd.duration_s, c.bwd.duration_s, c.fwd.segments, c.bwd.segments,
             tuple(b.duration_s for b in c.bwd_layers)) for v, c in sorted(ch.items())]


def test_left_out_fields_are_not_read(configs):
    """No field of ``OPTIMIZER_SIDE`` is read while the public rows' candidates are priced (and
    the recording sees the fields the builders do read)."""
    assert len(configs) > 150
    assert set(memo.OPTIMIZER_SIDE) <= set(SECTIONS)
    reads = _fields_read(configs)
    assert {("parallel", "sequence_parallel"), ("parallel", "recompute"),
            ("training", "micro_batch_size"), ("training", "dtype")} <= reads
    assert not _left_out_read(reads, memo.OPTIMIZER_SIDE)


def test_left_out_fields_leave_the_prices(configs):
    """Each bool of ``OPTIMIZER_SIDE`` flipped (where the config accepts it): the same prices."""
    flipped = 0
    for cfg in configs[::4]:
        for section, fields in memo.OPTIMIZER_SIDE.items():
            for f in fields:
                value = getattr(getattr(cfg, section), f)
                if not isinstance(value, bool):
                    continue
                try:
                    other = dataclasses.replace(cfg, **{section: dataclasses.replace(
                        getattr(cfg, section), **{f: not value})})
                except TrainsimError:
                    continue
                assert memo.chunk_key(other) == memo.chunk_key(cfg)
                assert _prices(chunks(other, Pricer(other), shard_of(other))) == \
                    _prices(chunks(cfg, Pricer(cfg), shard_of(cfg)))
                flipped += 1
    assert flipped > 50


def test_a_read_field_left_out_is_caught(configs, monkeypatch):
    """``sequence_parallel`` (read by the builders) left out of the key: the read check names
    it, and the memo hands a config the chunks of one whose prices differ."""
    left_out = {**memo.OPTIMIZER_SIDE,
                "parallel": (*memo.OPTIMIZER_SIDE["parallel"], "sequence_parallel")}
    cfg = next(c for c in configs if c.parallel.tp > 1 and c.parallel.sequence_parallel)
    other = dataclasses.replace(cfg, parallel=dataclasses.replace(cfg.parallel,
                                                                  sequence_parallel=False))
    assert _left_out_read(_fields_read([cfg]), left_out) == {("parallel", "sequence_parallel")}
    monkeypatch.setattr(memo, "OPTIMIZER_SIDE", left_out)
    with memo.chunks_shared():
        a = memo.shared_chunks(cfg, Pricer(cfg), shard_of(cfg))
        b = memo.shared_chunks(other, Pricer(other), shard_of(other))
    assert b is a  # shared under the wrong key ...
    assert _prices(b) != _prices(chunks(other, Pricer(other), shard_of(other)))  # ... wrongly


def test_shared_within_the_block_only(configs):
    """Inside ``chunks_shared`` a config that differs only in ``distributed_optimizer`` gets
    the first one's chunks, with the prices it would price; outside, and for another field, a
    pricer of another config or another layer source, chunks of its own."""
    cfg = next(c for c in configs if not c.parallel.distributed_optimizer and c.dp > 1
               and c.parallel.tp > 1 and c.parallel.sequence_parallel)
    other = dataclasses.replace(cfg, parallel=dataclasses.replace(cfg.parallel,
                                                                  distributed_optimizer=True))
    no_sp = dataclasses.replace(cfg, parallel=dataclasses.replace(cfg.parallel,
                                                                  sequence_parallel=False))
    with memo.chunks_shared():
        a = memo.shared_chunks(cfg, Pricer(cfg), shard_of(cfg))
        assert memo.shared_chunks(other, Pricer(other), shard_of(other)) is a
        assert memo.shared_chunks(no_sp, Pricer(no_sp), shard_of(no_sp)) is not a
        assert memo.shared_chunks(other, Pricer(cfg), shard_of(other)) is not a
        assert memo.shared_chunks(other, Pricer(other), shard_of(other),
                                  lambda c, s, moe: []) is not a
    assert _prices(a) == _prices(chunks(other, Pricer(other), shard_of(other)))
    assert memo.shared_chunks(other, Pricer(other), shard_of(other)) is not a
