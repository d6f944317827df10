"""What the search keeps to go faster (issue 21 item 4), each the same answer as without it:
memory keys and candidates hash once, groups differing only in the micro-batch share one
parallel config, and a search's batches in one process share their task graphs and timelines."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from helpers import make_base

from trainsim import simulator
from trainsim.engine.loop import runs_shared, shared_store
from trainsim.search import SearchSpace, SerialExecutor, search, space
from trainsim.search import evaluation as ev
from trainsim.search.space import Candidate, MemoryKey

SPACE = SearchSpace(recompute=("none", "selective"), zero=(0, 1, 3), max_micro_batch=4,
                    max_cp=2)


def test_a_kept_hash_is_the_dataclass_hash_and_is_not_pickled():
    """The hash is the one of the fields' tuple (what the dataclass's own ``__hash__`` gives),
    and a pickled copy (another process, another string hash seed) computes its own."""
    k = MemoryKey(16, 2, 2, 1, 1, 4, "selective", True, 1)
    c = Candidate(k, True, False, True)
    assert hash(k) == hash(tuple(getattr(k, f.name) for f in dataclasses.fields(k)))
    assert hash(c) == hash((k, True, False, True, False, False))
    copy = pickle.loads(pickle.dumps(c))
    assert "_hash" not in copy.__dict__ and "_hash" not in copy.mem.__dict__
    assert copy == c and hash(copy) == hash(c)
    assert {c: 1}[Candidate(MemoryKey(16, 2, 2, 1, 1, 4, "selective", True, 1), True, False,
                            True)] == 1
    assert dataclasses.replace(c, tp_comm_overlap=False) != c


def test_groups_that_differ_only_in_the_micro_batch_share_one_parallel_config():
    base = make_base()
    k = MemoryKey(16, 2, 2, 1, 1, 1, "none", True, 1)
    a = Candidate(k).to_config(base)
    b = Candidate(dataclasses.replace(k, micro_batch=2)).to_config(base)
    c = Candidate(k, overlap_grad_reduce=True).to_config(base)
    assert a.parallel is b.parallel and a.training is not b.training
    assert c.parallel is not a.parallel and c.parallel.overlap_grad_reduce


def test_groups_of_one_parallel_config_skip_its_field_checks_with_the_same_answers(monkeypatch):
    """Once a RunConfig of a parallel config is built, its other GPU counts and micro batches
    run only the checks that read those (``RunConfig.fields_checked``): every config equal to
    the one built with every check, every refusal the same first refusal, in any order."""
    import random

    from trainsim.config.run import RunConfig
    from trainsim.errors import ConfigError
    from trainsim.search import candidate

    base = make_base(batch=48)
    keys = [MemoryKey(n, tp, pp, 1, vpp, mb, rc, tp > 1, zero)
            for n in (8, 12, 16, 24) for tp in (1, 2, 3, 4) for pp in (1, 2, 4) for vpp in (1, 2)
            for mb in (1, 2, 3, 5) for rc in ("none", "full") for zero in (0, 1)]
    random.Random(7).shuffle(keys)
    fast, real = [], RunConfig.fields_checked.__func__
    monkeypatch.setattr(RunConfig, "fields_checked", classmethod(
        lambda cls, *a: fast.append(1) or real(cls, *a)))

    def answer(build, *args):
        try:
            return build(*args)
        except ConfigError as exc:
            return str(exc)

    def checked_fully(c, k):
        return RunConfig(base.model, c._parallel_config(base), base.training_for(k.micro_batch),
                         base.cluster_for(k.num_gpus))

    refused = 0
    candidate.drop_parallels()
    for k in keys:
        c = Candidate(k)
        seen = len(fast)
        got = answer(c.to_config, base)
        want = answer(checked_fully, c, k)
        assert got == want, k
        refused += len(fast) > seen and isinstance(got, str)
    assert len(fast) > 300 and refused > 100  # both paths taken, refusals among the fast
    candidate.drop_parallels()


def test_a_search_s_batches_share_their_graphs_and_every_answer_is_the_same(monkeypatch):
    """Batches of one search token, one after another in a process, hand an earlier batch's
    graph to a twin (one store per search, not per batch): fewer graphs built than with a
    store per batch, and every evaluation the same as simulated alone."""
    base = make_base(gpus=16, batch=64)
    keys = list(SPACE.memory_keys(base, 16))[:40]
    cands = [c for k in keys for c in SPACE.variants(k)[:2]]
    alone = [ev.evaluate(c, base).to_dict() for c in cands]
    built = []
    real = simulator._TaskGraph
    monkeypatch.setattr(simulator, "_TaskGraph", lambda *a: built.append(1) or real(*a))
    batches = [cands[i:i + 3] for i in range(0, len(cands), 3)]
    kept = [e.to_dict() for b in batches for e in ev.evaluate_batch(base, b, ("t", 1))]
    shared = len(built)
    assert kept == alone
    monkeypatch.setattr(ev, "_runs_of", lambda token, base: ({}, {}))  # a store per batch
    for b in batches:
        ev.evaluate_batch(base, b, ("t", 2))
    assert len(built) - shared > shared
    ev.drop_runs(("t", 1))
    assert not ev._RUNS


def test_a_new_search_token_drops_the_last_one_s_store():
    base = make_base()
    first = ev._runs_of(("a", 1), base)
    assert ev._runs_of(("a", 1), base) is first
    assert ev._runs_of(("a", 2), base) is not first
    with runs_shared(first) as kept:
        assert kept is first and shared_store() is first[1]
    ev.drop_runs(("a", 2))
    assert not ev._RUNS


def test_a_search_s_workers_share_out_the_tasks_they_keep(monkeypatch):
    """Each of a search's workers keeps at most ``SHARED_TASKS / workers`` tasks (timelines,
    and twin graphs as many again), so a search keeps what one validation question may in
    all; whatever is kept, every answer is the one simulated alone."""
    from trainsim import twin_graphs
    from trainsim.engine import loop

    base = make_base(gpus=16, batch=64)
    keys = list(SPACE.memory_keys(base, 16))[:12]
    cands = [c for k in keys for c in SPACE.variants(k)[:2]]
    alone = [ev.evaluate(c, base).to_dict() for c in cands]
    monkeypatch.setattr(loop, "SHARED_TASKS", 120)  # these graphs: 110 timeline tasks
    monkeypatch.setattr(ev, "SHARE_FLOOR_TASKS", 0)  # the even share alone (the floor: below)
    kept = {}
    for workers in (1, 2, 10**6):
        token = ev.SearchToken(1, 2, 3, workers)
        got = [e.to_dict() for e in ev.evaluate_batch(base, cands, token)]
        assert got == alone
        timelines, store = ev._RUNS[0][2]
        tasks = sum(len(t) for t, _ in timelines.values())
        assert tasks <= 120 // workers and store.get(twin_graphs._TASKS, 0) <= 120 // workers
        kept[workers] = (tasks, store.get(twin_graphs._TASKS, 0))
        ev.drop_runs(token)
    assert kept[1][0] > kept[2][0] > 0 and kept[1][1] > 0 and kept[10**6] == (0, 0)
    assert ev.share(("no workers said", 1)) == 120


def test_a_worker_keeps_at_least_one_large_graph_however_many_workers(monkeypatch):
    """A graph is kept whole or not at all, so an even share below one graph keeps nothing:
    64 workers' share of 10^6 tasks (15,625) is below the largest simulation measured (176,456
    tasks in all its graphs); the floor keeps one such a worker, never more than the whole cap.
    A search keeps one question's 10^6 in all up to 5 workers, 64 workers 12.8 M (``share``)."""
    from trainsim.engine import loop

    assert ev.share(ev.SearchToken(1, 2, 3, 64)) == ev.SHARE_FLOOR_TASKS >= 176_456
    assert 5 * ev.share(ev.SearchToken(1, 2, 3, 5)) == loop.SHARED_TASKS
    assert 64 * ev.share(ev.SearchToken(1, 2, 3, 64)) == 64 * ev.SHARE_FLOOR_TASKS
    assert ev.share(ev.SearchToken(1, 2, 3, 1)) == loop.SHARED_TASKS
    assert ev.share(ev.SearchToken(1, 2, 3, None)) == loop.SHARED_TASKS  # workers unknown: 1
    monkeypatch.setattr(loop, "SHARED_TASKS", 120)
    assert ev.share(ev.SearchToken(1, 2, 3, 10**6)) == 120  # the floor is capped by the cap
    monkeypatch.setattr(ev, "SHARE_FLOOR_TASKS", 110)  # these graphs: 110 timeline tasks
    base = make_base(gpus=16, batch=64)
    c = next(iter(SPACE.variants(next(iter(SPACE.memory_keys(base, 16))))))
    token = ev.SearchToken(1, 2, 3, 10**6)
    ev.evaluate_batch(base, [c], token)
    timelines = ev._RUNS[0][2][0]
    assert 0 < sum(len(t) for t, _ in timelines.values()) <= 110
    ev.drop_runs(token)


