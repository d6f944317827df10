"""XLA's all-reduce combiner over an unscanned layer stack's HSDP replica all-reduces
(``training.unscanned_layers``, ``parallel.all_reduce_combine_bytes``; ``workload.xla_combine``):
MaxText ``scan_layers=false`` on Google's A3 VMs, whose scripts combine the data-axis gradient
all-reduces up to 64 MiB .. 1 GiB. XLA's AllReduceCombiner groups in post order (openxla/xla
xla/service/collective_combiner_utils.h ``CombineInstructionsByKey``), which for a MaxText step is
the sorted-key order of the parameters (``benchmarks/jax62_hlo.py``); a group starts when its last
member is ready.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
from pathlib import Path

import pytest

import trainsim
from trainsim.errors import ConfigError
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload import xla_combine

ROOT = Path(__file__).resolve().parents[1]
A3 = ROOT / "benchmarks" / "training_maxtext_a3.csv"


def _rows() -> dict[int, dict[str, str]]:
    with A3.open(newline="") as fh:
        return {int(r["num_gpus"]) // 8: r for r in csv.DictReader(fh)}


def _cfg(vms: int, plain: bool = False):
    row = _rows()[vms]
    cfg = row_config(row, predict_training_row(row).chosen)
    if plain:
        cfg = dataclasses.replace(
            cfg, training=dataclasses.replace(cfg.training, unscanned_layers=False),
            parallel=dataclasses.replace(cfg.parallel, all_reduce_combine_bytes=None))
    return cfg


def test_rows_state_the_scripts_thresholds_and_unscanned_layers():
    for vms, bytes_ in {1: 2**27, 2: 2**26, 4: 2**29, 8: 2**30, 16: 2**30}.items():
        cfg = _cfg(vms)
        assert cfg.training.unscanned_layers
        assert cfg.parallel.all_reduce_combine_bytes == bytes_


def test_groups_follow_sorted_names_and_wait_for_their_last_layer():
    """At 1 GiB the 32 layers' 1.68 GB of bf16 shards make two groups; the sorted order puts
    layers_0 (the backward's last) in the first and layers_3..9 in the second, so both are
    ready only in the backward's last parts (part k runs layer 31 - k)."""
    cfg = _cfg(16)
    layers = list(range(31, -1, -1))
    ready = xla_combine.combined_replica_reduces(cfg, layers, True, True, 2)
    groups = [(k, b) for k, sizes in enumerate(ready) for b in sizes]
    assert len(groups) == 2 and all(k >= 28 for k, _ in groups)
    assert all(b <= 2**30 for _, b in groups)
    shard = sum(b for _, b in groups)
    per_layer = (4 * 4096 * 4096 + 3 * 4096 * 11008) * 2 / 8
    assert 32 * per_layer < shard < 32 * per_layer * 1.2  # plus the root's tables


def test_small_threshold_keeps_groups_near_their_layers():
    """64 MiB (the 2-VM script) holds about 1.3 layers: 27 groups, most ready long before the
    end; a threshold under one tensor combines nothing."""
    cfg = _cfg(2)
    ready = xla_combine.combined_replica_reduces(cfg, list(range(31, -1, -1)), True, True, 2)
    assert sum(len(s) for s in ready) == 27
    assert sum(len(s) for s in ready[:16]) >= 9
    tiny = dataclasses.replace(cfg, parallel=dataclasses.replace(
        cfg.parallel, all_reduce_combine_bytes=1))
    assert sum(len(s) for s in xla_combine.combined_replica_reduces(
        tiny, list(range(31, -1, -1)), True, True, 2)) == 32 * 7 + 1


def test_combined_reduction_ends_after_the_backward_and_slows_the_step():
    combined, plain = trainsim.simulate(_cfg(16)), trainsim.simulate(_cfg(16, plain=True))
    assert combined.breakdown["exposed_comm_s"] > plain.breakdown["exposed_comm_s"] + 0.3
    assert combined.iteration_time_s > plain.iteration_time_s + 0.3
    one = trainsim.simulate(_cfg(1)).iteration_time_s  # no replicas: unchanged
    assert one == trainsim.simulate(_cfg(1, plain=True)).iteration_time_s


def test_a3_rows_within_ten_percent_from_four_vms():
    for vms in (4, 8, 16):
        row = _rows()[vms]
        res = predict_training_row(row)
        assert abs(res.predicted / float(row["measured_iteration_s"]) - 1) < 0.10


def _raw(framework="maxtext", unscanned=True, combine=2**30):
    training = {"global_batch_size": 64, "seq_length": 4096, "micro_batch_size": 4,
                "dtype": "bf16", "unscanned_layers": unscanned}
    if framework:
        training["framework"] = framework
    parallel = {"zero_stage": 3, "dp_replicate": 2}
    if combine is not None:
        parallel["all_reduce_combine_bytes"] = combine
    return {"model": {"preset": "llama2-7b"}, "parallel": parallel, "training": training,
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}}


