"""A two-norm parallel block (``parallel_block_norms`` 2: GPT-NeoX's input_layernorm and
post_attention_layernorm under use_parallel_residual, Falcon-40B's ln_attn and ln_mlp) runs
both norm kernels, forward and backward; a one-norm block (GPT-J, Falcon-7B, Cohere) runs one."""

from __future__ import annotations

import dataclasses

import pytest

from trainsim import run_config_from_dict, simulate
from trainsim.workload.layers import PARALLEL_MLP_NORM, backward_of, layer_forward
from trainsim.workload.shard import shard_of


def _cfg(norms=2):
    cfg = run_config_from_dict({
        "model": {"preset": "gpt-neox-20b", "num_layers": 4},
        "parallel": {"tp": 1, "pp": 1},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model,
                                                              parallel_block_norms=norms))


def test_two_norm_block_runs_a_second_norm_like_the_first():
    """Same kernel, same bytes (the rank's tokens x hidden, read from the residual stream),
    before the attention's TP entry; a backward each."""
    cfg = _cfg()
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    by = {op.name: op for op in fwd}
    assert PARALLEL_MLP_NORM in by and "mlp_norm" not in by
    second, first = by[PARALLEL_MLP_NORM], by["attn_norm"]
    assert second.kernel == first.kernel == "layernorm"
    assert second.bytes == pytest.approx(first.bytes)
    names = [op.name for op in fwd]
    assert names.index(PARALLEL_MLP_NORM) == names.index("attn_norm") + 1
    back = {op.name for op in backward_of(fwd, sh)}
    assert {f"{PARALLEL_MLP_NORM}.bwd", "attn_norm.bwd"} <= back


def test_one_norm_block_runs_one_norm_and_is_faster():
    one, two = _cfg(norms=1), _cfg(norms=2)
    names = [op.name for op in layer_forward(one, shard_of(one))]
    assert PARALLEL_MLP_NORM not in names and "attn_norm" in names
    assert simulate(two).iteration_time_s > simulate(one).iteration_time_s


def _public_row(row_id):
    from tests.helpers import training_rows
    from trainsim.validate import BUNDLED_DIR

    return next(r for r in training_rows(BUNDLED_DIR / "training_public.csv")
                if r["id"] == row_id)


def test_the_parallel_block_option_is_one_norm_unless_the_preset_says():
    """A row's ``parallel_block`` option is MegaScale's y = x + MLP(LN(x)) + Attention(LN(x)),
    one LN(x) (MegaScale §3.1, after GPT-J): one norm kernel, as before this session; a
    preset that is a parallel block already (GPT-NeoX) keeps its two."""
    from trainsim.validate.row_settings import training_base

    row = _public_row("megascale24-megascale-b768-256")
    raw, _ = training_base(row)
    assert raw["model"]["parallel_block"] and raw["model"]["parallel_block_norms"] == 1
    neox, _ = training_base({**row, "model": "gpt-neox-20b"})
    assert "parallel_block_norms" not in neox["model"]
