"""Sixth robustness sweep (benchmarks/fuzz_sweep6.py, 20th session): how the numbers and
spellings a user types reach the config (YAML 1.1's readings, framework versions written as
numbers, the command line's --set), each class checked failing before its fix, then a fast
seeded sample of the sweep."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainsim.catalog import load_run_config, run_config_from_dict
from trainsim.cli import main
from trainsim.config.safe_load import parse
from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "llama3-8b-h100.yaml")
SCRIPT = ROOT / "benchmarks" / "fuzz_sweep6.py"


def _cli(*args: str):
    return CliRunner().invoke(main, list(args), env={"TRAINSIM_DEBUG": "1"})


# ------------------------------------------------- YAML 1.1 numbers that read as others

@pytest.mark.parametrize("text, reads", [("1:30", "90"), ("2:16:32", "8192"), ("1:30.5", "90.5"),
                                         ("010", "8"), ("-010", "-8"), ("0_10", "8"),
                                         ("0b11", "binary number 3"), ("-0b1_0", "-2")])
def test_a_base60_or_octal_yaml_number_is_refused_naming_what_yaml_reads(text, reads):
    # PyYAML (YAML 1.1) reads seq_length: 2:16:32 as 8192 and num_gpus: 010 as 8, silently
    with pytest.raises(ConfigError, match=f"reads as .*{reads}"):
        parse(f"seq_length: {text}\n", "run.yaml")


@pytest.mark.parametrize("text, value", [("0", 0), ("10", 10), ("0x10", 16), ("'0b11'", "0b11"),
                                         ("1_024", 1024), ("'1:30'", "1:30"), ("'010'", "010"),
                                         ("1.5", 1.5), ("1.0e+3", 1000.0)])
def test_plain_yaml_numbers_and_quoted_text_still_read(text, value):
    assert parse(f"a: {text}\n", "run.yaml")["a"] == value


def test_a_base60_value_on_the_command_line_is_refused_as_the_yaml_loader_refuses_it():
    # --set reads a value as a YAML file does (review 20c finding 6), refusals included
    r = _cli("simulate", EXAMPLE, "--set", "training.seq_length=1:30")
    assert r.exit_code == 2
    # (fuzz16: without the YAML reader's "line 1: ", which says nothing of one value)
    assert r.stderr.strip() == ("error: --set training.seq_length: '1:30' reads as a "
                                "base-60 integer in YAML 1.1 (90); write the number, or quote "
                                "it for text")


# ------------------------------------------------- a version written as a number

YAML_RUN = """model: llama3-8b
parallel: {tp: 2}
training: {global_batch_size: 128, seq_length: 8192, framework: megatron-core,
           framework_version: 0.10}
