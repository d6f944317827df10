"""Run-config validation, overrides and derived sizes (trainsim.config + trainsim.catalog loaders)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from trainsim import ConfigError
from trainsim.catalog import apply_overrides, load_run_config, run_config_from_dict
from trainsim.config import ModelConfig, ParallelConfig, TrainingConfig


def base(**sections):
    """A valid 8-GPU llama3-8b run (dp=8) with ``sections`` replacing whole sections."""
    cfg = {
        "model": "llama3-8b",
        "parallel": {},
        "training": {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8},
    }
    cfg.update(sections)
    return cfg


def config_error(data) -> str:
    with pytest.raises(ConfigError) as info:
        run_config_from_dict(data)
    return str(info.value)


def write_yaml(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


def test_base_config_is_valid():
    """The baseline used by the other tests builds without error and has dp = 8 GPUs / 1."""
    cfg = run_config_from_dict(base())
    assert cfg.dp == 8
    assert cfg.model.hidden_size == 4096


def test_a_pickled_config_carries_its_fields_not_what_its_properties_kept():
    """The short names (tp, pp, cp, ep, dp) and layouts a config keeps once read stay out of
    its pickle; the copy is equal, reads them again, and ``dataclasses.replace`` still works."""
    import copy
    import pickle

    cfg = run_config_from_dict(base(parallel={"tensor_model_parallel_size": 2,
                                              "pipeline_model_parallel_size": 2}))
    assert (cfg.parallel.tp, cfg.parallel.pp, cfg.parallel.cp, cfg.parallel.ep, cfg.dp) == \
        (2, 2, 1, 1, 2) and cfg.virtual_ranges
    assert {"tp", "pp", "cp", "ep"} <= cfg.parallel.__dict__.keys()
    assert {"dp", "virtual_ranges"} <= cfg.__dict__.keys()
    for twin in (pickle.loads(pickle.dumps(cfg)), copy.deepcopy(cfg)):
        assert twin == cfg and twin.parallel == cfg.parallel
        assert not {"tp", "pp", "cp", "ep"} & twin.parallel.__dict__.keys()
        assert not {"dp", "virtual_ranges", "_layout"} & twin.__dict__.keys()
        assert (twin.parallel.tp, twin.dp, twin.virtual_ranges) == (2, 2, cfg.virtual_ranges)
    wider = dataclasses.replace(cfg.parallel, tensor_model_parallel_size=4)
    assert wider.tp == 4 and cfg.parallel.tp == 2
    assert hash(pickle.loads(pickle.dumps(cfg.parallel))) == hash(cfg.parallel)


# ------------------------------------------------------------------ cross-field checks

def test_tp_not_dividing_heads_names_both_fields():
    """tp=3 with 32 heads is rejected with a message naming tp and num_attention_heads."""
    msg = config_error(base(parallel={"tp": 3}, cluster={"gpu": "h100-sxm-80gb", "num_gpus": 3,
                                                        "gpus_per_node": 8}))
    assert "tp=3" in msg
    assert "num_attention_heads=32" in msg
    assert "does not divide" in msg


def test_num_gpus_not_divisible_by_model_parallel_ranks():
    """8 GPUs cannot hold pp=3 replicas: the error names num_gpus and tp*pp*cp."""
    msg = config_error(base(parallel={"pp": 3}))
    assert "num_gpus=8" in msg
    assert "tp*pp*cp" in msg
    assert "3" in msg


def test_global_batch_not_divisible_by_micro_batch_times_dp():
    """global_batch_size=12 with micro_batch_size=1 and dp=8 is rejected naming all three."""
    msg = config_error(base(training={"global_batch_size": 12, "micro_batch_size": 1}))
    assert "global_batch_size=12" in msg
    assert "micro_batch_size" in msg
    assert "dp" in msg


def test_global_batch_check_uses_micro_batch():
    """global_batch_size=16 with micro_batch_size=4 and dp=8 (16 % 32 != 0) is rejected."""
    msg = config_error(base(training={"global_batch_size": 16, "micro_batch_size": 4}))
    assert "global_batch_size=16" in msg
    assert "32" in msg


@pytest.mark.parametrize("section,field,value,name_in_msg", [
    ("parallel", "tensor_model_parallel_size", 0, "tp"),
    ("parallel", "tp", -2, "tp"),
    ("parallel", "pipeline_model_parallel_size", 0, "pp"),
    ("parallel", "cp", 0, "cp"),
    ("parallel", "vpp", 0, "vpp"),
    ("training", "global_batch_size", 0, "global_batch_size"),
    ("training", "micro_batch_size", -1, "micro_batch_size"),
    ("training", "seq_length", 0, "seq_length"),
    ("cluster", "num_gpus", 0, "num_gpus"),
    ("cluster", "gpus_per_node", -8, "gpus_per_node"),
    ("cluster", "nic_bw_Bps", 0, "nic_bw_Bps"),
    ("model", "hidden_size", 0, "hidden_size"),
    ("model", "num_layers", -1, "num_layers"),
    ("model", "num_attention_heads", 0, "num_attention_heads"),
    ("model", "vocab_size", 0, "vocab_size"),
])
def test_zero_or_negative_sizes_rejected(section, field, value, name_in_msg):
    """A zero or negative size is a ConfigError naming the field and its value."""
    data = base()
    if section == "model":
        data["model"] = {"preset": "llama3-8b", field: value}
    else:
        data[section] = {**data[section], field: value}
    msg = config_error(data)
    assert name_in_msg in msg
    assert str(value) in msg


def test_unknown_field_suggests_near_miss():
    """A misspelt parallel field is rejected and the message suggests the right name."""
    msg = config_error(base(parallel={"tensor_model_paralel_size": 2}))
    assert "tensor_model_paralel_size" in msg
    assert "did you mean 'tensor_model_parallel_size'" in msg


def test_unknown_field_without_near_miss_has_no_suggestion():
    """An unknown field with no similar name is rejected without a bogus suggestion."""
    msg = config_error(base(training={"global_batch_size": 64, "zzzzqqq": 1}))
    assert "training.zzzzqqq" in msg
    assert "did you mean" not in msg


def test_unknown_model_field_rejected():
    """An unknown field in a model mapping (on top of a preset) is rejected with a suggestion."""
    msg = config_error(base(model={"preset": "llama3-8b", "num_layer": 16}))
    assert "model.num_layer" in msg
    assert "did you mean 'num_layers'" in msg


def test_unknown_section_suggests_near_miss():
    """A misspelt top-level section is rejected naming it and suggesting 'parallel'."""
    data = base()
    data["paralel"] = data.pop("parallel")
    msg = config_error(data)
    assert "paralel" in msg
    assert "did you mean 'parallel'" in msg


@pytest.mark.parametrize("missing", ["model", "cluster"])
def test_missing_required_section(missing):
    """A config without a model or cluster section is a ConfigError naming the section."""
    data = base()
    del data[missing]
    assert missing in config_error(data)


def test_bad_literal_value_lists_choices():
    """activation='relu2' is rejected, naming the field, the value and the allowed values."""
    msg = config_error(base(model={"preset": "llama3-8b", "activation": "relu2"}))
    assert "model.activation" in msg
    assert "relu2" in msg
    assert "swiglu" in msg and "gelu" in msg


def test_bad_literal_value_in_training():
    """training.dtype='fp64' is rejected naming the field."""
    msg = config_error(base(training={"global_batch_size": 64, "dtype": "fp64"}))
    assert "training.dtype" in msg and "fp64" in msg


def test_literal_value_is_case_insensitive():
    """'SwiGLU' is accepted as the Literal 'swiglu'."""
    cfg = run_config_from_dict(base(model={"preset": "llama3-8b", "activation": "SwiGLU"}))
    assert cfg.model.activation == "swiglu"


def test_vpp_without_pipeline_rejected():
    """virtual_pipeline_model_parallel_size=2 with pp=1 is a ConfigError naming both."""
    msg = config_error(base(parallel={"vpp": 2}))
    assert "virtual_pipeline_model_parallel_size" in msg
    assert "pipeline_model_parallel_size" in msg


def test_vpp_one_without_pipeline_allowed():
    """vpp=1 is plain 1F1B and is fine with pp=1."""
    assert run_config_from_dict(base(parallel={"vpp": 1})).parallel.vpp == 1


def test_layers_not_divisible_by_pp_rejected():
    """30 layers over pp=4 with no uneven split is rejected naming pp, num_layers and the fix."""
    msg = config_error(base(model={"preset": "llama3-8b", "num_layers": 30}, parallel={"pp": 4}))
    assert "pp=4" in msg
    assert "num_layers=30" in msg
    assert "decoder_first_pipeline_num_layers" in msg


def test_uneven_pipeline_split():
    """30 layers, pp=4, first=6, last=6 split as (6, 9, 9, 6)."""
    cfg = run_config_from_dict(base(
        model={"preset": "llama3-8b", "num_layers": 30},
        parallel={"pp": 4, "decoder_first_pipeline_num_layers": 6,
                  "decoder_last_pipeline_num_layers": 6}))
    assert cfg.stage_layer_counts == (6, 9, 9, 6)
    assert sum(cfg.stage_layer_counts) == 30


def test_uneven_split_first_only():
    """31 layers, pp=4, first=1 gives (1, 10, 10, 10)."""
    cfg = run_config_from_dict(base(
        model={"preset": "llama3-8b", "num_layers": 31},
        parallel={"pp": 4, "decoder_first_pipeline_num_layers": 1}))
    assert cfg.stage_layer_counts == (1, 10, 10, 10)


def test_even_split():
    """32 layers over pp=4 is 8 per stage."""
    cfg = run_config_from_dict(base(parallel={"pp": 4}))
    assert cfg.stage_layer_counts == (8, 8, 8, 8)


@pytest.mark.parametrize("first,last", [(10, 11), (40, None), (6, 7)])
def test_uneven_split_that_does_not_add_up_rejected(first, last):
    """first/last layer counts leaving a remainder the middle stages cannot share are rejected."""
    par = {"pp": 4, "decoder_first_pipeline_num_layers": first}
    if last is not None:
        par["decoder_last_pipeline_num_layers"] = last
    with pytest.raises(ConfigError):
        run_config_from_dict(base(model={"preset": "llama3-8b", "num_layers": 30}, parallel=par))


def test_vpp_needs_layers_per_stage_divisible():
    """pp=2 (16 layers per stage) with vpp=3 is rejected naming vpp."""
    msg = config_error(base(parallel={"pp": 2, "vpp": 3}))
    assert "virtual_pipeline_model_parallel_size=3" in msg


def test_interleaved_needs_microbatches_multiple_of_pp():
    """pp=4, vpp=2 with 6 micro-batches (not a multiple of pp) is rejected naming both counts."""
    msg = config_error(base(parallel={"pp": 4, "vpp": 2},
                            training={"global_batch_size": 12, "micro_batch_size": 1}))
    assert "(6)" in msg
    assert "pipeline_model_parallel_size=4" in msg


# ---------------------------------------------------------------- files

def test_garbage_yaml_file(tmp_path):
    """A file that does not parse as YAML is a ConfigError naming the file."""
    path = tmp_path / "bad.yaml"
    path.write_text("model: [llama3-8b\n  cluster: {gpu: : :\n\t- ]]\n")
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    assert "bad.yaml" in str(info.value)


def test_garbage_json_file(tmp_path):
    """A .json file that is not JSON is a ConfigError naming the file."""
    path = tmp_path / "bad.json"
    path.write_text("{model: llama3-8b,,,")
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    assert "bad.json" in str(info.value)


def test_yaml_that_is_not_a_mapping(tmp_path):
    """A YAML file holding a scalar, not a mapping of sections, is a ConfigError."""
    path = tmp_path / "words.yaml"
    path.write_text("just some words\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_run_config(path)


def test_binary_file_is_config_error(tmp_path):
    """A binary, non-UTF-8 file given as a config is a ConfigError, not a UnicodeDecodeError."""
    path = tmp_path / "weights.yaml"
    path.write_bytes(b"\xff\xfe\x00\x80\x81garbage\x00\xc3")
    with pytest.raises(ConfigError):
        load_run_config(path)


def test_missing_file(tmp_path):
    """A path that does not exist is a ConfigError naming the path."""
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    assert "nope.yaml" in str(info.value)


def test_json_config_file(tmp_path):
    """A .json run config loads like the YAML one."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(base(parallel={"tp": 2})))
    assert load_run_config(path).parallel.tp == 2


