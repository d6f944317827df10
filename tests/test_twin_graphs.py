"""Twin configs' task graphs built once inside ``engine.runs_shared`` (``trainsim.twin_graphs``,
issue 21 item 4): every result is the one simulated alone, to the bit, compute sources
included; a twin's graph is not built again; configs that differ elsewhere are not twins."""

from __future__ import annotations

import dataclasses
import random

from helpers import make_base

from trainsim import simulate, simulator
from trainsim.bound import lower_bound_s
from trainsim.engine.loop import runs_shared
from trainsim.errors import ConfigError
from trainsim.pricing import Pricer, shared
from trainsim.search import SearchSpace
from trainsim.search.space import Candidate
from trainsim.twin_graphs import graph_key

SPACE = SearchSpace(recompute=("none",), zero=(0, 1, 3), max_micro_batch=4, max_cp=2)


def _fields(r) -> tuple:
    return (r.iteration_time_s, r.breakdown, r.exposed_comm, r.memory, r.critical_stage,
            r.compute_sources, r.simulation, r.model_flops, r.hardware_flops)


def _twins(n: int, seed: int) -> list:
    """``n`` random candidates of recompute none, each followed by its selective and full
    twins (the same switches)."""
    base = make_base(gpus=16, batch=64)
    keys = list(SPACE.memory_keys(base, 16))
    rng = random.Random(seed)
    out = []
    for key in rng.sample(keys, n):
        c = rng.choice(SPACE.variants(key))
        for rc in ("none", "selective", "full"):
            out.append(dataclasses.replace(c, mem=dataclasses.replace(c.mem, recompute=rc))
                       .to_config(base))
    return out


def test_twins_inside_runs_shared_give_every_result_to_the_bit(monkeypatch):
    cfgs = _twins(12, seed=11)
    alone = [_fields(simulate(cfg)) for cfg in cfgs]
    built = []
    real = simulator._TaskGraph
    monkeypatch.setattr(simulator, "_TaskGraph", lambda *a: built.append(1) or real(*a))
    with shared(("twins", 1)), runs_shared():
        inside = [_fields(simulate(cfg)) for cfg in cfgs]
    together = len(built)
    assert inside == alone
    with shared(("twins", 2)):  # each in a runs_shared of its own: every graph built
        for cfg in cfgs:
            with runs_shared():
                simulate(cfg)
    apart = len(built) - together
    # the selective twins (FlashAttention recomputes the scores anyway) built no graph of
    # their own (full recompute prices other passes: its own graphs)
    assert apart - together >= len(cfgs) // 3


def test_configs_that_differ_elsewhere_are_no_twins():
    """An overlap switch or a micro-batch count changes the key; outside ``shared`` (no
    shared prices, so no identical chunks) there is none."""
    base = make_base(gpus=16, batch=64)
    key = next(k for k in SPACE.memory_keys(base, 16) if k.pp == 2 and k.dp > 1)
    a = Candidate(key).to_config(base)
    b = Candidate(key, overlap_grad_reduce=True).to_config(base)
    sel = Candidate(dataclasses.replace(key, recompute="selective")).to_config(base)
    assert graph_key(a, Pricer(a), None, None) is None
    with shared(("twins", 3)):
        ka = graph_key(a, Pricer(a), None, None)
        assert ka is not None
        assert graph_key(sel, Pricer(sel), None, None) == ka
        assert graph_key(b, Pricer(b), None, None) != ka
        assert graph_key(a, Pricer(a), None, 4) != ka


def test_a_pricer_that_priced_before_the_build_shares_no_graph_with_a_fresh_twin():
    """A lower bound priced with the same pricer first (as a search does) leaves records the
    build does not add again; a fresh twin's pricer must not take that build's records as its
    whole (its ``compute_sources`` would miss them), so the pricer's state is in the key."""
    base = make_base(gpus=16, batch=64)
    for i, key in enumerate(list(SPACE.memory_keys(base, 16))[:8]):
        a = Candidate(key).to_config(base)
        b = Candidate(dataclasses.replace(key, recompute="selective")).to_config(base)
        alone = simulate(b).compute_sources
        with shared(("twins", 4, i)), runs_shared():
            pa = Pricer(a)
            lower_bound_s(a, pa)
            simulate(a, pricer=pa)
            assert simulate(b).compute_sources == alone


