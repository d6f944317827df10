"""benchmarks/moe_config_ladder.py: the measured time per layer pass is read back from the row
(outside the layers + passes x pass = the measured step), and the launch count it prints is the
host's count over the layer's ops."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "moe_config_ladder.py")


def test_measured_pass_round_trips_to_the_row():
    row = SCRIPT._row(*SCRIPT.ROWS[1])
    g = SCRIPT.moe_parts.parts(row)
    meas, pred, err = SCRIPT.measured_pass(row)
    outside = g["predicted"] - g["layer"] * g["passes"]
    assert abs(outside + meas * g["passes"] - float(row["measured_iteration_s"])) < 1e-9
    assert pred == g["layer"]
    assert abs(err - 100.0 * (g["predicted"] / g["measured"] - 1.0)) < 1e-9


def test_more_local_experts_launch_more():
    base = SCRIPT._row(*SCRIPT.ROWS[0])
    ep8, _ = SCRIPT.launch_load({**base, "pp": "1", "vpp": "", "options": "dp_overlap"})
    ep16, _ = SCRIPT.launch_load({**base, "pp": "1", "vpp": "", "ep": "16",
                                  "options": "dp_overlap"})
    # TE GroupedLinear launches a GEMM and a 3-kernel current-scaling cast per local expert
    # for fc1, fc2 and their backward: 16 local experts against 8
    assert ep8 - ep16 >= 8 * 2 * (1 + 3)


def test_release_points_match_the_public_rows_they_restate():
    # an archive point stated with the public row's own cells carries that row's measurement:
    # its tokens/s/GPU give the row's measured step (the figures typed into RELEASES checked)
    rows = SCRIPT.recipe_rows()
    same = [(rid, tok) for points in SCRIPT.RELEASES.values()
            for _, rid, change, tok in points if not change]
    assert len(same) == 6
    for rid, tok in same:
        measured = float(rows[rid]["measured_iteration_s"])
        assert abs(SCRIPT.measured_step(rows[rid], tok) / measured - 1) < 2e-3, rid
