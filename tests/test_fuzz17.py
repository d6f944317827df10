"""Seventeenth robustness round (29th session, fuzz17): a GPU spec's vendor written in capitals,
MLA's recompute module on a model without MLA, a config.json's rope_scaling ``type`` key, a
config.json handed to simulate, a Chakra prefix that is a directory, a NIC rate converted past
the largest float, a version written as a YAML date. Each case failed on main 24cb65f before
its fix (the sanity cases beside them pass there). Then a property-based sweep over valid runs
drawn across the format v2 settings (layouts, recompute modules, fp8 recipes, schedules at odd
micro-batch counts): one clean refusal or a sane result (the long run behind ``-m slow``)."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import warnings
from pathlib import Path

import pytest
import yaml
from helpers import BASE, FAST, SLOW, cli, one_error_line
from hypothesis import given
from hypothesis import strategies as st

import trainsim
from trainsim import catalog
from trainsim.errors import ConfigError, TrainsimError

ROOT = Path(__file__).resolve().parents[1]
MI300X = ROOT / "src" / "trainsim" / "catalog" / "gpus" / "mi300x.yaml"
LLAMA_JSON = ROOT / "examples" / "hf" / "llama3-8b" / "config.json"


# ------------------------------------------------------------------ a GPU spec's vendor

def _amd_run(vendor: str, **training) -> trainsim.RunConfig:
    spec = {**yaml.safe_load(MI300X.read_text()), "name": "my-mi300x", "vendor": vendor}
    return trainsim.run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "training": {"global_batch_size": 8, "seq_length": 512, **training},
        "cluster": {"gpu": spec, "num_gpus": 8, "gpus_per_node": 8, "compute_db": None}})


@pytest.mark.parametrize("vendor", ["AMD", "Amd ", " amd"])
def test_a_vendor_in_capitals_is_that_vendor(vendor):
    """Before: 'AMD' was a third vendor: "training.attention=ck ... runs on AMD GPUs only, not
    cluster.gpu my-mi300x (AMD)", and megatron-lm's default picked cuDNN, then refused it."""
    cfg = _amd_run(vendor, attention="ck")
    assert cfg.cluster.gpu.vendor == "amd"
    got = _amd_run(vendor, framework="megatron-lm")
    assert got.training.attention == _amd_run("amd", framework="megatron-lm").training.attention
    assert trainsim.simulate(got).iteration_time_s == \
        trainsim.simulate(_amd_run("amd", framework="megatron-lm")).iteration_time_s


def test_a_vendor_no_model_knows_is_refused_naming_both():
    with pytest.raises(ConfigError, match=r"vendor='intel' is not one of \['nvidia', 'amd'\]"):
        _amd_run("intel")


# ------------------------------------------------------------------ mla_up_proj without MLA

def test_mla_up_proj_on_a_model_without_mla_is_refused(tmp_path):
    """Before: priced as if nothing were recomputed (Megatron-core raises "mla_up_proj in
    recompute_modules is only supported with multi_latent_attention")."""
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    line = one_error_line(cli("simulate", str(path), "--set", "parallel.recompute=selective",
                              "--set", "parallel.recompute_modules=[core_attn,mla_up_proj]"))
    assert "mla_up_proj" in line and "kv_lora_rank" in line


def test_mla_up_proj_on_an_mla_model_still_runs():
    cfg = trainsim.run_config_from_dict(yaml.safe_load(
        (ROOT / "examples" / "deepseek-v3-h800.yaml").read_text()))
    assert "mla_up_proj" in cfg.parallel.recompute_modules


# ------------------------------------------------------------------ rope_scaling's old key