# ---------------------------------------------------------------- overrides

def test_override_changes_field_via_load(tmp_path):
    """load_run_config(path, ['parallel.tp=4']) gives tp=4 and the matching dp."""
    path = write_yaml(tmp_path / "run.yaml", base())
    assert load_run_config(path).parallel.tp == 1
    cfg = load_run_config(path, ["parallel.tp=4"])
    assert cfg.parallel.tp == 4
    assert cfg.parallel.tensor_model_parallel_size == 4
    assert cfg.dp == 2


def test_override_values_are_typed(tmp_path):
    """Override values are parsed as YAML scalars: ints, bools, strings."""
    path = write_yaml(tmp_path / "run.yaml", base())
    cfg = load_run_config(path, ["training.seq_length=8192", "parallel.tp=2",
                                 "parallel.sequence_parallel=true", "parallel.recompute=full",
                                 "training.dtype=fp8"])
    assert cfg.training.seq_length == 8192
    assert cfg.parallel.sequence_parallel is True
    assert cfg.parallel.recompute == "full"
    assert cfg.training.dtype == "fp8"


@pytest.mark.parametrize("alias,full,value", [
    ("tp", "tensor_model_parallel_size", 2),
    ("pp", "pipeline_model_parallel_size", 2),
    ("cp", "context_parallel_size", 2),
])
def test_short_alias_overrides(alias, full, value):
    """apply_overrides with parallel.<alias>=v sets the Megatron-named field."""
    data = apply_overrides(base(), [f"parallel.{alias}={value}"])
    cfg = run_config_from_dict(data)
    assert getattr(cfg.parallel, full) == value
    assert getattr(cfg.parallel, alias) == value


