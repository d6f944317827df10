"""The bundled databases' GEMM records were timed in a loop (benchmarks/gemm39_db_loop.py);
``compute.database.RECORD_LOOP`` reads them so only when asked."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import gemm39_db_loop as g39

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import chain, database
from trainsim.compute.roofline import LAUNCH_S, loop_clock_factor


def test_shipped_reading_is_burst():
    """Off by default: a loaded database's analytic reference is the burst roofline."""
    assert database.RECORD_LOOP is False and database.RECORD_GAPS is False
    db = g39.bundled("h100-sxm-80gb")
    assert db.analytic.loop_toward is None
    op, _ = g39.gemm_records(db)[("gemm", "bf16", False, False, "")][0]
    assert db.gaps(op) == 0.0 and db.modelled(op) == db.analytic.time(op)


def test_profile_measure_times_its_repeats_back_to_back():
    """``profile/device.py`` ``measure`` holds the GPU once, then queues every timed repeat
    with no pause between them: the repeats are a loop."""
    torch = pytest.importorskip("torch")  # noqa: F841 (profile.device imports it)
    from trainsim.profile.device import Budget, measure

    log: list[str] = []

    class Timer:
        def record(self) -> None:
            log.append("event")

        def elapsed_s(self, end: Timer) -> float:
            return 1e-3

    class Dev:
        def synchronize(self) -> None:
            log.append("sync")

        def timer(self) -> Timer:
            return Timer()

        def hold(self, seconds: float) -> None:
            log.append("hold")

    budget = Budget(warmup=2, repeats=6, min_repeats=6, target_s=1e9)
    measure(Dev(), lambda i: log.append("run"), budget)  # type: ignore[arg-type]
    timed = log[log.index("hold") + 1:]
    assert log.count("hold") == 1
    assert timed[:-1] == ["event", "run", "event"] * 6 and timed[-1] == "sync"


def test_records_rise_with_length_under_the_burst_reading():
    """H100 bf16 records: against the burst roofline the log ratio follows the kernel's length
    (r 0.64); against the loop roofline much less, with a smaller spread."""
    by = g39.record_spreads("h100-sxm-80gb")[("gemm", "bf16", False, False, "")]
    assert by["burst"].n == 167
    assert by["burst"].r > 0.5 and by["loop"].r < 0.35
    assert by["loop"].sd < by["burst"].sd - 0.01
    # the long records are the slow ones (> 3 ms, burst reading), not under the loop reading
    assert by["burst"].by_bin[-1][1] > 0.03 > by["loop"].by_bin[-1][1]


def test_measured_file_over_records_does_not_grow_with_length():
    """Two loops: measure_kernels.py's graph replay over the records is flat in length."""
    s = g39.pair_spread("h100-sxm-80gb")
    assert s.n == 232 and abs(s.r) < 0.2
    assert abs(s.by_bin[-1][1]) < 0.03  # the kernels over 3 ms agree within 3 %


def test_record_loop_prices_a_looped_row_at_its_record():
    """Read as a loop, a record on its own GPU prices a looped row at the record's time; read
    as burst (shipped), at the record times the loop's slowdown of its modelled time."""
    spec = catalog_gpu("h100-sxm-80gb")
    burst = dataclasses.replace(spec, sustained_of_burst=1.0)
    toward = spec.sustained_of_burst * spec.power_scale
    db = g39.bundled("h100-sxm-80gb")
    op, t = max(g39.gemm_records(db)[("gemm", "bf16", False, False, "")], key=lambda r: r[1])
    shipped = chain.ChainModel(burst, db, toward).explain(op)[0]
    modelled = db.analytic.time(op)
    assert shipped == pytest.approx(t * loop_clock_factor(modelled - 3e-6, toward), rel=1e-3)
    with g39.record_loop(True):
        looped_db = g39.bundled("h100-sxm-80gb")
        assert looped_db.analytic.loop_toward == toward
        assert chain.ChainModel(burst, looped_db, toward).explain(op)[0] == pytest.approx(t)
        # an idle-board (burst) row is then faster than the record
        fast, how = chain.ChainModel(burst, looped_db).explain(op)
        assert fast < t and "burst clock" in how
    assert database.RECORD_LOOP is False
    assert math.isfinite(shipped)


def test_record_gaps_adds_the_models_launch_gap_to_a_record():
    """Read without its launch gap, a record on its own GPU prices the op at the record plus the
    gap the roofline charges (one kernel: 3 us); on the sustained clock, the record's kernel
    time scaled by the gapless models' ratio, plus the gap."""
    spec = catalog_gpu("h100-sxm-80gb")
    burst = dataclasses.replace(spec, sustained_of_burst=1.0)
    with g39.reading(gaps=True):
        db = g39.bundled("h100-sxm-80gb")
        op, t = g39.gemm_records(db)[("gemm", "bf16", False, False, "")][0]
        assert db.gaps(op) == pytest.approx(LAUNCH_S)
        assert chain.ChainModel(burst, db).explain(op)[0] == pytest.approx(t + LAUNCH_S)
        sustained = chain.ChainModel(spec, db)
        kernel = sustained.roofline.time(op) - LAUNCH_S
        assert sustained.explain(op)[0] == pytest.approx(
            t * kernel / (db.analytic.time(op) - LAUNCH_S) + LAUNCH_S)
    assert database.RECORD_GAPS is False
