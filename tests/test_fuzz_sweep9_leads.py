"""Leads of the ninth robustness sweep (22nd session, fixf), each failing on main 8564352:
a config.json field left out or null read with trainsim's defaults instead of its family's
transformers config class; two ``--set`` spellings of one parallel field (the last won);
a Megatron-core layout that does not start with the embedding and end with the loss; and
Megatron's space-separated ``--recompute-modules`` list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainsim.catalog import apply_overrides, model_from_hf_config, run_config_from_dict
from trainsim.catalog.hf_defaults import ALIASES, NOT_NULL, NULLABLE
from trainsim.config.layout import check_layout, parse_layout
from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
GEMMA2 = {"model_type": "gemma2", "hidden_size": 2304, "num_hidden_layers": 4,
          "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
          "vocab_size": 1000, "intermediate_size": 9216}
GLM = {"model_type": "glm4_moe", "hidden_size": 1024, "num_hidden_layers": 4,
       "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000,
       "intermediate_size": 4096, "moe_intermediate_size": 512, "n_routed_experts": 8,
       "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1,
       "hidden_act": "silu"}
DBRX = {"model_type": "dbrx", "d_model": 1024, "n_heads": 8, "n_layers": 4, "vocab_size": 1000,
        "attn_config": {"kv_n_heads": 1}, "ffn_config": {"ffn_hidden_size": 2048,
                                                         "moe_num_experts": 4, "moe_top_k": 1}}


def _model(tmp_path: Path, cfg: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return model_from_hf_config(path)


def _without(cfg: dict, key: str) -> dict:
    return {k: v for k, v in cfg.items() if k != key}


# --- 1. config.json fields left out or null ----------------------------------------------------

@pytest.mark.parametrize(("cfg", "key"), [
    (GEMMA2, "intermediate_size"),  # Gemma2Config 9216 (was trainsim's default: -21 %)
    (GEMMA2, "num_key_value_heads"),  # Gemma2Config 4
    (GLM, "first_k_dense_replace"),  # Glm4MoeConfig 1 (was 0: +2 %)
    (GLM, "hidden_act"),  # Glm4MoeConfig 'silu' (was a GELU MLP: -32 %)
    (GLM, "n_shared_experts"),  # Glm4MoeConfig 1
])
def test_a_left_out_field_takes_its_class_default(tmp_path, cfg, key):
    # the written values above are the transformers 5.24.0 class defaults (hf_defaults)
    assert _model(tmp_path, _without(cfg, key)) == _model(tmp_path, cfg)


def test_dbrx_kv_heads_left_out_is_one_and_null_is_refused(tmp_path):
    written = _model(tmp_path, DBRX)
    assert written.num_kv_heads == 1
    assert _model(tmp_path, {**DBRX, "attn_config": {}}) == written
    with pytest.raises(ConfigError, match=r"attn_config.kv_n_heads is null") as err:
        _model(tmp_path, {**DBRX, "attn_config": {"kv_n_heads": None}})  # was MHA: +7.7 %
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("cfg", "key"), [(GEMMA2, "intermediate_size"), (GLM, "hidden_act"),
                                          (GLM, "first_k_dense_replace")])
def test_a_null_without_a_null_meaning_is_refused_in_one_line(tmp_path, cfg, key):
    with pytest.raises(ConfigError, match=f"{key} is null") as err:
        _model(tmp_path, {**cfg, key: None})
    assert "\n" not in str(err.value)


def test_a_null_with_a_meaning_keeps_it(tmp_path):
    # Gemma2Config.sliding_window is ``int | None`` (4096): null is no window, left out 4096
    assert _model(tmp_path, {**GEMMA2, "sliding_window": None}).sliding_window is None
    assert _model(tmp_path, GEMMA2).sliding_window == 4096


def test_the_table_is_transformers_own():
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != "5.24.0":
        pytest.skip("the table was written with transformers 5.24.0")
    import dataclasses

    from transformers import CONFIG_MAPPING
    for kind in set(NOT_NULL) | set(NULLABLE):
        fields = {f.name: f for f in dataclasses.fields(CONFIG_MAPPING[kind])}
        for table, nullable in ((NOT_NULL, False), (NULLABLE, True)):
            for key, value in table.get(kind, {}).items():
                assert fields[key].default == value, (kind, key)
                assert ("None" in str(fields[key].type)) == nullable, (kind, key)


MIXTRAL = {"model_type": "mixtral", "hidden_size": 1024, "num_hidden_layers": 4,
           "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000,
           "intermediate_size": 2048, "num_experts_per_tok": 2}


@pytest.mark.parametrize(("kind", "experts"), [("mixtral", 4), ("gpt_oss", 16)])
def test_a_field_given_under_its_alias_takes_no_class_default(tmp_path, kind, experts):
    # MixtralConfig / GptOssConfig.attribute_map {"num_experts": "num_local_experts"}:
    # transformers 5.24.0 reads num_experts 4 as 4 experts (was the class default 8 / 128)
    cfg = {**MIXTRAL, "model_type": kind, "num_experts": experts}
    if kind == "gpt_oss":
        cfg.update(head_dim=128, num_experts_per_tok=4)
    assert _model(tmp_path, cfg).num_experts == experts
    named = {**_without(cfg, "num_experts"), "num_local_experts": experts}
    assert _model(tmp_path, named) == _model(tmp_path, cfg)


def test_the_alias_table_is_transformers_own():
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != "5.24.0":
        pytest.skip("the table was written with transformers 5.24.0")
    from transformers import CONFIG_MAPPING
    for kind in set(NOT_NULL) | set(NULLABLE) | set(ALIASES):
        assert ALIASES.get(kind, {}) == dict(CONFIG_MAPPING[kind].attribute_map), kind


def test_every_left_out_field_reads_as_the_class_default(tmp_path):
    # each family's default config.json, one table field left out at a time: the same model
    # as written (main 8564352: 143 of 279 differed)
    pytest.importorskip("transformers")
    from transformers import AutoConfig
    differ = []
    from trainsim.catalog.hf_families import LINEAR_INTERVAL_TYPES
    for kind in sorted((set(NOT_NULL) | set(NULLABLE)) - LINEAR_INTERVAL_TYPES):
        # (Qwen3-Next and Qwen3.5 are refused whole since fuzz31: gated attention)
        made = _attention_only(AutoConfig.for_model(kind).to_dict())
        if made.get("num_experts_per_tok", 0) is None:  # DeepSeek-V2's class has no top-k
            made["num_experts_per_tok"] = 6
        with pytest.warns() if "text_config" in made else _nothing():
            full = _model(tmp_path, made)
        for key in {**NOT_NULL.get(kind, {}), **NULLABLE.get(kind, {})}:
            if key in made and _model(tmp_path, _without(made, key)) != full:
                differ.append((kind, key))
    assert differ == []


def _attention_only(made: dict) -> dict:
    # a hybrid family's class default (Qwen3-Next, Qwen3.5: Gated DeltaNet between every
    # fourth full-attention layer) is refused as not modelled; its fields are still read, so
    # the check runs on the same config with every layer a full-attention one
    types = made.get("layer_types")
    if isinstance(types, list) and "linear_attention" in types:
        made = {**made, "layer_types": ["full_attention"] * len(types)}
    return made


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --- 2. two --set spellings of one field --------------------------------------------------------

BASE = {"model": "llama3-8b", "parallel": {}, "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 2048}}


def test_set_refuses_two_spellings_with_different_values_as_a_file_does():
    with pytest.raises(ConfigError) as in_file:
        run_config_from_dict({**BASE, "parallel": {"tp": 2, "tensor_model_parallel_size": 4}})
    for order in (["parallel.tp=2", "parallel.tensor_model_parallel_size=4"],
                  ["parallel.tensor_model_parallel_size=4", "parallel.tp=2"]):
        with pytest.raises(ConfigError) as by_set:
            apply_overrides(BASE, order)
        assert str(by_set.value) == str(in_file.value)
    with pytest.raises(ConfigError, match="the same field"):
        apply_overrides(BASE, ["parallel.num_distributed_optimizer_instances=2",
                               "parallel.data_parallel_replicate_degree=4"])


def test_set_accepts_two_spellings_with_one_value_and_overrides_the_file():
    cfg = run_config_from_dict(apply_overrides(BASE, ["parallel.tp=2",
                                                      "parallel.tensor_model_parallel_size=2"]))
    assert cfg.parallel.tp == 2
    in_file = {**BASE, "parallel": {"tensor_model_parallel_size": 4}}
    assert run_config_from_dict(apply_overrides(in_file, ["parallel.tp=2"])).parallel.tp == 2


# --- 3. Megatron-core layout order ---------------------------------------------------------------

def test_a_layout_must_start_with_the_embedding_and_end_with_the_loss():
    # Megatron-core PipelineParallelLayerLayout.validate_layer_layout: flatten_layout[0] is
    # the embedding, [-1] the loss; 'LEt*32' at pp 1 put the loss first
    for text in ("LEt*32", "Et*31Lt", "tEt*31L"):
        with pytest.raises(ConfigError, match="must start with the embedding") as err:
            check_layout(parse_layout(text), text, 32, 0, 1, 1)
        assert "\n" not in str(err.value)
    check_layout(parse_layout("Et*32L"), "Et*32L", 32, 0, 1, 1)
    check_layout(parse_layout("Et*16|t*16L"), "Et*16|t*16L", 32, 0, 2, 1)


def test_a_decoder_layer_after_an_mtp_layer_is_refused():
    with pytest.raises(ConfigError, match="after an MTP layer"):
        check_layout(parse_layout("Et*3|mt|L"), "Et*3|mt|L", 4, 1, 3, 1)
    check_layout(parse_layout("Et*3|tm|L"), "Et*3|tm|L", 4, 1, 3, 1)


def test_a_simulated_layout_out_of_order_is_refused():
    with pytest.raises(ConfigError, match="must start with the embedding"):
        run_config_from_dict({**BASE, "parallel": {"pipeline_model_parallel_layout": "LEt*32"}})


# --- 4. Megatron's space-separated --recompute-modules -------------------------------------------

@pytest.mark.parametrize("written", ["mlp core_attn", "  MLP   core_attn ", ["mlp core_attn"],
                                     "mlp core_attn,", "mlp;core_attn"])
def test_space_separated_recompute_modules_read_as_megatron_argparse_does(written):
    # megatron/training/arguments.py: --recompute-modules nargs='*' (the shell's words)
    def run(modules):
        return run_config_from_dict({**BASE, "parallel": {"recompute": "selective",
                                                          "recompute_modules": modules}})
    got = run(written)
    assert got.parallel.recompute_modules == ("mlp", "core_attn")
    assert got == run(["mlp", "core_attn"])
    cli = apply_overrides(BASE, ["parallel.recompute=selective",
                                 "parallel.recompute_modules=mlp core_attn"])
    assert run_config_from_dict(cli) == got
    with pytest.raises(ConfigError, match="unknown module 'corattn'"):
        run("mlp corattn")


def test_a_row_cell_written_space_separated_predicts_as_the_published_one(tmp_path):
    # the one public row with recompute_modules ('mla_up_proj;mlp'), once more with spaces
    import csv

    from helpers import cli

    public = ROOT / "src/trainsim/data/validation/training_public.csv"
    with public.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("recompute_modules")]
    spaced = {**rows[0], "recompute_modules": rows[0]["recompute_modules"].replace(";", " ")}
    spaced[next(iter(spaced))] += "-spaced"
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([rows[0], spaced])
    out = cli("validate", str(path), "--format", "json")  # in-process, the default workers
    got = json.loads(out.stdout)["rows"]
    assert [r.get("error") for r in got] == [None, None]
    assert got[0]["predicted"] == got[1]["predicted"]