def test_vpp_alias():
    """parallel.vpp=2 with pp=2 sets virtual_pipeline_model_parallel_size=2."""
    data = apply_overrides(base(), ["parallel.pp=2", "parallel.vpp=2"])
    cfg = run_config_from_dict(data)
    assert cfg.parallel.virtual_pipeline_model_parallel_size == 2
    assert cfg.parallel.vpp == 2


def test_alias_and_full_name_together_rejected():
    """Giving both parallel.tp and parallel.tensor_model_parallel_size in one file is an error."""
    with pytest.raises(ConfigError, match="same field"):
        run_config_from_dict(base(parallel={"tp": 2, "tensor_model_parallel_size": 2}))


def test_short_alias_override_on_long_name_config():
    """--set parallel.tp=4 overrides a config that says tensor_model_parallel_size: 2."""
    data = apply_overrides(base(parallel={"tensor_model_parallel_size": 2}), ["parallel.tp=4"])
    assert run_config_from_dict(data).parallel.tp == 4


def test_override_on_model_preset_name():
    """model.num_layers=16 on a config whose model is a preset name keeps the preset's other fields."""
    cfg = run_config_from_dict(apply_overrides(base(), ["model.num_layers=16"]))
    assert cfg.model.num_layers == 16
    assert cfg.model.hidden_size == 4096
    assert cfg.model.num_kv_heads == 8


