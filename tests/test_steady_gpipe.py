"""GPipe's periodic steady state (``steady_gpipe``: two phases, paces per stream) against the
full simulation."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from helpers import random_config, shortcut_methods

import trainsim.steady_state as steady
from trainsim import run_config_from_dict
from trainsim.errors import ConfigError

N_CONFIGS = 200
DEFAULT_CONFIGS = 4  # the default suite's share of them (the slow test runs all)


def _configs(n: int):
    """Random configs (``helpers.random_config``) with a pipeline under GPipe (ZeRO 0-2: the
    named schedules do not place ZeRO-3's gathers), 4 pp + 8 to 12 pp + 64 micro-batches."""
    rng = random.Random(50)
    out = []
    while len(out) < n:
        raw = random_config(rng)
        par, train = raw["parallel"], raw["training"]
        pp = par["pp"]
        if pp == 1:
            continue
        raw["model"]["num_layers"] = pp * rng.randint(1, 3)
        par.update(pipeline_schedule="gpipe", vpp=None, zero_stage=rng.choice([0, 1, 2]))
        dp = raw["cluster"]["num_gpus"] // (par["tp"] * pp * par["cp"])
        train["global_batch_size"] = (rng.randint(4 * pp + 8, 12 * pp + 64)
                                      * train["micro_batch_size"] * dp)
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def _agree(monkeypatch, n_configs: int) -> Counter:
    monkeypatch.setattr(steady, "MIN_TASKS", 0)  # take the shortcut on small runs too
    return shortcut_methods(_configs(n_configs))


def test_gpipe_steady_state_agrees_with_the_full_simulation(monkeypatch):
    """Over the first 4 random GPipe configs the extrapolated steady state and the full
    simulation agree to 1e-9 on the iteration time and every breakdown entry, and the
    shortcut is taken on most (not a test of the fallback alone)."""
    methods = _agree(monkeypatch, DEFAULT_CONFIGS)
    assert methods["steady-state"] >= DEFAULT_CONFIGS // 2, methods


@pytest.mark.slow
def test_gpipe_steady_state_agrees_with_the_full_simulation_on_all_configs(monkeypatch):
    """The same over all 200 random configs."""
    methods = _agree(monkeypatch, N_CONFIGS)
    assert methods["steady-state"] >= N_CONFIGS // 2, methods
