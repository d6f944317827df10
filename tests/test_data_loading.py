"""Data-loading cost (MegaScale §3.5): reads, collation, prefetch and the per-node loader."""

from __future__ import annotations

import pytest

from trainsim import ConfigError, run_config_from_dict, simulate


def run(**training):
    t = {"global_batch_size": 256, "seq_length": 4096}
    t.update(training)
    return simulate(run_config_from_dict({
        "model": "llama3-8b", "parallel": {"tp": 2, "sequence_parallel": True},
        "training": t, "cluster": {"node": "dgx-h100", "num_gpus": 16}}))


def test_free_by_default_and_counted_in_the_iteration():
    base = run()
    assert base.breakdown["data_loading_s"] == 0.0
    slow = run(data_read_bw_Bps=1e6, data_loader_async=False)
    assert slow.breakdown["data_loading_s"] > 0
    assert slow.iteration_time_s == pytest.approx(base.iteration_time_s
                                                  + slow.breakdown["data_loading_s"])
    assert sum(slow.breakdown.values()) == pytest.approx(slow.iteration_time_s)


def test_blocking_read_time_by_hand():
    """dp = 8, 32 samples per rank of 4097 int32 ids (vocab 128k); 8 GPUs per node read their
    own copies: 8 * 32 * 4097 * 4 bytes at 100 MB/s."""
    r = run(data_read_bw_Bps=100e6, data_loader_async=False)
    assert r.breakdown["data_loading_s"] == pytest.approx(8 * 32 * 4097 * 4 / 100e6)


def test_shared_loader_reads_each_replica_once_and_prefetch_hides_what_fits():
    blocking = run(data_read_bw_Bps=100e6, data_loader_async=False)
    shared = run(data_read_bw_Bps=100e6, data_loader_async=False, data_loader_per_node=True)
    assert shared.breakdown["data_loading_s"] == pytest.approx(
        blocking.breakdown["data_loading_s"] / 2)  # TP 2: two GPUs share each replica's data
    assert run(data_read_bw_Bps=100e6).breakdown["data_loading_s"] == 0.0  # fits in a step
    starved = run(data_read_bw_Bps=1e5)  # loading takes longer than a step: the excess shows
    load, step = 8 * 32 * 4097 * 4 / 1e5, run().iteration_time_s
    assert starved.breakdown["data_loading_s"] == pytest.approx(load - step)


def test_collation_is_split_over_workers():
    one = run(data_prep_s_per_sample=1e-3, num_workers=1, data_loader_async=False)
    four = run(data_prep_s_per_sample=1e-3, num_workers=4, data_loader_async=False)
    assert one.breakdown["data_loading_s"] == pytest.approx(32e-3)
    assert four.breakdown["data_loading_s"] == pytest.approx(8e-3)


def test_bad_loader_settings_are_clear_errors():
    with pytest.raises(ConfigError, match="num_workers"):
        run(num_workers=0)
    with pytest.raises(ConfigError, match="data_prep_s_per_sample"):
        run(data_prep_s_per_sample=-1)
