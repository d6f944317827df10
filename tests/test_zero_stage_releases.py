"""ZeRO stages a DeepSpeed release older than its profile's first entry lacks are refused.

Sources (deepspeedai/DeepSpeed tags): v0.1.0 (c61e23b4b) has only the boolean
``zero_optimization`` (stage 1, deepspeed/pt/deepspeed_constants.py L139-142); v0.2.0
(96c4daabc) caps MAX_STAGE_ZERO_OPTIMIZATION at ZERO_OPTIMIZATION_GRADIENTS (stage 2,
deepspeed/pt/deepspeed_zero_config.py L35); v0.3.12 (35fd7ccd8) first allows
ZERO_OPTIMIZATION_WEIGHTS (stage 3, deepspeed/runtime/zero/constants.py L38; zero/stage3.py).
"""

from __future__ import annotations

import pytest

from trainsim.catalog.defaults import apply_framework
from trainsim.errors import ConfigError


def _apply(version: str, stage: int) -> dict:
    parallel = {"zero_stage": stage}
    apply_framework(parallel, {"framework": "deepspeed", "framework_version": version})
    return parallel


@pytest.mark.parametrize(("version", "stage", "first"), [
    ("0.1.0", 2, "0.2.0"), ("0.1.0", 3, "0.3.12"), ("0.2.0", 3, "0.3.12"),
    ("0.3.11", 3, "0.3.12"), ("2020-12", 3, "0.3.12")])
def test_stage_before_its_release_is_refused(version, stage, first):
    with pytest.raises(ConfigError) as err:
        _apply(version, stage)
    text = str(err.value)
    assert "\n" not in text and f"zero_stage={stage}" in text and f"deepspeed {first}" in text


@pytest.mark.parametrize("stage", [3, "3", 3.0, "3.0", " 3 "])
def test_a_stage_however_written_is_refused_before_its_release(stage):
    # the release lookup is keyed by the stage number, not its spelling (3.0 passed before)
    with pytest.raises(ConfigError, match="deepspeed 0.3.12"):
        _apply("0.3.11", stage)


@pytest.mark.parametrize(("version", "stage"), [
    ("0.1.0", 1), ("0.2.0", 2), ("0.3.12", 3), ("0.3.13", 3), ("0.14.0", 3),
    ("2021-03", 3), ("2020-06", 2)])  # a month includes the releases made in it
def test_stage_from_its_release_runs(version, stage):
    assert _apply(version, stage)["zero_stage"] == stage


def test_refused_with_the_engine_named():
    parallel = {"zero_stage": 3, "data_parallel_impl": "deepspeed"}
    with pytest.raises(ConfigError):
        apply_framework(parallel, {"framework": "deepspeed", "framework_version": "0.2.0"})


def test_llm_foundry_has_no_pipeline_parallelism():
    # Composer's ParallelismConfig holds fsdp, tp and fsdp2 only (composer@640518880
    # composer/utils/parallelism.py L186-190)
    for key in ("pp", "pipeline_model_parallel_size"):
        with pytest.raises(ConfigError) as err:
            apply_framework({key: 4}, {"framework": "llm-foundry"})
        assert "no pipeline parallelism" in str(err.value) and "\n" not in str(err.value)
        assert "composer@640518880 composer/utils/parallelism.py L186-190" in str(err.value)
    apply_framework({"pp": 1}, {"framework": "llm-foundry"})  # pp 1 is no pipeline


@pytest.mark.parametrize(("version", "runs"), [
    ("2025-01", False), ("2025-02-25", False), ("2025-02", True), ("2025-02-26", True),
    ("2025-03", True)])
def test_megatron_fsdp_by_date_reads_a_month_as_deepspeed_does(version, runs):
    # Megatron-FSDP (ZeRO-3) first in NVIDIA/Megatron-LM@d165a85 (2025-02-26): a month includes
    # the releases made in it, as DeepSpeed 2021-03 includes 0.3.12 (2021-03-12)
    parallel = {"zero_stage": 3}
    if runs:
        apply_framework(parallel, {"framework": "megatron-lm", "framework_version": version})
        assert parallel["zero_stage"] == 3
        return
    with pytest.raises(ConfigError) as err:
        apply_framework(parallel, {"framework": "megatron-lm", "framework_version": version})
    assert "\n" not in str(err.value) and "zero_stage=3" in str(err.value)
