"""Search speed, exact (issue 21 acceptance 4): a selective recompute that re-runs nothing is
recompute none's chunk set and pass prices; collectives priced once per pricing signature; the
event loop counts the tasks it keeps as it keeps them."""

from __future__ import annotations

import dataclasses
import itertools

from helpers import make_base

from trainsim import simulate, twin_graphs
from trainsim.catalog import run_config_from_dict
from trainsim.engine import loop
from trainsim.engine.loop import Task, runs_shared
from trainsim.errors import ConfigError
from trainsim.pricing import Pricer, shared
from trainsim.search import SearchSpace
from trainsim.search.evaluation import Bounds
from trainsim.search.space import Candidate
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Comm
from trainsim.workload.recompute import layer_recompute, reruns_nothing
from trainsim.workload.shard import shard_of

FRAMEWORKS = [(None, None), ("megatron-core", "0.8"), ("megatron-core", "0.15"),
              ("megatron-lm", "2023-07"), ("nemo", "24.07"), ("torchtitan", None)]


def _cfg(preset: str, framework, version, attention: str, recompute: str, modules):
    training = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 4096,
                "attention": attention}
    if framework:
        training |= {"framework": framework} | ({"framework_version": version} if version else {})
    parallel = {"tp": 2, "sequence_parallel": True, "recompute": recompute}
    if modules:
        parallel["recompute_modules"] = modules
    if preset == "mixtral-8x7b":
        parallel |= {"ep": 2}
    return run_config_from_dict({"model": {"preset": preset}, "parallel": parallel,
                                 "training": training,
                                 "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


def test_a_config_said_to_rerun_nothing_reruns_no_op_of_any_layer():
    """``reruns_nothing`` implies ``layer_recompute`` gives no op for every layer kind of the
    analytical builder, over frameworks (per-op checkpointing and checkpointed fused attention
    among them), attention kernels, modules and dense / MoE models; it holds for recompute
    none and some selective configs, and not for others (so this can fail)."""
    said = {"none": 0, "selective": 0, "refused": 0}
    for preset, (fw, version), attention, recompute, modules in itertools.product(
            ("llama3-8b", "mixtral-8x7b"), FRAMEWORKS, ("flash2", "cudnn", "unfused", "sdpa"),
            ("none", "selective", "full"), (None, ["core_attn"], ["mlp"], ["core_attn", "moe"])):
        if modules and recompute != "selective":
            continue
        try:
            cfg = _cfg(preset, fw, version, attention, recompute, modules)
        except ConfigError:
            continue
        sh = shard_of(cfg)
        if not reruns_nothing(cfg):
            said["refused"] += 1
            continue
        said[recompute] += 1
        for moe in {cfg.model.is_moe_layer(i) for i in range(cfg.model.num_layers)}:
            assert layer_recompute(cfg, sh, layer_forward(cfg, sh, moe=moe)) == [], \
                (preset, fw, version, attention, recompute, modules, moe)
    assert said["none"] > 0 and said["selective"] > 0 and said["refused"] > 0, said


def _group(base, recompute: str):
    space = SearchSpace(recompute=(recompute,), zero=(0, 1), max_micro_batch=2, max_cp=1)
    return next(k for k in space.memory_keys(base, 16) if k.pp == 2 and k.dp > 1)


def test_a_selective_twin_that_reruns_nothing_takes_recompute_none_s_chunks(monkeypatch):
    """Inside one ``runs_shared``, the selective twin (FlashAttention: nothing re-run) of a
    recompute-none config gets the very chunk objects the first build made, without building
    them (fails if the recompute fields stay in the key); full recompute builds its own; every
    result is the one simulated alone."""
    base = make_base(gpus=16, batch=64)
    key = _group(base, "none")
    cfgs = [Candidate(dataclasses.replace(key, recompute=rc)).to_config(base)
            for rc in ("none", "selective", "full")]
    assert [reruns_nothing(c) for c in cfgs] == [True, True, False]
    alone = [simulate(c) for c in cfgs]
    built = []
    real = twin_graphs.chunks
    monkeypatch.setattr(twin_graphs, "chunks", lambda *a: built.append(a[0]) or real(*a))
    with shared(("twins-speed", 1)), runs_shared():
        inside = [simulate(c) for c in cfgs]
        got = [twin_graphs.kept_chunks(c, Pricer(c), None) for c in cfgs]
    assert [b.parallel.recompute for b in built] == ["none", "full"]
    assert got[0] is got[1] and got[2] is not got[0]
    for a, b in zip(alone, inside):
        assert (a.iteration_time_s, a.breakdown, a.memory, a.compute_sources) == \
            (b.iteration_time_s, b.breakdown, b.memory, b.compute_sources)


def test_the_refined_bound_of_a_selective_group_that_reruns_nothing_is_recompute_none_s():
    """The refined bound prices a no-op selective group's passes as recompute none's (one
    entry for both) and gives the same bound it gave when priced apart."""
    base = make_base(gpus=16, batch=64)
    none = Candidate(_group(base, "none"))
    sel = Candidate(dataclasses.replace(none.mem, recompute="selective"))
    apart = Bounds(base).refined(sel)
    b = Bounds(base)
    for c in (none, sel):
        b.prime(c.mem, c.to_config(base))
    assert b.refined(none) == b.refined(sel) == apart
    assert len(b._passes) == 1


def test_a_collective_is_priced_once_per_signature_inside_shared(monkeypatch):
    """Pricers of one signature share a collective's seconds inside ``shared`` (the same
    float); outside it each prices its own; another signature prices again."""
    base = make_base(gpus=16, batch=64)
    key = _group(base, "none")
    a, b = Candidate(key).to_config(base), Candidate(key).to_config(base)
    op = Comm("g", "all_gather", 3e8, "dp_cp")
    calls = []
    real = Pricer._comm_time
    monkeypatch.setattr(Pricer, "_comm_time", lambda self, o: calls.append(o) or real(self, o))
    alone = Pricer(a).comm_time(op)
    with shared(("comms", 1)):
        first, second = Pricer(a).comm_time(op), Pricer(b).comm_time(op)
    assert first == second == alone and len(calls) == 2
    with shared(("comms", 2)):  # a new token prices anew
        Pricer(a).comm_time(op)
    assert len(calls) == 3


def test_the_store_numbers_pricer_signatures_one_per_signature(monkeypatch):
    """Inside ``shared`` equal signatures get one number and other signatures another, so a
    pricer of another layout prices a collective again (the number, not the signature,
    keys the store: issue 21)."""
    base = make_base(gpus=16, batch=64)
    key = _group(base, "none")
    other = dataclasses.replace(key, tp=2 if key.tp == 1 else 1)
    a, b = Candidate(key).to_config(base), Candidate(key).to_config(base)
    c = Candidate(other).to_config(base)
    op = Comm("g", "all_gather", 3e8, "dp_cp")
    calls = []
    real = Pricer._comm_time
    monkeypatch.setattr(Pricer, "_comm_time", lambda self, o: calls.append(o) or real(self, o))
    with shared(("numbers", 1)):
        pa, pb, pc = Pricer(a), Pricer(b), Pricer(c)
        assert pa._sig == pb._sig != pc._sig
        assert pa._sig_no == pb._sig_no != pc._sig_no
        got = [p.comm_time(op) for p in (pa, pb, pc)]
    assert got[:2] == [Pricer(a).comm_time(op)] * 2 and got[2] == Pricer(c).comm_time(op)
    assert len(calls) == 2 + 2  # one per signature inside, each again outside


def test_the_loop_counts_the_tasks_it_keeps_as_it_keeps_them(monkeypatch):
    """``run`` keeps timelines up to its cap counting them as they are kept: the same graphs
    kept as when it summed them at every run, and a graph over the cap kept not at all."""
    def graph(d: float) -> list[Task]:
        return [Task((0, "compute"), d), Task((0, "dp"), d / 2, [0], slows=((0, "compute"), 0.2)),
                Task((0, "compute"), d, [0])]
    monkeypatch.setattr(loop, "SHARED_TASKS", 7)
    with runs_shared() as (kept, store):
        for d in (1.0, 2.0, 3.0):
            loop.run(graph(d))
        assert sum(len(t) for t, _ in kept.values()) == 6 == store[loop._KEPT_TASKS]
        tl = loop.run(graph(1.0))  # kept: the same times handed back
    assert tl.end_s == loop._run(graph(1.0), True).end_s