def test_refusals():
    trainsim.run_config_from_dict(_raw())
    with pytest.raises(ConfigError, match="unscanned_layers"):
        trainsim.run_config_from_dict(_raw(framework="megatron-core"))
    with pytest.raises(ConfigError, match="unscanned_layers"):
        trainsim.run_config_from_dict(_raw(framework=None))
    with pytest.raises(ConfigError, match="all_reduce_combine_bytes"):
        trainsim.run_config_from_dict(_raw(unscanned=False))
    with pytest.raises(ConfigError, match="all_reduce_combine_bytes"):
        trainsim.run_config_from_dict(_raw(combine=0))


def _hlo_script():
    spec = importlib.util.spec_from_file_location("jax62_hlo", ROOT / "benchmarks" / "jax62_hlo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hlo_reader_walks_post_order_and_finds_data_axis_all_reduces():
    text = """HloModule m
ENTRY %main (p0: bf16[4], p1: bf16[4]) -> (bf16[4], bf16[4]) {
  %p0 = bf16[4]{0} parameter(0)
  %p1 = bf16[4]{0} parameter(1)
  %ar.b = bf16[4]{0} all-reduce(%p1), replica_groups={{0,8},{1,9}}, metadata={op_name="layers_10/dot"}
  %ar.a = bf16[4]{0} all-reduce(%p0), replica_groups={{0,8},{1,9}}, metadata={op_name="layers_2/dot"}
  %ar.c = bf16[4]{0} all-reduce(%p0), replica_groups={{0,1,2,3,4,5,6,7}}, metadata={op_name="layers_3/dot"}
  %add = bf16[4]{0} add(%ar.b, %ar.c)
  ROOT %t = (bf16[4]{0}, bf16[4]{0}) tuple(%add, %ar.a)
}
"""
    mod = _hlo_script()
    rows = mod.data_axis_all_reduces(text, 8)
    assert [(k, layer) for k, layer, _ in rows] == [("bf16[4]", "layers_10"),
                                                   ("bf16[4]", "layers_2")]


def test_a3_mega_row_states_its_charts_threshold():
    """gpu-recipes' A3 Mega MaxText Llama2-7B (scan_layers false, data 32 x fsdp 8): its chart's
    512 MiB threshold; combined, the replica all-reduces end later than each layer's alone."""
    path = ROOT / "benchmarks" / "training_gpurecipes.csv"
    with path.open(newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"].startswith("gpurecipes-a3mega-maxtext"))
    assert "unscanned_layers" in row["options"].split(";")
    assert row["all_reduce_combine_bytes"] == str(2**29)
    cfg = row_config(row, predict_training_row(row).chosen)
    plain = dataclasses.replace(
        cfg, training=dataclasses.replace(cfg.training, unscanned_layers=False),
        parallel=dataclasses.replace(cfg.parallel, all_reduce_combine_bytes=None))
    assert trainsim.simulate(cfg).iteration_time_s > trainsim.simulate(plain).iteration_time_s
