"""MXFP8 on another vendor's GPU needs that GPU's MX-format matrix instructions (robust53 lead:
MI300X took ``fp8_recipe=mxfp8`` because Transformer Engine's compute-capability check is
NVIDIA's). AMD added them with CDNA 4 (gfx950: MI350X, MI355X, whose fp4 peaks mark them)."""

from __future__ import annotations

import pytest

from trainsim import run_config_from_dict
from trainsim.errors import ConfigError


def _cfg(gpu: str, recipe: str):
    return run_config_from_dict({
        "model": "llama3-8b", "parallel": {"tp": 1},
        "training": {"global_batch_size": 8, "seq_length": 4096, "dtype": "fp8",
                     "fp8_recipe": recipe},
        "cluster": {"gpu": gpu, "num_gpus": 8, "gpus_per_node": 8}})


@pytest.mark.parametrize("gpu", ["mi300x", "mi325x"])
def test_cdna3_refuses_mxfp8_in_one_line(gpu):
    with pytest.raises(ConfigError, match=rf"fp8_recipe=mxfp8 needs MX-format .* {gpu} lacks") \
            as err:
        _cfg(gpu, "mxfp8")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("gpu", ["mi300x", "mi325x"])
@pytest.mark.parametrize("recipe", ["delayed", "current", "blockwise"])
def test_cdna3_keeps_its_scaled_fp8_recipes(gpu, recipe):
    assert _cfg(gpu, recipe).training.fp8_recipe == recipe


@pytest.mark.parametrize("gpu", ["mi350x", "mi355x", "b200"])
def test_gpus_with_mx_instructions_run_mxfp8(gpu):
    assert _cfg(gpu, "mxfp8").training.fp8_recipe == "mxfp8"
