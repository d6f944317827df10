"""Framework profiles (catalog/frameworks/*.yaml): loading, version selection, validation."""

from __future__ import annotations

import copy
import csv
import pickle
import re
from pathlib import Path

import pytest
import yaml

from trainsim.catalog import framework_schema as schema
from trainsim.catalog import frameworks as fw
from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import (
    FrameworkProfile,
    framework_names,
    framework_profile,
    thawed,
)
from trainsim.errors import CatalogError, ConfigError

ROOT = Path(__file__).resolve().parents[1]
PROFILE_DIR = ROOT / "src" / "trainsim" / "catalog" / "frameworks"
CSV_CANDIDATES = [ROOT / "src" / "trainsim" / "data" / "validation" / "training_public.csv",
                  Path("/work/shared/validation/training_public.csv")]

EXPECTED = ["megatron-lm", "megatron-core", "megatron-deepspeed", "deepspeed", "nemo",
            "megatron-bridge", "mlperf-nemo", "megascale", "torchtitan", "llm-foundry",
            "automodel", "meta-llama3", "pytorch", "nanotron", "olmo-core", "internevo",
            "maxtext", "paxml", "megatron-llama", "llm-c", "flash-attention",
            "fast-llm", "colossalai"]


def _raw(name: str) -> dict:
    return yaml.safe_load((PROFILE_DIR / f"{name}.yaml").read_text())


def _csv_pairs() -> set[tuple[str, str]]:
    for path in CSV_CANDIDATES:
        if path.exists():
            with path.open() as f:
                return {(r["framework"], r["framework_version"]) for r in csv.DictReader(f)}
    pytest.skip("no training_public.csv available")


# ------------------------------------------------------------------ every profile loads