def test_a_twin_handed_a_graph_takes_its_summary(monkeypatch):
    """A twin's graph run in full is summarized once (``twin_graphs.kept_summary``): the
    twin's results are its own simulated alone, with one summary for the pair."""
    cfgs = _twins(8, seed=2)
    alone = [_fields(simulate(cfg)) for cfg in cfgs]
    made = []
    real = simulator.summarize
    monkeypatch.setattr(simulator, "summarize", lambda *a: made.append(1) or real(*a))
    with shared(("summary twins", 1)), runs_shared():
        inside = [_fields(simulate(cfg)) for cfg in cfgs]
    together = len(made)
    assert inside == alone
    with shared(("summary twins", 2)):
        for cfg in cfgs:
            with runs_shared():
                simulate(cfg)
    apart = len(made) - together
    assert apart - together >= len(cfgs) // 3


def test_overlap_siblings_share_their_priced_chunks_and_every_result_to_the_bit(monkeypatch):
    """Configs that differ only in the data-parallel and p2p overlap switches price their
    chunks once inside ``runs_shared`` (``twin_graphs.kept_chunks``); every result, compute
    sources included, is the one simulated alone."""
    from trainsim import twin_graphs

    base = make_base(gpus=16, batch=64)
    keys = [k for k in SPACE.memory_keys(base, 16) if k.pp > 1 and k.dp > 1]
    rng = random.Random(5)
    cfgs = []
    for key in rng.sample(keys, 6):
        cfgs += [c.to_config(base) for c in SPACE.variants(key) if not c.tp_comm_overlap]
    alone = [_fields(simulate(cfg)) for cfg in cfgs]
    priced = []
    real = twin_graphs.chunks
    monkeypatch.setattr(twin_graphs, "chunks", lambda *a: priced.append(1) or real(*a))
    with shared(("siblings", 1)), runs_shared():
        inside = [_fields(simulate(cfg)) for cfg in cfgs]
    assert inside == alone
    assert len(priced) == 6 < len(cfgs)  # one chunk set per memory group


def test_kept_chunks_shares_across_the_configs_free_of_keeps_together():
    """``twin_graphs.kept_chunks`` keeps its own table rather than a ``memory.free_of.FreeOf``:
    its answer is priced on the caller's pricer, whose records a hit replays (``FreeOf`` hands
    back the answer alone), it keys on the pricer's signature, and it stops keeping at its cap
    where ``FreeOf`` clears. Its sharing is the same: two configs get one chunk set exactly
    where ``FreeOf(CHUNK_FREE_FIELDS)`` gives them one answer (overlap siblings), and not across
    the switches the chunks read (``tp_comm_overlap``) or another layout."""
    from trainsim.memory.free_of import FreeOf
    from trainsim.twin_graphs import CHUNK_FREE_FIELDS, kept_chunks

    base = make_base(gpus=16, batch=64)
    keys = [k for k in SPACE.memory_keys(base, 16) if k.pp > 1 and k.dp > 1]
    cfgs = [c.to_config(base) for key in random.Random(7).sample(keys, 3)
            for c in SPACE.variants(key)]
    free = FreeOf(CHUNK_FREE_FIELDS)

    def answer(cfg, arg):
        return object()  # a new object per computation: equal answers are kept ones

    with shared(("chunks agree", 1)), runs_shared():
        got = [kept_chunks(cfg, Pricer(cfg), None) for cfg in cfgs]
    kept = [free(answer, cfg, None) for cfg in cfgs]
    pairs = [(got[i] is got[j], kept[i] is kept[j])
             for i in range(len(cfgs)) for j in range(i + 1, len(cfgs))]
    assert all(a == b for a, b in pairs)
    assert {(True, True), (False, False)} <= set(pairs)  # both sides of the rule are seen


def _fsdp_configs() -> list:
    """ZeRO-3 configs of every data-parallel engine that runs it, pipelined or not, with the
    data-parallel overlap switches off (a twin's are the same config with them on)."""
    from trainsim.workload.sharding import fsdp_per_unit

    base = make_base(gpus=16, batch=256)
    keys = [k for k in SPACE.memory_keys(base, 16) if k.zero == 3 and k.dp > 1]
    out = []
    for key in random.Random(3).sample(keys, 6):
        cfg = Candidate(key).to_config(base)
        for impl in ("megatron", "fsdp2", "fsdp1", "deepspeed"):
            try:
                c = dataclasses.replace(cfg, parallel=dataclasses.replace(
                    cfg.parallel, data_parallel_impl=impl))
            except ConfigError:  # an engine that does not run this layout
                c = None
            if c is not None:
                assert fsdp_per_unit(c, c.parallel.effective_zero_stage)
                out.append(c)
    return out


