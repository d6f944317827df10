"""The 32nd session's main-process speed-ups of a search (issue 21 item 4): each keeps an answer
by an object's identity where it was keyed by a tuple built on every call, and gives the
answers computed afresh."""

from __future__ import annotations

import dataclasses

from helpers import TINY_MODEL, make_base

from trainsim.memory import state
from trainsim.search import SearchSpace
from trainsim.search.lower_bounds import Bounds
from trainsim.search.space import Candidate
from trainsim.workload.recompute import reruns_nothing


def _configs(**space):
    base = make_base(TINY_MODEL, gpus=16, batch=64)
    keys = list(SearchSpace(max_micro_batch=4, **space).memory_keys(base, 16))
    return base, [(k, Candidate(k).to_config(base)) for k in keys]


def test_model_states_are_kept_by_numbered_configs_read_once_per_object(monkeypatch):
    """Inside ``states_shared`` the training and parallel configs are numbered by the fields
    the model state reads: equal configs (other objects) share a number and the answer, one
    that differs in a field read gets another, each object's fields are read once, and every
    answer is the one computed outside."""
    _, pairs = _configs(recompute=("none", "selective", "full"), zero=(0, 1, 3))
    cfgs = [cfg for _, cfg in pairs][::5]
    alone = [[state.model_state(c, s) for s in range(c.parallel.pp)] for c in cfgs]
    reads = []
    real = state._PARALLEL_READ
    monkeypatch.setattr(state, "_PARALLEL_READ", lambda p: reads.append(p) or real(p))
    with state.states_shared():
        _, training_class, parallel_class = state._SHARED[-1]
        parallel_class.read = state._PARALLEL_READ  # (built with the real one before the patch)
        inside = [[state.model_state(c, s) for s in range(c.parallel.pp)] for c in cfgs]
        again = [[state.model_state(c, s) for s in range(c.parallel.pp)] for c in cfgs]
        p = cfgs[0].parallel
        twin = dataclasses.replace(p)  # equal, another object
        other = dataclasses.replace(p, zero_stage=3 if p.zero_stage != 3 else 0)
        assert twin is not p and parallel_class(twin) == parallel_class(p)
        assert parallel_class(other) != parallel_class(p)
        assert training_class(dataclasses.replace(cfgs[0].training, micro_batch_size=3)) == \
            training_class(cfgs[0].training)  # the micro-batch is not read
    assert inside == alone and again == alone
    assert len(reads) == len({id(c.parallel) for c in cfgs}) + 2  # once an object
    assert not state._SHARED


def test_the_bounds_reruns_nothing_is_the_recompute_module_s_per_parallel_config():
    """``Bounds._reruns_nothing`` (kept by the parallel config) answers as
    ``workload.recompute.reruns_nothing`` for every config of a space with the three recompute
    modes, and asks it once per parallel config."""
    base, pairs = _configs(recompute=("none", "selective", "full"))
    bounds = Bounds(base)
    answers = {reruns_nothing(cfg) for _, cfg in pairs}
    assert answers == {True, False}
    for _, cfg in pairs:
        assert bounds._reruns_nothing(cfg) is reruns_nothing(cfg)
    assert len(bounds._reruns) == len({id(cfg.parallel) for _, cfg in pairs}) < len(pairs)


def test_configs_of_one_parallel_config_and_model_share_where_their_layers_are():
    """``RunConfig.virtual_ranges`` is kept in the parallel config beside its model: configs
    of both (other micro-batches, GPU counts) share it, a config of another model works out
    its own, and neither pickling nor comparing a parallel config sees it."""
    import pickle

    from trainsim.config import RunConfig

    _, pairs = _configs()
    cfg = next(c for _, c in pairs if c.parallel.pp > 1)
    p = cfg.parallel
    first = cfg.virtual_ranges
    assert p.__dict__["_virtual_ranges"] == (cfg.model, first)
    mb = 1 if cfg.training.micro_batch_size != 1 else 2
    twin = RunConfig(cfg.model, p, dataclasses.replace(cfg.training, micro_batch_size=mb),
                     cfg.cluster)
    assert twin.virtual_ranges is first
    model = dataclasses.replace(cfg.model, num_layers=2 * cfg.model.num_layers)
    other = RunConfig(model, p, cfg.training, cfg.cluster)
    assert other.virtual_ranges[-1].stop == model.num_layers != first[-1].stop
    p.__dict__.pop("_virtual_ranges")  # each worked out alone: the same ranges
    alone = RunConfig(model, p, cfg.training, cfg.cluster)
    assert alone.virtual_ranges == other.virtual_ranges
    assert "_virtual_ranges" not in pickle.loads(pickle.dumps(p)).__dict__
    assert p == dataclasses.replace(p)
