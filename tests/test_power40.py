"""benchmarks/fit_power40.py: the power-limited clock against what the GPU runs, fitted to the
40th session's H200 loops (benchmarks/h200_2026-11-27_s40, runs 1-4), and the model by hand."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def p40():
    spec = importlib.util.spec_from_file_location("fit_power40",
                                                  ROOT / "benchmarks" / "fit_power40.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["fit_power40"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("fit_power40", None)


@pytest.fixture(scope="module")
def fit(p40):
    return p40.fit()


def test_loops_read_as_the_device_printed_them(p40):
    """The steady rates the device script printed (run 2's ``sustained`` and ``power_mix``,
    run 3's ``duty_sweep``, run 4's ``power_classes``: ratio_last_over_first_chunk) are what the
    fit reads."""
    lp = p40.loops()
    for key, printed in (("run2/bf16", 0.8387), ("run2/fp8", 0.8471), ("run2/bf16_duty50", 0.996),
                         ("run2/bf16_with_add", 0.9105), ("run3/duty0.8", 0.9438),
                         ("run3/duty0.9", 0.8867), ("run4/duty0.6_add", 0.9231),
                         ("run4/duty0.8_add", 0.8579), ("run4/duty0.8_host_idle", 0.9519),
                         ("run4/fa2_fwd_bwd", 1.0)):
        assert lp[key]["ratio"] == pytest.approx(printed, abs=2e-3), key
    assert lp["run2/bf16_duty50"]["clock_mhz"] == 1980.0  # below the cap: boost clock
    assert lp["run4/add_only"]["clock_mhz"] == 1980.0
    assert 680.0 < lp["run2/bf16"]["power_w"] < 700.0  # at the 700 W cap


def test_constants_are_physical(fit):
    """Idle power 90-150 W of the ~691 W the cap holds; a dynamic-power exponent between
    linear in the clock and f V^2 with V ~ f; an HBM-bound kernel's power below the cap;
    FlashAttention-2 (mma.sync at a third of the GEMM's FLOP rate) below a GEMM's power."""
    c = fit["constants"]
    assert 90.0 < c["idle"] * fit["limit_w"] < 150.0
    assert 1.5 < c["exponent"] < 3.5
    assert 0.0 < c["hbm"] < 1.0 - c["idle"]
    assert 0.3 < c["attention"] < 1.0
    assert fit["full_load"] == pytest.approx(0.848, abs=0.005)


def test_loops_not_fitted_are_predicted_within_three_percent(fit, p40):
    """No loop with a filler after its GEMMs was used by the fit (spin at duty 0.7-0.9, adds
    at 0.6 and 0.8, the host idle at 0.8, a 1 GiB add), nor the fp8 loops: the model is within
    3 % of each, the flat factor up to 14 % off."""
    pred = [r for r in fit["rows"] if r["role"] == "predicted"]
    assert len(pred) == 11
    for r in pred:
        assert r["model"] == pytest.approx(r["measured"], rel=0.03), r["loop"]
    err = p40.predicted_errors(fit)
    assert err["model"][0] < 0.015
    assert err["flat"][0] > 0.04


def test_rate_by_hand_with_exponent_two(p40):
    """With a = 2 the balance g r^2 t - (1 - p0)(t + o r) = 0 (a GEMM of t seconds, o of idle
    after it) is a quadratic: r = ((1 - p0) o + sqrt((1 - p0)^2 o^2 + 4 g (1 - p0) t^2)) / 2gt."""
    c = p40.Constants(idle=0.2, exponent=2.0, hbm=0.4)
    s, t, o = 0.85, 1.0, 0.1
    g = 0.8 / s ** 2
    hand = (0.8 * o + math.sqrt(0.64 * o * o + 4 * g * 0.8 * t * t)) / (2 * g * t)
    assert p40.sustained_rate(p40.Mix(t, o), s, c) == pytest.approx(hand, rel=1e-9)


def test_full_duty_idle_and_monotone(p40):
    """Back to back GEMMs settle at the GPU's own full-load factor; no tensor work runs at the
    boost clock; more idle time between GEMMs never lowers their rate."""
    c = p40.Constants(idle=0.18, exponent=2.24, hbm=0.4)
    assert p40.sustained_rate(p40.Mix(1.0), 0.82, c) == pytest.approx(0.82)
    assert p40.sustained_rate(p40.Mix(0.0, 1.0), 0.85, c) == 1.0
    assert p40.sustained_rate(p40.Mix(1.0), 1.0, c) == 1.0
    rates = [p40.sustained_rate(p40.Mix(1.0, o), 0.85, c) for o in (0.0, 0.05, 0.1, 0.2, 0.4, 1.0)]
    assert rates == sorted(rates) and rates[-1] == 1.0 and rates[0] == pytest.approx(0.85)
    # an HBM-bound filler draws more than an idle one: it leaves the GEMMs a lower rate
    assert p40.sustained_rate(p40.Mix(1.0, 0.3, hbm_work_s=0.3), 0.85, c) < \
        p40.sustained_rate(p40.Mix(1.0, 0.3), 0.85, c)
    # tensor-core kernels doing fewer FLOPs per second draw less
    assert p40.sustained_rate(p40.Mix(1.0, 0.1, work_s=0.7), 0.85, c) > \
        p40.sustained_rate(p40.Mix(1.0, 0.1), 0.85, c)
    with pytest.raises(ValueError):
        p40.sustained_rate(p40.Mix(1.0), 0.0, c)


def test_layer_mix_adds_up_to_the_priced_layer(p40):
    """One decoder layer's mix as trainsim prices it: tensor-core seconds at the burst clock
    plus the rest equal the priced pass with its tensor-core part times sustained_of_burst;
    attention at FlashAttention-2's share of a GEMM's power leaves the GEMMs a higher rate."""
    from trainsim.catalog import gpu, model
    from trainsim.config import ClusterConfig, ParallelConfig, RunConfig, TrainingConfig
    from trainsim.pricing import Pricer
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.shard import shard_of

    cfg = RunConfig(model=dataclasses.replace(model("llama3-8b"), num_layers=2),
                    parallel=ParallelConfig(),
                    training=TrainingConfig(global_batch_size=1, micro_batch_size=1,
                                            seq_length=2048, dtype="bf16", attention="flash2"),
                    cluster=ClusterConfig(gpu=gpu("h200-sxm-141gb"), num_gpus=1,
                                          gpus_per_node=1, compute_db=None))
    s = cfg.cluster.gpu.sustained_of_burst
    c = p40.fitted()
    gemm, cls = p40.layer_mix(cfg, "gemm", c), p40.layer_mix(cfg, "class", c)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    total = Pricer(cfg).price(fwd + backward_of(fwd, sh)).duration_s
    assert gemm.tensor_s / s + gemm.other_s == pytest.approx(total, rel=1e-9)
    assert gemm.work == gemm.tensor_s == cls.tensor_s
    assert 0.0 < cls.work < cls.tensor_s
    assert 0.0 < cls.hbm_work_s <= cls.other_s
    assert s <= p40.sustained_rate(gemm, s, c) <= p40.sustained_rate(cls, s, c) <= 1.0


def test_board_refuses_a_missing_file_in_one_line(p40, capsys):
    """``--board`` with no such file: argparse's usage line and exit 2, not a traceback."""
    with pytest.raises(SystemExit) as exc:
        p40.main(["--board", str(ROOT / "no_such_rows.csv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage:") and "no such file" in err and "Traceback" not in err
