"""Format v2 settings move the simulation the way the physics says (issue 15)."""

from __future__ import annotations

import re

import pytest

from trainsim import simulate
from trainsim.catalog import run_config_from_dict
from trainsim.compute import host
from trainsim.config.layout import even_layout, parse_layout
from trainsim.errors import ConfigError
from trainsim.interop.simai import simai_rows
from trainsim.memory import estimate_stage_memory


def cfg(parallel=None, training=None, model=None, cluster=None):
    raw = {"model": {"preset": "llama3-8b", **(model or {})},
           "parallel": {"tp": 2, "pp": 2, **(parallel or {})},
           "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096,
                        **(training or {})},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8,
                       **(cluster or {})}}
    return run_config_from_dict(raw)


# --- pipeline layouts -------------------------------------------------------------------------

def test_layout_string_expands_repeats_and_ignores_separators():
    assert parse_layout("Et*3|(tt|)*2,m|L") == ("Ettt", "tt", "tt", "m", "L")


def test_llama405b_layout_puts_one_layer_fewer_beside_embedding_and_loss():
    c = run_config_from_dict({  # the 405B layout's shape on a 78-layer model
        "model": {"preset": "llama3-70b", "num_layers": 78},
        "parallel": {"tp": 8, "pp": 8, "pipeline_model_parallel_layout": "Et|(tt|)*38tL"},
        "training": {"global_batch_size": 64, "seq_length": 2048},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64}})
    assert c.parallel.vpp == 5  # 40 virtual stages over pp=8
    assert c.stage_layer_counts == (9, 10, 10, 10, 10, 10, 10, 9)
    ranges = c.virtual_stage_layers()
    assert len(ranges) == 40 and len(ranges[0]) == 1 and len(ranges[-1]) == 1
    assert all(len(r) == 2 for r in ranges[1:-1])


def test_account_for_embedding_and_loss_equals_the_explicit_layout():
    implicit = cfg({"pp": 4, "vpp": 2, "account_for_embedding_in_pipeline_split": True,
                    "account_for_loss_in_pipeline_split": True},
                   model={"num_layers": 30})
    explicit = cfg({"pp": 4, "pipeline_model_parallel_layout": "Et*3|(t*4|)*6t*3L"},
                   model={"num_layers": 30})
    assert implicit.virtual_stage_layers() == explicit.virtual_stage_layers()
    assert even_layout(30, 0, 4, 2, True, True) == ("Ettt",) + ("tttt",) * 6 + ("tttL",)


def test_layout_slots_move_layers_and_the_bubble():
    even = simulate(cfg({"pipeline_model_parallel_layout": "Et*16|t*16L"}))
    lopsided = simulate(cfg({"pipeline_model_parallel_layout": "Et*8|t*24L"}))
    assert lopsided.config.stage_layer_counts == (8, 24)
    # the slowest stage sets the pace: 24 layers on one stage take longer than 16 and 16
    assert lopsided.iteration_time_s > even.iteration_time_s * 1.2
    # the breakdown is the critical (crowded) stage's: it is busy nearly all the time, so its
    # bubble shrinks while the time grows (the light stage waits instead)
    assert lopsided.breakdown["pipeline_bubble_s"] < even.breakdown["pipeline_bubble_s"]
    # memory follows the layers: the crowded stage holds more
    first = estimate_stage_memory(lopsided.config, 0).total
    last = estimate_stage_memory(lopsided.config, 1).total
    assert last > first


def test_first_last_form_is_the_megatron_uneven_split():
    c = cfg({"pp": 4, "pipeline_model_parallel_layout": "first:5,last:5"},
            model={"num_layers": 30})
    assert c.stage_layer_counts == (5, 10, 10, 5)
    assert c.parallel.decoder_first_pipeline_num_layers == 5


@pytest.mark.parametrize("layout, words", [
    ("Et*15|t*16L", ["31 transformer layers", "num_layers=32"]),
    ("Et*16|t*8|t*8L", ["3 virtual stages", "pp*vpp=2*1"]),
    ("t*16|Et*16L", ["first stage"]),
    ("Et*16|t*16X", ["unknown slot", "'X'"]),
])
def test_a_layout_that_does_not_fit_names_both_counts(layout, words):
    with pytest.raises(ConfigError) as exc:
        cfg({"pipeline_model_parallel_layout": layout})
    for w in words:
        assert w in str(exc.value)


