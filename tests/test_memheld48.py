"""benchmarks/memheld48_fit.py: memory-bound kernels beside held SMs (the 47th session's H200 and
H100 ``norm_cast`` runs) slow by less than the engine's ``1 / (1 - share)``; one global
bytes-per-SM-clock constant, in either model, fits both GPUs' cases better than the whole share,
and the series model best."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

from trainsim.catalog import gpu as catalog_gpu

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "memheld48_fit.py"


def _fit():
    fit = load_script(SCRIPT)
    return fit, fit.fitted(fit.cases())


def test_the_fit_reads_every_measured_case_but_the_disturbed_ones():
    fit, rows = _fit()
    assert len(fit.cases()) == 48  # 2 GPUs x 12 cases x 2 hold widths
    assert len(rows) == 34  # the eager RMSNorm shown only, the H100's disturbed cast left out
    assert {r[0] for r in rows} == set(fit.RUNS)


def test_the_series_fit_is_the_recorded_constant_and_beats_the_whole_share_on_both_gpus():
    fit, rows = _fit()
    b = fit.fit(rows)
    assert b == fit.SERIES_B
    for gpu in fit.RUNS:
        sel = [r for r in rows if r[0] == gpu]
        n = catalog_gpu(gpu).num_sms
        model = fit.mape(sel, lambda g, h: fit.slowdown(g, h, b))
        whole = fit.mape(sel, lambda g, h, n=n: n / (n - h))
        assert model < 0.75 * whole, gpu


def test_the_hard_saturation_model_fits_worse_than_the_series_one():
    fit, rows = _fit()
    hard = fit.fit(rows, "hard")
    series = fit.fit(rows)
    assert fit.mape(rows, lambda g, h: fit.slowdown(g, h, hard, "hard")) > \
        fit.mape(rows, lambda g, h: fit.slowdown(g, h, series))


def test_a_streaming_kernel_never_slows_past_the_share_nor_speeds_up():
    fit, _ = _fit()
    for gpu in fit.RUNS:
        n = catalog_gpu(gpu).num_sms
        for model in ("series", "hard"):
            for h in (1, 20, 32, 100):
                s = fit.slowdown(gpu, h, 12.97, model)
                assert 1.0 <= s <= n / (n - h) + 1e-12
