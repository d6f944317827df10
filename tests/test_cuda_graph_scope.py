"""Scoped CUDA graphs (training.cuda_graph_scope): Megatron-core's scope rules, which ops a
Transformer Engine graph replays (workload.graph_scope), and what the host still launches
(compute.host.scoped_launches), counted by hand from the layer op lists."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import cli, fp8_slice_cfg, one_error_line
from trainsim.catalog import gpu
from trainsim.chunks import chunks
from trainsim.compute import host
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.config.graph_scope import graph_scope_checked
from trainsim.errors import ConfigError
from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.graph_scope import MOE_DTOH_COPIES, captured_parts, layer_parts
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Elementwise, Gemm
from trainsim.workload.shard import shard_of

ROOT = Path(__file__).resolve().parents[1]
MOE_SCOPE = ("attn", "moe_router", "moe_preprocess")


def _cfg(scope: tuple[str, ...] = (), moe: bool = True, graphs: bool | None = None,
         shared: bool = False, model: dict | None = None, **par) -> RunConfig:
    """A 4-layer model (MoE unless told) on 16 H100, TP 2 (SP), EP 4; ``model``, ``par``: more
    ``ModelConfig`` / ``ParallelConfig`` fields."""
    extra = {"num_experts": 64, "moe_router_topk": 4, "moe_ffn_hidden_size": 512} if moe else {}
    if shared:
        extra["moe_shared_expert_intermediate_size"] = 1024
    extra.update(model or {})
    par.setdefault("moe_token_dispatcher_type", "alltoall")
    model = ModelConfig(name="m", hidden_size=1024, num_layers=4, num_attention_heads=16,
                        num_kv_heads=4, ffn_hidden_size=2048, vocab_size=32000,
                        activation="swiglu", normalization="rmsnorm", position_embedding="rope",
                        add_bias_linear=False, **extra)
    training = TrainingConfig(global_batch_size=16, micro_batch_size=1, seq_length=2048,
                              framework="megatron-bridge", framework_version="26.02",
                              cuda_graphs=bool(scope) if graphs is None else graphs,
                              cuda_graph_scope=scope)
    parallel = ParallelConfig(tensor_model_parallel_size=2, expert_model_parallel_size=4 if moe
                              else 1, sequence_parallel=True, **par)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=16, gpus_per_node=8)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def _layer(cfg: RunConfig, moe: bool) -> tuple[list, list]:
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=moe)
    return fwd, backward_of(fwd, sh)


def _counts(cfg: RunConfig, ops: list) -> list[int]:
    return Pricer(cfg).scoped_counts(ops) or [host.launches(op) for op in ops]


# ------------------------------------------------------------------------- scope rules

@pytest.mark.parametrize("scope, words", [
    (("atn",), "did you mean 'attn'"),
    (("moe_preprocess",), "moe_preprocess needs moe_router"),
    (("moe", "moe_router"), "both moe and moe_router"),
    (("full", "attn"), "'full' cannot be used with other scopes"),
])
def test_megatron_core_refuses_these_scopes(scope, words):
    """transformer_config.py core_v0.16.0 L1699-1750: unknown names, full with others, moe with
    moe_router, moe_preprocess without moe_router."""
    with pytest.raises(ConfigError, match=words):
        graph_scope_checked(scope, True)


def test_a_scope_needs_cuda_graphs_and_is_normalized():
    with pytest.raises(ConfigError, match="needs training.cuda_graphs=true"):
        graph_scope_checked(("attn",), False)
    assert graph_scope_checked((" Attn", "moe_router", "attn"), True) == ("attn", "moe_router")
    assert graph_scope_checked((), False) == ()


@pytest.mark.parametrize("item", [None, 1])
def test_non_text_scopes_and_recompute_modules_are_refused_in_one_line(item):
    """A scope or module that is not text is a ConfigError, not an AttributeError from
    .strip() (the fuzzer's (None,) and (1,))."""
    with pytest.raises(ConfigError, match="is not a scope name"):
        graph_scope_checked((item,), True)
    with pytest.raises(ConfigError, match="is not a module name"):
        ParallelConfig(recompute="selective", recompute_modules=(item,))


@pytest.mark.parametrize("moe, scope, words", [
    (False, ("moe_router",), "needs an MoE model"),
    (True, ("moe",), "needs drop-and-pad MoE"),  # dropless: Megatron-core refuses moe
])
def test_model_level_scope_problems_are_one_config_error(moe, scope, words):
    with pytest.raises(ConfigError, match=words):
        _cfg(scope, moe=moe)


PADDED = {"moe_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": True}


@pytest.mark.parametrize("scope, model, par, words", [
    # transformer_config.py L1780-1784: full recompute only with full_iteration graphs
    (("attn",), None, {"recompute": "full"}, "cannot run with parallel.recompute=full"),
    (("attn", "moe_router"), None, {"recompute": "full"}, "recompute=full"),
    # L1771-1778: the alltoall dispatcher copies split sizes to the host when it drops tokens
    (MOE_SCOPE, {"moe_capacity_factor": 1.0}, {}, "moe_preprocess cannot run with the alltoall"),
    # L1788-1795: a recomputed moe would cover the moe_router graph
    (("moe_router",), None, {"recompute": "selective", "recompute_modules": ("core_attn", "moe")},
     "moe_router cannot run with parallel.recompute_modules moe"),
    # transformer_layer.py L1033-1044: the EP overlap needs the MoE block eager
    (("moe",), PADDED, {"moe_overlap_ep_comm": True}, "needs eager"),
    (("attn", "moe"), PADDED, {"moe_overlap_ep_comm": True}, "moe_overlap_ep_comm"),
])
def test_megatron_core_refuses_these_runs_with_layer_scopes(scope, model, par, words):
    with pytest.raises(ConfigError, match=words):
        _cfg(scope, model=model, **par)


@pytest.mark.parametrize("scope, model, par", [
    (("full_iteration",), None, {"recompute": "full"}),  # the one scope full recompute takes
    ((), None, {"recompute": "full"}, ),  # whole-layer graphs: trainsim's plain cuda_graphs
    (MOE_SCOPE, PADDED, {}),  # padded: no copies in the preprocess
    (MOE_SCOPE, {"moe_capacity_factor": 1.0}, {"moe_token_dispatcher_type": "deepep"}),
    (MOE_SCOPE, {"moe_capacity_factor": 1.0}, {"moe_token_dispatcher_type": "allgather"}),
    (("moe_router",), None, {"recompute": "selective", "recompute_modules": ("moe_act",)}),
    (MOE_SCOPE, None, {"moe_overlap_ep_comm": True}),  # the router graph leaves the block eager
    (("moe",), PADDED, {}),
])
def test_megatron_core_takes_these_runs(scope, model, par):
    cfg = _cfg(scope, model=model, graphs=True, **par)
    assert cfg.training.cuda_graph_scope == scope


def test_full_iteration_goes_alone():
    """arguments.py L1441: full_iteration with cuda_graph_impl=local only, the layer scopes
    with transformer_engine only (transformer_config.py L1738-1742 refuses the former there)."""
    with pytest.raises(ConfigError, match="'full_iteration' cannot be used with other scopes"):
        graph_scope_checked(("full_iteration", "attn"), True)
    assert graph_scope_checked(("full_iteration",), True) == ("full_iteration",)


def test_a_refused_run_is_one_error_line_on_the_command_line():
    out = cli("simulate", str(ROOT / "examples/llama3-8b-h100.yaml"), "--set",
              "training.cuda_graphs=true", "--set", "training.cuda_graph_scope=attn", "--set",
              "parallel.recompute=full")
    assert "recompute=full" in one_error_line(out)


def test_an_empty_scope_is_the_whole_layer_and_null_is_no_scope():
    """``--set training.cuda_graph_scope=`` reads as YAML's "" or []: the whole layer; a null
    inside the list is refused, not read as a name."""
    base = (str(ROOT / "examples/llama3-8b-h100.yaml"), "--set", "training.cuda_graphs=true")
    ok = cli("simulate", *base, "--set", "training.cuda_graph_scope=", "--format", "json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["config"]["training"]["cuda_graph_scope"] == []
    bad = cli("simulate", *base, "--set", "training.cuda_graph_scope=[attn, null]")
    assert "cuda_graph_scope[1] is null" in one_error_line(bad)


def test_set_reads_a_comma_list_and_a_bad_name_is_one_error_line():
    ok = cli("simulate", str(ROOT / "examples/llama3-8b-h100.yaml"), "--set",
             "training.cuda_graphs=true", "--set", "training.cuda_graph_scope=attn,mlp",
             "--format", "json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["config"]["training"]["cuda_graph_scope"] == ["attn", "mlp"]
    bad = cli("simulate", str(ROOT / "examples/llama3-8b-h100.yaml"), "--set",
              "training.cuda_graph_scope=attn")
    assert "needs training.cuda_graphs=true" in one_error_line(bad)


# ------------------------------------------------------------------- which ops, by hand

def test_layer_parts_follow_megatron_cores_capture():
    """The attention block is everything before the pre-MLP norm; the pre-MLP norm and the
    router are moe_router, the permutation and the tokens-per-expert all-gather
    moe_preprocess, the experts and exchanges the eager rest."""
    fwd, _ = _layer(_cfg(), moe=True)
    parts = layer_parts(fwd)
    assert parts["attn_norm"] == parts["qkv_proj"] == parts["attn_core"] == "attn"
    assert parts["attn_bias_dropout_add"] == "attn"
    assert parts["mlp_norm"] == parts["router"] == parts["router_topk_softmax"] == "moe_router"
    assert parts["permute"] == parts["moe.tokens_per_expert_all_gather"] == "moe_preprocess"
    assert parts["moe_tokens_to_host"] == "moe_dtoh"
    assert parts["moe.dispatch_all_to_all"] == parts["expert_fc1"] == parts["unpermute"] == "moe"
    assert parts["mlp_bias_dropout_add"] == "moe"
    dense, _ = _layer(_cfg(moe=False), moe=False)
    assert layer_parts(dense)["mlp_norm"] == layer_parts(dense)["fc2"] == "mlp"


def test_dense_layer_attn_scope_launches_by_hand():
    """Attention block forward: attn_norm, attn.all_gather, qkv_proj, the split's query
    reshape copy and V's contiguous copy (two query groups of four heads on each TP rank,
    RoPE), RoPE on Q and on K (2), attn_core, out_proj, attn.reduce_scatter,
    attn_bias_dropout_add = 11 launches, one replay (2) instead; the MLP block's 7 stay
    (mlp_norm, all_gather, fc1, swiglu, fc2, reduce_scatter, add). Backward: the attention
    block's 13 launches (its ops' backwards: RoPE's two, the split's gradient cat, V's copy
    none; qkv's and out_proj's dgrad and wgrad, the re-gather) become one replay of 2."""
    eager_cfg, cfg = _cfg(moe=False), _cfg(("attn",), moe=False)
    fwd, bwd = _layer(cfg, moe=False)
    names = [op.name for op in fwd]
    cut = names.index("mlp_norm")
    assert sum(host.launches(op) for op in fwd[:cut]) == 11
    assert sum(host.launches(op) for op in fwd[cut:]) == 7
    assert sum(_counts(eager_cfg, fwd)) == 18
    assert sum(_counts(cfg, fwd)) == host.GRAPH_REPLAY_LAUNCHES + 7 == 9
    bcut = [op.name for op in bwd].index("attn_bias_dropout_add.bwd")
    attn_bwd = sum(host.launches(op) for op in bwd[bcut:])
    assert attn_bwd == 13
    assert sum(_counts(cfg, bwd)) == sum(_counts(eager_cfg, bwd)) - attn_bwd + 2


def test_moe_layer_router_and_preprocess_scope_launches_by_hand():
    """attn + moe_router + moe_preprocess: one graph from attn_norm to the tokens-per-expert
    all-gather (its first op pays the replay), the split sizes' 6 reductions inside it and their
    4 device-to-host copies outside; from the dispatch on all eager."""
    eager_cfg, cfg = _cfg(), _cfg(MOE_SCOPE)
    fwd, _ = _layer(cfg, moe=True)
    counts, eager = _counts(cfg, fwd), _counts(eager_cfg, fwd)
    names = [op.name for op in fwd]
    dtoh = names.index("moe_tokens_to_host")
    assert counts[0] == host.GRAPH_REPLAY_LAUNCHES and not any(counts[1:dtoh])
    assert fwd[dtoh].kernels == 10 and counts[dtoh] == MOE_DTOH_COPIES == 4
    assert counts[dtoh + 1:] == eager[dtoh + 1:]
    assert sum(counts) == 2 + 4 + sum(eager[dtoh + 1:])
    # router only: the preprocess (permute, gather, all 10 of the sync op's kernels) is eager
    router = _cfg(("moe_router",))
    c = _counts(router, fwd)
    first = names.index("mlp_norm")
    assert c[:first] == eager[:first] and c[first] == 2
    assert c[names.index("permute")] == eager[names.index("permute")]
    assert c[dtoh] == 10


def test_shared_experts_are_in_the_router_graph_unless_overlapped():
    assert "shared" in captured_parts(_cfg(("moe_router",), shared=True))
    cfg = _cfg(("moe_router",), shared=True)
    over = replace(cfg, parallel=replace(cfg.parallel, moe_shared_expert_overlap=True))
    assert "shared" not in captured_parts(over)
    assert captured_parts(_cfg(("full",))) == frozenset()  # whole layer: cuda_graphs alone


def test_shared_experts_replay_with_the_router_graph():
    """Megatron-core captures pre-MLP norm, router and shared experts in one callable
    (transformer_layer.py L961-966): one replay per layer graph forward and backward, though
    the shared experts' ops follow the eager unpermutation in trainsim's list. By hand: the
    eager launches less those of the captured router and shared ops, plus one replay (2)."""
    eager_cfg, cfg = _cfg(shared=True), _cfg(("moe_router",), shared=True)
    fwd, bwd = _layer(cfg, moe=True)
    parts = layer_parts(fwd)
    for ops in (fwd, bwd):
        counts, eager = _counts(cfg, ops), _counts(eager_cfg, ops)
        caught = [i for i, op in enumerate(ops)
                  if _part_of(op.name, parts) in ("moe_router", "shared")]
        shared = [i for i in caught if _part_of(ops[i].name, parts) == "shared"]
        assert shared and sum(eager[i] for i in shared) > 0  # the layer has shared experts
        assert sum(counts) == sum(eager) - sum(eager[i] for i in caught) \
            + host.GRAPH_REPLAY_LAUNCHES
        assert not any(counts[i] for i in shared)  # no second replay


def _part_of(name: str, parts: dict[str, str]) -> str | None:
    name = name.removeprefix("recompute.")
    while name not in parts and "." in name:
        name = name.rsplit(".", 1)[0]
    return parts.get(name)


def test_delayed_fp8_amax_reductions_stay_under_scoped_graphs():
    """TE's graph backward reduces the amaxes eagerly after its replay (v2.10 graph.py
    ``Graphed.backward`` L718-720) and eager modules as without graphs: a scoped graph keeps
    the chunk's two reductions, and so do whole-layer graphs."""
    def amax(cfg):
        ch = chunks(cfg, Pricer(cfg), shard_of(cfg))[0]
        return [s for part in (ch.fwd, ch.bwd) for _, s, label in part.segments
                if label.startswith("fp8_amax_reduce")]
    whole = fp8_slice_cfg(gpus=64, pp=2, batch=32, cuda_graphs=True)
    scoped = replace(whole, training=replace(whole.training, cuda_graph_scope=("attn",)))
    eager = replace(whole, training=replace(whole.training, cuda_graphs=False))
    assert len(amax(scoped)) == 2 and amax(scoped) == pytest.approx(amax(eager))
    assert amax(whole) == pytest.approx(amax(eager))


def test_scoped_launches_runs_and_partial_ops():
    """A run of captured ops costs one replay on its first op; a launch-free op keeps the run;
    a partly captured op ends it after its captured part; an eager op ends it."""
    g = Gemm("g", 8, 8, 8)
    free = Elementwise("free", 0.0, kernels=0)
    sync = Elementwise("sync", 0.0, kernels=10, host_sync=True)
    ops = [g, g, free, g, sync, g, g, g]
    kept = [0, 1, 0, 1, 6, 1, 0, 1]
    assert host.scoped_launches(ops, kept) == [1, 2, 0, 0, 4, 2, 1, 2]
    # a run joining a graph another run replays pays no replay of its own
    joins = [False] * 7 + [True]
    assert host.scoped_launches(ops, kept, joins) == [1, 2, 0, 0, 4, 2, 1, 0]


def test_the_host_still_waits_at_the_sync_under_scoped_graphs():
    """Two ops after a sync: the host waits for the GPU (1 ms) there, then launches; with its
    launches graphed the wait stays, only the launches after it shrink."""
    a = Elementwise("a", 0.0, kernels=1)
    sync = Elementwise("sync", 0.0, kernels=4, host_sync=True)
    b = Elementwise("b", 0.0, kernels=3)
    ops, busy, k = [a, sync, b], [1e-3, 0.0, 1e-6], 10e-6
    # eager: host -10us, +10 (a) = 0; gpu 1 ms; sync: host waits to 1 ms, +40 us; gpu 1.04 ms;
    # b: host +30 us -> 1.07 ms, gpu 1.071 ms; exposed 1.071 - 1.001 = 70 us
    assert host.exposed_s(ops, busy, k) == pytest.approx(70e-6)
    # b replayed from a graph (2 launches): 1.04 + 0.02 + 0.001 - 1.001 = 60 us
    assert host.exposed_s(ops, busy, k, counts=[1, 4, 2]) == pytest.approx(60e-6)


def test_scoped_graphs_sit_between_eager_and_whole_layer_graphs():
    """A host-bound MoE layer forward: the scoped graph removes part of the host wait, the
    whole-layer graph all of it."""
    fwd, _ = _layer(_cfg(), moe=True)
    t_eager = Pricer(_cfg()).price(fwd).duration_s
    t_scoped = Pricer(_cfg(MOE_SCOPE)).price(fwd).duration_s
    t_whole = Pricer(_cfg(graphs=True)).price(fwd).duration_s
    assert t_whole < t_scoped < t_eager


# --------------------------------------------------------------- rows and the guide's A/B

def _ab_rows() -> dict[str, dict[str, str]]:
    with open(ROOT / "benchmarks/cuda_graph_scope_ab.csv", newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def test_the_optional_column_sets_the_scope_and_needs_the_option():
    row = _ab_rows()["guide-qwen3-30b-a3b-scoped"]
    assert row_config(row).training.cuda_graph_scope == MOE_SCOPE
    res = predict_training_row(dict(row, options="dp_overlap"))
    assert res.error and "needs training.cuda_graphs=true" in res.error


def test_bridge_guide_pairs_predict_a_gain_from_the_scoped_graphs():
    """Megatron-Bridge docs/training/cuda-graphs.md @ 2f3ecca48: both pairs run faster scoped
    (measured 22 % and 20 %); trainsim's gain is positive and below the whole-layer graphs'."""
    rows = _ab_rows()
    for name in ("guide-qwen3-30b-a3b", "guide-gpt-oss-20b"):
        eager, scoped = rows[f"{name}-eager"], rows[f"{name}-scoped"]
        assert float(scoped["measured_iteration_s"]) < float(eager["measured_iteration_s"])
        pe, ps = (predict_training_row(r).predicted for r in (eager, scoped))
        pw = predict_training_row(dict(scoped, cuda_graph_scope="")).predicted
        assert pw < ps < pe