def test_uneven_even_split_without_a_layout_names_the_fix():
    with pytest.raises(ConfigError, match="pipeline_model_parallel_layout"):
        cfg({"pp": 4, "vpp": 2, "account_for_embedding_in_pipeline_split": True},
            model={"num_layers": 32})


# --- gradient reduction dtype ------------------------------------------------------------------

def _dp_bytes(c) -> float:
    return sum(r.wg[2] for r in simai_rows(c) if r.wg[2])


def test_bf16_gradient_reduction_halves_data_parallel_bytes():
    fp32 = cfg(training={"grad_reduce_dtype": "fp32"})
    bf16 = cfg(training={"grad_reduce_dtype": "bf16"})
    assert not bf16.training.grad_reduce_in_fp32
    assert _dp_bytes(bf16) == pytest.approx(_dp_bytes(fp32) / 2, rel=1e-6)
    assert estimate_stage_memory(bf16, 0).gradients == \
        pytest.approx(estimate_stage_memory(fp32, 0).gradients / 2)


def test_unknown_grad_reduce_dtype_is_one_line():
    with pytest.raises(ConfigError, match="grad_reduce_dtype='tf16'"):
        cfg(training={"grad_reduce_dtype": "tf16"})


# --- partial and selective recompute -----------------------------------------------------------

def test_partial_recompute_lands_between_none_and_full():
    runs = {n: cfg({"recompute": "full", "recompute_num_layers": n}) for n in (4, 12)}
    none, full = cfg({"recompute": "none"}), cfg({"recompute": "full"})
    t = {k: simulate(c).iteration_time_s for k, c in {**runs, "none": none, "full": full}.items()}
    mem = {k: estimate_stage_memory(c, 0).activations
           for k, c in {**runs, "none": none, "full": full}.items()}
    assert t["none"] < t[4] < t[12] < t["full"]
    assert mem["none"] > mem[4] > mem[12] > mem["full"]


def test_recompute_num_layers_counts_per_model_chunk():
    c = cfg({"recompute": "full", "recompute_num_layers": 2, "vpp": 2})
    # 4 chunks (2 stages x 2) of 8 layers: the first 2 of each
    assert sorted(c.recomputed_layers) == [0, 1, 8, 9, 16, 17, 24, 25]


def test_selective_modules_trade_memory_for_time():
    core = cfg({"recompute": "selective"})
    mlp = cfg({"recompute": "selective", "recompute_modules": ["core_attn", "mlp"]})
    assert simulate(mlp).iteration_time_s > simulate(core).iteration_time_s
    assert estimate_stage_memory(mlp, 0).activations < estimate_stage_memory(core, 0).activations


def test_recompute_modules_are_read_as_cuda_graph_scope_is():
    # fuzz9 (22nd session): 'mlp, core_attn' (a space after the comma) and 'MLP' were refused
    # as unknown modules ' core_attn' and 'MLP', while cuda_graph_scope strips and lower-cases
    plain = cfg({"recompute": "selective", "recompute_modules": ["mlp", "core_attn"]})
    for written in ("mlp, core_attn", "MLP;Core_Attn", [" mlp", "CORE_ATTN "]):
        got = cfg({"recompute": "selective", "recompute_modules": written})
        assert got.parallel.recompute_modules == ("mlp", "core_attn")
        assert got == plain


def test_unknown_recompute_module_suggests_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'moe_act'"):
        cfg({"recompute": "selective", "recompute_modules": ["moe_ac"]})


# --- MoE: token dropping and dispatchers -------------------------------------------------------

def moe(parallel=None, model=None):
    return run_config_from_dict({
        "model": {"preset": "qwen3-30b-a3b", **(model or {})},
        "parallel": {"tp": 1, "pp": 1, "ep": 8, **(parallel or {})},
        "training": {"global_batch_size": 32, "micro_batch_size": 1, "seq_length": 4096},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "gpus_per_node": 8}})


