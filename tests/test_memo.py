"""Answers kept per config object (trainsim.memo)."""

from __future__ import annotations

from types import SimpleNamespace

from trainsim.memo import per_config


def test_an_answer_is_computed_once_per_config_object_and_argument():
    calls = []
    f = per_config(lambda cfg, s: calls.append((cfg.n, s)) or cfg.n * 10 + s)
    a, b = SimpleNamespace(n=1), SimpleNamespace(n=1)
    assert [f(a, 0), f(a, 0), f(a, 1), f(b, 0)] == [10, 10, 11, 10]
    assert calls == [(1, 0), (1, 1), (1, 0)]  # an equal but distinct config is asked again


def test_the_cache_is_bounded_and_keeps_its_configs_alive():
    calls = []
    f = per_config(lambda cfg: calls.append(cfg) or len(calls), maxsize=2)
    cfgs = [SimpleNamespace() for _ in range(3)]
    assert [f(c) for c in cfgs] == [1, 2, 3]
    assert f(cfgs[0]) == 4  # the oldest left the cache
    assert f(cfgs[2]) == 3


def test_simulate_reports_the_memory_the_tuner_checked():
    from trainsim import run_config_from_dict, simulate
    from trainsim.simulator import stage_memory

    cfg = run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 4},
        "parallel": {"tp": 2, "pp": 2},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 1024},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 4}})
    checked = [stage_memory(cfg, s) for s in range(2)]
    assert all(a is b for a, b in zip(simulate(cfg).memory, checked))
