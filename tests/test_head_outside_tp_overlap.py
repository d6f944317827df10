"""The model's ends stay outside the TP communication overlap (``Comm.in_tp_overlap``):
Megatron-core's output layer is its own ``tensor_parallel.ColumnParallelLinear`` (core_v0.14.0
models/gpt/gpt_model.py L213), whose forward all-gathers the SP input with a blocking
``dist_all_gather_func`` before the logits matmul and whose backward runs the re-gather and
the input-gradient reduce-scatter as async NCCL collectives beside the dgrad and wgrad GEMMs
(tensor_parallel/layers.py ``LinearWithGradAccumulationAndAsyncCommunication``, L440-620);
Transformer Engine's userbuffers never see it."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.pricing import TP, Pricer
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.shard import shard_of


def _cfg(overlap: bool):
    return run_config_from_dict({
        "model": {"preset": "llama3-70b"},
        "parallel": {"tp": 4, "sequence_parallel": True, "tp_comm_overlap": overlap,
                     "tp_comm_overlap_method": "userbuffers"},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 8192,
                     "framework": "megatron-core", "framework_version": "0.14"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64, "compute_db": None}})


def _head(overlap: bool):
    cfg = _cfg(overlap)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = head_forward(cfg, sh)
    return pricer.price(fwd), pricer.price(head_backward(cfg, sh, fwd)), pricer, fwd


def test_head_forward_gather_is_exposed_under_tp_overlap():
    fwd, _, pricer, ops = _head(True)
    gather = next(op for op in ops if op.name == "head.all_gather")
    assert gather.bytes == 8192 * 8192 * 2  # seq x mbs x hidden, 16-bit, gathered over TP 4
    charged = sum(t for cat, t, name in fwd.segments if name == "head.all_gather")
    assert charged == pytest.approx(pricer.comm_time(gather))
    assert sum(t for cat, t, _ in fwd.segments if cat == TP) > 0


def test_head_priced_as_without_the_overlap():
    on_f, on_b, *_ = _head(True)
    off_f, off_b, *_ = _head(False)
    # no logits GEMM in userbuffer chunks, no dgrad / wgrad slowed by the userbuffers' SMs
    assert [s[0] for s in on_f.segments] == [s[0] for s in off_f.segments]
    assert [s[1] for s in on_f.segments] == pytest.approx([s[1] for s in off_f.segments])
    assert [s[1] for s in on_b.segments] == pytest.approx([s[1] for s in off_b.segments])
