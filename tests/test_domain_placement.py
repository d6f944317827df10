"""A job's GPUs over NVLink domains that it does not fill evenly (cluster.domain_gpus)."""

from __future__ import annotations

import csv
import dataclasses

import pytest

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog import run_config_from_dict
from trainsim.collectives import GroupSpan, group_span
from trainsim.collectives.placement import placed_span
from trainsim.config import ClusterConfig
from trainsim.config.cluster import segment_domains
from trainsim.errors import ConfigError
from trainsim.network import AnalyticalNetwork
from trainsim.simulator import simulate
from trainsim.validate import predict_training_row
from trainsim.validate.row_settings import counts_checked, training_base

PACKED_256 = (72, 72, 72, 40)  # 256 GPUs packed onto NVL72 racks, the last one partial


def test_slurm_segments_of_trays_give_each_rack_its_share():
    """Hand-computed: the segment is the largest divisor of the tray count up to 18 (NeMo's
    slurm_executor), as many whole segments to a rack as fit."""
    assert segment_domains(64, 4, 18) == (64,) * 4  # 256 GPUs: segments of 16 trays
    assert segment_domains(624, 4, 18) == (64,) * 39  # 2,496 GPUs
    assert segment_domains(36, 4, 18) == (72, 72)  # 144 GPUs: whole racks
    assert segment_domains(19, 4, 18) == (72, 4)  # a prime count: segments of 1 tray
    assert segment_domains(25, 4, 18) == (60, 40)  # segments of 5: three to a rack
    assert segment_domains(12, 4, 18) == (48,)  # one rack holds it


def test_packed_256_gpus_place_each_group_where_its_ranks_land():
    """Hand-computed on 72 + 72 + 72 + 40 GPUs: EP 64 groups are ranks 0-63 (one rack),
    64-127 (8 + 56), 128-191 (16 + 48), 192-255 (24 + 40): the worst shares 8 of its ranks with
    the first rack. TP 2 pairs never straddle (72 is even); the data-parallel groups of TP 2
    (stride 2, 32 ranks) put 4 of ranks 64-126 in the first rack; PP 4 at stride 64 puts every
    stage in its own rack except the first two (0 and 64 share rack 0: ranks 0-7)."""
    assert placed_span(64, 1, PACKED_256) == GroupSpan(64, 8, uneven_nodes=2)
    assert placed_span(64, 1, PACKED_256).nodes == 2
    assert placed_span(2, 1, PACKED_256) == GroupSpan(2, 2)
    assert placed_span(32, 2, PACKED_256) == GroupSpan(32, 4, uneven_nodes=2)
    assert placed_span(4, 64, PACKED_256) == GroupSpan(4, 1)
    assert placed_span(1, 1, PACKED_256) == GroupSpan(1, 1)


@pytest.mark.parametrize(("size", "stride"), [(2, 1), (8, 1), (64, 1), (32, 2), (16, 4),
                                              (4, 64), (8, 8), (2, 128)])
def test_equal_shares_price_as_whole_nodes_of_that_share(size, stride):
    """64 GPUs of each of four 72-GPU racks is the 64-GPU node trainsim priced before."""
    assert placed_span(size, stride, (64,) * 4) == group_span(size, stride, 64)


def test_a_partial_domains_few_ranks_pace_the_ring_and_the_all_to_all():
    """The 4 GPUs of a last partial rack carry a 76-rank ring's cross-rack traffic on 4 NICs
    and send 72/76 of an all-to-all over them: slower than two racks of 38 each."""
    gpu = catalog_gpu("gb200")
    packed = AnalyticalNetwork(ClusterConfig(gpu=gpu, num_gpus=76, gpus_per_node=72,
                                             nic_bw_Bps=50e9, domain_gpus=(72, 4)))
    even = AnalyticalNetwork(ClusterConfig(gpu=gpu, num_gpus=76, gpus_per_node=72,
                                           nic_bw_Bps=50e9, domain_gpus=(38, 38)))
    span_p, span_e = packed.span(76, 1), even.span(76, 1)
    assert span_p == GroupSpan(76, 4, uneven_nodes=2) and span_e == GroupSpan(76, 38)
    for kind in ("all_reduce", "all_to_all"):
        slow = packed.collective(kind, 1e9, span_p).time_s
        assert slow > 1.5 * even.collective(kind, 1e9, span_e).time_s
    # the all-to-all's network part is that of 4 ranks a node: (76 - 4) / 76 of each rank's
    # bytes off its rack, whatever the other rack holds
    assert packed.collective("all_to_all", 1e9, span_p).time_s == pytest.approx(
        packed.collective("all_to_all", 1e9, GroupSpan(76, 4, uneven_nodes=19)).time_s)