def test_apply_overrides_does_not_mutate_input():
    """apply_overrides returns a new mapping and leaves its input untouched."""
    data = base()
    snapshot = json.loads(json.dumps(data))
    apply_overrides(data, ["parallel.tp=4", "model.num_layers=2"])
    assert data == snapshot


@pytest.mark.parametrize("bad", ["parallel.tp", "tp=4"])
def test_malformed_override(bad):
    """An override without '=' or without a section is a ConfigError."""
    with pytest.raises(ConfigError):
        apply_overrides(base(), [bad])


def test_override_into_non_section():
    """Overriding a.b.c where a.b is a scalar is a ConfigError."""
    with pytest.raises(ConfigError):
        apply_overrides(base(), ["training.seq_length.x=1"])


def test_override_unknown_field_rejected(tmp_path):
    """A --set of a misspelt field fails with a suggestion, like the file would."""
    path = write_yaml(tmp_path / "run.yaml", base())
    with pytest.raises(ConfigError, match="did you mean 'micro_batch_size'"):
        load_run_config(path, ["training.micro_batchsize=2"])


@pytest.mark.parametrize("override", ["training.global_batch_size=inf", "parallel.tp=.nan"])
def test_non_finite_integer_is_config_error(override):
    """A non-finite value for an integer field is a ConfigError, not an OverflowError/ValueError."""
    with pytest.raises(ConfigError):
        run_config_from_dict(apply_overrides(base(), [override]))