def _switched(cfg, grad: bool, gather: bool):
    return dataclasses.replace(cfg, parallel=dataclasses.replace(
        cfg.parallel, overlap_grad_reduce=grad, overlap_param_gather=gather))


def test_the_builder_reads_no_data_parallel_overlap_switch_under_fsdp():
    """Under ZeRO-3 / FSDP the graph builder, the steady state's truncated runs and their
    proofs read neither data-parallel overlap switch (``twin_graphs.UNREAD_UNDER_FSDP``, which
    ``graph_key`` holds as one value there): every parallel field read while they run is
    recorded; at ZeRO-1 the same recording sees ``overlap_grad_reduce`` read."""
    import sys

    from trainsim import steady_state
    from trainsim.config import RunConfig
    from trainsim.config.cached import cached
    from trainsim.config.parallel import ParallelConfig
    from trainsim.twin_graphs import UNREAD_UNDER_FSDP

    # the code that reads the section's __dict__ for a value kept beside its fields (as
    # tests/test_shared_chunks.py), not for its fields; any other read counts as all fields
    keyed = (cached.__get__.__code__, RunConfig.__dict__["virtual_ranges"].func.__code__)

    def reads_of(cfgs) -> set:
        reads: set = set()
        assert "__getattribute__" not in ParallelConfig.__dict__

        def getattribute(self, attr):
            if attr != "__dict__" or sys._getframe(1).f_code not in keyed:
                reads.add(attr)
            return object.__getattribute__(self, attr)

        for cfg in cfgs:
            for section in (cfg, cfg.parallel):  # values kept beside the fields: read again
                fields = {f.name for f in dataclasses.fields(section)}
                for name in [n for n in vars(section) if n not in fields]:
                    del section.__dict__[name]
            ParallelConfig.__getattribute__ = getattribute  # type: ignore[method-assign]
            try:
                pricer = Pricer(cfg)
                simulator.build_graph(cfg, pricer, None)
                steady_state.attempt(cfg, pricer)
            finally:
                del ParallelConfig.__getattribute__
        return reads

    cfgs = _fsdp_configs()
    assert {c.parallel.data_parallel_impl for c in cfgs} >= {"megatron", "fsdp2"}
    assert any(steady_state.plan(c)[0] is not None for c in cfgs)  # truncated runs too
    reads = reads_of([_switched(c, g, p) for c in cfgs for g in (False, True)
                      for p in (False, True)])
    assert {"zero_stage", "data_parallel_impl", "overlap_p2p_comm"} <= reads
    assert "__dict__" not in reads
    assert not reads & set(UNREAD_UNDER_FSDP)
    base = make_base(gpus=16, batch=256)
    key = next(k for k in SPACE.memory_keys(base, 16) if k.zero == 1 and k.dp > 1)
    assert "overlap_grad_reduce" in reads_of([Candidate(key).to_config(base)])


def test_fsdp_overlap_twins_share_their_graphs_and_every_result_to_the_bit(monkeypatch):
    """ZeRO-3 configs that differ only in the data-parallel overlap switches have one
    ``graph_key`` and share their graphs and steady-state proofs inside ``runs_shared``; every
    result, compute sources included, is the one simulated alone. At ZeRO-1 the switches
    change the graph and the key."""
    cfgs = [_switched(c, g, p) for c in _fsdp_configs()[:8] for g in (False, True)
            for p in (False, True)]
    alone = [_fields(simulate(cfg)) for cfg in cfgs]
    built = []
    real = simulator._TaskGraph
    monkeypatch.setattr(simulator, "_TaskGraph", lambda *a: built.append(1) or real(*a))
    with shared(("fsdp twins", 1)), runs_shared():
        inside = [_fields(simulate(cfg)) for cfg in cfgs]
    together = len(built)
    assert inside == alone
    with shared(("fsdp twins", 2)):
        for cfg in cfgs:
            with runs_shared():
                simulate(cfg)
    assert len(built) - together >= 3 * together  # each config's three twins build nothing
    with shared(("fsdp twins", 3)):
        a, b = cfgs[0], cfgs[3]
        assert graph_key(a, Pricer(a), None, None) == graph_key(b, Pricer(b), None, None)
        base = make_base(gpus=16, batch=256)
        key = next(k for k in SPACE.memory_keys(base, 16) if k.zero == 1 and k.dp > 1)
        z1 = Candidate(key).to_config(base)
        assert graph_key(z1, Pricer(z1), None, None) != graph_key(
            _switched(z1, True, False), Pricer(z1), None, None)
