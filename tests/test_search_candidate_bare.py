"""speed53: ``search.candidate.candidate`` builds the Candidate that ``Candidate(...)`` builds
(every field in ``__dict__`` at once, no frozen ``__init__``): equal, hashed, ordered, printed
and pickled the same, with the switches left out off."""

from __future__ import annotations

import dataclasses
import itertools
import pickle

from trainsim.search.candidate import Candidate, MemoryKey, candidate


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
