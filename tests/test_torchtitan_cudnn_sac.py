"""torchtitan's per-op checkpointing and a cuDNN attention: its ``_save_list`` names only the
flash and memory-efficient SDPA ops until b39377f9f (2025-12-01, #2095), so where SDPA runs
cuDNN (torchtitan puts CUDNN_ATTENTION first on sm100 from 3b85aa31f, 2025-05-14, #1196) the
attention's forward runs again before its backward and its output and log-sum-exp are not kept.
The runs here state ``attention: cudnn``: the profile does not dispatch it by itself yet."""

from __future__ import annotations

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.memory.layer_activations import _per_op_sac_bytes
from trainsim.model.counts import _attention_work, hardware_flops_per_iteration
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Attention
from trainsim.workload.recompute import (
    layer_recompute,
    per_op_sac_layout,
    per_op_sac_reruns_attention,
)
from trainsim.workload.shard import shard_of


def _cfg(version: str, gpu: str = "b200-sxm-180gb", recompute: str = "selective",
         attention: str = "cudnn"):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"zero_stage": 3, "recompute": recompute},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 8192,
                     "compile": True, "framework": "torchtitan", "framework_version": version,
                     "attention": attention},
        "cluster": {"gpu": gpu, "num_gpus": 8}})


def _redo(cfg):
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    return layer_recompute(cfg, sh, fwd)


def test_per_op_sac_reruns_the_cudnn_attention_until_the_save_list_names_it():
    before, after = _cfg("2025-11"), _cfg("2025-12")
    assert before.training.attention == after.training.attention == "cudnn"
    assert per_op_sac_reruns_attention(before) and not per_op_sac_reruns_attention(after)
    redo = [op for op in _redo(before) if isinstance(op, Attention)]
    assert [op.name for op in redo] == ["recompute.attn_core"] and not redo[0].backward
    assert redo[0].impl == "cudnn"
    assert not any(isinstance(op, Attention) for op in _redo(after))
    # the flash kernel of the same date is saved, as before
    flash = _cfg("2025-08", attention="flash2")
    assert not per_op_sac_reruns_attention(flash)
    assert not any(isinstance(op, Attention) for op in _redo(flash))
    # only per-op checkpointing: full recompute re-runs the layer anyway, none re-runs nothing
    assert not per_op_sac_reruns_attention(_cfg("2025-08", recompute="full"))
    assert not per_op_sac_reruns_attention(_cfg("2025-08", recompute="none"))
    # not another framework's selective recompute (Megatron's modules)
    mcore = run_config_from_dict({
        "model": {"preset": "llama3-8b"}, "parallel": {"recompute": "selective"},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 8192,
                     "framework": "megatron-core", "framework_version": "0.12",
                     "attention": "cudnn"},
        "cluster": {"gpu": "b200-sxm-180gb", "num_gpus": 8}})
    assert not per_op_sac_reruns_attention(mcore)


def test_a_rerun_attention_keeps_neither_output_nor_log_sum_exp():
    """Per token of a Llama3-8B block: the attention output (4096 bf16 = 8192 B) and the fp32
    log-sum-exp of its 32 heads (128 B) are no longer saved."""
    kept, rerun = _per_op_sac_bytes(_cfg("2025-12")), _per_op_sac_bytes(_cfg("2025-11"))
    assert kept - rerun == pytest.approx(8192 * (2 * 4096 + 4 * 32))


def test_hardware_flops_count_the_rerun_attention_forward():
    cfg = _cfg("2025-11")
    split = per_op_sac_layout(cfg)
    saved = hardware_flops_per_iteration(cfg, False, split)
    rerun = hardware_flops_per_iteration(cfg, False, split, per_op_sac_reruns_attention(cfg))
    work = _attention_work(cfg.model, cfg.training.seq_length)
    assert rerun - saved == pytest.approx(2.0 * work * cfg.tokens_per_iteration)
