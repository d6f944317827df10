"""Experiment: a GEMM benchmarked alone loses its boost clock to the power limit.

Since the 28th session the model prices this for kernel rows timed in a loop
(``roofline.loop_clock_factor``, ``LOOP_CLOCK_TAU_S``, fitted by ``fit_kernels.py``; rows naming
the MAMF finder, which idles between calls, keep the burst clock, and a database's records keep
their own times). ``power_ramp`` below replaces that pricing with this script's own ramp (and
``--ramp 0`` with none), on every burst-clock spec, the database's comparison model included.

    python benchmarks/gemm_power_ramp.py                    # GEMM error by measured kernel time
    python benchmarks/gemm_power_ramp.py --ramp 4.3e-3      # with the ramp; tile overhead refitted
    python benchmarks/gemm_power_ramp.py --ramp fit         # the ramp's time constant fitted too
    python benchmarks/gemm_power_ramp.py --ramp 4.3e-3 --training  # and the training files
    python benchmarks/gemm_power_ramp.py --activity all --training  # clock by tensor-core activity
    (--errata: kernels_errata.csv applied to the published file first)

**What it tests.** The roofline prices a kernel benchmarked alone at the GPU's burst (boost
clock) GEMM ceiling and a training step at the sustained, power-limited one
(``GPUSpec.sustained_of_burst``, 0.85: Bekman's MSMF / MAMF). A benchmark loop of one long
kernel keeps the GPU as busy as training does, so its clock should fall toward the sustained
rate too. Priced here as ``t x (1 + (1 / SUSTAINED_OF_BURST - 1) x t / (t + tau))`` for the
compute time ``t`` of a GEMM on a burst-clock spec: the boost holds for kernels much shorter
than ``tau`` and the rate falls to the sustained one for much longer ones. ``tau`` stands
for the power controller's time constant over the loop's repeat count, which the kernel
files do not record. ``GEMM_TILE_OVERHEAD_K`` is refitted with it as ``fit_kernels.py``
fits it (same rows, same held-out split).

**What it shows** (benchmarks/RESULTS.md, 2026-11-24, 13th session): the team's H100 file and
vidur's A100 profiles run long GEMMs 6-9 % below the model (fp8 further below its short
kernels' rate than bf16: more power per second), and the ramp takes that out; stas00's MAMF rows (best shapes of a brute-force
search, 100 repeats) show no such loss; and through the H100 kernel database the ramp makes
the H100 training rows' GEMMs faster (the database's long records stop counting the power
limit twice), which the public training file does not want. Nothing here changes trainsim.

**Activity** (``--activity``, 2026-11-25). Under a power limit the clock is set by the power
the work draws, and a GEMM whose tensor cores idle part of the time (a partial wave, each
tile's prologue and epilogue: shape efficiency ``e`` < 1) draws less. With the catalog's law
at full activity (rate ~ P^0.6, ``config.cluster.POWER_EXPONENT``) and dynamic power ~
activity, the clock at the limit is ``c x e^-0.6`` of the burst clock, capped at the burst
clock, where ``c`` is the full-activity clock (``sustained_of_burst`` in training, the ramp's
for a kernel alone): rate = burst x e x min(1, c x e^-0.6). No new constant. ``alone`` applies
it to kernels benchmarked alone only (with no ramp: nothing moves), ``all`` to training too.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import fit_kernels as fk
import numpy as np

from trainsim.compute import roofline
from trainsim.config.cluster import POWER_EXPONENT, SUSTAINED_OF_BURST
from trainsim.validate import BUNDLED_DIR, summarize, validate_file
from trainsim.workload.ops import Gemm

DURATIONS = ((20e-6, "<20us"), (100e-6, "20-100us"), (300e-6, "0.1-0.3ms"), (1e-3, "0.3-1ms"),
             (3e-3, "1-3ms"), (float("inf"), ">3ms"))


def ramp_factor(seconds: float, tau: float) -> float:
    """Time of ``seconds`` of burst-clock GEMM work over ``seconds``, the clock falling to the
    sustained rate on a time scale ``tau`` (1 for tau <= 0)."""
    if tau <= 0:
        return 1.0
    return 1.0 + (1.0 / SUSTAINED_OF_BURST - 1.0) * seconds / (seconds + tau)


def activity_clock(clock: float, efficiency: float) -> float:
    """Clock over the burst clock of a GEMM at shape efficiency ``efficiency`` under a power
    limit that holds full-activity work at ``clock`` (see the module docstring)."""
    if efficiency <= 0:
        return clock
    return min(1.0, clock * efficiency ** -POWER_EXPONENT)


@contextlib.contextmanager
def power_ramp(tau: float, activity: str = "none") -> Iterator[None]:
    """``RooflineModel`` with the ramp on every GEMM priced on a burst-clock spec
    (``sustained_of_burst`` 1: a kernel benchmarked alone), and with ``activity`` ("alone",
    "all") the clock raised for GEMMs whose tensor cores idle part of the time; restored on
    exit."""
    plain = roofline.RooflineModel._time

    def ramped(self: roofline.RooflineModel, op: object) -> float:
        alone = self.gpu.sustained_of_burst >= 1.0
        if not isinstance(op, Gemm) or not (alone or activity == "all"):
            return plain(self, op)  # type: ignore[arg-type]
        # as RooflineModel._time prices a GEMM, the compute-bound time ramped (the power
        # limit lowers the SM clock, not the HBM bandwidth)
        eff = self.gemm_efficiency(op)
        compute = op.flops / (roofline.gemm_rate(self.gpu, op) * eff)
        if alone:
            clock = 1.0 / ramp_factor(compute, tau)
        else:  # the spec's rate is already at the sustained clock
            clock = self.gpu.sustained_of_burst * self.gpu.power_scale
            compute *= clock
        if activity != "none":
            compute /= activity_clock(clock, eff)
        elif alone:
            compute /= clock
        memory = op.bytes / (self.gpu.hbm_bw_Bps * roofline.HBM_EFFICIENCY)
        return (max(compute, memory)
                + roofline.LAUNCH_S * roofline.grouped_launches(op))

    roofline.RooflineModel._time = ramped  # type: ignore[method-assign]
    try:
        yield
    finally:
        roofline.RooflineModel._time = plain  # type: ignore[method-assign]


def fit_overhead(rows: list[fk.Row], held: dict[str, set[str]]) -> float:
    """``GEMM_TILE_OVERHEAD_K`` as ``fit_kernels.fit`` fits it; returns the fitted rows' MAPE."""
    train = [r for r in rows if r.kind == "gemm" and not fk.is_held(r, held)]

    def loss(k0: float) -> float:
        roofline.GEMM_TILE_OVERHEAD_K = k0
        return float(np.mean(fk.ape(train)))

    roofline.GEMM_TILE_OVERHEAD_K = round(fk.golden(loss, 0.0, 1024.0))
    return loss(roofline.GEMM_TILE_OVERHEAD_K)


