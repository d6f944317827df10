"""Eager attention whose softmax runs in fp32 (profile feature ``softmax_fp32_saved``: the
pytorch profile, transformers' ``eager_attention_forward``) keeps the fp32 softmax output for
softmax's backward beside the 16-bit probabilities the value matmul keeps: 6 bytes a score,
8 with soft-capping (``memory.scores``). Measured here with a saved-tensor hook over the same
ops written out, against ``score_bytes`` and a hand count."""

from __future__ import annotations

import warnings

import pytest

from trainsim import run_config_from_dict
from trainsim.catalog.frameworks import framework_supports
from trainsim.errors import TrainsimWarning
from trainsim.memory.scores import SOFTCAP_SAVED_BYTES, SOFTMAX_FP32_SAVED_BYTES, score_bytes

torch = pytest.importorskip("torch")


def _saved_bytes(cap: float | None, s: int, heads: int = 2, d: int = 4) -> int:
    """Bytes of the distinct storages autograd keeps over eager attention of one sequence:
    scores, an optional ``cap * tanh(x / cap)``, an additive mask, an fp32 softmax cast to
    bf16, then the value matmul (the inputs q, k, v left out: the layer keeps them anyway)."""
    q, k, v = (torch.randn(1, heads, s, d, dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    inputs = {t.untyped_storage().data_ptr() for t in (q, k, v)}
    kept: dict[int, int] = {}
    hold = []

    def pack(t):
        hold.append(t)
        storage = t.untyped_storage()
        if storage.data_ptr() not in inputs:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        w = torch.matmul(q, k.transpose(2, 3)) * d ** -0.5
        if cap is not None:
            w = torch.tanh(w / cap) * cap
        w = w + torch.zeros(s, s, dtype=torch.bfloat16)
        p = torch.softmax(w, dim=-1, dtype=torch.float32).to(torch.bfloat16)
        torch.matmul(p, v)
    return sum(kept.values())


@pytest.mark.parametrize("cap, per_score", [(None, 6), (50.0, 8)])
def test_eager_fp32_softmax_keeps_six_bytes_a_score_eight_with_the_cap(cap, per_score):
    """Doubling the sequence quadruples the scores: the s^2 term per score is 4 (fp32
    softmax output) + 2 (bf16 probabilities) [+ 2 (bf16 tanh output)]."""
    heads = 2
    small, large = (_saved_bytes(cap, s, heads) for s in (16, 32))
    # bytes linear in s (none here beyond the inputs) cancel in large - 4 * small
    assert (large - 4 * small) == 0
    assert large / (heads * 32 * 32) == per_score


def _cfg(framework: str, model: str = "llama3-8b"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrainsimWarning)
        return run_config_from_dict({
            "model": model,
            "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048,
                         "framework": framework, "attention": "unfused"},
            "cluster": {"node": "dgx-h100", "num_gpus": 8}})


@pytest.mark.parametrize("model, per_score", [("llama3-8b", 6.0), ("gemma-2-2b", 8.0)])
def test_pytorch_profile_prices_the_fp32_softmax_output(model, per_score):
    """The pytorch profile keeps 2 + 4 bytes a score (+2 soft-capped), as measured above;
    Megatron's unfused attention (16-bit softmax by default) keeps 2 (+2): Megatron-core's
    DotProductAttention, or for the sliding-window Gemma 2 (which that refuses) Megatron-
    Bridge's Gemma2DotProductAttention."""
    assert framework_supports("pytorch", "2.4", "softmax_fp32_saved")
    assert not framework_supports("megatron-core", None, "softmax_fp32_saved")
    assert not framework_supports("megatron-bridge", None, "softmax_fp32_saved")
    assert SOFTMAX_FP32_SAVED_BYTES == 4.0 and SOFTCAP_SAVED_BYTES == 2.0
    b, heads, s = 1, 8, 2048
    cfg = _cfg("pytorch", model)
    assert cfg.model.attention_dropout == 0
    assert score_bytes(cfg, b, heads, s, s, False) == per_score * b * heads * s * s
    assert score_bytes(cfg, b, heads, s, s, True) == 0.0
    mc = _cfg("megatron-bridge" if model.startswith("gemma") else "megatron-core", model)
    assert score_bytes(mc, b, heads, s, s, False) == (per_score - 4.0) * b * heads * s * s
