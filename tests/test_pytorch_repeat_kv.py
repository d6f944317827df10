"""The pytorch profile's GQA copy: transformers' ``repeat_kv`` (before SDPA up to v4.53, before
eager attention always) and ibm-fms's expand+flatten (before SDPA, still at its HEAD) copy K and
V to every query head; a run whose library passes ``enable_gqa`` (transformers >= 4.54,
huggingface/transformers#39412) says so; FlashAttention-2 never gets a copy (issue 17)."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.catalog.frameworks import framework_supports
from trainsim.compute.attention import gqa_group_sum_bytes
from trainsim.validate.row_settings import OPTION_FIELDS
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention
from trainsim.workload.shard import shard_of

ROW = 2 * 2048 * 128  # bytes of one head's K (or V) over 2048 tokens at head dim 128, 16-bit


def _cfg(version: str, model: str = "llama3-8b", attention: str = "sdpa",
         gpu: str = "a100-sxm-80gb", parallel: dict | None = None, **training):
    return run_config_from_dict({
        "model": model, "parallel": {"tp": 1, **(parallel or {})},
        "training": {"global_batch_size": 4, "micro_batch_size": 1, "seq_length": 2048,
                     "framework": "pytorch", "framework_version": version,
                     "attention": attention, **training},
        "cluster": {"gpu": gpu, "num_gpus": 4, "gpus_per_node": 8}})


def _ops(c):
    sh = shard_of(c)
    fwd = layer_forward(c, sh)
    return fwd, backward_of(fwd, sh)


def _repeats(c):
    fwd, bwd = _ops(c)
    return ([op for op in fwd if op.name == "attn_core.repeat_kv"],
            [op for op in bwd if op.name.startswith("attn_core.repeat_kv") and op.kernels])


def test_profile_repeats_kv_from_sdpa_at_every_later_torch():
    """The cut-over to ``enable_gqa`` is the model library's, not torch's: the profile keeps
    the copy at every release from SDPA's (2.1.1) on; eager attention copies at every release."""
    assert not framework_supports("pytorch", "2.0", "sdpa_repeat_kv")
    for version in ("2.1.1", "2.4", "2.8", "2.11"):
        assert framework_supports("pytorch", version, "sdpa_repeat_kv")
    for version in ("1.0", "2.0", "2.4", "2.11"):
        assert framework_supports("pytorch", version, "unfused_repeat_kv")


def test_sdpa_repeat_copies_by_hand():
    """Llama 3 8B, 2048 tokens, head dim 128 (one head's K: 2048 x 128 x 2 B = 524,288 B): K and
    V each read at 8 KV heads and written at 32 query heads, two kernels: 2 x 524,288 x (8 + 32)
    = 41,943,040 B; the backward sum is the SDPA kernel op's (FlashAttention-2's dk_expanded
    sum, ``gqa_group_sum_bytes``), no kernel of the copy's own. Also at torch 2.11 on an H100,
    where SDPA dispatches to cuDNN (whose op sums no groups, so the copy's backward does); none
    for an MHA model (Llama 2 7B)."""
    (rep,), bwd = _repeats(_cfg("2.4"))
    assert rep.bytes == 2 * ROW * (8 + 32) == 41_943_040
    assert rep.kernels == 2
    assert bwd == []
    h100 = _cfg("2.11", gpu="h100-sxm-80gb")
    assert h100.training.attention == "cudnn"
    fwd, bwd = _repeats(h100)
    assert [op.bytes for op in fwd] == [41_943_040] and [op.bytes for op in bwd] == [41_943_040]
    assert _repeats(_cfg("2.4", "llama2-7b")) == ([], [])


@pytest.mark.parametrize("version", ["2.5", "2.11"])
def test_enable_gqa_drops_the_copy(version):
    """A run whose model passes ``enable_gqa`` to SDPA (training.sdpa_enable_gqa, the row
    option ``enable_gqa``) copies nothing; the SDPA kernel still sums its own GQA groups."""
    assert OPTION_FIELDS["enable_gqa"] == ("training", ("sdpa_enable_gqa",))
    c = _cfg(version, sdpa_enable_gqa=True)
    assert _repeats(c) == ([], [])
    fwd, _ = _ops(c)
    (core,) = [op for op in fwd if isinstance(op, Attention)]
    assert core.kv_heads == 8 and core.heads == 32


def test_flash2_gets_no_copy():
    """transformers' FlashAttention-2 path passes the KV heads as they are
    (integrations/flash_attention.py has no repeat_kv): no copy at any torch release."""
    for version in ("2.4", "2.11"):
        assert _repeats(_cfg(version, attention="flash2")) == ([], [])


