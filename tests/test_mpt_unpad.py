"""llm-foundry's MPT around its attention kernels (issue 17, framework mechanisms): with
``attn_impl: flash`` every layer unpads Q, K and V (two host waits each) and pads the output
back; with ``attn_impl: triton`` nothing is unpadded and the backward concatenates dq, dk, dv."""

from __future__ import annotations

import pytest

from trainsim.catalog import gpu as load_gpu
from trainsim.catalog import run_config_from_dict
from trainsim.compute import RooflineModel, attention
from trainsim.compute.attention import attention_fraction
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Elementwise
from trainsim.workload.shard import shard_of


def cfg(attention="flash2", framework=("llm-foundry", "2024-01")):
    raw = {"model": {"preset": "mpt-7b"},
           "parallel": {"zero_stage": 3, "recompute": "none"},
           "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048,
                        "dtype": "bf16", "attention": attention},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}
    if framework:
        raw["training"].update(framework=framework[0], framework_version=framework[1])
    return run_config_from_dict(raw)


def _padding(ops):
    return [op for op in ops if isinstance(op, Elementwise) and "pad" in op.name]


def test_mpt_flash_unpads_qkv_and_pads_the_output():
    c = cfg()
    sh = shard_of(c)
    fwd = layer_forward(c, sh)
    pads = _padding(fwd)
    assert sum(op.host_sync for op in pads) == 6  # nonzero and .item() per unpad_input
    h, T = c.model.hidden_size, sh.tokens
    # gathers of Q, K, V (read, write) and the padded output (zero-fill, scatter): 18 h B/token
    assert sum(op.bytes for op in pads) == 18 * h * T
    # backward: three zero-fills and scatters, the chunk's concatenation, the output's gather
    back = _padding(backward_of(fwd, sh))
    assert sum(op.bytes for op in back) == 34 * h * T
    assert not any(op.host_sync for op in back)


def test_only_mpts_flash_path_unpads():
    for c in (cfg("triton"), cfg(framework=None)):
        assert _padding(layer_forward(c, shard_of(c))) == []


def test_mpt_triton_backward_concatenates_dq_dk_dv_and_nothing_else():
    c = cfg("triton")
    sh = shard_of(c)
    fwd = layer_forward(c, sh)
    extra = [op for op in fwd if isinstance(op, Elementwise) and op.name.startswith("triton")]
    assert len(extra) == 1 and extra[0].bytes == 0 and extra[0].kernels == 0
    assert not any(isinstance(op, Elementwise) and op.host_sync for op in fwd)
    back = [op for op in backward_of(fwd, sh) if op.name.startswith("triton")]
    h, T = c.model.hidden_size, sh.tokens
    assert sum(op.bytes for op in back) == 12 * h * T  # read and write dq, dk, dv (MHA)


def test_mpt_triton_kernel_runs_at_the_first_flashattentions_rate():
    for gpu in ("a100-sxm-80gb", "h100-sxm-80gb"):
        g = load_gpu(gpu)
        for backward in (False, True):
            tri = attention_fraction("triton", backward, g)
            # FA1's whole rate: its matmuls run faster than that, its split-K exchange
            # (``flash1_split_k_s``), which Triton's kernel does not run, priced beside them
            assert tri == pytest.approx(attention.FLASH1_OF_FLASH2
                                        * attention_fraction("flash2", backward, g))
            assert tri < attention_fraction("flash1", backward, g)
            assert tri < 0.6 * attention_fraction("flash2", backward, g)
        op = Attention("a", batch=1, heads=32, kv_heads=32, q_len=65536, kv_len=65536,
                       head_dim=128, impl="triton")
        model = RooflineModel(g)
        # "around 2x" (FA2 paper): half the matmul rate, the softmax exponentials at the same
        # cost (1.796x on A100 at 64k with the 37th session's refit, 1.80x before)
        assert model.time(op) > 1.75 * model.time(Attention(**{**op.__dict__, "impl": "flash2"}))