def test_token_dropping_moe_has_static_shapes(monkeypatch):
    skewed = {"moe_token_imbalance": 1.6}
    dropless = simulate(moe()).iteration_time_s
    assert simulate(moe(model=skewed)).iteration_time_s > dropless  # the busiest rank waits
    capped = {"moe_capacity_factor": 1.25, "moe_pad_expert_input_to_capacity": True}
    # padded to capacity: the same shapes whatever the routing does
    assert simulate(moe(model=capped)).iteration_time_s == \
        simulate(moe(model={**capped, **skewed})).iteration_time_s
    # the padding is more GPU work; only dropless routing makes the host wait for the counts
    monkeypatch.setattr(host, "HOST_S_PER_KERNEL", 0.0)
    assert simulate(moe(model=capped)).iteration_time_s > simulate(moe()).iteration_time_s


def test_token_dropping_without_padding_keeps_dynamic_shapes():
    """Megatron-core pads the experts' inputs only with moe_pad_expert_input_to_capacity
    (core_v0.14.0 token_dispatcher.py ``drop_and_pad``; default False): a capacity factor
    alone drops tokens, the busiest rank still waits up to the capacity."""
    dropping = {"moe_capacity_factor": 1.25}
    skewed = {**dropping, "moe_token_imbalance": 1.6}
    assert simulate(moe(model=skewed)).iteration_time_s > simulate(moe(model=dropping)).iteration_time_s
    padded = {**skewed, "moe_pad_expert_input_to_capacity": True}
    assert simulate(moe(model=padded)).iteration_time_s == \
        simulate(moe(model={**padded, "moe_token_imbalance": 1.0})).iteration_time_s
    with pytest.raises(ConfigError, match="needs model.moe_capacity_factor"):
        moe(model={"moe_pad_expert_input_to_capacity": True})


def test_dispatchers_are_different_mechanisms():
    # top-2 routing over 8 ranks: the all-to-all sends 2 copies of a token, the all-gather 7
    # (at top-8 over 8 ranks the two move the same bytes and only their kernels differ)
    times = {d: simulate(moe({"moe_token_dispatcher_type": d},
                             {"moe_router_topk": 2})).iteration_time_s
             for d in ("alltoall", "allgather", "deepep")}
    # all-gather moves every token of the EP group to every rank: the most bytes
    assert times["allgather"] > times["alltoall"]
    # DeepEP sends a token once per node and fuses the permutation: no slower
    assert times["deepep"] <= times["alltoall"]


def test_unknown_dispatcher_suggests_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'alltoall'"):
        moe({"moe_token_dispatcher_type": "alltoal"})


# --- fp8 recipes and attention kernels ---------------------------------------------------------

def test_current_scaling_costs_one_more_read_than_delayed():
    # on Blackwell: TE refuses MXFP8 below compute capability 10.0
    t = {r: simulate(cfg(training={"dtype": "fp8", "fp8_recipe": r},
                         cluster={"gpu": "b200-sxm-180gb"})).iteration_time_s
         for r in ("delayed", "current", "mxfp8")}
    assert t["delayed"] < t["mxfp8"] < t["current"]


def test_attention_implementations_are_separate_kernels():
    t = {a: simulate(cfg(training={"attention": a})).iteration_time_s
         for a in ("unfused", "flash1", "flash2")}
    assert t["flash2"] < t["flash1"] < t["unfused"]
    assert cfg(training={"attention": "flash"}).training.attention == "flash2"
    with pytest.raises(ConfigError, match="did you mean 'flash3'"):
        cfg(training={"attention": "flash33"})


def _bridge_moe_row(**cells: str) -> dict[str, str]:
    row = {"id": "t", "model": "deepseek-v3", "gpu": "b200-sxm-180gb", "num_gpus": "256",
           "gpus_per_node": "8", "tp": "1", "pp": "8", "ep": "32", "global_batch_size": "4096",
           "seq_length": "4096", "micro_batch_size": "1", "framework": "megatron-bridge",
           "framework_version": "26.04", "measured_iteration_s": "1"}
    row.update(cells)
    return row