def test_every_framework_has_a_profile():
    assert sorted(framework_names()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_every_profile_loads_at_every_version(name):
    raw = _raw(name)
    assert raw["name"] == name
    for entry in raw["versions"]:
        p = framework_profile(name, entry["since"])
        assert isinstance(p, FrameworkProfile)
        assert p.name == name and p.version == entry["since"]
        assert set(p.features) >= set(schema.FEATURES) - schema.OPTIONAL_KEYS
        assert set(p.defaults) >= set(schema.DEFAULTS) - schema.OPTIONAL_KEYS
    newest = framework_profile(name)
    assert newest.version == raw["versions"][-1]["since"]


@pytest.mark.parametrize("name", EXPECTED)
def test_every_entry_names_its_source(name):
    for entry in _raw(name)["versions"]:
        assert isinstance(entry.get("source"), str) and entry["source"].strip(), entry.get("since")
    p = framework_profile(name)
    assert p.source and all(src for _, src in p.sources)


def _keys(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield f"{path}{k}", str(k)
            yield from _keys(v, f"{path}{k}.")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _keys(v, f"{path}[{i}].")


@pytest.mark.parametrize("name", EXPECTED)
def test_no_profile_carries_a_speed_factor(name):
    for where, key in _keys(_raw(name)):
        low = key.lower()
        assert not any(w in low for w in ("efficiency", "factor", "speed", "mfu")), where


def test_every_validation_pair_resolves():
    for framework, version in sorted(_csv_pairs()):
        p = framework_profile(framework, version)
        assert p.name == framework
        # the selected entry is not newer than the run
        prof = fw._load(framework)
        wanted, _ = fw.resolve(framework, prof.style, prof.entries[0].since, version)
        assert fw.parse(p.version).key <= wanted or \
            p.version == _raw(framework)["versions"][0]["since"]


# ------------------------------------------------------------------ version selection

def test_megatron_lm_2021_is_unfused_blocking_no_sp():
    p = framework_profile("megatron-lm", "2021-04")
    assert p.attention_for() == "unfused"
    assert p.defaults["tp_backward_allreduce"] == "blocking"
    assert p.supports("sequence_parallel") is False
    assert p.supports("interleaved_pipeline") is True
    assert p.grad_reduce_dtype("fp16") == "fp16"
    assert p.grad_reduce_dtype("bf16") == "fp32"


def test_megatron_lm_year_only_reads_as_january():
    p = framework_profile("megatron-lm", "2021")
    assert p.version == "2021-01"
    assert p.supports("interleaved_pipeline") is False
    assert p.grad_reduce_dtype("bf16") is None


def test_megatron_lm_features_arrive_in_order():
    assert framework_profile("megatron-lm", "2021-10").defaults["tp_backward_allreduce"] == "async"
    assert framework_profile("megatron-lm", "2022-05").supports("sequence_parallel") is True
    assert framework_profile("megatron-lm", "2022-05").supports("distributed_optimizer") is False
    assert framework_profile("megatron-lm", "2022-07").supports("distributed_optimizer") is True
    assert framework_profile("megatron-lm", "2023-02").supports("flash1") is True
    assert framework_profile("megatron-lm", "2023-02").attention_for() == "unfused"


def test_megatron_core_2024_uses_a_fused_kernel():
    p = framework_profile("megatron-core", "0.8")
    assert p.version == "0.8"
    assert p.attention_for() in {"cudnn", "flash2", "flash3"}
    assert p.attention_for("sm90") == "cudnn"
    assert p.attention_for("sm80") == "flash2"
    assert framework_profile("megatron-core", "0.4").attention_for() == "unfused"


@pytest.mark.parametrize("framework,version", [("megatron-core", "0.8"), ("megatron-lm", "2024-06"),
                                               ("megatron-bridge", "25.11")])
def test_an_arch_key_holds_up_to_the_next_one(framework, version):
    """Transformer Engine prefers cuDNN fused attention on sm90+ only (get_attention_backend):
    the Ada L40S (sm89) runs flash-attn 2 as the A100 does; Blackwell Ultra (sm103), listed
    under no key of its own, runs cuDNN as Hopper and B200 do."""
    p = framework_profile(framework, version)
    assert [p.attention_for(a) for a in ("sm80", "sm86", "sm89", "sm90", "sm100", "sm103")] == \
        ["flash2"] * 3 + ["cudnn"] * 3


def test_on_a_v100_transformer_engine_runs_its_unfused_attention():
    """TE disables flash-attn and cuDNN attention below sm80 (get_attention_backend: "requires
    compute capability sm80+"): Megatron-core, Megatron-LM and NeMo on a V100 run the unfused
    path and validate; Megatron-Bridge, with no V100 run known, keeps cudnn and is refused."""
    for framework, version in (("megatron-core", "0.8"), ("megatron-lm", "2024-06"),
                               ("nemo", "24.07")):
        assert framework_profile(framework, version).attention_for("sm70") == "unfused"
        cfg = run_config_from_dict({
            "model": {"preset": "gpt-1.7b"}, "parallel": {"tp": 1},
            "training": {"global_batch_size": 32, "micro_batch_size": 1, "seq_length": 2048,
                         "dtype": "fp16", "framework": framework, "framework_version": version},
            "cluster": {"gpu": "v100-sxm-32gb", "num_gpus": 32, "gpus_per_node": 8}})
        assert cfg.training.attention == "unfused"
    with pytest.raises(ConfigError, match="attention=cudnn runs on compute capability 8.0"):
        run_config_from_dict({
            "model": {"preset": "gpt-1.7b"}, "parallel": {"tp": 1},
            "training": {"global_batch_size": 32, "micro_batch_size": 1, "seq_length": 2048,
                         "dtype": "fp16", "framework": "megatron-bridge",
                         "framework_version": "25.11"},
            "cluster": {"gpu": "v100-sxm-32gb", "num_gpus": 32, "gpus_per_node": 8}})


def test_release_numbers_compare_as_tuples():
    assert framework_profile("megatron-core", "0.12").version == "0.12"
    assert framework_profile("megatron-core", "0.13.0").version == "0.13"
    assert framework_profile("megatron-core", "core_v0.16.0").version == "0.16"
    assert framework_profile("megatron-core", "core_v0.19.0").version == "0.18"
    assert framework_profile("megatron-bridge", "26.04.01").version == "26.04"
    assert framework_profile("mlperf-nemo", "4").version == "4.0"


def test_older_than_first_entry_uses_first():
    assert framework_profile("megatron-lm", "2019-06").version == "2021-01"
    assert framework_profile("megatron-core", "0.1").version == "0.4"
    assert framework_profile("nemo", "23.11").version == "24.07"


def test_empty_version_means_newest():
    assert framework_profile("megatron-bridge", "").version == framework_profile(
        "megatron-bridge").version


def test_wrong_version_style_is_an_error():
    # a framework with no release table takes only its own style (test_framework_versions.py
    # covers the translations where there is one)
    with pytest.raises(CatalogError, match="automodel.*release"):
        framework_profile("automodel", "2024-05")
    with pytest.raises(CatalogError, match="dates"):
        framework_profile("megatron-deepspeed", "0.8")


def test_named_defaults_from_sources():
    assert framework_profile("nemo", "24.07").grad_reduce_dtype("fp8") == "bf16"
    assert framework_profile("nemo", "24.07").grad_reduce_dtype("bf16") == "fp32"
    assert framework_profile("megatron-bridge", "25.09").defaults["fp8_recipe"] == "delayed"
    assert framework_profile("megatron-bridge", "25.11").defaults["fp8_recipe"] == "current"
    assert framework_profile("megatron-bridge", "25.11").grad_reduce_dtype("bf16") == "bf16"
    ds = framework_profile("megatron-deepspeed", "2022-03")
    assert ds.supports("sequence_parallel") is False and ds.supports("interleaved_pipeline") is False
    assert ds.defaults["tp_backward_allreduce"] == "blocking"
    assert ds.grad_reduce_dtype("bf16") == "fp32"
    z3 = framework_profile("deepspeed", "2021-03")
    assert z3.defaults["zero3_gather"] == "per_parameter"
    assert framework_profile("torchtitan", "2025-01").defaults["zero3_gather"] == "per_block"
    assert framework_profile("pytorch", "2.4").attention_for() == "sdpa"
    assert framework_profile("pytorch", "2.4").grad_reduce_dtype("bf16") == "fp32"


# ------------------------------------------------------------------ API behaviour

def test_unknown_name_suggests_the_closest():
    with pytest.raises(CatalogError) as exc:
        framework_profile("megatron-lmm")
    msg = str(exc.value)
    assert "did you mean 'megatron-lm'" in msg and "\n" not in msg


def test_name_is_case_insensitive():
    assert framework_profile("Megatron-Core", "0.8").name == "megatron-core"


@pytest.mark.parametrize("written, name", [
    ("Megatron_LM", "megatron-lm"), ("megatron lm", "megatron-lm"), ("MCore", "megatron-core"),
    ("NeMo Automodel", "automodel"), ("LLMFoundry", "llm-foundry"), ("torch", "pytorch"),
    ("Megatron-DS", "megatron-deepspeed"),
])
def test_spellings_and_aliases_name_one_profile(written, name):
    assert framework_profile(written).name == name
    assert fw.canonical_framework(written) == name


def test_aliases_are_unique_and_never_a_profile_name():
    names = set(framework_names())
    aliases = fw._aliases()
    assert aliases and not names & set(aliases) and set(aliases.values()) <= names


def test_a_bad_alias_list_names_file_and_key(tmp_path):
    data = _variant()
    data["aliases"] = "xx"
    path = _write(tmp_path, data)
    with pytest.raises(CatalogError) as exc:
        fw._read(path)
    assert "x.yaml" in str(exc.value) and "aliases" in str(exc.value)


def test_supports_and_grad_reduce_edge_cases():
    p = framework_profile("megascale", "2023")
    assert p.supports("sequence_parallel") is None
    assert p.supports("tp_comm_overlap") is True
    assert p.supports("flash2") is None  # attention kernels unknown
    q = framework_profile("megatron-lm", "2025-07")
    assert q.supports("uneven_pipeline") is True
    assert framework_profile("megatron-lm", "2021-04").supports("uneven_pipeline") is False
    assert q.grad_reduce_dtype("FP32") == "fp32"
    assert q.grad_reduce_dtype("int8") is None
    with pytest.raises(CatalogError, match="sequence_parallel"):
        q.supports("sequence_paralel")


def test_returned_profile_refuses_change():
    """One profile per (framework, version) is handed to every caller: a caller's attempt to
    change it raises (TypeError) and leaves it as read; a thawed copy is the caller's own."""
    a = framework_profile("megatron-lm", "2021-04")
    assert framework_profile("Megatron_LM", "2021-04") is a
    tries = [lambda: a.defaults["grad_reduce_dtype"].__setitem__("bf16", "bf16"),
             lambda: a.features.__setitem__("sequence_parallel", True),
             lambda: a.features.update(sequence_parallel=True),
             lambda: a.defaults.pop("grad_reduce_dtype"),
             lambda: a.features.setdefault("new_key", 1),
             lambda: a.features.clear(),
             lambda: a.features.__delitem__("sequence_parallel")]
    kernels = framework_profile("megatron-lm").features["attention_kernels"]
    tries += [lambda: kernels.append("sdpa"), lambda: kernels.__setitem__(0, "sdpa"),
              lambda: kernels.sort(), lambda: kernels.extend(["sdpa"])]
    for change in tries:
        with pytest.raises(TypeError, match="shared by every caller"):
            change()
    with pytest.raises(TypeError):
        a.features |= {"sequence_parallel": True}
    with pytest.raises(AttributeError):  # the dataclass is frozen too
        a.features = {}  # type: ignore[misc]
    b = framework_profile("megatron-lm", "2021-04")
    assert b.grad_reduce_dtype("bf16") == "fp32"
    assert b.features["sequence_parallel"] is False and "new_key" not in b.features
    assert isinstance(b.defaults, dict) and isinstance(kernels, list)
    for mine in (thawed(b.defaults), copy.deepcopy(b.defaults)):
        mine["grad_reduce_dtype"]["bf16"] = "bf16"
        assert type(mine["grad_reduce_dtype"]) is dict
    assert b.grad_reduce_dtype("bf16") == "fp32"
    back = pickle.loads(pickle.dumps(b))  # as a worker process receives it
    assert back == b
    with pytest.raises(TypeError):
        back.defaults["grad_reduce_dtype"]["bf16"] = "bf16"


# ------------------------------------------------------------------ validation on load

GOOD = {
    "name": "x",
    "description": "test",
    "versions": [{
        "since": "2024-01",
        "source": "somewhere@abc file.py",
        "features": {k: None for k in schema.FEATURES},
        "defaults": {k: None for k in schema.DEFAULTS if k not in schema.OPTIONAL_KEYS},
    }],
}


def _write(tmp_path: Path, data: dict, name: str = "x") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _variant(**changes) -> dict:
    import copy
    data = copy.deepcopy(GOOD)
    entry = data["versions"][0]
    for dotted, value in changes.items():
        section, _, key = dotted.partition("__")
        if key:
            entry[section][key] = value
        else:
            entry[section] = value
    return data


def test_good_file_reads(tmp_path):
    prof = fw._read(_write(tmp_path, GOOD))
    assert prof.style == "date" and len(prof.entries) == 1


@pytest.mark.parametrize("changes, needle", [
    ({"defaults__attention": "fastest"}, "defaults.attention"),
    ({"defaults__grad_reduce_dtype": {"bf16": "int8"}}, "grad_reduce_dtype"),
    ({"features__sequence_parallel": "yes"}, "features.sequence_parallel"),
    ({"features__pipeline_magic": True}, "features.pipeline_magic"),
    ({"defaults__attention_by_arch": {"hopper": "cudnn"}}, "attention_by_arch"),
    ({"defaults__attention_dropout": 1.5}, "attention_dropout"),
    ({"features__attention_kernels": ["flash2", "fastest"]}, "features.attention_kernels"),
    ({"features__attention_kernels": []}, "list of attention implementations"),
    ({"features__moe_dispatchers": ["alltoall", "p2p"]}, "features.moe_dispatchers"),
    ({"features__moe_dispatchers": "deepep"}, "list of MoE token dispatchers"),
    ({"source": ""}, "source"),
])
def test_bad_values_name_file_and_key(tmp_path, changes, needle):
    path = _write(tmp_path, _variant(**changes))
    with pytest.raises(CatalogError) as exc:
        fw._read(path)
    assert "x.yaml" in str(exc.value) and needle in str(exc.value)


def test_speed_factor_key_is_rejected(tmp_path):
    data = _variant(defaults__compute_efficiency=0.8)
    with pytest.raises(CatalogError, match="x.yaml.*compute_efficiency"):
        fw._read(_write(tmp_path, data))


def test_first_entry_must_be_complete(tmp_path):
    data = _variant()
    del data["versions"][0]["defaults"]["attention"]
    with pytest.raises(CatalogError, match="x.yaml.*attention"):
        fw._read(_write(tmp_path, data))


def test_entries_must_be_ordered_and_one_style(tmp_path):
    import copy
    data = copy.deepcopy(GOOD)
    data["versions"].append({"since": "2023-06", "source": "s", "defaults": {}})
    with pytest.raises(CatalogError, match="oldest first"):
        fw._read(_write(tmp_path, data))
    data["versions"][1]["since"] = "24.07"
    with pytest.raises(CatalogError, match="dates"):
        fw._read(_write(tmp_path, data))


def test_unquoted_numeric_since_is_rejected(tmp_path):
    path = tmp_path / "x.yaml"
    text = re.sub(r"since: '?2024-01'?", "since: 4.10", yaml.safe_dump(GOOD))
    assert "since: 4.10" in text
    path.write_text(text)
    with pytest.raises(CatalogError, match="since"):
        fw._read(path)


def test_name_must_match_file(tmp_path):
    with pytest.raises(CatalogError, match="name"):
        fw._read(_write(tmp_path, GOOD, name="y"))


def test_later_entries_inherit_and_merge(tmp_path):
    import copy
    data = copy.deepcopy(GOOD)
    data["versions"][0]["defaults"]["grad_reduce_dtype"] = {"fp16": "fp16", "bf16": None}
    data["versions"][0]["defaults"]["attention"] = "unfused"
    data["versions"].append({"since": "2024-06", "source": "later",
                             "defaults": {"grad_reduce_dtype": {"bf16": "fp32"}}})
    prof = fw._read(_write(tmp_path, data))
    last = prof.entries[-1]
    assert last.defaults["grad_reduce_dtype"] == {"fp16": "fp16", "bf16": "fp32"}
    assert last.defaults["attention"] == "unfused"
    assert [s for s, _ in last.sources] == ["2024-01", "2024-06"]


def test_a_config_naming_a_framework_gets_its_gradient_reduce_overlap_unless_it_says():
    """The profile's overlap_grad_reduce (Megatron-Bridge's DDP config overlaps, Megatron-LM's
    local DDP of 2021 reduces after the backward) fills a config that does not set it."""
    from trainsim.catalog import run_config_from_dict

    def cfg(framework, version, **parallel):
        return run_config_from_dict({
            "model": {"preset": "llama3-8b"}, "parallel": {"tp": 1, **parallel},
            "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 2048,
                         "framework": framework, "framework_version": version},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16}})
    assert cfg("megatron-bridge", "26.04").parallel.overlap_grad_reduce
    assert not cfg("megatron-lm", "2021-04").parallel.overlap_grad_reduce
    assert not cfg("megatron-bridge", "26.04", overlap_grad_reduce=False).parallel.overlap_grad_reduce


