"""Every example config in examples/ loads and simulates."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import trainsim

EXAMPLES = [p for p in sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml"))
            if "model" in (yaml.safe_load(p.read_text()) or {})]  # run configs, not GPU specs


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_simulates(path):
    """The example is a valid config and gives a positive iteration time and MFU below 1."""
    r = trainsim.simulate(trainsim.load_run_config(path))
    assert r.iteration_time_s > 0 and 0 < r.mfu < 1