def test_tuner_tries_recipe_recompute_modules_and_deepep_where_the_framework_has_them():
    from trainsim.validate.row_settings import training_base, with_choice

    raw, unknown = training_base(_bridge_moe_row())
    assert "selective:mla_up_proj;mlp" in unknown["recompute"]  # MLA + MoE model
    assert "selective:layernorm;moe_act" in unknown["recompute"]
    assert unknown["moe_token_dispatcher_type"] == ["alltoall", "deepep", "hybridep"]
    cfg = run_config_from_dict(with_choice(raw, {"recompute": "selective:mla_up_proj;mlp",
                                           "moe_token_dispatcher_type": "deepep",
                                           "pipeline_model_parallel_layout": "balanced"}))
    assert cfg.parallel.recompute_modules == ("mla_up_proj", "mlp")
    assert cfg.parallel.moe_token_dispatcher_type == "deepep"
    # a stated dispatcher is kept; a framework without recompute modules gets none, and a
    # dense model only core attention
    _, stated = training_base(_bridge_moe_row(moe_dispatcher="alltoall"))
    assert "moe_token_dispatcher_type" not in stated
    _, old = training_base(_bridge_moe_row(framework="megatron-core", framework_version="0.9"))
    assert old["recompute"] == ["none", "selective", "full"]
    assert "moe_token_dispatcher_type" not in old
    _, dense = training_base(_bridge_moe_row(model="llama3-70b", ep="1"))
    assert dense["recompute"] == ["none", "selective", "full"]


def test_padding_to_capacity_is_refused_with_deepep():
    """Megatron-core transformer_config.py (core_v0.14.0-core_v0.19.0): 'Flex token dispatcher
    with deepep backend does not support moe_pad_expert_input_to_capacity'; the all-to-all
    dispatcher and HybridEP (from core_v0.16.0) accept it."""
    padded = {"moe_capacity_factor": 1.25, "moe_pad_expert_input_to_capacity": True}
    for ok in ("alltoall", "allgather", "hybridep"):
        assert moe({"moe_token_dispatcher_type": ok}, padded).model.moe_padded_to_capacity
    with pytest.raises(ConfigError, match="moe_pad_expert_input_to_capacity.*deepep"):
        moe({"moe_token_dispatcher_type": "deepep"}, padded)


def test_front_loaded_layout_puts_the_remainder_on_the_first_virtual_stages():
    """NeMo Automodel's split (pipelining/functional.py generate_hf_model_fqn_per_model_part @
    89e3a9fd): 61 layers over 4 x 8 virtual stages are 2 layers on stages 0-28 and 1 on
    29-31, the embedding first and the loss last."""
    from trainsim.config.layout import balanced_layout, filled_layout, front_loaded_layout
    from trainsim.validate.row_settings import training_base

    stages = front_loaded_layout(61, 0, 4, 8)
    assert stages[0] == "Ett" and stages[28] == "tt" and stages[29] == "t"
    assert stages[-1] == "tL" and "".join(stages).count("t") == 61
    assert front_loaded_layout(5, 1, 2, 1) == ("Ettt", "ttmL")
    with pytest.raises(ConfigError, match=re.escape(
            "model.num_layers=3 cannot fill parallel.pp*vpp=2*2=4 virtual stages "
            "(pipeline_model_parallel_layout=front_loaded)")):
        front_loaded_layout(3, 0, 2, 2)
    with pytest.raises(ConfigError, match=re.escape(
            "model.num_layers=1 (+ 2 embedding, MTP and loss slots) cannot fill "
            "parallel.pp*vpp=2*2=4 virtual stages (pipeline_model_parallel_layout=balanced)")):
        balanced_layout(1, 0, 2, 2)
    _, unknown = training_base(_bridge_moe_row(framework="automodel", framework_version="0.1",
                                                pp="4", vpp="8"))
    assert unknown["pipeline_model_parallel_layout"] == ["front_loaded"]
    # Megatron-Bridge places an MTP model's layers by its DeepSeek-V3 recipe's filling rule,
    # which at 4 x 8 virtual stages leaves a stage empty and so is the balanced layout
    # (config.layout.filled_layout, tests/test_filled_layout.py)
    _, bridge = training_base(_bridge_moe_row(pp="4", vpp="8"))
    assert bridge["pipeline_model_parallel_layout"] == ["filled"]
    assert filled_layout(61, 1, 4, 8) == balanced_layout(61, 1, 4, 8)
    cfg = run_config_from_dict({
        "model": "deepseek-v3", "parallel": {"tp": 1, "pp": 4, "vpp": 8, "ep": 8,
                                             "pipeline_model_parallel_layout": "front_loaded"},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 32, "gpus_per_node": 8}})
    assert cfg.stage_layer_counts == (16, 15, 15, 15)