@pytest.mark.parametrize("version", ["2.0", "2.4", "2.11"])
def test_unfused_copies_and_prices_the_backward_sum(version):
    """Eager attention (``eager_attention_forward``) repeats K and V at every torch release and
    its matmuls see every head, so no kernel sums the GQA groups: the copy's backward (expand's
    sum) reads the 32-head dK and dV and writes the 8-head ones, 2 x 524,288 x (32 + 8) B in
    two kernels, the bytes a FlashAttention-2 backward's group sum would move; the unfused
    kernel's op prices none."""
    c = _cfg(version, attention="unfused")
    (rep,), (rep_bwd,) = _repeats(c)
    assert rep.bytes == 2 * ROW * (8 + 32)
    assert rep_bwd.bytes == 2 * ROW * (32 + 8) == 41_943_040 and rep_bwd.kernels == 2
    _, bwd = _ops(c)
    (core_bwd,) = [op for op in bwd if isinstance(op, Attention)]
    assert gqa_group_sum_bytes(core_bwd) == 0.0
    assert gqa_group_sum_bytes(Attention("x", batch=1, heads=32, kv_heads=8, q_len=2048,
                                         kv_len=2048, head_dim=128, impl="flash2",
                                         backward=True)) == rep_bwd.bytes


def test_sdpa_keeps_the_repeated_kv_by_hand():
    """Memory: where the model copies K and V before SDPA, SDPA saves the 32-head copies and
    nothing keeps the 8-head tensors: 2 B x 2 tensors x (4096 - 1024) columns = 12,288 B a
    token more per non-recomputed layer, 2048 x 12,288 = 25,165,824 B at one sequence of 2048
    (Llama 3 8B: q 4096, kv 1024 columns); none with enable_gqa, none compiled, none for a
    fully recomputed layer (it keeps its input only)."""
    from trainsim.memory.estimate import activation_bytes_per_layer

    copy, gqa = _cfg("2.5"), _cfg("2.5", sdpa_enable_gqa=True)
    extra = 2048 * 2 * 2 * (4096 - 1024)
    assert extra == 25_165_824
    assert activation_bytes_per_layer(copy) - activation_bytes_per_layer(gqa) == extra
    # the generic (non-Hugging-Face) layout: a layer that recomputes only its MLP keeps the
    # copies, one that recomputes core attention does not
    mlp = {"recompute": "selective", "recompute_modules": ["mlp"]}
    assert activation_bytes_per_layer(_cfg("2.5", parallel=mlp)) - activation_bytes_per_layer(
        _cfg("2.5", parallel=mlp, sdpa_enable_gqa=True)) == pytest.approx(extra)
    assert activation_bytes_per_layer(copy, "selective") == pytest.approx(
        activation_bytes_per_layer(gqa, "selective"))
    assert activation_bytes_per_layer(copy, "full") == activation_bytes_per_layer(gqa, "full")
    comp, comp_gqa = _cfg("2.5", compile=True), _cfg("2.5", compile=True, sdpa_enable_gqa=True)
    assert activation_bytes_per_layer(comp) == activation_bytes_per_layer(comp_gqa)


def test_enable_gqa_is_refused_where_it_cannot_apply():
    """SDPA takes ``enable_gqa`` from torch 2.5: a pytorch run at 2.4 with it is one error naming
    both fields; so is a kernel SDPA does not dispatch to (FlashAttention-2, eager) and a
    framework whose models never repeat K and V before SDPA (Megatron-core)."""
    from trainsim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"sdpa_enable_gqa=true with "
                                          r"training.framework_version=2.4: .*torch 2.5"):
        _cfg("2.4", sdpa_enable_gqa=True)
    for attention in ("flash2", "unfused"):
        with pytest.raises(ConfigError, match=f"training.attention={attention}"):
            _cfg("2.5", attention=attention, sdpa_enable_gqa=True)
    assert _cfg("2.11", gpu="h100-sxm-80gb", sdpa_enable_gqa=True).training.attention == "cudnn"
    with pytest.raises(ConfigError, match="megatron-core .*do not repeat K and V"):
        run_config_from_dict({
            "model": "llama3-8b",
            "training": {"global_batch_size": 4, "micro_batch_size": 1, "seq_length": 2048,
                         "framework": "megatron-core", "sdpa_enable_gqa": True},
            "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 4, "gpus_per_node": 8}})