@pytest.mark.parametrize("framework,version,expected", [
    ("torchtitan", "2024-12", "all_gather"),  # its rotate method's default since CP landed
    ("megatron-core", "0.8", "p2p"),  # TE's ring exchange, ParallelConfig's own default
    (None, None, "p2p"),
])
def test_a_cp_run_that_names_no_exchange_gets_its_frameworks(framework, version, expected):
    """parallel.cp_comm_type left out: the framework's default exchange, not p2p for all."""
    from trainsim.catalog import run_config_from_dict

    training = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 8192}
    if framework:
        training.update(framework=framework, framework_version=version)
    cfg = run_config_from_dict({
        "model": "llama3-8b", "parallel": {"context_parallel_size": 2}, "training": training,
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}})
    assert cfg.parallel.cp_comm_type == expected


def _dsv3_run(framework: str, **model: object) -> dict:
    return {"model": {"preset": "deepseek-v3", **model},
            "parallel": {"tp": 1, "pp": 1, "ep": 64, "zero_stage": 3},
            "training": {"framework": framework, "global_batch_size": 512,
                         "micro_batch_size": 1, "seq_length": 4096},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 256, "gpus_per_node": 8}}


def test_a_framework_without_mtp_builds_the_preset_without_its_mtp_layers():
    # Automodel's DeepSeek-V3 model class (deepseek_v3/model.py @ 89e3a9fd) never reads
    # num_nextn_predict_layers; Megatron-core builds the preset's MTP layer
    from trainsim.catalog import run_config_from_dict

    assert run_config_from_dict(_dsv3_run("megatron-core")).model.mtp_num_layers == 1
    assert run_config_from_dict(_dsv3_run("automodel")).model.mtp_num_layers == 0
    with pytest.raises(ConfigError, match=r"model.mtp_num_layers=1 but automodel"):
        run_config_from_dict(_dsv3_run("automodel", mtp_num_layers=1))
    assert run_config_from_dict(_dsv3_run("automodel", mtp_num_layers=0)).model.mtp_num_layers == 0


