"""The output layer's deferred weight gradient (Megatron-core ``defer_embedding_wgrad_compute``,
``wgrad_deferral_limit``): the last stage's first micro-batches run their backward without the
output layer's wgrad GEMM and its sequence-parallel re-gather, a drain after the schedule runs
them (Megatron-LM 24.09-alpha.rc0 tensor_parallel/layers.py L426-428, core/utils.py L372-460),
and NeMo's MLPerf GPT-3 config turns it on by rule (v4.0 / v4.1 conf/custom.yaml L85)."""

from __future__ import annotations

import csv
import dataclasses

import pytest
from helpers_configs import assert_same_simulation

from trainsim import run_config_from_dict, simulate
from trainsim.bound import lower_bound_s
from trainsim.catalog.framework_rules import deferred_microbatches
from trainsim.errors import ConfigError
from trainsim.memory.estimate import estimate_stage_memory
from trainsim.pricing import Pricer
from trainsim.simulator import build_graph
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row
from trainsim.workload.head import deferred_wgrad_ops, head_backward, head_forward
from trainsim.workload.ops import Comm, Gemm
from trainsim.workload.shard import shard_of

MODEL = {"name": "tiny", "hidden_size": 2048, "num_layers": 8, "num_attention_heads": 16,
         "vocab_size": 50304, "activation": "gelu", "position_embedding": "learned",
         "normalization": "layernorm", "tied_embeddings": True}


def _cfg(defer=True, limit=0, micro=16, pp=4, vpp=None, framework=None, version=None, mbs=1):
    par = {"tp": 2, "pp": pp, "sequence_parallel": True, "distributed_optimizer": True,
           "overlap_grad_reduce": True, "defer_embedding_wgrad_compute": defer,
           "wgrad_deferral_limit": limit}
    if vpp:
        par["virtual_pipeline_model_parallel_size"] = vpp
    train = {"global_batch_size": micro * mbs * 2, "micro_batch_size": mbs, "seq_length": 2048,
             "dtype": "bf16"}
    if framework:
        train.update(framework=framework, framework_version=version)
    return run_config_from_dict({"model": MODEL, "parallel": par, "training": train,
                                 "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 2 * pp * 2,
                                             "gpus_per_node": 8}})


def test_the_first_limit_micro_batches_defer():
    assert deferred_microbatches(_cfg(limit=0), 16) == 16  # 0: every one
    assert deferred_microbatches(_cfg(limit=5), 16) == 5
    assert deferred_microbatches(_cfg(limit=65), 16) == 16
    assert deferred_microbatches(_cfg(defer=False), 16) == 0
    assert deferred_microbatches(_cfg(pp=1), 16) == 0  # NeMo skips it without a pipeline
    with pytest.raises(ConfigError, match="wgrad_deferral_limit"):
        _cfg(limit=-1)


def test_mlperf_nemo_rule_from_v4_0():
    # custom.yaml: on where PP > 1, MINIBS (global batch / DP) <= 256 and MBS == 1
    for version, mbs, expected in (("3.1", 1, 0), ("4.0", 1, 16), ("4.0", 2, 0),
                                   ("4.1", 1, 16), ("5.0", 1, 0)):
        cfg = _cfg(defer=None, framework="mlperf-nemo", version=version, mbs=mbs)
        assert deferred_microbatches(cfg, 16) == expected, version
    # a rank's share of the global batch above 256 sequences: off (4.1's B200 preview)
    big = _cfg(defer=None, micro=300, framework="mlperf-nemo", version="4.1")
    assert deferred_microbatches(big, big.num_microbatches) == 0


def test_deferred_head_backward_and_drain_ops():
    cfg = _cfg()
    sh = shard_of(cfg)
    fwd = head_forward(cfg, sh)
    full = [op.name for op in head_backward(cfg, sh, fwd)]
    kept = head_backward(cfg, sh, fwd, deferred=True)
    assert "logits.wgrad" in full and "head.all_gather.bwd_regather" in full
    assert [op.name for op in kept] == [n for n in full if n not in (
        "logits.wgrad", "head.all_gather.bwd_regather")]
    # nothing left to hide the input gradient's reduce-scatter behind
    rs = next(op for op in kept if op.name == "head.reduce_scatter.bwd")
    assert not rs.overlap_with_previous
    drain = deferred_wgrad_ops(cfg, sh, fwd, 3)
    assert [type(op) for op in drain] == [Comm, Gemm, Comm, Gemm, Comm, Gemm]
    assert [op.overlap_with_previous for op in drain if isinstance(op, Comm)] == \
        [False, True, True]  # the first gather waited for, each next beside a GEMM