def test_workers_none_is_every_cpu_and_zero_is_an_error_for_every_executor():
    from trainsim.cpus import cpus
    from trainsim.errors import ConfigError
    from trainsim.search import LocalExecutor
    from trainsim.search.executors import RayExecutor

    for make in (LocalExecutor, RayExecutor):
        with pytest.raises(ConfigError, match="--workers=0 must be >= 1"):
            make(workers=0)
    assert LocalExecutor(None).workers == cpus() >= 1


@pytest.mark.parametrize(("workers", "told"), [(3, 3), (None, 1)])
def test_a_search_tells_its_workers_how_many_they_are(workers, told):
    """An executor whose ``workers`` is None counts one."""
    seen = []

    class Told(SerialExecutor):
        def map(self, base, batches, on_done=None, token=None):
            seen.append(token)
            return super().map(base, batches, on_done, token)

    Told.workers = workers
    search(make_base(), [16], SearchSpace(recompute=("none",), zero=(1,), max_micro_batch=2),
           executor=Told(), cache=None)
    assert seen and all(t.workers == told for t in seen) and not ev._RUNS


def test_a_serial_search_keeps_nothing_after_it_returns():
    base = make_base()
    r = search(base, [16], SearchSpace(recompute=("none",), zero=(1,), max_micro_batch=2),
               executor=SerialExecutor(), cache=None)
    assert r.stats.simulated and not ev._RUNS and not space.PARALLEL_CACHE


