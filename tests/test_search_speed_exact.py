"""Search speed, exact (issue 21 acceptance 4): what the 25th session shares to go faster gives
the answers computed without it, to the bit. A twin's steady-state attempt (its truncated runs
and period proofs) is taken from the twin that made it (``twin_graphs.kept_attempt``), and the
refined bound's shape is worked out once for both sequence-parallel settings of a group
(``search.lower_bounds.Bounds._shape``)."""

from __future__ import annotations

import dataclasses
import random

from helpers import make_base

from trainsim import steady_state
from trainsim.search import SearchSpace
from trainsim.search import evaluation as ev
from trainsim.search.lower_bounds import Bounds
from trainsim.search.space import Candidate

SPACE = SearchSpace(recompute=("none",), zero=(0, 1, 3), max_micro_batch=2, max_cp=1)


def _twins(base, n: int, seed: int) -> list[Candidate]:
    """``n`` random pipelined candidates long enough for the steady-state shortcut, each
    followed by its selective and full twins (the same switches)."""
    keys = [k for k in SPACE.memory_keys(base, 16) if k.pp > 1]
    rng = random.Random(seed)
    out = []
    for key in rng.sample(keys, n):
        c = rng.choice(SPACE.variants(key))
        for rc in ("none", "selective", "full"):
            out.append(dataclasses.replace(c, mem=dataclasses.replace(c.mem, recompute=rc)))
    return out


def test_a_twin_s_steady_state_attempt_is_its_own_to_the_bit(monkeypatch):
    """Inside one search's batches a twin takes the attempt worked out for its twin: every
    evaluation (time, breakdown, memory) is the one simulated alone, the shortcut proves
    periods on these runs, and fewer attempts are worked out than configs asked for one."""
    base = make_base(gpus=16, batch=1024)
    cands = _twins(base, 8, seed=3)
    alone = [ev.evaluate(c, base).to_dict() for c in cands]
    made = []
    real = steady_state._attempt
    monkeypatch.setattr(steady_state, "_attempt", lambda *a: made.append(1) or real(*a))
    shared = [e.to_dict() for e in ev.evaluate_batch(base, cands, ("exact", 1))]
    assert shared == alone
    asked = len(made)
    made.clear()
    for c in cands:  # each in a search of its own: every attempt worked out
        ev.evaluate_batch(base, [c], ("exact", 2, id(c)))
    assert len(made) > asked > 0
    ev.drop_runs(("exact", 1))


def test_the_shortcut_proves_periods_on_these_twins():
    """The twins above do go through the shortcut (so the test before can fail)."""
    from trainsim import simulate

    base = make_base(gpus=16, batch=1024)
    done = [simulate(c.to_config(base)).simulation["method"] for c in _twins(base, 8, seed=3)]
    assert done.count("steady-state") >= 6


def test_a_bound_shape_kept_for_both_sequence_parallel_settings_is_each_group_s_own():
    """The shape of every memory group of a tensor-parallel space, taken from the one worked
    out for its other sequence-parallel setting, equals the shape its own config gives
    (``==`` on every float of it)."""
    base = make_base(gpus=16, batch=64)
    space = SearchSpace(recompute=("none",), zero=(0, 1, 3), max_micro_batch=2, max_cp=2)
    keys = [k for k in space.memory_keys(base, 16) if k.tp > 1]
    assert {k.sequence_parallel for k in keys} == {False, True}
    kept = Bounds(base)
    for key in keys:
        own = Bounds(base)._shape_of(Candidate(key).to_config(base))
        assert kept._shape(key) == own, key