def test_nan_bandwidth_rejected():
    """cluster.nic_bw_Bps=.nan is rejected instead of poisoning every time estimate."""
    with pytest.raises(ConfigError):
        run_config_from_dict(apply_overrides(base(), ["cluster.nic_bw_Bps=.nan"]))


def test_explicit_nic_bandwidth_beats_node_preset():
    """cluster.nic_bw_Bps given next to cluster.node wins over the node's NIC speed."""
    cfg = run_config_from_dict(base(cluster={"node": "dgx-h100", "num_gpus": 8,
                                             "nic_bw_Bps": 25e9}))
    assert cfg.cluster.nic_bw_Bps == 25e9


def test_node_preset_fills_cluster():
    """cluster.node=dgx-h100 gives H100 GPUs, 8 per node and 400 Gbit/s = 50e9 B/s per GPU."""
    cfg = run_config_from_dict(base(cluster={"node": "dgx-h100", "num_gpus": 16}))
    assert cfg.cluster.gpu.name == "h100-sxm-80gb"
    assert cfg.cluster.gpus_per_node == 8
    assert cfg.cluster.nic_bw_Bps == pytest.approx(50e9)
    assert cfg.cluster.num_nodes == 2


# ---------------------------------------------------------------- derived sizes

@pytest.mark.parametrize("num_gpus,tp,pp,cp,gbs,mbs,dp,m", [
    (8, 1, 1, 1, 64, 1, 8, 8),
    (64, 2, 4, 1, 512, 2, 8, 32),
    (64, 8, 2, 2, 128, 1, 2, 64),
    (1024, 8, 8, 1, 1536, 1, 16, 96),
    (16, 4, 4, 1, 4, 4, 1, 1),
])
def test_dp_and_num_microbatches(num_gpus, tp, pp, cp, gbs, mbs, dp, m):
    """dp = num_gpus / (tp*pp*cp) and num_microbatches = gbs / (mbs*dp)."""
    cfg = run_config_from_dict(base(
        parallel={"tp": tp, "pp": pp, "cp": cp},
        training={"global_batch_size": gbs, "micro_batch_size": mbs, "seq_length": 4096},
        cluster={"gpu": "h100-sxm-80gb", "num_gpus": num_gpus, "gpus_per_node": 8}))
    assert cfg.dp == dp
    assert cfg.num_microbatches == m
    assert cfg.tokens_per_iteration == gbs * 4096


# ---------------------------------------------------------------- frozen

def test_run_config_is_frozen():
    """Assigning to any field of a loaded RunConfig or its sections raises FrozenInstanceError."""
    cfg = run_config_from_dict(base())
    for obj, field in [(cfg, "model"), (cfg.model, "hidden_size"), (cfg.parallel, "tensor_model_parallel_size"),
                       (cfg.training, "global_batch_size"), (cfg.cluster, "num_gpus"),
                       (cfg.cluster.gpu, "hbm_bytes")]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, 1)


def test_section_dataclasses_are_frozen():
    """Directly constructed ModelConfig/ParallelConfig/TrainingConfig are frozen too."""
    for obj, field in [(ModelConfig(), "num_layers"), (ParallelConfig(), "zero_stage"),
                       (TrainingConfig(), "seq_length")]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, 3)