def test_a_worker_drops_the_last_search_s_parallel_configs_at_the_next_search():
    base = make_base()
    c = Candidate(MemoryKey(16, 2, 2, 1, 1, 1, "none", True, 1))
    ev.evaluate_batch(base, [c], ("w", 1))
    kept = dict(space.PARALLEL_CACHE)
    assert kept
    ev.evaluate_batch(base, [c], ("w", 1))  # the same search: kept
    assert space.PARALLEL_CACHE == kept
    ev.evaluate_batch(base, [Candidate(dataclasses.replace(c.mem, tp=1, pp=1))], ("w", 2))
    assert not kept.keys() & space.PARALLEL_CACHE.keys()
    ev.drop_runs(("w", 2))
    space.drop_parallels()


def test_the_search_works_ahead_only_beside_a_cpu_the_local_workers_leave_free(monkeypatch):
    from trainsim.search import LocalExecutor, waves

    monkeypatch.setattr(waves, "cpus", lambda: 2)
    assert waves._ahead(LocalExecutor(2)) == 0
    assert waves._ahead(LocalExecutor(1)) == waves.AHEAD
    # no submit (this process; Ray maps its batches when the results are asked for): the
    # stream is never busy beside the search, so nothing is prepared ahead
    assert waves._ahead(SerialExecutor()) == 0

    class Elsewhere(SerialExecutor):  # submits to workers that are not this machine's
        name = "remote"
        workers = 64
        submit = SerialExecutor.map

    assert waves._ahead(Elsewhere()) == waves.AHEAD


