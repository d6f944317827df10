"""The ``mamba`` CUDA-graph scope and scoped graphs beside the gradient reduction.

Megatron-core graphs a hybrid model's Mamba layer whole, and only under ``mamba`` (core_v0.16.0
3bec9aa9 transformer/cuda_graphs.py ``_layer_is_graphable`` L1645-1647; module.py
``_te_cuda_graph_capture`` L279-284 runs the layer's whole forward): a Mamba layer's
``out_proj``, named as the attention block's projection, stays eager under ``attn``.

The data-parallel gradient hooks fire after a graph's backward replay, not inside it
(TransformerEngine v2.14 graph.py ``Graphed.backward`` L870-910: the replay, then the parameters'
gradients returned to autograd, whose accumulation nodes carry Megatron-core's DDP hooks), so
one layer's graphed parameters are ready when its backward ends: where eager ones are."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from tests.test_cuda_graph_scope import MOE_SCOPE, _cfg, _counts
from trainsim.catalog import run_config_from_dict
from trainsim.compute import host
from trainsim.config.graph_scope import graph_scope_checked
from trainsim.config.hybrid import ATTENTION, MAMBA, MOE
from trainsim.errors import ConfigError
from trainsim.simulator import simulate
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.graph_scope import captured_parts
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]
HYBRID = {"hybrid_layer_pattern": "MEM*"}


def _hybrid(scope: tuple[str, ...] = ()):
    return _cfg(scope, model=HYBRID)


def _lists(symbol: str) -> tuple[list, list]:
    cfg = _hybrid()
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, symbol)
    return fwd, backward_of(fwd, sh)


def test_mamba_captures_the_mamba_layer_whole_and_attn_leaves_it_eager():
    """Forward and backward of a Mamba layer: one replay under ``mamba`` (no op of it makes the
    host wait), every launch eager under the attention and MoE scopes."""
    fwd, bwd = _lists(MAMBA)
    assert "out_proj" in [op.name for op in fwd]  # the attention projection's name
    assert captured_parts(_hybrid(("mamba",))) == frozenset({"mamba"})
    for ops in (fwd, bwd):
        eager = _counts(_hybrid(), ops)
        assert sum(eager) > 10
        assert _counts(_hybrid(MOE_SCOPE), ops) == eager
        assert sum(_counts(_hybrid(("mamba",)), ops)) == host.GRAPH_REPLAY_LAUNCHES
        assert sum(_counts(_hybrid(("attn", "mamba")), ops)) == host.GRAPH_REPLAY_LAUNCHES


def test_mamba_leaves_the_attention_and_moe_layers_eager():
    for symbol in (ATTENTION, MOE):
        for ops in _lists(symbol):
            assert _counts(_hybrid(("mamba",)), ops) == _counts(_hybrid(), ops)
    attn_fwd, _ = _lists(ATTENTION)
    assert sum(_counts(_hybrid(("attn",)), attn_fwd)) == host.GRAPH_REPLAY_LAUNCHES


def test_a_scoped_hybrid_step_sits_between_eager_and_whole_layer_graphs():
    """Each scope added takes host launches off the step; the whole layer takes all."""
    times = [simulate(c).breakdown["other_s"] for c in
             (_hybrid(), _hybrid(MOE_SCOPE), _hybrid(MOE_SCOPE + ("mamba",)),
              _cfg(model=HYBRID, graphs=True))]
    assert times[0] > times[1] > times[2] > times[3] == 0.0


def test_mamba_is_a_late_scope_as_moe_router_is():
    """The ``mamba`` member came with the enum (Megatron-LM@2b343d739f, first in core_v0.16.0):
    a profile without the enum scopes refuses it in one line."""
    raw = {"model": "nemotron-h-8b", "parallel": {"tp": 8},
           "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 8192,
                        "framework": "megatron-core", "framework_version": "0.15.0",
                        "cuda_graphs": True, "cuda_graph_scope": "mamba"},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64}}
    with pytest.raises(ConfigError, match="has no mamba graph scope"):
        run_config_from_dict(raw)


def _nemotron3() -> dict[str, dict[str, str]]:
    with open(ROOT / "benchmarks/training_nemotron3.csv", newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def test_scoped_graphs_expose_the_gradient_reduction_no_more_than_eager():
    """Nemotron 3 Super on HGX B300 (64 local experts, host-bound): the recipe's scoped graphs
    against no graphs, both with the reduction overlapped (the row's recipe sets
    overlap_grad_reduce): the exposed data-parallel time stays within 2 % (the 57th session's
    what-if stated only ``cuda_graphs`` in the options cell and so dropped the overlap)."""
    row = _nemotron3()["bridgearch2606-nemotron-3-super-120b-a12b-b300-64-mxfp8"]
    eager = dict(row, options="dp_overlap", cuda_graph_scope="")
    scoped = dict(row, options="dp_overlap;cuda_graphs",
                  cuda_graph_scope="attn;mamba;moe_router;moe_preprocess")
    out = []
    for r in (eager, scoped):
        res = predict_training_row(r)
        cfg = row_config(r, res.chosen)
        assert cfg.parallel.overlap_grad_reduce
        out.append(simulate(cfg))
    assert out[1].config.training.cuda_graph_scope == ("attn", "mamba", "moe_router",
                                                       "moe_preprocess")
    assert out[1].breakdown["other_s"] < out[0].breakdown["other_s"]
    assert out[1].exposed_comm["dp"] == pytest.approx(out[0].exposed_comm["dp"], rel=0.02)


def test_the_nemotron3_rows_scopes_are_their_recipes():
    """benchmarks/training_nemotron3.csv's ``cuda_graph_scope`` cells are
    ``bridge_archive_rows.HYBRID_GRAPHS``', which match each row's recipe in Megatron-Bridge
    v0.4.2 / v0.5.0 nemotron_3_workload_base_configs.py (read from the mirror where it is)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bridge_archive_rows as gen
    import mirror_rows

    rows = _nemotron3()
    assert {r["cuda_graph_scope"] for r in rows.values()} == {
        "", "mamba", "attn;mamba;moe_router;moe_preprocess",
        "mamba;attn;moe_router;moe_preprocess"}
    for r in rows.values():
        assert bool(r["cuda_graph_scope"]) == (r["options"] == "dp_overlap;cuda_graphs")
        scope = tuple(r["cuda_graph_scope"].split(";")) if r["cuda_graph_scope"] else ()
        assert graph_scope_checked(scope, True) == scope
    if not mirror_rows.mirror(gen.REPO_DIR).exists():
        pytest.skip("no Megatron-Bridge mirror")
    assert gen.recipe_scope_differences() == []
