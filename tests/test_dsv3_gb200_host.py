"""benchmarks/dsv3_gb200_host.py (host29, 2026-11-26): host time along the DeepSeek-V3 GB200
optimization ladder. Its per-launch cost c* reproduces each measurement, its layer launch counts
agree with benchmarks/cuda_graph_scope.py's, the CUDA-graph scopes remove the router and
preprocess launches, the Grace rows are found, and the guide's figures are the mirror's."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import check_script_check_mode, load_script

from trainsim.compute import host

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "dsv3_gb200_host.py"
DIAG = load_script(SCRIPT)


@pytest.fixture(scope="module")
def rows():
    return DIAG.rows()


def test_implied_cost_reproduces_the_measurement(rows):
    kept = host.HOST_S_PER_KERNEL
    base, last = rows[0], rows[-1]
    c = DIAG.implied_us(base)
    assert host.HOST_S_PER_KERNEL == kept  # restored after every trial
    assert DIAG.predicted(base, c) == pytest.approx(float(base["measured_iteration_s"]), rel=0.01)
    # the host-bound baseline needs far more than the fitted 30 us, the tuned last step less so
    assert c > 3 * kept * 1e6
    assert DIAG.implied_us(last) < c
    # a measurement below even the host-free prediction gives the lower end, not a wrong root
    fast = dict(base, measured_iteration_s="1.0")
    assert DIAG.implied_us(fast) == 0.0


def test_layer_launches_agree_with_cuda_graph_scope(rows):
    scope = load_script(ROOT / "benchmarks" / "cuda_graph_scope.py")
    for row in (rows[0], rows[5]):
        fig = DIAG.layer_figures(row)
        assert fig["fwd_launches"] == scope.layer_launches(row)[0]
        assert fig["fwd_gpu_s"] > 0 and fig["bwd_gpu_s"] > fig["fwd_gpu_s"]


def test_graph_scopes_remove_router_and_preprocess_launches(rows):
    eager, graphed = DIAG.layer_figures(rows[4]), DIAG.layer_figures(rows[5])  # steps 5 -> 6
    assert eager["moe_router"] > 0 and graphed["moe_router"] == 0
    assert graphed["moe_dtoh"] > 0  # the token-count sync stays outside the graphs
    assert graphed["fwd_launches"] < eager["fwd_launches"]
    assert graphed["fwd_eager"] == eager["fwd_eager"]  # the same kernels, fewer host launches


def test_grace_rows_found():
    found = DIAG.grace_rows()
    stems = {s for s, _ in found}
    assert {"training_public", "training_mcore_dsv3_gb200"} <= stems
    assert sum(s == "training_mcore_dsv3_gb200" for s in stems) == 1
    assert all(r["gpu"].lower().startswith(DIAG.GRACE_GPUS) for _, r in found)


def test_changed_cells(rows):
    assert DIAG.changed(rows[0], rows[1]) == "none (not a column)"
    assert DIAG.changed(rows[2], rows[3]) == "moe_dispatcher alltoall -> deepep"


def test_guide_figures_are_the_mirror_text():
    check_script_check_mode(SCRIPT, DIAG.ladder._mirror(), "NVIDIA/Megatron-LM")