def test_working_ahead_or_not_gives_the_same_search(monkeypatch):
    """What is prepared ahead is a pure function of the candidate, kept: the same answer; and
    it builds no group's overlap siblings the search does not read anyway (a whole family's
    pricing-class leads come from its switches, ``Family.class_leads``)."""
    from trainsim.search import waves
    from trainsim.search.family import Family

    built = []
    made = Family.__iter__
    monkeypatch.setattr(Family, "__iter__",
                        lambda self: (self._made is None and built.append(1)) or made(self))

    base = make_base(gpus=16, batch=64)
    space = SearchSpace(recompute=("none", "full"), zero=(0, 1, 3), max_micro_batch=4)

    class Busy(SerialExecutor):  # runs each batch at once, and says it is busy
        name = "local"
        workers = 1

        def submit(self, base, batches, on_done=None, token=None):
            out = self.map(base, batches, on_done, token)

            class Done:
                def done(self) -> bool:
                    return False

                def result(self):
                    return out
            return Done()

    answers, builds = [], []
    for cpus in ({0}, {0, 1}):  # no spare CPU, then one beside the worker
        monkeypatch.setattr(waves, "cpus", lambda c=cpus: len(c))
        built.clear()
        r = search(base, [16], space, executor=Busy(), cache=None, top_k=5)
        answers.append([e.to_dict() for e in r.evaluated])
        builds.append(len(built))
    assert answers[0] == answers[1] and answers[0]
    assert builds[0] == builds[1] > 0


FLOOR_CASES = {  # data-parallel implementations, CPU offloading (pp 1, no recompute), vpp 2
    impl: ((("data_parallel_impl", impl),), {}, 7)
    for impl in ("megatron", "deepspeed", "fsdp1", "fsdp2", "ddp")} | {
    "offload": ((("cpu_offloading_num_layers", 3),), {"pp": (1,), "recompute": ("none",)}, 3),
    "vpp": ((), {"pp": (2, 4), "vpp": (2,)}, 3)}


@pytest.mark.parametrize("case", FLOOR_CASES)
def test_a_stage_s_peak_floor_is_never_above_its_memory_estimate(case):
    """``peak_floor`` (weights, gradients, optimizer state, activations in flight, context) is
    at most ``estimate_stage_memory``'s total for every stage, over ZeRO 0-3, TP, PP, CP,
    micro-batches and recompute modes, dense and MoE, each data-parallel implementation, CPU
    offloading and interleaved stages; and it is most of it (a floor of 0 would prune
    nothing). (Both take the same terms from ``memory.estimate._unbuffered``.)"""
    from helpers import TINY_MODEL

    from trainsim.errors import ConfigError
    from trainsim.memory.estimate import estimate_stage_memory, peak_floor

    fixed, limits, stride = FLOOR_CASES[case]
    moe = {**TINY_MODEL, "name": "tiny-moe", "num_experts": 8, "moe_router_topk": 2,
           "moe_ffn_hidden_size": 512, "moe_layer_freq": 2}
    space = SearchSpace(**{"recompute": ("none", "selective", "full"), "max_micro_batch": 4,
                           "max_cp": 2, "zero": (0, 1, 2, 3), **limits})
    pairs, cfgs = [], []
    for model in (TINY_MODEL, moe):
        base = dataclasses.replace(make_base(model, gpus=16, batch=64), fixed=fixed)
        for key in list(space.memory_keys(base, 16))[::stride]:
            try:
                cfg = Candidate(key).to_config(base)
            except ConfigError:  # a combination the implementation refuses
                continue
            cfgs.append(cfg)
            pairs += [(peak_floor(cfg, s), estimate_stage_memory(cfg, s).total)
                      for s in range(cfg.parallel.pp)]
    assert len(pairs) > 50
    assert all(floor <= total for floor, total in pairs)
    assert sum(floor for floor, _ in pairs) > 0.5 * sum(total for _, total in pairs)
    ps = [c.parallel for c in cfgs]
    assert all(p.data_parallel_impl == dict(fixed).get("data_parallel_impl", "megatron")
               and p.cpu_offloading_num_layers == dict(fixed).get("cpu_offloading_num_layers", 0)
               for p in ps)
    if case == "vpp":
        assert all(p.vpp == 2 for p in ps) and {p.pp for p in ps} == {2, 4}