cluster: {node: dgx-h100, num_gpus: 8}
"""
JSON_RUN = json.dumps({"model": "llama3-8b", "parallel": {"tp": 2},
                       "training": {"global_batch_size": 128, "seq_length": 8192,
                                    "framework": "megatron-core", "framework_version": 0.25},
                       "cluster": {"node": "dgx-h100", "num_gpus": 8}}).replace("0.25", "0.10")


@pytest.mark.parametrize("fmt", ["yaml", "json", "set"])
def test_a_framework_version_written_as_a_number_keeps_its_digits(fmt, tmp_path):
    # framework_version: 0.10 (Megatron-core 0.10) was the float 0.1, str() '0.1': an older
    # profile entry, silently (llama3-8b example: 22.4 s instead of 13.5 s)
    if fmt == "set":
        cfg = load_run_config(EXAMPLE, ["training.framework=megatron-core",
                                        "training.framework_version=0.10"])
        quoted = load_run_config(EXAMPLE, ["training.framework=megatron-core",
                                           "training.framework_version='0.10'"])
    else:
        path = tmp_path / f"run.{fmt}"
        path.write_text(YAML_RUN if fmt == "yaml" else JSON_RUN)
        cfg = load_run_config(path)
        quoted = load_run_config(path, ["training.framework_version='0.10'"])
    assert cfg.training.framework_version == "0.10"
    assert cfg == quoted


def test_a_version_number_in_an_error_is_shown_as_written():
    r = _cli("simulate", EXAMPLE, "--set", "training.framework_version=1.10")
    assert r.exit_code == 2
    assert "framework_version=1.10 needs training.framework" in r.stderr


def test_a_number_kept_as_written_still_computes_and_serialises_as_the_float():
    data = parse("a: 0.10\nb: [2.50]\n", "x.yaml")
    assert data["a"] == 0.1 and data["a"] * 2 == 0.2 and str(data["b"][0]) == "2.50"
    assert json.dumps(data) == '{"a": 0.1, "b": [2.5]}'
    cfg = run_config_from_dict({"model": "llama3-8b", "parallel": {"tp": 2},
                                "training": {"global_batch_size": 128, "seq_length": 8192,
                                             "train_tokens": parse("t: 1.50e+9", "x")["t"]},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    assert type(cfg.training.train_tokens) is float  # a plain float in the config


# ------------------------------------------------- a byte-order mark

@pytest.mark.parametrize("name", ["run.json", "run.yaml"])
def test_a_config_file_with_a_utf8_byte_order_mark_reads(name, tmp_path):
    # JSON with the BOM Windows editors write was 'not valid JSON: Unexpected UTF-8 BOM'
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + JSON_RUN.encode())
    assert load_run_config(path).cluster.num_gpus == 8


# ------------------------------------------------- a 0/1 cell written as a float

@pytest.mark.parametrize("cell, on", [("1.0", True), ("0.0", False), (" 1.0 ", True),
                                      ("1e0", True)])
def test_a_switch_written_as_a_float_zero_or_one_reads_as_off_or_on(cell, on):
    # pandas writes a 0/1 column that has empty cells as 1.0/0.0; tp 2.0 was read, SP 1.0
    # refused ('must be true/false')
    cfg = load_run_config(EXAMPLE, [f"parallel.sequence_parallel='{cell}'"])
    assert cfg.parallel.sequence_parallel is on


@pytest.mark.parametrize("cell", ["0.5", "2.0", "nan", "-1.0"])
def test_a_switch_written_as_another_number_is_still_refused(cell):
    with pytest.raises(ConfigError, match="must be true/false"):
        load_run_config(EXAMPLE, [f"parallel.sequence_parallel='{cell}'"])


# ------------------------------------------------- the sweep itself, a fast seeded sample

def _sweep6():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("fuzz_sweep6", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_seeded_sample_of_the_sixth_sweep_finds_no_failure(capsys):
    """At most 12 seeded inputs of every surface (the slow twin below runs all 496)."""
    mod = _sweep6()
    assert mod.main(["--seed", "1", "--n", "1", "--limit", "12"]) == 0, \
        capsys.readouterr().out
    out = capsys.readouterr().out
    counts = dict(re.findall(r"(\w+) (\d+)", out.split("inputs ", 1)[1].split(")")[0]))
    assert set(counts) == set(mod.SURFACES) and set(counts.values()) == {"12"}, out


@pytest.mark.slow
def test_the_seeded_sixth_sweep_with_one_value_per_option_finds_no_failure(capsys):
    assert _sweep6().main(["--seed", "1", "--n", "1"]) == 0, capsys.readouterr().out


# ------------------------------------------------- a Hugging Face config.json of another family

GEMMA_7B = {  # google/gemma-7b config.json (the fields trainsim reads)
    "architectures": ["GemmaForCausalLM"], "attention_bias": False, "head_dim": 256,
    "hidden_act": "gelu", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3072,
    "intermediate_size": 24576, "max_position_embeddings": 8192, "model_type": "gemma",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 16,
    "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "vocab_size": 256000}


def test_a_gemma_config_is_a_gated_mlp_with_tied_embeddings(tmp_path):
    # GemmaMLP is gate/up/down whatever hidden_act says, and GemmaConfig ties the embeddings;
    # was a 2-matrix MLP, untied: 6.42e9 parameters instead of Gemma 7B's 8.54e9
    from trainsim.catalog import model_from_hf_config
    from trainsim.model.counts import total_params

    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA_7B))
    m = model_from_hf_config(path)
    assert m.activation == "swiglu" and m.tied_embeddings
    h, f, layers = 3072, 24576, 28
    attention = 4 * h * 16 * 256  # q, k, v (16 kv heads) and o, head_dim 256
    per_layer = attention + 3 * h * f + 2 * h  # + the two RMSNorms
    assert total_params(m) == layers * per_layer + 256000 * h + h == 8_537_680_896


def test_a_multimodal_config_reads_its_text_config(tmp_path):
    # was refused naming text_config; fuzz7 reads it (tests/test_fuzz_sweep7.py)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3", "text_config": GEMMA_7B,
                                "vision_config": {"hidden_size": 1152}}))
    from trainsim.catalog import model_from_hf_config

    with pytest.warns(UserWarning, match="from text_config"):
        assert model_from_hf_config(path).hidden_size == 3072


def test_a_sweep_of_framework_versions_keeps_each_as_written():
    # sweep --vary training.framework_version=0.10,0.12 ran 0.10 as '0.1'
    from trainsim.search.whatif import Vary

    vary = Vary.parse("training.framework_version=0.10,0.12,2.0,1.5e3")
    # a text field holds the text (fuzz7: as --set training.framework_version=2.0 reads it)
    assert list(vary.values) == ["0.10", "0.12", "2.0", "1.5e3"]
    number = Vary.parse("cluster.nvlink_gbyte_s=0.10,450")
    assert number.values == (0.1, 450) and str(number.values[0]) == "0.10"


# ------------------------------------------------- control characters reaching the terminal

@pytest.mark.parametrize("text", ["a\x1b[31mRED", "a\nb", "tab\there", "bell\x07", "c1\x9b2J"])
def test_a_text_field_with_a_control_character_is_refused(text):
    # model.name reached the report's title raw: an ESC sequence restyled the terminal
    with pytest.raises(ConfigError, match="not printable"):
        run_config_from_dict({"model": {"preset": "llama3-8b", "name": text},
                              "training": {"global_batch_size": 8, "seq_length": 128},
                              "cluster": {"node": "dgx-h100", "num_gpus": 8}})


def test_printable_unicode_text_is_kept():
    cfg = run_config_from_dict({"model": {"preset": "llama3-8b", "name": "café 模型 ü"},
                                "training": {"global_batch_size": 8, "seq_length": 128},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    assert cfg.model.name == "café 模型 ü"


def test_a_validation_id_with_a_control_character_is_printed_escaped(tmp_path):
    import csv

    src = ROOT / "src" / "trainsim" / "data" / "validation" / "training_public.csv"
    rows = list(csv.DictReader(src.open(newline="", encoding="utf-8")))
    row = {**rows[0], "id": "r\x1b[31mRED", "note": "two\nlines"}
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, list(row))
        w.writeheader()
        w.writerow(row)
    r = _cli("validate", str(path), "--workers", "1")
    assert r.exit_code == 0 and "\x1b" not in r.stdout
    assert "r\\x1b[31mRED" in r.stdout


@pytest.mark.parametrize("key, value, field, want", [
    ("tie_word_embeddings", "false", "tied_embeddings", False),
    ("tie_word_embeddings", "true", "tied_embeddings", True),
    ("attention_bias", "false", "add_bias_linear", False),
    ("use_sliding_window", "false", "sliding_window", None)])
def test_a_config_json_switch_written_as_text_reads_as_written(tmp_path, key, value, field, want):
    # bool("false") is True: a hand-written config.json with "false" tied the embeddings
    from trainsim.catalog import model_from_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA_7B, "sliding_window": 4096, key: value}))
    assert getattr(model_from_hf_config(path), field) == want


def test_a_config_json_tie_left_out_is_the_class_default_and_null_is_refused(tmp_path):
    # GemmaConfig.tie_word_embeddings: bool, default True (transformers 5.24.0); a null was read
    # as that default here until fixf (22nd session): transformers refuses it
    # (StrictDataclassFieldValidationError from AutoConfig.from_pretrained), so trainsim does
    from trainsim.catalog import model_from_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA_7B, "sliding_window": 4096}))
    assert model_from_hf_config(path).tied_embeddings is True
    path.write_text(json.dumps({**GEMMA_7B, "sliding_window": 4096,
                                "tie_word_embeddings": None}))
    with pytest.raises(ConfigError, match="tie_word_embeddings is null"):
        model_from_hf_config(path)


def test_a_config_json_switch_of_another_word_is_refused(tmp_path):
    from trainsim.catalog import model_from_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA_7B, "tie_word_embeddings": "maybe"}))
    with pytest.raises(ConfigError, match="tie_word_embeddings must be true/false"):
        model_from_hf_config(path)


# ------------------------------------------------- a preset named as on the Hugging Face hub

def test_search_takes_a_preset_by_its_hugging_face_name():
    # 'meta-llama/Llama-3.1-8B' resolves to the llama3.1-8b preset everywhere else; search and
    # plan refused it as 'no such file' (the '/' read as a directory)
    from trainsim.search.cli_inputs import model_spec

    assert model_spec("meta-llama/Llama-3.1-8B") == "meta-llama/Llama-3.1-8B"
    with pytest.raises(ConfigError, match="no such file"):
        model_spec("meta-llama/No-Such-Model-8B")


# ------------------------------------------------- review findings (20th session, fixin)

GPU_FILE = """name: what-if-h100
peak_tflops: {bf16: 989.4, fp8: 1978.9}
hbm_gib: 80
hbm_gbyte_s: 3352
nvlink_gbyte_s: 450
num_sms: 132
l2_mib: 50
tdp_w: 700
"""


@pytest.mark.parametrize("source, want", [
    ("source: >\n  NVIDIA H100 datasheet,\n  dense peaks\n", "NVIDIA H100 datasheet, dense peaks\n"),
    ("source: |\n  NVIDIA H100 datasheet\n  ml-engineering MAMF table\n",
     "NVIDIA H100 datasheet\nml-engineering MAMF table\n"),
    ("source: \"datasheet\\tp. 3\"\n", "datasheet\tp. 3")])
def test_a_gpu_files_free_text_source_may_span_lines(tmp_path, source, want):
    # the control-character check refused YAML's folded and literal blocks (a line break)
    from trainsim.catalog import gpu_from_dict
    from trainsim.config.safe_load import load_file

    path = tmp_path / "gpu.yaml"
    path.write_text(GPU_FILE + source)
    assert gpu_from_dict(load_file(path)).source == want


@pytest.mark.parametrize("text", ["a\x1b[31m", "evil\u202egnp.exe", "\u2028", "nul\x00"])
def test_free_text_still_refuses_what_is_not_printable_beyond_breaks_and_tabs(tmp_path, text):
    from trainsim.catalog import gpu_from_dict

    data = {**parse(GPU_FILE, "gpu.yaml"), "source": text}
    with pytest.raises(ConfigError, match=r"gpu.source=.* not printable; free text"):
        gpu_from_dict(data)


@pytest.mark.parametrize("text", ["evil\u202egnp.exe\u2028line2", "zero\u200bwidth",
                                  "nb\u00a0space", "bom\ufeff"])
def test_a_name_that_is_not_printable_is_refused_not_only_unicode_cc(text):
    # a right-to-left override (Cf) and a line separator (Zl) reached the table header raw
    r = _cli("simulate", EXAMPLE, "--set", f"model.name={text}")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "model.name=" in r.stderr and "not printable" in r.stderr
    assert all(c.isprintable() for c in r.stderr.strip())


@pytest.mark.parametrize("field, text", [("parallel.sequence_parallel", "\u0661"),
                                         ("parallel.tp", "\u0662"), ("parallel.tp", "\uff12"),
                                         ("training.seq_length", "\u0668\u0661\u0669\u0662")])
def test_digits_of_other_scripts_are_refused(field, text):
    # Python's float reads '١' as 1.0: sequence_parallel=١ turned it on
    r = _cli("simulate", EXAMPLE, "--set", f"{field}={text}")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and " must be " in r.stderr
    assert f"got {text!r}" in r.stderr


def test_yaml_safe_dump_writes_a_written_number_as_written():
    import yaml

    data = parse("framework_version: 0.10\nb: [2.50]\n", "x.yaml")
    text = yaml.safe_dump(data)  # RepresenterError on main
    assert "framework_version: 0.10" in text and "- 2.50" in text
    back = parse(text, "y.yaml")
    assert str(back["framework_version"]) == "0.10" and str(back["b"]) == "[2.50]"


GEMMA2_9B = {"architectures": ["Gemma2ForCausalLM"], "head_dim": 256,
             "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
             "hidden_size": 3584, "intermediate_size": 14336, "max_position_embeddings": 8192,
             "model_type": "gemma2", "num_attention_heads": 16, "num_hidden_layers": 42,
             "num_key_value_heads": 8, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
             "rope_theta": 10000.0, "sliding_window": 4096, "sliding_window_size": 4096,
             "vocab_size": 256000}
"""google/gemma-2-9b's config.json (the fields trainsim reads): no layer_types."""


