"""``bound.lower_bound_s`` reads each backward's duration where no pass can hold a pair's
exposed exchanges (all but the combined 1F1B; ``bound.backward_work``): the same value, to the
bit, as summing every backward's own segments out of the full pass list (bound45, issue 21
item 3)."""

from __future__ import annotations

from helpers import random_and_public_configs

from trainsim.bound import backward_work, lower_bound_s
from trainsim.ep_pairs import own_segments
from trainsim.pricing import Pricer
from trainsim.workload.schedule import combined_1f1b


def _every_own_segment(graph) -> list[float]:
    """Each backward's work as main had it before bound45: every own segment summed."""
    return [sum(seg[1] for seg in own_segments(graph.work[v][1]))
            for v in range(graph.pp * graph.vpp)]


def _configs() -> list:
    """Random configs (dense and MoE, every ZeRO stage, sends blocking or overlapped), every
    public row's untuned config that builds, and the combined 1F1B's dense-then-MoE pipeline."""
    from test_combined_1f1b import _dense_then_moe

    return [*random_and_public_configs(45, 40), _dense_then_moe()]


def test_the_bound_is_bit_identical_to_every_own_segment_summed():
    from trainsim.simulator import _TaskGraph

    configs = _configs()
    assert len(configs) > 100
    assert any(combined_1f1b(c) for c in configs) and not all(combined_1f1b(c) for c in configs)
    positive = fsdp = 0
    for cfg in configs:
        p = cfg.parallel
        if p.pipeline_schedule not in (None, "1f1b", "interleaved_1f1b") or \
                p.optimizer_post_validation:
            assert lower_bound_s(cfg) == 0.0
            continue
        graph = _TaskGraph(cfg, Pricer(cfg), None)
        got, want = backward_work(graph), _every_own_segment(graph)
        if graph.fsdp and not combined_1f1b(cfg):  # bound46: the split parts, gathers out
            fsdp += 1
            assert all(g <= w * (1 + 1e-12) for g, w in zip(got, want)), cfg.model.name
            continue
        assert [x.hex() for x in got] == [x.hex() for x in want], cfg.model.name
        positive += lower_bound_s(cfg) > 0
    assert positive > len(configs) // 2 and fsdp > 0