def test_memory_efficient_attention_is_a_kernel_profiles_and_configs_may_name(tmp_path):
    """xFormers' memory-efficient attention (PyTorch SDPA's EFFICIENT_ATTENTION) is one of the
    simulator's kernels: a profile may list it in ``attention_kernels``, a training config may ask for it, and the three vocabularies name the same kernels."""
    from typing import get_args, get_type_hints

    from trainsim.config.training import TrainingConfig
    from trainsim.workload.ops import ATTENTION_IMPLS

    config = set(get_args(get_type_hints(TrainingConfig)["attention"])) - {"flash"}
    assert set(schema.ATTENTION) == set(ATTENTION_IMPLS) == config
    assert "mem_efficient" in schema.ATTENTION
    prof = fw._read(_write(tmp_path, _variant(
        features__attention_kernels=["mem_efficient", "flash2"])))
    assert prof.entries[0].features["attention_kernels"] == ["mem_efficient", "flash2"]


def _plain(framework, version, **parallel):
    return {"model": {"hidden_size": 2048, "num_layers": 4, "num_attention_heads": 16,
                      "vocab_size": 51200},
            "parallel": {"tp": 1, "pp": 1, **parallel},
            "training": {"global_batch_size": 64, "micro_batch_size": 4, "seq_length": 2048,
                         "dtype": "bf16", "framework": framework,
                         "framework_version": version},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}


