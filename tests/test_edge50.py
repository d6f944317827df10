"""edge50: the small edges robust50 and ss50 left (zb_2p's search estimate, a torus's
``dim_bw_GBps``, validate's refused measurement, the cluster network's argument check)."""

from __future__ import annotations

import csv
import json
from fractions import Fraction
from pathlib import Path

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.limits import WorkLimitError, check_simulation
from trainsim.network.topology import from_cluster, topology_from_dict

CHECK_FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "training_mlm_llama.csv"


def _zb(pp: int, microbatches: int):
    return run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": pp, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "parallel": {"pp": pp, "pipeline_schedule": "zb_2p"},
        "training": {"global_batch_size": microbatches, "seq_length": 256},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": pp, "gpus_per_node": min(pp, 8),
                    "compute_db": None}})


def test_the_zb_2p_estimate_counts_the_settled_search_not_eight_full_ones():
    """ss50 lead 2: pp 16 x 16,384 was refused (4.2M positions counted) though it runs in
    ~5 CPU s (two searches settle at 136 micro-batches, then one build of 16,384). settle58:
    the build of the iteration's order is only where every micro-batch is simulated, so
    pp 16 x 120,000 (~0.5 CPU s) is taken and refused only in full."""
    from trainsim.steady_state import simulated_tasks

    for m in (16_384, 120_000):
        cfg = _zb(16, m)
        check_simulation(cfg, simulated_tasks(cfg))  # as simulate checks it (the shortcut's runs)
    with pytest.raises(WorkLimitError, match=r"simulated tasks"):
        check_simulation(cfg)  # 3.8M tasks and a build of 120,000 micro-batches


def test_a_zb_2p_search_that_does_not_settle_is_counted_as_it_runs(monkeypatch):
    """Where no variant settles at its first probe the search runs longer probes and full
    builds the estimate did not count: refused at the limit while it runs."""
    from trainsim.workload import zb_search

    args = (4, 400, (3, 4, 2), 1, 8.0, Fraction(1, 2))
    zb_search.choose(*args)  # settles: under any limit that admitted the estimate
    # no state repeats (speed63: choose runs its probes as one search, zb_search._probed)
    monkeypatch.setattr(zb_search, "_repeat", lambda *a: None)
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", "2000")  # the estimate: ~600 tasks' worth
    with pytest.raises(WorkLimitError, match="not settled into a period"):
        zb_search.choose(*args)
    from trainsim.limits import zb_first_probe

    assert zb_first_probe(4) <= 400


def test_a_torus_bandwidth_key_in_gbps_reads_as_its_si_key():
    """robust50: ``dim_bw_GBps`` read as ``dim_bw_bw_Bps`` and was refused as unknown."""
    kw = {"builder": "torus", "dims": [2, 3], "kinds": ["ring", "ring"]}
    written = topology_from_dict({**kw, "dim_bw_GBps": [100, 50]})
    si = topology_from_dict({**kw, "dim_bw_Bps": [100e9, 50e9]})
    assert written.links == si.links
    assert topology_from_dict({**kw, "dim_GBps": [100, 50]}).links == si.links
    with pytest.raises(ConfigError, match=r"unknown keys \['dims_bw_GBps'\]"):
        topology_from_dict({**kw, "dims_bw_GBps": [100, 50]})


def test_validate_shows_a_refused_measurement_as_none(tmp_path):
    """robust50 lead 2: JSON said ``"measured": 0.0`` for -3, 0 and 1e400."""
    from click.testing import CliRunner

    from trainsim.cli import main

    with open(CHECK_FILE, newline="") as f:  # a file of the repo (no ../shared in CI)
        reader = csv.DictReader(f)
        row = next(reader)
        fields = reader.fieldnames
    path = tmp_path / "bad.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for i, value in enumerate(("-3", "0", "1e400")):
            w.writerow({**row, "id": f"bad{i}", "measured_iteration_s": value})
    out = CliRunner().invoke(main, ["validate", str(path), "--format", "json"]).output
    rows = json.loads(out[out.index("{"):])["rows"]
    assert [r["measured"] for r in rows] == [None] * 3 and all(r["error"] for r in rows)
    text = CliRunner().invoke(main, ["validate", str(path)]).output
    assert text.count("refused") == 3 and "0.0" not in text


def test_the_cluster_network_runs_the_topology_files_argument_check():
    """robust50 lead 5: ``from_cluster`` skipped the check; a zero link rate (a bandwidth
    efficiency of 0) fell back to the NVLink generation's default in silence."""
    cluster = run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 2, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "training": {"global_batch_size": 16, "seq_length": 256},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8,
                    "compute_db": None}}).cluster
    assert from_cluster(cluster).num_gpus == 16
    with pytest.raises(ConfigError, match=r"cluster nvlink bandwidth \(as nvlink_bw_Bps\)"):
        from_cluster(cluster, nvlink_efficiency=0.0)


def test_a_topology_quantity_written_twice_is_refused_and_an_override_replaces_it():
    """edge50 lead 2: ``nic_GBps`` and ``nic_bw_Bps`` in one file kept the later in silence;
    an override (``load_topology(..., nic_bw_Bps=...)``) still replaces the file's key."""
    from trainsim.network.topology import topology_from_dict

    for twice in ({"nic_GBps": 50, "nic_bw_Bps": 25e9}, {"nic_GBps": 50, "nic_Gbps": 400}):
        with pytest.raises(ConfigError, match="give the same quantity"):
            topology_from_dict({"builder": "rail_fat_tree", "nodes": 2, **twice})
    spec = {"builder": "rail_fat_tree", "nodes": 2, "nic_GBps": 50}
    rates = [{link.bw_Bps for link in topology_from_dict(spec, **over).links}
             for over in ({}, {"nic_bw_Bps": 25e9})]
    assert 50e9 in rates[0] and 25e9 not in rates[0]
    assert 25e9 in rates[1] and 50e9 not in rates[1]