@pytest.mark.parametrize("key", ["type", "rope_type"])
def test_rope_scaling_type_reads_as_rope_type(tmp_path, key):
    """Before: {"type": "yarn"} (DeepSeek-V3's and Qwen2.5's files) read as no scaling, a
    Megatron-Bridge run 6 % faster than the same file with "rope_type"."""
    hf = json.loads(LLAMA_JSON.read_text())
    hf["rope_scaling"] = {key: "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}
    (tmp_path / "config.json").write_text(json.dumps(hf))
    assert catalog.model_from_hf_config(tmp_path / "config.json").rope_scaling == "yarn"


# ------------------------------------------------------------------ config.json to simulate

@pytest.mark.parametrize("command", ["simulate", "goodput"])
def test_a_config_json_handed_to_simulate_says_how_to_name_it(command):
    """Before: "unknown section 'architectures'; expected model, parallel, ..." ."""
    line = one_error_line(cli(command, str(LLAMA_JSON)))
    assert "Hugging Face config.json" in line and "hf_config" in line


# ------------------------------------------------------------------ a Chakra prefix

@pytest.mark.parametrize("suffix", ["/", "/.", "/.."])
def test_a_chakra_prefix_naming_a_directory_is_refused(tmp_path, suffix):
    """Before: 'out/' wrote out.<rank>.et and out.json beside the directory and said it wrote
    'out/.<rank>.et'."""
    config = tmp_path / "c.yaml"
    config.write_text(BASE)
    out = tmp_path / "out"
    out.mkdir()
    line = one_error_line(cli("export", str(config), "--chakra", str(out) + suffix))
    assert "not a directory" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "out"]
    assert not list(out.iterdir())


