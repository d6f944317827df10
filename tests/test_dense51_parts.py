"""benchmarks/dense51_parts.py: the sustained fraction it solves for reproduces the measured
step when the row is simulated at it, and the burst clock is the faster one."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "dense51_parts.py")


def test_solved_fraction_gives_the_measured_step():
    res, cfg = SCRIPT.chosen_config(["nemo2407-llama2-7b-8"])
    base, burst, need = SCRIPT.fraction_for(cfg, res.measured)
    assert burst < base
    assert cfg.cluster.gpu.sustained_of_burst < need <= 1.0
    again = SCRIPT.simulate(SCRIPT.with_sustained(cfg, need)).iteration_time_s
    assert again == pytest.approx(res.measured, rel=0.01)


def test_kernel_split_covers_every_compute_op():
    _res, cfg = SCRIPT.chosen_config(["nemo2407-llama2-7b-8"])
    pricer, sh = SCRIPT.Pricer(cfg), SCRIPT.shard_of(cfg)
    ops = SCRIPT.layer_forward(cfg, sh, moe=False)
    got = SCRIPT.split(pricer, ops)
    total = sum(pricer.compute.explain(op)[0] for op in ops if not isinstance(op, SCRIPT.Comm))
    assert got["gemm"] > 0 and got["attn"] > 0 and got["other"] > 0
    assert sum(got.values()) == pytest.approx(total)
