"""A tuned row's bounds price bound46's terms (the optimizer steps, ``after_last_pass``,
``first_gathers_s``) once per distinct key (``bound._row_terms``, after46): every config field
but ``bound.TERMS_LEFT_OUT``'s. The tests record every field the terms read for the public
rows' candidates and fail if a left-out one is among them, show that flipping a left-out field
leaves every term to the bit, that a read field changed misses (so the memo can never hand back
a stale value), and that the same field left out would be caught."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.test_shared_chunks import KEYED, _configs, _left_out_read, _uncached
from trainsim import bound, memo
from trainsim.bound import TERMS_LEFT_OUT, after_last_pass, first_gathers_s, lower_bound_s
from trainsim.config import RunConfig
from trainsim.config.parallel import ParallelConfig
from trainsim.config.training import TrainingConfig
from trainsim.errors import TrainsimError
from trainsim.memory import stage_param_split
from trainsim.memory.params import stage_layer_params
from trainsim.pricing import Priced, Pricer
from trainsim.simulator import _TaskGraph
from trainsim.workload import schedule
from trainsim.workload.fp8_gather import param_gather_width
from trainsim.workload.sharding import fsdp_grad_bytes, fsdp_per_unit


def _bounded(cfg: RunConfig) -> bool:
    p = cfg.parallel
    return p.pipeline_schedule in (None, "1f1b", "interleaved_1f1b") and \
        not p.optimizer_post_validation


@pytest.fixture(scope="module")
def configs() -> list[RunConfig]:
    return [c for c in _configs() if _bounded(c)]


def _terms(cfg: RunConfig, graph: _TaskGraph | None = None) -> tuple:
    """The terms as ``lower_bound_s`` prices them (each stage's step, the first gathers, each
    stage's ``after_last_pass`` with no send folded and with one)."""
    graph = graph or _TaskGraph(cfg, Pricer(cfg), None)
    steps = [graph.optimizer_step(s) for s in range(graph.pp)]
    graph.optimizer_step = steps.__getitem__  # type: ignore[method-assign]
    return ([x.duration_s if isinstance(x, Priced) else x for x in steps],
            first_gathers_s(graph),
            [after_last_pass(graph, s, f) for s in range(graph.pp) for f in (0.0, 1e-4)])


@contextmanager
def _recording(reads: set[tuple[str, str]]) -> Iterator[None]:
    """Every attribute read on a parallel or training section, as (section, name), but those
    made inside ``combined_1f1b`` (its answer is in the key) or by the code that reads a
    section's ``__dict__`` for a key of its own (``test_shared_chunks.KEYED``)."""
    skipped = (schedule.combined_1f1b.__code__, *KEYED)
    classes = {"parallel": ParallelConfig, "training": TrainingConfig}
    for name, cls in classes.items():
        assert "__getattribute__" not in cls.__dict__

        def getattribute(self, attr, _name=name):
            if sys._getframe(1).f_code not in skipped:
                reads.add((_name, attr))
            return object.__getattribute__(self, attr)

        cls.__getattribute__ = getattribute  # type: ignore[method-assign]
    try:
        yield
    finally:
        for cls in classes.values():
            del cls.__getattribute__


def _reads(cfgs: list[RunConfig]) -> set[tuple[str, str]]:
    """Every parallel / training field read while the terms are priced, with what they price
    with: the pricer, and the graph's attributes they read as ``_TaskGraph.__init__`` computes
    them (zero stage, FSDP switch, parameter groups, gather widths, gradient bytes)."""
    reads: set[tuple[str, str]] = set()
    for cfg in cfgs:
        graph = _TaskGraph(cfg, Pricer(cfg), None)
        cfg = _uncached(cfg)
        with _recording(reads):
            graph.pricer = Pricer(cfg)
            fsdp_per_unit(cfg, cfg.parallel.effective_zero_stage)
            fsdp_grad_bytes(cfg)
            for s in range(cfg.parallel.pp):
                dense, experts = stage_param_split(cfg, s)
                param_gather_width(cfg, experts, experts)
                param_gather_width(cfg, dense, stage_layer_params(cfg, s) - experts)
            _ = cfg.shard_ranks, cfg.edp, cfg.training.grad_reduce_in_fp32
            _terms(cfg, graph)
    return reads


def test_left_out_fields_are_not_read(configs):
    """No field of ``TERMS_LEFT_OUT`` is read while the public rows' candidates' terms are
    priced (and the recording sees fields the terms do read)."""
    assert len(configs) > 150
    reads = _reads(configs)
    assert {("parallel", "overlap_grad_reduce"), ("parallel", "distributed_optimizer"),
            ("parallel", "vpp"), ("training", "optimizer")} <= reads
    assert not _left_out_read(reads, TERMS_LEFT_OUT)


def _flips(cfg: RunConfig) -> list[RunConfig]:
    """``cfg`` with one left-out field changed, each way the config accepts."""
    p, t = cfg.parallel, cfg.training
    changes = [("parallel", {"sequence_parallel": not p.sequence_parallel}),
               ("training", {"micro_batch_size": 2 * t.micro_batch_size}),
               ("parallel", {"recompute": "full", "recompute_num_layers": 1})]
    changes += [("parallel", {"recompute": r, "recompute_num_layers": None})
                for r in ("none", "selective", "full") if r != p.recompute]
    changes.append(("parallel", {"recompute": "selective", "recompute_modules": ("mlp",)}))
    out = []
    for section, change in changes:
        try:
            out.append(dataclasses.replace(cfg, **{section: dataclasses.replace(
                getattr(cfg, section), **change)}))
        except (TrainsimError, ValueError):
            continue
    return out


def test_left_out_fields_leave_the_terms(configs):
    """Each left-out field changed (where the config accepts it): the same key and every term
    to the bit."""
    flipped = 0
    for cfg in configs[::3]:
        terms = _terms(cfg)
        for other in _flips(cfg):
            if schedule.combined_1f1b(other) != schedule.combined_1f1b(cfg):
                continue  # in the key: another key
            assert memo.config_key(other, TERMS_LEFT_OUT) == memo.config_key(cfg, TERMS_LEFT_OUT)
            assert _terms(other) == terms
            flipped += 1
    assert flipped > 100


def _row_bounds(cfgs: list[RunConfig]) -> tuple[list[float], int]:
    """Each config's bound inside one row's block, and how many terms it priced."""
    with memo.chunks_shared():
        kept = memo.row_kept()
        bounds = [lower_bound_s(c, Pricer(c)) for c in cfgs]
        terms = sum(1 for k in kept if k[0][0] == "bound terms")
    return bounds, terms


def _overlap_pair(configs: list[RunConfig]) -> tuple[RunConfig, RunConfig]:
    """A candidate without overlap_grad_reduce, and the same with it, whose bounds differ."""
    for cfg in configs:
        if cfg.parallel.overlap_grad_reduce or cfg.dp == 1:
            continue
        other = dataclasses.replace(cfg, parallel=dataclasses.replace(
            cfg.parallel, overlap_grad_reduce=True))
        if lower_bound_s(other) != lower_bound_s(cfg):
            return cfg, other
    raise AssertionError("no candidate's bound moves with overlap_grad_reduce")


def test_shared_within_a_row(configs):
    """Candidates that differ only in a left-out field price the terms once in a row's block,
    and their bounds are the ones each prices alone."""
    cfg = next(c for c in configs if len(_flips(c)) >= 3 and c.parallel.pp > 1)
    cfgs = [cfg, *_flips(cfg)]
    alone = [lower_bound_s(c, Pricer(c)) for c in cfgs]
    bounds, terms = _row_bounds(cfgs)
    assert bounds == alone
    distinct = len({(memo.config_key(c, TERMS_LEFT_OUT), schedule.combined_1f1b(c))
                    for c in cfgs})
    assert distinct < len(cfgs)
    assert terms <= distinct * (2 + 2 * cfg.parallel.pp)


def test_a_read_field_changed_misses(configs):
    """overlap_grad_reduce (read by the terms) changed: the memo misses (new keys, priced
    anew) and each bound is the one it has alone."""
    cfg, other = _overlap_pair(configs)
    (a, b), terms = _row_bounds([cfg, other])
    assert (a, b) == (lower_bound_s(cfg), lower_bound_s(other))
    assert terms == _row_bounds([cfg])[1] + _row_bounds([other])[1]


def test_a_read_field_left_out_is_caught(configs, monkeypatch):
    """overlap_grad_reduce left out of the key: the read check names it, and the memo hands
    the second candidate the first one's terms, a bound other than its own."""
    cfg, other = _overlap_pair(configs)
    left_out = {**TERMS_LEFT_OUT,
                "parallel": (*TERMS_LEFT_OUT["parallel"], "overlap_grad_reduce")}
    assert _left_out_read(_reads([cfg]), left_out) == {("parallel", "overlap_grad_reduce")}
    monkeypatch.setattr(bound, "TERMS_LEFT_OUT", left_out)
    (_, b), _ = _row_bounds([cfg, other])
    assert b != lower_bound_s(other)


def test_not_shared_outside_a_row_or_another_pricer(configs):
    """Outside a row's block, or with a pricer not of the config itself, nothing is kept."""
    cfg = configs[0]
    assert memo.row_kept() is None
    with memo.chunks_shared():
        kept = memo.row_kept()
        lower_bound_s(cfg, Pricer(dataclasses.replace(cfg)))
        assert not any(k[0][0] == "bound terms" for k in kept)
        lower_bound_s(cfg, Pricer(cfg))
        assert any(k[0][0] == "bound terms" for k in kept)