def by_duration(rows: list[fk.Row]) -> dict[tuple[str, str], dict[str, list[float]]]:
    """Signed time errors of GEMM rows by (GPU and source, dtype) and measured kernel time."""
    gemms = [r for r in rows if r.kind == "gemm"]
    signed = fk.predict(gemms) / np.array([r.measured_s for r in gemms]) - 1.0
    out: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r, e in zip(gemms, signed):
        label = next(name for top, name in DURATIONS if r.measured_s < top)
        out[(f"{r.gpu} {r.source[:24]}", r.ops[0].dtype)][label].append(float(e))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ramp", default="0", help="time constant in seconds, or 'fit'")
    ap.add_argument("--errata", action="store_true", help="apply kernels_errata.csv first")
    ap.add_argument("--training", action="store_true", help="also the public and held-out training files")
    ap.add_argument("--activity", choices=("none", "alone", "all"), default="none",
                    help="clock by tensor-core activity: for kernels alone, or training too")
    args = ap.parse_args(argv)
    paths = [BUNDLED_DIR / f for f in fk.FILES]
    if args.errata:
        import tempfile

        from trainsim.validate.errata import corrected_file

        errata = Path(__file__).resolve().parent / "kernels_errata.csv"
        paths[0] = corrected_file(paths[0], errata, tempfile.mkdtemp())[0]
    rows = fk.load(paths)
    held = fk.split(rows)
    shipped = roofline.GEMM_TILE_OVERHEAD_K
    try:
        if args.ramp == "fit":
            def loss(tau: float) -> float:
                with power_ramp(tau, args.activity):
                    return fit_overhead(rows, held)
            tau = fk.golden(loss, 5e-4, 2e-2, tol=1e-4)
        else:
            tau = float(args.ramp)
        with power_ramp(tau, args.activity):
            mape = fit_overhead(rows, held) if tau > 0 or args.activity != "none" else float(np.mean(fk.ape(
                [r for r in rows if r.kind == "gemm" and not fk.is_held(r, held)])))
            print(f"ramp tau = {tau * 1e3:.2f} ms, activity {args.activity}, GEMM_TILE_OVERHEAD_K = "
                  f"{roofline.GEMM_TILE_OVERHEAD_K}, fitted GEMM rows' MAPE {mape:.2%}")
            for kind, gpu, part, n, err in fk.report(rows, held):
                if kind == "gemm":
                    print(f"  {gpu:16s} {part:15s} n={n:4d} MAPE {err:6.1%}")
            print("signed error by measured kernel time (n):")
            for (src, dtype), bins in sorted(by_duration(rows).items()):
                cells = [f"{name} {np.mean(bins[name]):+.1%} ({len(bins[name])})"
                         for _, name in DURATIONS if bins.get(name)]
                print(f"  {src:42s} {dtype:5s} " + " | ".join(cells))
            if args.training:
                here = Path(__file__).resolve().parent
                for path in (BUNDLED_DIR / "training_public.csv", here / "training_heldout.csv"):
                    _, results = validate_file(path)
                    s = summarize(results)
                    print(f"{path.stem}: {s['n']} rows, MAPE {s['mape']:.2%}")
    finally:
        roofline.GEMM_TILE_OVERHEAD_K = shipped
    return 0


if __name__ == "__main__":
    sys.exit(main())
