"""Option switches a framework leaves to its user are tuned for a row that states no options
(validation README, "Unknown cells"): a profile's ``tuned_options`` at each version, only
where the release has the flag (Megatron-LM --overlap-grad-reduce from 2023-09-07,
--overlap-param-gather from 2023-11-17, --tp-comm-overlap acting with its one flag from the
Megatron-core default of 2024-06)."""

from __future__ import annotations

import pytest
from helpers import overlaps

from trainsim.catalog.schema_checks import _option_list, tuned_options_problem
from trainsim.errors import ConfigError
from trainsim.validate.row_settings import training_base, with_choice

# a Megatron-LM row that says only its layout (the Nemotron-4 15B report's shape, smaller)
ROW = {"id": "r", "model": "llama3-8b", "gpu": "h100-sxm-80gb", "num_gpus": "64",
       "gpus_per_node": "8", "tp": "4", "pp": "2", "vpp": "2", "global_batch_size": "256",
       "seq_length": "4096", "distributed_optimizer": "1", "framework": "megatron-lm",
       "framework_version": "2024-06", "measured_iteration_s": "1", "options": ""}
SWITCHES = ("dp_overlap", "overlap_grad_reduce", "tp_comm_overlap", "overlap_p2p_comm")


def _tuned(**cells: str) -> dict[str, list]:
    _, unknown = training_base({**ROW, **cells})
    return {k: v for k, v in unknown.items() if k in SWITCHES}


def test_empty_options_get_both_candidates_of_each_user_switch():
    assert _tuned() == {"dp_overlap": [False, True], "tp_comm_overlap": [False, True]}
    assert _tuned(framework="megatron-core", framework_version="0.8") == \
        {"dp_overlap": [False, True], "tp_comm_overlap": [False, True]}
    # the framework's own default is not a choice: interleaved pipelines overlap their sends
    assert overlaps(ROW) == (False, False, True, False)
    assert overlaps(ROW, framework="megatron-core", framework_version="0.4") == \
        (False, False, True, False)


def test_dp_overlap_candidate_turns_on_both_switches_where_the_release_has_both():
    raw, _ = training_base(ROW)
    par = with_choice(raw, {"dp_overlap": True})["parallel"]
    assert par["overlap_grad_reduce"] is True and par["overlap_param_gather"] is True
    par = with_choice(raw, {"overlap_grad_reduce": True})["parallel"]
    assert par["overlap_grad_reduce"] is True and par["overlap_param_gather"] is False


@pytest.mark.parametrize("options", ["pp_overlap", "dp_overlap", "tp_overlap;dp_overlap"])
def test_a_row_that_states_its_options_is_untouched(options):
    assert _tuned(options=options) == {}
    stated = set(options.split(";"))
    assert overlaps(ROW, options=options) == (
        "dp_overlap" in stated, "dp_overlap" in stated, "pp_overlap" in stated,
        "tp_overlap" in stated)


@pytest.mark.parametrize("framework, version, expected", [
    ("megatron-lm", "2021-04", {}),  # no --overlap-grad-reduce, no --tp-comm-overlap
    ("megatron-lm", "2022-05", {}),
    ("megatron-lm", "2023", {}),  # a year dates its first entry (2023-01)
    # no param gather yet; --overlap-p2p-communication still off by default (2023-10 on)
    ("megatron-lm", "2023-09", {"overlap_p2p_comm": [False, True],
                                "overlap_grad_reduce": [False, True]}),
    ("megatron-lm", "2023-12", {"dp_overlap": [False, True]}),  # TP overlap needs mcore + TE
    ("megatron-lm", "2024-03", {"overlap_grad_reduce": [False, True]}),  # gather needs mcore
    ("megatron-core", "0.4", {"dp_overlap": [False, True]}),
    ("megatron-core", "0.6", {"overlap_grad_reduce": [False, True]}),
    ("megatron-deepspeed", "2022-02", {}),  # its PipelineEngine reduces after the backward
    ("nemo", "24.07", {"tp_comm_overlap": [False, True]}),  # DP overlap is its default
])
def test_versions_without_the_flag_never_get_it(framework, version, expected):
    cells = {"framework": framework, "framework_version": version}
    if framework == "megatron-deepspeed":
        cells.update(vpp="1", distributed_optimizer="")
    assert _tuned(**cells) == expected


def test_switches_tuned_only_where_they_act():
    assert "dp_overlap" not in _tuned(num_gpus="8")  # dp 1: no gradient reduction
    assert "tp_comm_overlap" not in _tuned(tp="1")
    # Megatron-LM 2023-05-31 to 2023-10: --overlap-p2p-communication off by default, with an
    # interleaved pipeline only
    assert _tuned(framework_version="2023-06") == {"overlap_p2p_comm": [False, True]}
    assert _tuned(framework_version="2023-06", vpp="1") == {}


def test_tuned_tp_overlap_needs_sequence_parallelism():
    raw, _ = training_base(ROW)
    with pytest.raises(ConfigError, match="sequence_parallel"):
        with_choice(raw, {"tp_comm_overlap": True, "sequence_parallel": False})


def test_profile_tuned_options_are_checked_in_one_line():
    assert "'faster' is not an option switch" in _option_list(["dp_overlap", "faster"])
    assert "got 'dp_overlap'" in _option_list("dp_overlap")
    assert _option_list(["dp_overlap", "dp_overlap"])
    assert tuned_options_problem({"tp_comm_overlap": False}, {"tuned_options": ["tp_overlap"]}) \
        == "tp_overlap needs features.tp_comm_overlap, which is false at this version"
    assert "run_options too" in tuned_options_problem(
        {}, {"tuned_options": ["dp_overlap"], "run_options": ["dp_overlap"]})
    assert tuned_options_problem({"overlap_grad_reduce": True},
                                 {"tuned_options": ["dp_overlap"]}) is None


def test_a_bad_profile_entry_is_refused_naming_the_file_and_key(tmp_path, monkeypatch):
    import yaml

    from trainsim.catalog import frameworks
    from trainsim.errors import CatalogError

    data = yaml.safe_load(frameworks._files()["megatron-lm"].read_text())
    data["versions"][0]["defaults"]["tuned_options"] = ["dp_overlap"]  # 2021: no such flag
    path = tmp_path / "megatron-lm.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError) as err:
        frameworks._read(path)
    assert str(err.value) == ("megatron-lm.yaml: versions[0].defaults.tuned_options: dp_overlap "
                              "needs features.overlap_grad_reduce, which is false at this version")


def test_pytorch_ddp_overlaps_by_default_not_by_choice():
    # DistributedDataParallel reduces each bucket from the backward's hooks: its default, with
    # no switch to tune; a row that states its options keeps them
    row = {**ROW, "framework": "pytorch", "framework_version": "2.3", "tp": "1", "pp": "1",
           "vpp": "", "distributed_optimizer": "", "zero_stage": "0"}
    assert overlaps(row) == (True, True, False, False)
    assert _tuned(**{k: v for k, v in row.items() if k in ("framework", "framework_version",
                                                          "tp", "pp", "vpp")}) == {}
    assert overlaps(row, options="compile") == (False, False, False, False)
