"""``config.cached``: ``functools.cached_property`` without its lock (configs and priced passes
use it): computed once on the first read, kept in the instance's ``__dict__``, also on a frozen
dataclass, and left out of a config's pickled state as before."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from trainsim.config.cached import cached


@dataclasses.dataclass(frozen=True)
class _Frozen:
    x: int
    calls: list = dataclasses.field(default_factory=list, compare=False)

    @cached
    def double(self) -> int:
        """Twice x."""
        self.calls.append(1)
        return 2 * self.x


def test_cached_computes_once_and_keeps_the_value_in_the_instance_dict():
    a, b = _Frozen(3), _Frozen(4)
    assert (a.double, a.double, b.double) == (6, 6, 8)
    assert len(a.calls) == 1 and a.__dict__["double"] == 6
    assert isinstance(_Frozen.double, cached) and _Frozen.double.__doc__ == "Twice x."
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 5  # the instance stays frozen


def test_cached_cannot_serve_two_names():
    with pytest.raises((TypeError, RuntimeError)):
        class _Two:
            f = cached(lambda self: 1)
            g = f


def test_a_config_s_cached_values_are_not_pickled():
    from helpers import make_base

    from trainsim.search.space import Candidate, MemoryKey

    cfg = Candidate(MemoryKey(16, 2, 2, 1, 1, 1, "none", True, 1)).to_config(make_base())
    assert cfg.dp == 4 and "dp" in cfg.__dict__ and cfg.parallel.tp == 2
    copy = pickle.loads(pickle.dumps(cfg))
    assert "dp" not in copy.__dict__ and "tp" not in copy.parallel.__dict__
    assert copy == cfg and copy.dp == 4 and copy.virtual_ranges == cfg.virtual_ranges


@pytest.mark.parametrize("fields, vpp", [
    ({"pipeline_model_parallel_size": 4, "pipeline_schedule": "zb_v"}, 2),
    ({"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Et|t|t|tL"}, 2),
    ({"pipeline_model_parallel_size": 2}, 1),
])
def test_a_parallel_config_s_kept_vpp_is_its_final_field(fields, vpp):
    """The checks read vpp before a V schedule or a layout fills its field: the value kept is
    the final field's, for vpp and etp."""
    from trainsim.config import ParallelConfig

    p = ParallelConfig(**fields)
    assert p.vpp == (p.virtual_pipeline_model_parallel_size or 1) == vpp
    assert p.etp == 1 and p.__dict__["vpp"] == vpp