def test_refusals_name_the_rows_version_and_the_features_own_source():
    """A refusal names the version the row states (pytorch 1.11 reads the 1.0 entry) and
    cites the entry that set the missing feature, not the selected entry's unrelated source
    (pytorch's newest entries read SDPA defaults, not the optimizer)."""
    from trainsim.errors import ConfigError
    with pytest.raises(ConfigError, match=r"under pytorch 1\.11 \(the profile's 1\.0 entry\)"):
        run_config_from_dict(_plain("pytorch", "1.11", zero_stage=3))
    with pytest.raises(ConfigError) as err:
        run_config_from_dict(_plain("pytorch", "2.3", zero_stage=0, distributed_optimizer=True))
    assert "has no distributed optimizer" in str(err.value)
    assert "sdpa" not in str(err.value).lower() and "distributed.py" in str(err.value)


def test_fsdp_framework_says_it_shards_when_the_row_turns_the_optimizer_switch_off():
    """torchtitan runs FSDP2 (ZeRO-3) with no unsharded stage: a row stating
    distributed_optimizer 0 gets a SettingReplaced note saying so; one stating nothing or 1
    gets none."""
    import warnings

    from trainsim.errors import SettingReplaced
    for switch, notes in ((0, 1), (1, 0), (None, 0)):
        extra = {} if switch is None else {"distributed_optimizer": switch}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cfg = run_config_from_dict(_plain("torchtitan", None, **extra))
        got = [w for w in caught if issubclass(w.category, SettingReplaced)]
        assert len(got) == notes and cfg.parallel.zero_stage == 3
        assert all("zero_stage 3" in str(w.message) for w in got)