@pytest.mark.parametrize("limit", [0, 5])
def test_graph_places_shorter_backwards_and_a_drain(limit):
    cfg = _cfg(limit=limit)
    graph = build_graph(cfg, Pricer(cfg))
    last = cfg.parallel.pp - 1
    tasks = graph.tasks
    b = [t for t in tasks if t.stream == (last, "compute") and t.label.startswith("B ")]
    n = limit or cfg.num_microbatches
    full = graph.chunks[len(graph.chunks) - 1].bwd.duration_s
    short = graph.deferral.chunk.bwd.duration_s
    assert short < full
    # as placed, with the blocking send folded in (the last micro-batch's, when it defers
    # too, split where its buckets become ready)
    placed = graph._pass_spec(last, graph.deferral.chunk.bwd, True)[1]
    assert sum(t.duration_s == placed for t in b) == n - (limit == 0)
    drain = next(i for i, t in enumerate(tasks) if t.label.startswith("deferred output-layer"))
    assert tasks[drain].stream == (last, "compute")
    assert tasks[drain].duration_s == pytest.approx(graph.deferral.drain.duration_s)
    # the stage's step and the tied embedding's all-reduce (finalize_model_grads) wait for the
    # drain; no bucket's reduction does: Megatron-core's hook (and the schedule's
    # grad_sync_func) issue them at the last backward, before the drain
    step = next(i for i, t in enumerate(tasks) if t.stream == (last, "compute")
                and t.label == "optimizer step")
    assert drain in tasks[step].deps
    dp = [t for t in tasks if t.stream == (last, "dp")]
    buckets = [t for t in dp if t.label.startswith("grad reduce")]
    assert buckets and all(i < drain for t in buckets for i in t.deps)
    assert any(drain in t.deps for t in dp if t.label == "tied embedding all-reduce")
    # no other stage changes
    plain = build_graph(_cfg(defer=False), Pricer(_cfg(defer=False)))
    for s in range(last):
        mine = [t.duration_s for t in tasks if t.stream == (s, "compute")]
        assert mine == [t.duration_s for t in plain.tasks if t.stream == (s, "compute")]


def test_deferral_shortens_a_pipeline_paced_by_its_last_stage():
    on, off = simulate(_cfg()), simulate(_cfg(defer=False))
    assert on.iteration_time_s < off.iteration_time_s


@pytest.mark.parametrize("vpp, micro", [(None, 300), (2, 160)])
def test_steady_state_shortcut_equals_full_simulation(vpp, micro):
    cfg = _cfg(micro=micro, vpp=vpp)  # every micro-batch defers: one kind of period
    fast, full = simulate(cfg), simulate(cfg, keep_timeline=True)
    assert fast.simulation["method"] == "steady-state"
    assert_same_simulation(fast, full)


def test_partial_deferral_takes_the_shortcut_past_the_limit():
    cfg = _cfg(micro=300, limit=40)  # periodic again after the 40th (test_steady_deferral)
    fast = simulate(cfg)
    assert fast.simulation["method"] == "steady-state"
    assert_same_simulation(fast, simulate(cfg, keep_timeline=True))


def test_lower_bound_holds():
    for cfg in (_cfg(), _cfg(limit=5), _cfg(vpp=2)):
        assert lower_bound_s(cfg) <= simulate(cfg).iteration_time_s


def test_last_stage_holds_each_deferred_input_and_gradient():
    on, off = _cfg(limit=5), _cfg(defer=False)
    last = on.parallel.pp - 1
    tokens, h, v = 2048, 2048, 50304 // 2  # the rank's vocabulary (50304 divides by 128 * 2)
    per = 2 * tokens * (h / 2 + v)  # 16-bit input shard (SP) and output gradient
    extra = estimate_stage_memory(on, last).total - estimate_stage_memory(off, last).total
    assert extra == pytest.approx(5 * per)
    assert estimate_stage_memory(on, 0).total == estimate_stage_memory(off, 0).total


def test_unmodelled_combinations_say_so():
    cfg = _cfg()
    zb = dataclasses.replace(cfg, parallel=dataclasses.replace(cfg.parallel,
                                                               pipeline_schedule="zb_h1"))
    with pytest.raises(ConfigError, match="defer_embedding_wgrad_compute"):
        simulate(zb)


def _public_row(row_id: str) -> dict[str, str]:
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == row_id)


def test_refused_without_gradient_accumulation_fusion():
    cfg = _cfg(framework="megatron-core", version="0.11")
    cfg = dataclasses.replace(cfg, training=dataclasses.replace(
        cfg.training, gradient_accumulation_fusion=False))
    with pytest.raises(ConfigError, match="gradient accumulation fusion"):
        simulate(cfg)


def test_mlperf41_rows_with_their_config_scripts_cells_come_closer():
    # mlcommons/training_results_v4.1@b87b9e39 NVIDIA eos_n32 / eos_n64 config scripts L39-40:
    # DEFER_EMBEDDING_WGRAD_COMPUTE=True, WGRAD_DEFERRAL_LIMIT=65; logged step times in the row
    for row_id in ("mlperf41-gpt3-175b-h100-256", "mlperf41-gpt3-175b-h100-512"):
        row = _public_row(row_id)
        before = predict_training_row(row)
        after = predict_training_row({**row, "defer_embedding_wgrad_compute": "1",
                                      "wgrad_deferral_limit": "65"})
        assert abs(after.predicted - after.measured) < abs(before.predicted - before.measured)
