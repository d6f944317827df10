"""GPUDirect-TCPX / TCPXO between Google Cloud A3 VMs (``cluster.fabric: tcpx`` / ``tcpxo``): the
published nccl-tests rows of benchmarks/collectives_gcp_a3.csv, the node presets and the MaxText
A3 rows that run over TCPX (tcpx60)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script, validated

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog import node, run_config_from_dict
from trainsim.collectives import scale_terms
from trainsim.config import ClusterConfig
from trainsim.errors import ConfigError
from trainsim.network import AnalyticalNetwork
from trainsim.validate import summarize, validate_file

ROOT = Path(__file__).resolve().parents[1]
GCP_A3 = ROOT / "benchmarks" / "collectives_gcp_a3.csv"
MAXTEXT_A3 = ROOT / "benchmarks" / "training_maxtext_a3.csv"


def _rows(tmp_path: Path, fabric: str) -> Path:
    with GCP_A3.open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["fabric"] == fabric]
    out = tmp_path / f"{fabric}.csv"
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return out


def _cluster(fabric: str, **kw) -> ClusterConfig:
    return ClusterConfig(gpu=catalog_gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8,
                         nic_bw_Bps=100e9 / 8, fabric=fabric, **kw)


def test_a3_high_tcpx_all_reduce_rows_within_10_percent(tmp_path):
    """SkyPilot's 2 x a3-highgpu-8g all_reduce (15 sizes, 128 KiB-2 GiB) at the fitted
    constants: 6.6 %; no row beyond 16 %."""
    res = validate_file(_rows(tmp_path, "tcpx"))[1]
    s = summarize(res)
    assert s["n"] == 15 and s["mape"] < 0.10, s
    assert max(abs(r.predicted / r.measured - 1) for r in res) < 0.16
    assert {r.chosen["algorithm"] for r in res} == {"ring/Simple"}


def test_a3_high_rows_priced_as_infiniband_miss_several_fold(tmp_path, monkeypatch):
    """The gap the two constants close: InfiniBand's hop and rate put every row fast, the
    1-8 MiB ones 4-6x (MAPE 277 %)."""
    monkeypatch.setattr(scale_terms, "TCPX_HOP_US", 0.0)
    monkeypatch.setattr(scale_terms, "TCPX_BW_SHARE", 1.0)
    res = validate_file(_rows(tmp_path, "tcpx"))[1]
    assert all(r.predicted > 1.3 * r.measured for r in res)
    assert summarize(res)["mape"] > 2.0


def test_fit_tcpx_finds_the_module_constants():
    """benchmarks/fit_tcpx.py's golden-section fit lands on the module's values."""
    fit = load_script(ROOT / "benchmarks" / "fit_tcpx.py")
    ids = set(fit._rows(GCP_A3))
    module = scale_terms.TCPX_HOP_US, scale_terms.TCPX_BW_SHARE
    try:
        hop, share = fit.fit(GCP_A3, ids)
    finally:
        scale_terms.TCPX_HOP_US, scale_terms.TCPX_BW_SHARE = module
    assert abs(hop - module[0]) < 3.0 and abs(share - module[1]) < 0.005


def test_a3_mega_tcpxo_rows_at_large_messages_are_infiniband(tmp_path):
    """The held-out A3 Mega all_gather (8 x 200 Gb/s, TCPXO), priced as InfiniBand: within 9 %
    from 128 MiB up (188.8 GB/s at 8 GiB against 191.6), 2-3x fast below 16 MiB (a lead)."""
    res = {r.id: r.predicted / r.measured for r in validate_file(_rows(tmp_path, "tcpxo"))[1]}
    big = [v for k, v in res.items() if k.endswith(("128m", "256m", "512m", "1g", "2g", "4g", "8g"))]
    assert len(big) == 7 and all(1.0 < v < 1.09 for v in big)
    assert res["a3mega-tcpxo-h100x16-allgather-1m"] > 2


def test_tcpx_runs_ring_simple_and_refuses_another():
    net = AnalyticalNetwork(_cluster("tcpx"))
    span = net.span(16, 1)
    assert net.collective("all_reduce", 2**20, span).protocol == "Simple"
    assert net.collective("all_reduce", 2**20, span).algorithm == "ring"
    one_vm = net.span(8, 1)  # NCCL_ALGO=Ring is the job's: no NVLS inside the VM either
    assert net.collective("all_reduce", 2**30, one_vm).algorithm == "ring"
    assert net.collective("all_to_all", 2**20, span).algorithm == "direct"
    # robust61: a forced protocol or algorithm TCPX does not run is refused, not priced
    # (config.fabric_rules: 'TCPX only supports Simple protocol')
    with pytest.raises(ConfigError, match="nccl_proto=LL128 but cluster.fabric=tcpx"):
        _cluster("tcpx", nccl_proto="LL128")
    assert AnalyticalNetwork(_cluster("tcpx", nccl_proto="simple", nccl_algo="Ring")).collective(
        "all_reduce", 2**20, span).time_s == net.collective("all_reduce", 2**20, span).time_s
    ib = AnalyticalNetwork(_cluster("infiniband"))
    assert ib.collective("all_reduce", 2**30, one_vm).algorithm == "nvls"
    t_ib = ib.collective("all_reduce", 2**26, span).time_s
    assert net.collective("all_reduce", 2**26, span).time_s > 1.5 * t_ib


def test_fabric_names_and_their_refusals():
    assert _cluster("TCPX").fabric == "tcpx"
    assert _cluster("tcpxo").fabric == "infiniband"
    with pytest.raises(ConfigError, match="fabric=tcpx is priced by the analytical"):
        _cluster("tcpx", network_backend="flow")
    with pytest.raises(ConfigError, match="unknown.*known: infiniband, roce, efa, tcpx, tcpxo"):
        _cluster("tcp")


@pytest.mark.parametrize("name, nic, per_nic, fabric", [("a3-highgpu-8g", 100, 2, "tcpx"),
                                                         ("a3-megagpu-8g", 200, 1, "infiniband")])
def test_a3_node_presets(name, nic, per_nic, fabric):
    """A3 High: four 200 Gb/s GPU NICs for 8 H100 (two GPUs a NIC); A3 Mega: eight, one a GPU
    (Google Cloud GKE docs); the transport comes with the node, a config's own wins."""
    assert node(name)["gpu"] == "h100-sxm-80gb"
    c = run_config_from_dict({"model": "llama3-8b", "training": {"global_batch_size": 32},
                              "cluster": {"node": name, "num_gpus": 16}}).cluster
    assert (c.nic_bw_Bps * 8 / 1e9, c.gpus_per_nic, c.fabric) == (nic, per_nic, fabric)
    own = run_config_from_dict({"model": "llama3-8b", "training": {"global_batch_size": 32},
                                "cluster": {"node": name, "num_gpus": 16,
                                            "fabric": "infiniband"}}).cluster
    assert own.fabric == "infiniband"


def test_maxtext_a3_rows_run_over_tcpx_and_it_costs_them_time(monkeypatch):
    """Every MaxText A3 row states fabric tcpx and two GPUs a NIC; over TCPX each multi-VM
    row's step is longer than over InfiniBand at the same line rate, the one-VM row's not
    (no cross-VM traffic)."""
    rows = list(csv.DictReader(MAXTEXT_A3.open(newline="", encoding="utf-8")))
    assert {(r["fabric"], r["gpus_per_nic"]) for r in rows} == {("tcpx", "2")}
    tcpx = {r.id: r.predicted for r in validated(MAXTEXT_A3)[1]}
    monkeypatch.setattr(scale_terms, "TCPX_HOP_US", 0.0)
    monkeypatch.setattr(scale_terms, "TCPX_BW_SHARE", 1.0)
    monkeypatch.setattr(scale_terms, "TCPX_ALGO", "auto")
    monkeypatch.setattr(scale_terms, "TCPX_PROTO", "auto")
    ib = {r.id: r.predicted for r in validate_file(MAXTEXT_A3)[1]}
    for k, t in tcpx.items():
        if k.endswith("-h100-8"):
            assert t == pytest.approx(ib[k], rel=1e-3)
        else:
            assert t > ib[k] * 1.005
