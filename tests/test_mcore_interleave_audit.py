"""benchmarks/mcore_interleave_audit.py: Megatron-core's interleaved schedule in trainsim's
timeline, chunk-granular mechanism by mechanism."""

from pathlib import Path

import pytest
from helpers import load_script

ma = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "mcore_interleave_audit.py")


def test_sends_per_stage_by_hand():
    # core_v0.8.0 schedules.py: one send per chunk-pass each way; the last virtual stage's
    # forwards (L948-949) and the first virtual stage's backwards (L993-994) send nothing.
    # 177B weak-scaling row: m 24 micro-batches, vpp 16, pp 6
    assert ma.expected_sends(24, 16, 2, 6) == 768
    assert ma.expected_sends(24, 16, 0, 6) == 768 - 24
    assert ma.expected_sends(24, 16, 5, 6) == 768 - 24
    assert ma.expected_sends(4, 1, 0, 1) == 0  # one stage: no pipeline


@pytest.fixture(scope="module")
def row177():
    return ma.audit(ma.rows_of(ma.PUBLIC, ["mlm-weak-177b-2304"])[0])


def test_the_timeline_sends_what_megatron_sends(row177):
    a = row177
    assert (a["pp"], a["vpp"], a["m"]) == (6, 16, 24)
    assert a["sends"] == [ma.expected_sends(a["m"], a["vpp"], s, a["pp"]) for s in range(a["pp"])]


def test_the_gap_figures_follow_from_the_prediction(row177):
    a = row177
    gap = a["measured"] - a["predicted"]
    assert a["gap_per_layer_mb_s"] == pytest.approx(gap / (a["layers"] * a["m"]))
    assert a["layers"] == 96 // 6
    assert a["sends_over_gap"] == pytest.approx(a["send_s"][a["heavy"]] / gap)
