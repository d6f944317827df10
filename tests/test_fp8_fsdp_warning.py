"""NeMo 25.04 under Megatron-FSDP keeps 16-bit weights whatever ``fp8_param_gather`` says
(nemo.yaml ``megatron_fsdp_16bit_params``, ``workload.fp8_gather.fp8_weights_gathered``): a user
who states ``fp8_param_gather: true`` there is told so in one warning, not silently overridden."""

import warnings

import pytest

from trainsim.catalog.defaults import apply_framework
from trainsim.errors import SettingReplaced


def _warnings(version: str, gather: bool | None, stage: int = 3) -> list[str]:
    parallel = {"tp": 1, "pp": 1, "zero_stage": stage}
    training = {"framework": "nemo", "framework_version": version, "dtype": "fp8"}
    if gather is not None:
        training["fp8_param_gather"] = gather
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        apply_framework(parallel, training)
    return [str(w.message) for w in caught if issubclass(w.category, SettingReplaced)]


def test_a_stated_fp8_gather_under_nemo_2504_megatron_fsdp_warns():
    (message,) = _warnings("25.04", True)
    assert "fp8_param_gather=true" in message and "16-bit weights" in message


@pytest.mark.parametrize("version, gather, stage", [
    ("25.04", None, 3),   # the profile's own choice: nothing to tell
    ("25.04", False, 3),  # what the release does anyway
    ("25.04", True, 1),   # the distributed optimizer gathers fp8 weights
    ("25.07", True, 3),   # 25.07's scripts no longer turn it off under Megatron-FSDP
])
def test_no_warning_where_nothing_is_overridden(version, gather, stage):
    assert _warnings(version, gather, stage) == []