def test_a_chakra_prefix_inside_a_directory_still_writes(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(BASE)
    assert cli("export", str(config), "--chakra", str(tmp_path / "t")).exit_code == 0
    assert (tmp_path / "t.0.et").exists() and (tmp_path / "t.json").exists()


# ------------------------------------------------------------------ a NIC rate's conversion

def test_collective_converts_the_nic_rate_as_a_config_does():
    """Before: 1e300 Gbit/s x 1e9 overflowed before / 8: "cluster.nic_bw_Bps=inf must be a
    finite number" for a finite option (search and a config read 1.25e308 B/s)."""
    result = cli("collective", "--gpus", "16", "--nic-gbit-s", "1e300", "--sizes", "1M")
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ a version as a date

def test_a_version_written_as_a_yaml_date_reads_as_its_text(tmp_path):
    """Before: 'framework_version: 2024-07-15' was refused as a date (quote it), while 2024-07
    (no day: text to YAML) read; Megatron-LM versions are dates."""
    text = BASE.replace("seq_length: 512}", "seq_length: 512, framework: megatron-lm, "
                        "framework_version: VERSION}")
    runs = []
    for version in ("2024-07-15", "'2024-07-15'"):
        path = tmp_path / "c.yaml"
        path.write_text(text.replace("VERSION", version))
        result = cli("simulate", str(path), "--format", "json")
        assert result.exit_code == 0, result.output
        runs.append(json.loads(result.stdout))
    assert runs[0]["config"]["training"]["framework_version"] == "2024-07-15"
    assert runs[0]["iteration_time_s"] == runs[1]["iteration_time_s"]


def test_a_date_in_a_number_field_is_refused_as_text(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    line = one_error_line(cli("simulate", str(path), "--set", "training.seq_length=2024-07-15"))
    assert "training.seq_length must be an integer, got '2024-07-15'" in line


# ------------------------------------------------------------------ collective on an NVL72 rack

def test_collective_on_an_nvl72_rack_takes_the_rack_as_its_domain():
    """Before: --topology nvl72 without --gpus-per-node (its help: "nvl72 (72 GPUs per NVLink
    domain)") was refused: "cluster.gpus_per_node must be 72, not 8"."""
    result = cli("collective", "--gpu", "gb200", "--gpus", "144", "--topology", "nvl72",
                 "--sizes", "1M", "--format", "json")
    assert result.exit_code == 0, result.output
    stated = cli("collective", "--gpu", "gb200", "--gpus", "144", "--topology", "nvl72",
                 "--gpus-per-node", "72", "--sizes", "1M", "--format", "json")
    assert json.loads(result.stdout) == json.loads(stated.stdout)
    eight = cli("collective", "--gpus", "16", "--sizes", "1M", "--format", "json")
    assert json.loads(eight.stdout) == json.loads(cli(
        "collective", "--gpus", "16", "--gpus-per-node", "8", "--sizes", "1M", "--format",
        "json").stdout)


# ------------------------------------------------------------------ serve's banner

def test_serve_says_nothing_of_a_service_whose_store_does_not_open():
    """Before: "trainsim service on http://..." was printed, then "error: cannot open the job
    store"."""
    pytest.importorskip("fastapi")
    result = cli("serve", "--db", "bogus://x", "--workers", "0", "--checkers", "0")
    assert "cannot open the job store" in one_error_line(result, warnings=False)


def test_a_job_store_password_is_masked_where_the_url_is_shown():
    pytest.importorskip("sqlalchemy")
    from trainsim.service.store import shown_url

    assert shown_url("postgresql://bob:hunter2@db.example/jobs") == \
        "postgresql://bob:***@db.example/jobs"
    assert shown_url("sqlite:////var/jobs.db") == "sqlite:////var/jobs.db"


# ------------------------------------------------------------------ search --reference names

@pytest.mark.parametrize("given_, hint", [("mbs=2", "did you mean 'mb'"),
                                          ("schedule=zb_v", "did you mean 'pipeline_schedule'"),
                                          ("dp=2", "the data-parallel size is derived")])
def test_a_reference_field_the_search_reads_otherwise_is_named(given_, hint):
    """Before: "--reference mbs: not a field the search varies", while the micro-batch (mb) and
    the schedule (pipeline_schedule) are varied."""
    line = one_error_line(cli("search", "llama3-8b", "--gpus", "8", "--global-batch", "16",
                              "--seq", "2048", "--tp", "2", "--pp", "1", "--recompute", "none",
                              "--max-micro-batch", "1", "--reference", f"tp=2,{given_}"))
    assert hint in line


# ------------------------------------------------------------------ profile with nothing to do

def test_a_profile_that_measures_nothing_is_refused(tmp_path):
    """Before: --no-kernels --no-layers wrote a database of 0 kernels and 0 layers over --out."""
    out = tmp_path / "db.json"
    out.write_text("{}")
    line = one_error_line(cli("profile", "--gpu", "h100-sxm-80gb", "--out", str(out),
                              "--device", "cpu", "--quick", "--no-kernels", "--no-layers"))
    assert "nothing to measure" in line and out.read_text() == "{}"


# ------------------------------------------------------------------ a failure mode's switch

@pytest.mark.parametrize("written", ["false", "no", "0"])
def test_a_failure_mode_planned_written_as_text_is_that_switch(written):
    """Before: bool('false') made the detection default a planned stop's 'none' while the mode
    was read unplanned (goodput 93.7 % against 93.6 % for planned: false)."""
    from trainsim.reliability.config import profile_from_dict

    def mode(planned):
        return profile_from_dict({"name": "p", "modes": {"m": {
            "per_1000_component_days": 1.0, "component": "node", "planned": planned}}}).modes[0]

    assert mode(written) == mode(False)
    assert mode(written).detection == "crash"


# ------------------------------------------------------------------ plan's GPU counts

@FAST
@given(st.integers(1, 80), st.integers(1, 300))
def test_plan_tries_no_gpu_count_past_max_gpus(gpus_per_node, max_gpus):
    """Before: below one node the ladder ran to the node's size: plan --max-gpus 7 priced 8
    GPUs and answered "no GPU count up to 7 meets the deadline; fastest found: ... on 8 GPUs"."""
    from trainsim.search.capacity import gpu_ladder

    ladder = gpu_ladder(gpus_per_node, max_gpus)
    assert ladder and max(ladder) <= max_gpus


# ------------------------------------------------------------------ valid runs, drawn

TINY = {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4, "vocab_size": 1024}
MOE = {"num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 256}
MLA = {"kv_lora_rank": 64, "q_lora_rank": 32, "qk_head_dim": 32, "v_head_dim": 32,
       "qk_pos_emb_head_dim": 16, "position_embedding": "rope"}
SCHEDULES = [None, "1f1b", "gpipe", "interleaved_1f1b", "zb_h1", "zb_h2", "zb_v", "dualpipe",
             "dualpipe_v"]
MODULES = ["core_attn", "layernorm", "mla_up_proj", "mlp", "moe_act", "moe", "shared_experts"]
REL = 1e-9


@st.composite
def layouts(draw, layers: int, stages: int):
    """A Megatron-core layout string splitting ``layers`` over ``stages`` virtual stages (each
    at least one layer; the embedding first, the loss last) or a first:N,last:M split."""
    if stages == 1 or layers < stages:
        return None
    cuts = sorted(draw(st.sets(st.integers(1, layers - 1), min_size=stages - 1,
                               max_size=stages - 1)))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, layers])]
    if draw(st.booleans()):
        return "E" + "|".join("t" * n for n in sizes) + "L"
    return f"first:{sizes[0]},last:{sizes[-1]}" if len(sizes) > 2 else None