@pytest.mark.slow  # a whole search (~10 s on 2 cores since the per-layer ZeRO-3 graphs)
def test_groups_dominated_whatever_their_memory_give_the_same_search(monkeypatch):
    """A group that cannot rank and is dominated even with its most headroom (HBM less its
    peak floor) is pruned without its memory estimate: every evaluation, the top and the
    front as with a floor of 0 (every such group estimated), with fewer estimates."""
    from trainsim.search import waves
    from trainsim.search.cli import build_base

    # a 22B model on 16 A100-40GB: memory is tight, so the floor is what prunes
    base = build_base("gpt-22b", "a100-sxm-40gb", 16, 32, 2048, 8, 400.0, "bf16")
    space = SearchSpace(recompute=("none", "full"), zero=(0, 1, 3), max_micro_batch=2)
    checks = []
    real = waves.check_memory
    monkeypatch.setattr(waves, "check_memory", lambda *a: checks.append(1) or real(*a))
    answers, counts = [], []
    for floor in (None, lambda cfg, s: 0.0):
        if floor is not None:
            monkeypatch.setattr(waves, "peak_floor", floor)
        checks.clear()
        r = search(base, [16], space, cache=None, top_k=5)
        d = r.to_dict()
        d.pop("stats")
        answers.append((d, [e.to_dict() for e in r.evaluated]))
        counts.append((len(checks), r.stats.simulated, r.stats.memory_pruned))
    assert answers[0] == answers[1]
    assert counts[0][1] == counts[1][1]
    assert counts[0][0] < counts[1][0] and counts[0][2] <= counts[1][2]


@pytest.mark.parametrize("model", ["dense", "mixtral-8x7b"])
def test_a_family_built_when_read_is_the_group_s_variants_in_their_order(model):
    """``search.family.Family``: the siblings of a group's first lead are ``variants`` less it,
    in its order; its pricing classes' leads are those the eager regroup picks (the first
    with the most switches on), built or not (``waves._class_leads``); led by another member,
    the siblings are the first lead ahead of the rest, less that member; its length is the
    group's less one. The MoE model (ep 1-8) has groups of 4 pricing classes (TP overlap x
    the expert all-to-all overlap), a dense one at most 2."""
    from trainsim.search import waves
    from trainsim.search.family import Family

    if model == "dense":
        base = make_base(gpus=16, batch=64)
        space = SearchSpace(recompute=("none", "selective", "full"), zero=(0, 1, 2, 3),
                            max_micro_batch=2, max_cp=2)
    else:  # pp 1-2 (the all-to-all overlap needs interleaving with pp > 1)
        base = make_base(model, gpus=16, batch=64, seq=4096)
        space = SearchSpace(pp=(1, 2), max_vpp=2, max_micro_batch=1)
    keys = list(space.memory_keys(base, 16))
    seen = set()
    for key in keys:
        for alone in (False, True):
            variants = space.variants(key, alone)
            family = Family.of(key, tuple(space.switches(key, alone).values()),
                               lambda k, a=alone: space.variants(k, a))
            first = variants.pop(waves._lead(list(variants)))
            assert family.first == first and list(family) == variants
            assert len(family) == len(variants)
            members = [first, *variants]
            classes: dict = {}
            for x in members:
                classes.setdefault(waves._pricing(x), []).append(x)
            leads = [cl[waves._lead(cl)] for cl in (classes[k] for k in sorted(classes))]
            assert family.class_leads() == leads
            assert waves._class_leads(first, family) == waves._class_leads(first, variants) \
                == leads
            for lead in leads:
                assert list(family.led_by(lead)) == [x for x in members if x != lead]
            seen.add((len(leads), len(variants)))
    if model == "dense":
        assert {n for n, _ in seen} == {1, 2} and max(v for _, v in seen) >= 7
    else:
        assert {n for n, _ in seen} == {1, 2, 4} and max(v for _, v in seen) >= 15


