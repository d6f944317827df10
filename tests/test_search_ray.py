"""`--executor ray` ranks exactly as the local executor (skipped where Ray is not installed)."""

from __future__ import annotations

import pytest
from helpers import make_base

from trainsim.search import LocalExecutor, RayExecutor, SearchSpace, search

ray = pytest.importorskip("ray")


def test_ray_gives_the_same_ranking_as_local_processes():
    """A local Ray instance with 2 CPUs: same top k, Pareto front and counts as 2 processes."""
    base = make_base(gpus=8, batch=16)
    space = SearchSpace(recompute=("none", "full"), zero=(0, 1), max_micro_batch=4, max_cp=2)
    local_ex = LocalExecutor(2)
    try:
        local = search(base, [8], space, top_k=5, executor=local_ex, cache=None)
    finally:
        local_ex.close()
    ray_ex = RayExecutor(workers=2)
    try:
        remote = search(base, [8], space, top_k=5, executor=ray_ex, cache=None)
    finally:
        ray_ex.close()
    assert remote.stats.executor == "ray" and remote.stats.simulated == local.stats.simulated
    assert [r.to_dict() for r in remote.top] == [r.to_dict() for r in local.top]
    assert [e.candidate for e in remote.pareto] == [e.candidate for e in local.pareto]