@pytest.mark.parametrize("field,value,typed", [
    ("sequence_parallel", 5, None), ("sequence_parallel", 1, True), ("sequence_parallel", 0, False),
    ("sequence_parallel", 1.0, True), ("sequence_parallel", True, True),
    ("sequence_parallel", 2.0, None), ("tensor_model_parallel_size", 2**60, None),
    ("tensor_model_parallel_size", float(2**60), None), ("tensor_model_parallel_size", 2.0, 2),
    ("tensor_model_parallel_size", 2.5, None), ("tensor_model_parallel_size", True, None),
])
def test_a_config_built_directly_takes_what_a_file_takes(field, value, typed):
    """The Python API's check (``check_fields``) and a file's coercion (``build``) accept the
    same values and make the same typed field of them (None: both refuse): a bool field takes
    0/1 but not 5, an int field a whole number up to 2**53 and holds it as an int."""
    given = {field: value, **({"tensor_model_parallel_size": 2}
                              if field == "sequence_parallel" else {})}  # SP needs TP
    results = []
    for make in (lambda: getattr(run_config_from_dict(base(parallel=given)).parallel, field),
                 lambda: getattr(ParallelConfig(**given), field)):
        try:
            got = make()
        except ConfigError:
            results.append(None)
        else:
            results.append((type(got), got))
    expected = None if typed is None else (type(typed), typed)
    assert results == [expected, expected]


@pytest.mark.parametrize("parallel, needle", [
    ({"moe_deepep_num_sms": 21}, "parallel.moe_deepep_num_sms=21 must be even"),
    ({"moe_deepep_num_sms": 200}, "parallel.moe_deepep_num_sms=200 is more than the 132 SMs"),
    ({"moe_hybridep_num_sms": 134}, "parallel.moe_hybridep_num_sms=134 is more than the 132"),
])
def test_exchange_sm_counts_are_checked(parallel, needle):
    """DeepEP's Buffer.set_num_sms asserts an even count; no kernel holds more SMs than the
    GPU has (H100 SXM: 132)."""
    msg = config_error(base(parallel=parallel))
    assert needle in msg and "\n" not in msg
    moe = {"preset": "llama3-8b", "num_experts": 8}  # a MoE setting (robust55: dense refuses)
    assert run_config_from_dict(base(model=moe, parallel={"moe_deepep_num_sms": 132})).parallel \
        .moe_deepep_num_sms == 132


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_glu_linear_offset_must_be_finite(value):
    """NaN or inf would read as an offset set (and price its host sync): refused by name, by
    the float fields' common check (``check_fields``)."""
    with pytest.raises(ConfigError, match=r"^model\.glu_linear_offset=.* must be a finite"):
        ModelConfig(glu_linear_offset=value)
    assert ModelConfig(glu_linear_offset=1.0).glu_linear_offset == 1.0


def test_flash1_refuses_head_dims_above_128():
    """FlashAttention-1 runs head dims up to 128 (flash-attention v1.0.9 fmha_api.cpp
    ``TORCH_CHECK(... head_size <= 128)``): a config asking it for 256 is an error naming both;
    128 with flash1, and 256 with flash2, build."""
    wide = {"preset": "llama3-8b", "head_dim": 256}
    train = {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096}
    msg = config_error(base(model=wide, training={**train, "attention": "flash1"}))
    assert "attention=flash1" in msg and "256" in msg
    run_config_from_dict(base(model=wide, training={**train, "attention": "flash2"}))
    run_config_from_dict(base(training={**train, "attention": "flash1"}))


def test_compute_capability_is_major_times_ten_plus_minor():
    """NVIDIA's list writes 10.0; the field is 100 (a 10 would price a B200 as sm 10)."""
    from trainsim.catalog import gpu
    b200 = gpu("b200-sxm-180gb")
    for wrong in (10, 9):
        with pytest.raises(ConfigError) as exc:
            dataclasses.replace(b200, compute_capability=wrong)
        assert "e.g. 100 for 10.0, 90 for 9.0" in str(exc.value)
        assert "\n" not in str(exc.value)
    assert dataclasses.replace(b200, compute_capability=120).sm_arch == 120


def test_compute_capability_is_refused_on_another_vendor():
    from trainsim.catalog import gpu
    mi300x = gpu("mi300x")
    assert mi300x.vendor != "nvidia" and mi300x.compute_capability is None
    with pytest.raises(ConfigError, match="compute_capability=90 is an NVIDIA") as exc:
        dataclasses.replace(mi300x, compute_capability=90)
    assert "\n" not in str(exc.value)