@st.composite
def runs(draw):
    kind = draw(st.sampled_from(["dense", "moe", "mla"]))
    model = {**TINY, **(MOE if kind != "dense" else {}), **(MLA if kind == "mla" else {})}
    tp, pp, cp, dp = (draw(st.sampled_from(v)) for v in ([1, 2], [1, 2, 4], [1, 2], [1, 2]))
    vpp = draw(st.sampled_from([1, 2])) if pp > 1 else 1
    parallel = {"tp": tp, "pp": pp, "cp": cp, "sequence_parallel": tp > 1}
    if vpp > 1:
        parallel["vpp"] = vpp
    if kind != "dense":
        parallel["ep"] = draw(st.sampled_from([1, 2, 4]))
    schedule = draw(st.sampled_from(SCHEDULES))
    if schedule:
        parallel["pipeline_schedule"] = schedule
    layout = draw(layouts(model["num_layers"], pp * vpp)) if draw(st.booleans()) else None
    if layout:
        parallel["pipeline_model_parallel_layout"] = layout
    recompute = draw(st.sampled_from(["none", "selective", "full"]))
    parallel["recompute"] = recompute
    if recompute == "selective" and draw(st.booleans()):
        parallel["recompute_modules"] = sorted(draw(st.sets(st.sampled_from(MODULES),
                                                            min_size=1, max_size=3)))
    gpu = draw(st.sampled_from(["h100-sxm-80gb", "b200-sxm-180gb", "a100-sxm-80gb", "mi300x"]))
    training = {"seq_length": 512 * draw(st.sampled_from([1, 2])),
                "micro_batch_size": draw(st.sampled_from([1, 2]))}
    training["global_batch_size"] = dp * training["micro_batch_size"] * draw(st.integers(1, 9))
    if draw(st.booleans()):
        training["dtype"] = "fp8"
        training["fp8_recipe"] = draw(st.sampled_from(["delayed", "current", "blockwise",
                                                       "mxfp8"]))
    return {"model": model, "parallel": parallel, "training": training,
            "cluster": {"gpu": gpu, "num_gpus": tp * pp * cp * dp, "gpus_per_node": 8,
                        "compute_db": None}}


def _check(cfg: dict) -> None:
    """One clean refusal, or a result whose times and memory are finite and positive and whose
    breakdown sums to the iteration."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = trainsim.simulate(trainsim.run_config_from_dict(copy.deepcopy(cfg)))
    except TrainsimError as exc:
        text = str(exc)
        assert text and "\n" not in text.strip(), text
        return
    t = result.iteration_time_s
    assert math.isfinite(t) and t > 0, (cfg, t)
    for name, v in result.breakdown.items():
        assert math.isfinite(v) and v >= -REL * t, (cfg, name, v)
    assert math.isclose(sum(result.breakdown.values()), t, rel_tol=1e-6), cfg
    assert math.isfinite(result.peak_memory_bytes) and result.peak_memory_bytes > 0, cfg
    assert 0 < result.mfu <= 2.0 and math.isfinite(result.tokens_per_s), cfg


@FAST
@given(runs())
def test_drawn_runs_end_in_one_refusal_or_a_sane_result(cfg):
    _check(cfg)


@pytest.mark.slow
@SLOW
@given(runs())
def test_drawn_runs_end_in_one_refusal_or_a_sane_result_long(cfg):
    _check(cfg)


@FAST
@given(st.sampled_from(["nvidia", "NVIDIA", "Nvidia", " nvidia "]))
def test_a_vendor_spelled_any_way_prices_the_same(vendor):
    spec = dataclasses.asdict(catalog.gpu("h100-sxm-80gb"))
    assert catalog.gpu_from_dict({**spec, "vendor": vendor}) == catalog.gpu("h100-sxm-80gb")


def test_a_yaml_date_loads_as_the_text_written(tmp_path):
    from trainsim.config.safe_load import load_file

    path = tmp_path / "x.yaml"
    path.write_text("when: 2020-01-01\nstamp: 2001-12-14t21:59:43.10-05:00\n")
    assert load_file(path) == {"when": "2020-01-01", "stamp": "2001-12-14t21:59:43.10-05:00"}