@pytest.mark.parametrize("changes, window, every", [
    ({}, 4096, 2),  # Gemma2Config: layer i sliding where (i + 1) % 2, the others global
    ({"sliding_window_pattern": 6}, 4096, 2),  # Gemma 2 reads no pattern: it alternates
    ({"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": 6}, 512, 6),
    ({"model_type": "gemma3_text", "sliding_window": 1024}, 1024, 6),  # Gemma3TextConfig's 6
    ({"model_type": "gemma3_text", "sliding_window_pattern": 4}, 4096, 4),
    ({"model_type": "gemma3_text", "sliding_window_pattern": 1}, None, None),  # all global
    ({"layer_types": ["sliding_attention", "full_attention"] * 21}, 4096, 2),
    ({"model_type": "mistral"}, 4096, None)])  # Mistral: the window on every layer
def test_a_gemma_config_json_without_layer_types_windows_the_layers_transformers_does(
        tmp_path, changes, window, every):
    # gemma-2-9b read sliding_window 4096 on all 42 layers; Gemma 2 alternates local and global
    from trainsim.catalog import model_from_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA2_9B, **changes}))
    m = model_from_hf_config(path)
    assert (m.sliding_window, m.window_attn_skip_freq) == (window, every)



@pytest.mark.parametrize("word", ["true", "False", "1", "0", "yes", "NO", "on", "off", " 1.0 "])
def test_a_config_json_switch_takes_the_words_a_run_config_switch_takes(tmp_path, word):
    # one definition (_build.switch): 'yes'/'on' passed in run configs, refused in config.json
    from trainsim.catalog import model_from_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA_7B, "tie_word_embeddings": word}))
    hf = model_from_hf_config(path).tied_embeddings
    run = run_config_from_dict({"model": "llama3-8b", "parallel": {"tp": 2,
                                                                    "sequence_parallel": word},
                                "training": {"global_batch_size": 8, "seq_length": 128},
                                "cluster": {"node": "dgx-h100", "num_gpus": 8}})
    assert hf is run.parallel.sequence_parallel is (word.strip().lower() in
                                                    ("true", "1", "yes", "on", "1.0"))


