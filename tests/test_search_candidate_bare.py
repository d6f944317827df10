"""speed53: ``search.candidate.candidate`` builds the Candidate that ``Candidate(...)`` builds
(every field in ``__dict__`` at once, no frozen ``__init__``), and ``memory_key`` the
MemoryKey: equal, hashed, ordered, printed and pickled the same (switches left out: off)."""

from __future__ import annotations

import dataclasses
import itertools
import pickle

from trainsim.search.candidate import Candidate, MemoryKey, candidate, memory_key


def test_candidate_is_the_dataclass_built_by_init():
    key = MemoryKey(64, 2, 4, 1, 2, 1, "selective", True, 1, 2, 1, "alltoall", "")
    for n in range(6):
        for switches in itertools.product((False, True), repeat=n):
            made, ref = candidate(key, *switches), Candidate(key, *switches)
            assert made == ref and hash(made) == hash(ref) and repr(made) == repr(ref)
            assert dataclasses.astuple(made) == dataclasses.astuple(ref)
            assert vars(made).keys() >= {f.name for f in dataclasses.fields(Candidate)}
            assert not made < ref and not ref < made
            assert pickle.loads(pickle.dumps(made)) == ref
    on = candidate(key, True, True, True, True, True)
    assert candidate(key) < on and Candidate(key) < on  # ordered as the dataclass orders


def test_memory_key_is_the_dataclass_built_by_init():
    """``memory_key`` of every field is ``MemoryKey(...)``: equal, hashed, ordered, printed,
    pickled, and its ``dp`` read, the same."""
    rows = [(64, 2, 4, 1, 2, 1, "selective", True, 1, 2, 1, "alltoall", ""),
            (64, 1, 1, 2, 1, 4, "full", False, 3, 1, 1, "allgather", "zb_h1")]
    made = [memory_key(*r) for r in rows]
    ref = [MemoryKey(*r) for r in rows]
    for m, r in zip(made, ref):
        assert m == r and hash(m) == hash(r) and repr(m) == repr(r) and m.dp == r.dp
        assert dataclasses.astuple(m) == dataclasses.astuple(r)
        assert pickle.loads(pickle.dumps(m)) == r
    assert sorted(made, reverse=True) == sorted(ref, reverse=True)
    assert (made[0] < made[1]) == (ref[0] < ref[1])