def _rows(path):
    with open(path, newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def test_a_gb200_row_refused_for_its_gpu_count_now_runs_on_its_segments():
    """Before: 2,496 GB200 GPUs with gpus_per_node empty were refused ('do not fill 35 racks
    evenly'); in segments of 16 trays they are 64 to a rack, the published row's own cell."""
    row = _rows("benchmarks/training_mlperf5.csv")["mlperf50-coreweave-llama3.1-405b-gb200-2496"]
    assert row["gpus_per_node"] == "64"
    blank = predict_training_row({**row, "gpus_per_node": ""})
    assert blank.error is None, blank.error
    assert blank.predicted == predict_training_row(row).predicted


def test_a_row_on_a_partial_rack_states_its_domains():
    """76 GB200 GPUs (19 trays) were refused; they run on 72 + 4, the config saying so."""
    row = _rows("benchmarks/training_mlperf5.csv")["mlperf51-nvidia-llama3.1-8b-gb200-72"]
    cells = {**row, "num_gpus": "76", "gpus_per_node": "", "global_batch_size": "76",
             "micro_batch_size": "1", "tp": "1", "pp": "1", "cp": "1"}
    raw, _ = training_base(counts_checked(cells))
    assert raw["cluster"]["gpus_per_node"] == 72 and raw["cluster"]["domain_gpus"] == [72, 4]
    res = predict_training_row(cells)
    assert res.error is None, res.error
    assert res.predicted > 0


def test_the_dgxc_deepseek_row_on_72_gpu_racks_holding_64_each_prices_as_stated():
    """dgxc v25.05's DeepSeek-V3 on 256 GB200: NeMo r2.3.0's slurm_executor asks Slurm for
    segments of 16 trays, 64 GPUs a rack, which the row states as gpus_per_node 64; the racks
    stated as 72-GPU domains holding 64 each price the same, to the bit."""
    from trainsim.validate.training import row_config
    row = _rows("benchmarks/training_dgxc2505.csv")["dgxc2505-deepseek-v3-bf16-gb200-256"]
    cfg = row_config(row, predict_training_row(row).chosen)
    racks = dataclasses.replace(cfg, cluster=dataclasses.replace(
        cfg.cluster, gpus_per_node=72, domain_gpus=(64,) * 4))
    assert simulate(racks).iteration_time_s == simulate(cfg).iteration_time_s
    packed = dataclasses.replace(racks, cluster=dataclasses.replace(racks.cluster,
                                                                    domain_gpus=PACKED_256))
    assert simulate(packed).iteration_time_s > 2 * simulate(cfg).iteration_time_s


BASE = {"model": "llama3-8b", "parallel": {"tp": 1}, "training": {"global_batch_size": 256},
        "cluster": {"gpu": "gb200", "num_gpus": 256, "gpus_per_node": 72}}


@pytest.mark.parametrize(("cluster", "words"), [
    ({}, "not a multiple of cluster.gpus_per_node=72; use whole nodes, or state"),
    ({"domain_gpus": [72, 72, 72, 41]}, "holds 257 GPUs; cluster.num_gpus is 256"),
    ({"domain_gpus": [80, 80, 80, 16]}, "must list 1 to cluster.gpus_per_node=72"),
    ({"domain_gpus": [72, 72, 72, 40, 0]}, "must list 1 to"),
    ({"domain_gpus": list(PACKED_256), "network_backend": "flow"}, "analytical network backend"),
])
def test_stated_domains_are_checked_in_one_line(cluster, words):
    raw = {**BASE, "cluster": {**BASE["cluster"], **cluster}}
    with pytest.raises(ConfigError) as err:
        run_config_from_dict(raw)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_stated_domains_run_and_follow_other_gpu_counts():
    cfg = run_config_from_dict({**BASE, "cluster": {**BASE["cluster"],
                                                    "domain_gpus": list(PACKED_256)}})
    assert cfg.cluster.domain_gpus == PACKED_256 and cfg.cluster.num_nodes == 4
    assert cfg.cluster.gpus_per_domain == 72
    assert simulate(cfg).iteration_time_s > 0
    assert cfg.cluster.with_gpus(216).domain_gpus is None  # three whole racks
    assert cfg.cluster.with_gpus(100).domain_gpus == (72, 28)
    assert cfg.cluster.with_gpus(1).domain_gpus == (1,)
