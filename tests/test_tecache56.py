"""Transformer Engine's once-a-step fp8 weight work, placed where each TE release runs it (56th
session, tecache56; ``workload.te_weight_cache``): fp8 parameters' transposes in each chunk's
first backward before TE 1.8 (TE@9e4091e7 linear.py L362-365), in its first forward from 1.8
(b1a0e0a7); 16-bit weights cast with their transposes in the first forward in every release."""

from __future__ import annotations

import csv

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import framework_supports
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph, simulate
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload import te_weight_cache
from trainsim.workload.fp8_gather import fp8_weight_shapes
from trainsim.workload.shard import FP8_TRANSPOSE_BYTES
from trainsim.workload.te_weight_cache import (
    TE_FORWARD_TRANSPOSE,
    WEIGHT_QUANTIZE,
    WEIGHT_TRANSPOSE,
    transposes_in_backward,
    weight_quantization,
)

PUBLIC = BUNDLED_DIR / "training_public.csv"


def _row_cfg(row_id: str):
    with open(PUBLIC, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return row, row_config(row, predict_training_row(row).chosen)


def _cfg(version: str, framework: str = "megatron-core", params: bool = True, gpu: str = "h100"):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b", "num_layers": 4},
        "parallel": {"tp": 2, "pp": 2, "vpp": 2, "distributed_optimizer": True,
                     "sequence_parallel": True},
        "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "fp8", "fp8_recipe": "delayed", "fp8_param_gather": params,
                     "framework": framework, "framework_version": version},
        "cluster": {"gpu": gpu, "num_gpus": 8, "gpus_per_node": 8},
    })


def test_placement_follows_the_te_release():
    assert TE_FORWARD_TRANSPOSE == "1.8"
    # mlperf-nemo: 4.0 pins TE v1.6rc1, 4.1 / 5.0 record none (containers after 1.8 by date),
    # 5.1 release_v2.8; megatron-core 0.7 TE 1.6, 0.8 TE 1.8
    for framework, version, late in (("mlperf-nemo", "4.0", True), ("mlperf-nemo", "4.1", False),
                                     ("mlperf-nemo", "5.1", False),
                                     ("megatron-core", "0.7", True),
                                     ("megatron-core", "0.8", False)):
        assert transposes_in_backward(_cfg(version, framework)) is late, (framework, version)
    # 16-bit weights: the cast (with its transpose) stays in the first forward at TE 1.6
    cfg = _cfg("0.7", params=False)
    assert not transposes_in_backward(cfg)
    (op,) = weight_quantization(cfg, range(2))
    assert op.name == WEIGHT_QUANTIZE
    assert weight_quantization(cfg, range(2), backward=True) == []


def test_mlperf_nemo_caches_weights_from_3_1_on():
    # 3.1 NeMo@bd0b818 passes is_first_microbatch; 4.0+ Megatron-core's schedules do
    for version in ("3.1", "4.0", "4.1", "5.0", "5.1"):
        assert framework_supports("mlperf-nemo", version, "te_weight_cache"), version


def test_v4_0_transposes_a_chunk_in_its_first_backward():
    _, cfg = _row_cfg("mlperf40-gpt3-175b-512")
    layers = cfg.virtual_ranges[0]
    assert weight_quantization(cfg, layers) == []  # nothing in the first forward
    (op,) = weight_quantization(cfg, layers, backward=True)
    elements = sum(r * c * n for i in layers for r, c, n, _ in fp8_weight_shapes(cfg, i))
    h, tp = 12288, cfg.parallel.tp
    assert elements == pytest.approx(len(layers) * 12 * h * h / tp)  # qkv, proj, fc1, fc2
    assert op.name == WEIGHT_TRANSPOSE
    assert op.bytes == pytest.approx(elements * FP8_TRANSPOSE_BYTES)  # read and write 1 byte


def test_v4_1_transposes_in_the_first_forward():
    _, cfg = _row_cfg("mlperf41-gpt3-175b-h100-512")
    (op,) = weight_quantization(cfg, cfg.virtual_ranges[0])
    assert op.name == WEIGHT_TRANSPOSE
    assert weight_quantization(cfg, cfg.virtual_ranges[0], backward=True) == []


def test_the_graph_leads_each_first_backward_with_its_transposes():
    cfg = _cfg("0.7")
    graph = build_graph(cfg, Pricer(cfg))
    tasks = graph.tasks
    leads = [i for i, t in enumerate(tasks) if t.label.startswith("te weight transpose")]
    pp, vpp = cfg.parallel.pp, cfg.parallel.vpp
    assert len(leads) == pp * vpp  # one per chunk a step
    for i in leads:
        lead = tasks[i]
        # the next task on its stream is a backward that waits for it: the chunk's first
        after = next(j for j in range(i + 1, len(tasks)) if tasks[j].stream == lead.stream)
        assert i in tasks[after].deps
        assert tasks[after].label == "B mb0 c" + lead.label.rsplit(" ", 1)[1]
        assert set(lead.deps) <= set(tasks[after].deps)
    # at TE 1.8 the same work leads the first forwards instead: no such task
    late = _cfg("0.8")
    assert not any(t.label.startswith("te weight transpose")
                   for t in build_graph(late, Pricer(late)).tasks)


def test_the_step_grows_by_at_most_the_chain(monkeypatch: pytest.MonkeyPatch):
    # v4.0 at 512 GPUs: each rank transposes 8 chunks' weights (pp 8 x vpp 4 on the chain)
    _, cfg = _row_cfg("mlperf40-gpt3-175b-512")
    cost = Pricer(cfg).price(weight_quantization(cfg, cfg.virtual_ranges[0], backward=True))
    on = simulate(cfg).iteration_time_s
    monkeypatch.setattr(te_weight_cache, "transposes", lambda c: False)
    off = simulate(cfg).iteration_time_s
    grown = on - off
    assert cfg.parallel.vpp * cost.duration_s * 0.99 <= grown
    assert grown <= cfg.parallel.pp * cfg.parallel.vpp * cost.duration_s * 1.01


def test_v4_0_large_scale_rows_move_toward_the_measurement(monkeypatch: pytest.MonkeyPatch):
    # the 10,752 and 11,616-GPU v4.0 rows (NVIDIA's submission, training_public.csv) were
    # priced fast; the per-step transposes take them closer
    for row_id in ("mlperf40-gpt3-175b-10752", "mlperf40-gpt3-175b-11616"):
        row, cfg = _row_cfg(row_id)
        measured = float(row["measured_iteration_s"])
        on = simulate(cfg).iteration_time_s
        with monkeypatch.context() as m:
            m.setattr(te_weight_cache, "transposes", lambda c: False)
            off = simulate(cfg).iteration_time_s
        assert off < on < measured
