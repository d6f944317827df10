"""benchmarks/mlperf8b_step.py (33rd session): the MLPerf v5.1 Llama 3.1 8B rows' per-step gap
taken mechanism by mechanism. Its row set and pairs are what it says they are, its host-paced
bound orders as the source's loops do, and its what-ifs change only what they name."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

from trainsim.collectives import nccl

ROOT = Path(__file__).resolve().parents[1]
DIAG = load_script(ROOT / "benchmarks" / "mlperf8b_step.py")
LAYOUT = ("tp", "pp", "cp", "micro_batch_size", "seq_length", "fp8_recipe")


def test_rows_are_the_sixteen_8b_runs_by_source():
    rows = DIAG.read()
    assert len(rows) == 16 and {r["model"] for r in rows} == {"llama3-8b"}
    by = [DIAG.source(r) for r in rows]
    assert by.count("mlperf51-nvidia") == 4 and by.count("mlperf51-uf") == 6
    assert by.count(None) == 6
    gb512 = next(r for r in rows if r["id"] == "mlperf51-nvidia-llama3.1-8b-gb200-512")
    assert DIAG.ranks(gb512) == 256 and DIAG.domains(gb512) == 8  # tp 2: dp 64 x cp 4


def test_each_pair_differs_in_the_one_thing_it_names():
    rows = {r["id"]: r for r in DIAG.read()}
    one_node, nic512, nic72, window = DIAG.PAIRS
    a, b = rows[one_node[1]], rows[one_node[2]]
    assert all(a[k] == b[k] for k in (*LAYOUT, "gpu"))
    assert (DIAG.domains(a), DIAG.domains(b)) == (1, 2)
    for _, x, y in (nic512, nic72):
        a, b = rows[x], rows[y]
        assert all(a[k] == b[k] for k in (*LAYOUT, "num_gpus", "global_batch_size"))
        assert (a["nic_gbps_per_gpu"], b["nic_gbps_per_gpu"]) == ("400", "800")
    a, b = rows[window[1]], rows[window[2]]
    assert (a["cp"], a["micro_batch_size"], b["cp"], b["micro_batch_size"]) == ("1", "2", "2", "1")


def test_host_paced_bound_follows_the_cast_loop():
    rows = {r["id"]: r for r in DIAG.read()}
    one = rows["mlperf51-uf-llama3.1-8b-b200-8"]
    many = rows["mlperf51-uf-llama3.1-8b-b200-256"]
    # every fp8 weight is visited; only the shard's get kernels, so more ranks, less host work
    assert DIAG.shard_weights(one) == pytest.approx(128 / 8 + 1)
    assert DIAG.host_step_s(many) < DIAG.host_step_s(one)
    floor = DIAG.LAYERS * DIAG.FP8_WEIGHTS_PER_LAYER * DIAG.VIEWS_PER_WEIGHT * DIAG.PY_VIEW_S
    assert floor < DIAG.host_step_s(many) < 2 * floor
    # the eager-module price of every op bounds the measured-cost figure from above
    assert DIAG.host_step_s(one) < DIAG.host_step_s(one, DIAG.HOST_S_PER_KERNEL)


def test_channel_rate_sets_and_restores_the_constant():
    saved = nccl.NET_CHANNEL_Bps
    with DIAG.channel_rate(1e9):
        assert nccl.NET_CHANNEL_Bps == 1e9
    assert nccl.NET_CHANNEL_Bps == saved and saved in DIAG.CHANNEL_RATES_Bps
    assert DIAG.rate_label(DIAG.CHANNEL_RATES_Bps[0]) == "none"


def test_worker_restores_what_it_patches_and_exposing_never_speeds_up():
    from trainsim.validate import row_settings

    fields = row_settings.OPTION_FIELDS["dp_overlap"]
    rate = nccl.NET_CHANNEL_Bps
    row = next(r for r in DIAG.read() if r["id"] == "mlperf51-uf-llama3.1-8b-b200-8")
    out = DIAG._worker(row)
    assert row_settings.OPTION_FIELDS["dp_overlap"] == fields and nccl.NET_CHANNEL_Bps == rate
    assert out["no_ag"] >= out["predicted"] > out["compute"] > 0
    # one node: no multi-node ring, so the cap moves nothing
    assert out["capped"] == [out["predicted"]] * len(DIAG.CHANNEL_RATES_Bps)
    assert out["collectives"] > 0
    _, measured, preds = DIAG._capped_row(row)
    assert nccl.NET_CHANNEL_Bps == rate and measured == pytest.approx(0.5447)
    assert preds == [out["predicted"]] * (len(DIAG.CHANNEL_RATES_Bps) + 1)