@pytest.mark.parametrize("path", ["cluster.nvlink_gbyte_s", "training.framework_version",
                                  "parallel.tp"])
def test_vary_reads_a_listed_number_as_set_and_yaml_do(path):
    # Vary turned 2.0 into the integer 2 ('2') where --set and a YAML file keep the float 2.0
    from trainsim.config.safe_load import parse_value
    from trainsim.search.whatif import Vary

    texts = ["2", "2.0", "0.10", "450", "+8"]
    vary = Vary.parse(f"{path}={','.join(texts)}")
    as_set = [parse_value(t, "--set") for t in texts]
    if path == "training.framework_version":  # a text field (config.run.text_field): the text
        as_set = [str(v) for v in as_set]  # the run reads ('+8' is 8, '8'; 0.10 stays '0.10')
    assert [str(v) for v in vary.values] == [str(v) for v in as_set]
    assert list(vary.values) == as_set


def test_yaml_merge_keys_read_as_the_merge_spec_says_under_every_pyyaml():
    """yaml.org/type/merge.html: of a list of merged maps the earlier wins, and a key given in
    the mapping beats every merged one. PyYAML 6.0.4's own flattening tells merged keys apart by
    the id of their text, so two inline maps giving one key let the later win (6.0.3: the
    earlier); the loader flattens merges itself."""
    def read(text: str):
        return parse(text, "merge.yaml")

    assert read("t:\n  <<: [{micro_batch_size: 2}, {micro_batch_size: 4}]\n") == \
        {"t": {"micro_batch_size": 2}}
    assert read("a: &a {x: 2}\nb: &b {x: 4}\nc:\n  <<: [*a, *b]\n  y: 1\n")["c"] == \
        {"x": 2, "y": 1}
    assert read("c:\n  <<: {m: 1}\n  m: 3\n") == {"c": {"m": 3}}
    assert read("c:\n  <<: [{m: 1, n: 5}, {n: 6, o: 7}]\n") == {"c": {"m": 1, "n": 5, "o": 7}}
