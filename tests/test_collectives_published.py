"""The NCCL cost model against published nccl-tests measurements
(benchmarks/collectives_published.csv).

Latency rows there are published times converted to bus bandwidth (busbw = factor * size / t),
so one file checks both regimes; the tests below also check the small-message times directly.
"""

from __future__ import annotations

import csv

import pytest
from helpers import COLLECTIVES_PUBLISHED, collectives_published_validated

from trainsim.catalog import gpu as catalog_gpu
from trainsim.config import ClusterConfig
from trainsim.network.analytical import AnalyticalNetwork
from trainsim.validate import summarize

PUBLISHED = COLLECTIVES_PUBLISHED
SMALL = (8, 1024, 65536)


def all_reduce_us(gpu: str, num_gpus: int, per_node: int, nic_gbps: float, size: float) -> float:
    cluster = ClusterConfig(gpu=catalog_gpu(gpu), num_gpus=num_gpus, gpus_per_node=per_node,
                            nic_bw_Bps=nic_gbps * 1e9 / 8)
    net = AnalyticalNetwork(cluster)
    return net.collective("all_reduce", size, net.span(num_gpus, 1)).time_s * 1e6


@pytest.mark.parametrize("size", SMALL)
def test_small_all_reduce_on_one_h100_node_is_in_published_range(size):
    """8 B - 64 KiB all_reduce on one 8 x H100 node takes 13.67-19.54 us: NVIDIA's DGX H100
    sample output (NVIDIA/dgxc-benchmarking nccl/README.md, out-of-place: 8 B 13.67 us, 1 KiB
    16.94 us, 64 KiB 19.54 us); Azure NDm A100 v4 measures 16.96 us at 1 KiB
    (microsoft/mscclpp docs/performance-ndmv4.md)."""
    assert 13.67 <= all_reduce_us("h100-sxm-80gb", 8, 8, 400, size) <= 19.54


@pytest.mark.parametrize("size", SMALL)
def test_small_all_reduce_on_two_h100_nodes_is_in_published_range(size):
    """8 B - 64 KiB all_reduce on 2 nodes x 8 H100 (8 x 400G NICs each) takes 35.85-61.58 us,
    the span of published 2 x 8 nccl-tests reports: 35.85 us at 1 KiB on 2 x NDm A100 v4 with
    HDR (mscclpp docs/performance-ndmv4.md, NCCL 2.17.1, default algorithm), 47.60 us at 8 B on
    2 x 8 H20 with CX7 NDR (NVIDIA/nccl issue #1244, NCCL 2.21.5, NVLSTree), 61.58 us at 128 B
    on 2 x 8 H100 (NVIDIA/nccl issue #1453, where NCCL's own tuner predicted 25.2 us - the
    value the unmodified NCCL table gives). Across nodes is slower than inside one."""
    two = all_reduce_us("h100-sxm-80gb", 16, 8, 400, size)
    assert 35.85 <= two <= 61.58
    assert two > all_reduce_us("h100-sxm-80gb", 8, 8, 400, size) + 15


def test_network_hop_and_multinode_nvlink_hop_reproduce_their_measurements():
    """The measured LL network hop (7.3 us) and NCCL's multi-node 1.8x NVLink LL hop give the
    NDm A100 v4 1 KiB all_reduce times they were derived from / checked against: 21.27 us on
    2 nodes x 1 GPU, 35.85 us on 2 x 8 (mscclpp docs/performance-ndmv4.md)."""
    assert all_reduce_us("a100-sxm-80gb", 2, 1, 200, 1024) == pytest.approx(21.27, rel=0.03)
    assert all_reduce_us("a100-sxm-80gb", 16, 8, 200, 1024) == pytest.approx(35.85, rel=0.05)


def test_two_node_ring_crosses_both_network_edges():
    """A ring over 2 nodes x 8 ranks has two network edges and the slowest chunk of an all_gather
    (15 consecutive edges) crosses both; with one rank per node it crosses only one."""
    from trainsim.collectives.nccl import NET_HOP_LL_US

    def ll_us(n, per_node):
        cluster = ClusterConfig(gpu=catalog_gpu("h100-sxm-80gb"), num_gpus=n,
                                gpus_per_node=per_node)
        net = AnalyticalNetwork(cluster)
        return net.collective("all_gather", 8, net.span(n, 1), "ring", "LL").time_s * 1e6

    assert ll_us(2, 1) == pytest.approx(6.6 + NET_HOP_LL_US, abs=0.01)
    assert ll_us(16, 8) == pytest.approx(6.6 + 13 * 0.6 * 1.8 + 2 * NET_HOP_LL_US, abs=0.01)


