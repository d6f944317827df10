"""The tuner's memory check stops at the first pipeline stage over the GPU's memory
(``validate.training._peak_within``, 38th session): a config that fits gets its whole peak
(what ``max`` over the stages gives), one that does not a figure over the memory, so every
fit decision and every figure the tuner keeps is the one it had."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.memo import stage_memory
from trainsim.validate import training

RAW = {"model": "llama3-70b",
       "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "compute_db": None},
       "parallel": {"tp": 4, "pp": 4},
       "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096}}


@pytest.fixture(scope="module")
def cfg():
    return run_config_from_dict(RAW)


def test_a_config_that_fits_gets_its_whole_peak(cfg):
    stages = [stage_memory(cfg, s).total for s in range(cfg.parallel.pp)]
    assert len(set(stages)) > 1  # the stages differ: the order matters
    assert training._peak_within(cfg, max(stages)) == max(stages)
    assert training._peak_within(cfg, 10 * max(stages)) == max(stages)


def test_a_config_over_the_memory_stops_at_the_first_stage_over_it(cfg, monkeypatch):
    stages = [stage_memory(cfg, s).total for s in range(cfg.parallel.pp)]
    hbm = stages[0] * (1 - 1e-9)  # stage 0 (the most in flight) is over: nothing else read
    read: list[int] = []

    def counted(c, s):
        read.append(s)
        return stage_memory(c, s)

    monkeypatch.setattr(training, "stage_memory", counted)
    assert training._peak_within(cfg, hbm) > hbm
    assert read == [0]
    read.clear()
    below = sorted(stages)[-2]  # over it: the largest stage only (the peak) and those before
    got = training._peak_within(cfg, below)
    assert got > below and got == max(stages[:read[-1] + 1])
    assert read == list(range(stages.index(max(stages)) + 1))
