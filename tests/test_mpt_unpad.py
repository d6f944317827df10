"""llm-foundry's MPT around FlashAttention's varlen kernel (issue 17, framework mechanisms):
every layer unpads Q, K and V (two host waits each) and pads the output back."""

from __future__ import annotations

from trainsim.catalog import run_config_from_dict
from trainsim.workload.layers import backward_of, layer_forward, shard_of
from trainsim.workload.ops import Elementwise


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