def test_a_search_with_its_families_built_at_once_is_the_same(monkeypatch):
    """Groups regrouped from their built variants (the eager path) give the same search."""
    from trainsim.search.family import Family

    base = make_base(gpus=16, batch=64)
    space = SearchSpace(recompute=("none", "full"), zero=(0, 1, 3), max_micro_batch=4,
                        max_cp=2)
    answers = []
    for whole in (None, False):
        if whole is not None:
            monkeypatch.setattr(Family, "whole", property(lambda self: False))
        r = search(base, [16], space, cache=None, top_k=5)
        answers.append((r.to_dict(), [e.to_dict() for e in r.evaluated]))
    for a in answers:
        a[0]["stats"].pop("elapsed_s")
        a[0]["stats"].pop("candidates_per_s")
        a[0]["stats"].pop("simulated_per_s")
    assert answers[0] == answers[1]


def test_twins_and_overlap_siblings_share_an_affinity():
    """What a worker shares (priced passes, twin graphs) lies within one affinity: candidates
    that differ in recompute, ZeRO or an overlap switch have the same; another TP, CP, micro
    batch or GPU count another."""
    from trainsim.search.executors import affinity

    k = MemoryKey(16, 2, 2, 1, 1, 2, "selective", True, 1)
    c = Candidate(k)
    for other in (Candidate(dataclasses.replace(k, recompute="none")),
                  Candidate(dataclasses.replace(k, zero=2)),
                  Candidate(dataclasses.replace(k, pp=4, vpp=2)),
                  Candidate(k, overlap_grad_reduce=True, tp_comm_overlap=True)):
        assert affinity(other) == affinity(c)
    for field, value in (("tp", 4), ("cp", 2), ("micro_batch", 1), ("num_gpus", 32)):
        assert affinity(Candidate(dataclasses.replace(k, **{field: value}))) != affinity(c)


def test_a_batch_goes_to_its_affinity_s_worker_unless_it_is_far_ahead():
    """Routing: a new affinity to the least busy worker; the same one back to it while it has
    at most ``SPILL`` batches more in hand than the least busy; beyond, it moves."""
    from trainsim.search import LocalExecutor
    from trainsim.search import executors as exe

    class Fut:
        def __init__(self, done: bool = False) -> None:
            self._done = done

        def done(self) -> bool:
            return self._done

    ex = LocalExecutor(2)
    ex._queued = [[], []]
    a = [Candidate(MemoryKey(16, 2, 2, 1, 1, 2, "none", True, 1))]
    b = [Candidate(MemoryKey(16, 4, 2, 1, 1, 2, "none", True, 1))]
    assert ex._route(a, "t") == 0
    ex._queued[0].append(Fut())
    assert ex._route(b, "t") == 1  # a new affinity: the idle worker
    for _ in range(exe.SPILL):
        assert ex._route(a, "t") == 0
        ex._queued[0].append(Fut())
    assert ex._route(a, "t") == 1  # worker 0 is SPILL + 1 batches ahead: a moves
    ex._queued[1].append(Fut())
    assert ex._route(a, "t") == 1
    ex._queued[0][:] = [Fut(True)]  # done batches count for nothing
    assert ex._route(b, "t") == 1 and ex._route(a, "u") == 0  # a new search: homes dropped


def test_a_routed_search_is_every_evaluation_of_the_serial_one():
    """Two routed local workers give every evaluation as one process does (to the bit)."""
    from trainsim.search import LocalExecutor

    base = make_base(gpus=16, batch=64)
    serial = search(base, [16], SPACE, executor=SerialExecutor(), cache=None, top_k=5)
    ex = LocalExecutor(2)
    try:
        local = search(base, [16], SPACE, executor=ex, cache=None, top_k=5)
    finally:
        ex.close()
    assert [e.to_dict() for e in local.evaluated] == [e.to_dict() for e in serial.evaluated]
    assert local.to_dict() | {"stats": None} == serial.to_dict() | {"stats": None}