def test_nemo_runs_cudnn_attention_on_hopper_from_the_24_09_launcher_and_nemo_2_3():
    """NeMo-Framework-Launcher 24.03-24.07 launcher_scripts/conf/config.yaml set
    ``NVTE_FUSED_ATTN: 0`` (flash-attn 2 everywhere); 24.09 dropped it (04b8d098) and NeMo
    v2.3.0's scripts/performance/utils.py L74-75 set NVTE_FUSED_ATTN=1, so Transformer Engine's
    own choice holds: FusedAttention on Hopper (TE v1.10 attention.py: == (9, 0), so flash-attn 2
    again on Blackwell under 24.09; the TE that v2.3.0 pins, bee4649c dot_product_attention/
    utils.py L902: >= (9, 0), Blackwell too), flash-attn 2 on Ampere and Ada, the unfused path
    below sm80. NeMo 2.3.0's perf scripts also fuse the loss in
    TE (cross_entropy_fusion_impl "te", utils.py L291)."""
    arches = ("sm70", "sm80", "sm89", "sm90", "sm100")
    for version in ("24.03", "24.07"):  # the long-sequence H100 table's 24.03 reads as 24.07
        p = framework_profile("nemo", version)
        assert [p.attention_for(a) for a in arches] == ["unfused"] + ["flash2"] * 4
        assert p.defaults.get("cross_entropy") is None
    p = framework_profile("nemo", "24.09")
    assert [p.attention_for(a) for a in arches] == ["unfused", "flash2", "flash2", "cudnn", "flash2"]
    assert p.attention_for("sm103") == "flash2"
    # 25.02 (NeMo v2.2.0): whichever TE ran on Blackwell was built for sm100 (v2.0 and
    # release_v1.14 CMakeLists L10; v1.13 stops at sm90), and those test >= (9, 0)
    p = framework_profile("nemo", "25.02")
    assert p.version == "25.02" and p.defaults.get("cross_entropy") is None
    assert [p.attention_for(a) for a in arches] == ["unfused", "flash2", "flash2", "cudnn", "cudnn"]
    p = framework_profile("nemo", "25.04.rc2")
    assert p.version == "25.04"
    assert [p.attention_for(a) for a in arches] == ["unfused", "flash2", "flash2", "cudnn", "cudnn"]
    assert p.defaults["cross_entropy"] == "te"


def test_nemo_24_07s_apex_optimizer_refuses_the_precision_aware_optimizer():
    """NeMo 24.07/24.09's launcher recipes run Apex DistributedFusedAdam, which has no
    use_precision_aware_optimizer (Megatron-core's distributed optimizer's switch); NeMo 2.2's
    recipes run Megatron-core's optimizer (MegatronOptimizerModule), where it exists."""
    for version, feature in (("24.07", False), ("24.09", False), ("25.02", None),
                             ("25.04", None)):
        assert framework_profile("nemo", version).features["precision_aware_optimizer"] is feature
    raw = {"model": "llama3-8b", "parallel": {"tp": 1, "pp": 1, "distributed_optimizer": True},
           "training": {"seq_length": 4096, "global_batch_size": 64, "micro_batch_size": 1,
                        "framework": "nemo", "framework_version": "24.07",
                        "use_precision_aware_optimizer": True},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}
    with pytest.raises(ConfigError) as exc:
        run_config_from_dict(raw)
    assert "precision_aware_optimizer" in str(exc.value) and "\n" not in str(exc.value)