def _results(added: str | None = None):
    """(rows by id, results) of the published file; ``added`` keeps the rows of that ``added``
    cell only (the rows of 2026-11-25 or those from before); the file validated once per
    process (``helpers.collectives_published_validated``)."""
    rows = {r["id"]: r for r in csv.DictReader(PUBLISHED.open())}
    res = collectives_published_validated()
    return rows, [r for r in res if added is None or rows[r.id]["added"] == added]


def test_published_collectives_validate_within_bar():
    """The rows from before 2026-11-25 (one process per GPU, sources whose setup is stated):
    all predict, MAPE <= 8 % and every row within 30 %. The 30 % leaves room for the latency
    rows, where one node's small messages differ by 2-7 us between sizes the model treats alike
    (NCCL uses fewer channels and threads for them) and run-to-run spread is of that order (DGX
    H100 sample: 32 B at 68.14 us between 13-15 us neighbours)."""
    _, res = _results("before 2026-11-25")
    s = summarize(res)
    assert s["failed"] == 0 and s["n"] >= 25
    assert s["mape"] <= 0.08
    assert s["max_ape"] <= 0.30


def test_rows_of_2026_11_25_predict_and_do_not_regress():
    """The 63 rows added 2026-11-25 (single-process sweeps, 4-248 node runs, EFA): all predict;
    their MAPE was 41.8 % before the NVLS+tree fix, 39.2 % after, 34.1 % with the NVLS pipeline
    fill and the fabric scale cost (25th session). The 42 of them not marked ``comparable = no``
    (launch-bound ``-g N`` sizes, faulty setups: each note says why) are at 15.0 %, the misses
    diagnosed in benchmarks/collectives_published.md. A guard against regression."""
    _, res = _results("2026-11-25")
    assert len(res) >= 63 and all(r.predicted is not None for r in res)
    assert sum(r.ape for r in res) / len(res) <= 0.36
    comparable = summarize(res)  # the rows marked not comparable counted apart
    assert comparable["n"] >= 42 and comparable["mape"] <= 0.16


def test_nvls_tree_beyond_two_nodes_halves_the_network_rate():
    """NVLS+tree all_reduce beyond two nodes is bound by 2S per direction over a node's NICs
    (NCCL's tuner: bwInter/2 when nNodes > 2): 4 x 8 H100 on 8x 400G RoCE reach 320 GB/s
    (NVIDIA/nccl #1221, 430 on 2 nodes), 248 x 8 H200 about 350 (nccl-tests #283). With S per
    direction the model put them at 526 and 482; now within 20 %, and 2 nodes stay above."""
    _, res = _results()
    by_id = {r.id: r for r in res}
    for rid in ("nccl1221-h100x32-allreduce", "nccltests283-h200x1984-allreduce"):
        assert by_id[rid].ape <= 0.20, (rid, by_id[rid].predicted)
    assert by_id["nccl1221-h100x16-allreduce"].predicted > \
        by_id["nccl1221-h100x32-allreduce"].predicted * 1.2


def test_published_large_message_rows_within_ten_percent():
    """Bandwidth rows (>= 1 GiB) from before 2026-11-25 of all_reduce / all_gather /
    reduce_scatter each within 10 %, the bar of the public collectives file (all_to_all is
    checked by the file-wide bar only: NCCL's maintainers say alltoall cannot aggregate NICs
    well, nccl-tests #267)."""
    rows, res = _results("before 2026-11-25")
    big = [r for r in res if float(rows[r.id]["message_bytes"]) >= 2**30
           and rows[r.id]["collective"] != "all_to_all"]
    assert len(big) >= 12
    worst = max(big, key=lambda r: r.ape)
    assert worst.ape <= 0.10, (worst.id, worst.ape)


def test_published_rows_cite_their_source_and_in_place_or_out_of_place():
    """Every row names its source and says whether the figure is in-place or out-of-place (or that
    the source does not say), as benchmarks/collectives_published.csv promises."""
    for r in csv.DictReader(PUBLISHED.open()):
        assert r["source"].strip(), r["id"]
        note = r["note"].lower()
        assert "place" in note or "not a run" in note, r["id"]


def test_validate_counts_the_rows_marked_not_comparable_apart():
    """A row whose ``comparable`` cell is ``no`` is priced but kept out of ``trainsim
    validate``'s summary (``excluded``), as collectives_report.py and fit_collectives.py keep it
    out of theirs: the summary's MAPE is the comparable rows'."""
    rows, res = _results()
    marked = {i for i, r in rows.items() if r["comparable"] == "no"}
    assert marked and all(r.predicted is not None for r in res)
    assert {r.id for r in res if r.extra.get("excluded")} == marked
    s = summarize(res)
    assert (s["n"], s["excluded"]) == (len(rows) - len(marked), len(marked))
