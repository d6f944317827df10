"""DeepSpeed's PipelineEngine runs one schedule (TrainSchedule: 1F1B, one chunk per stage):
a DeepSpeed config with pp > 1 and another order or interleaving describes no DeepSpeed run
and is refused in one line (``config.validity.deepspeed_pipeline_problem``)."""

from __future__ import annotations

import pytest

from trainsim.config.parallel import ParallelConfig
from trainsim.errors import ConfigError


def _parallel(**kw: object) -> ParallelConfig:
    return ParallelConfig(data_parallel_impl="deepspeed", **kw)


@pytest.mark.parametrize("kw, shown", [
    ({"virtual_pipeline_model_parallel_size": 2}, "interleaved_1f1b with vpp=2"),
    ({"pipeline_schedule": "gpipe"}, "gpipe with vpp=1"),
    ({"pipeline_schedule": "zb_h1"}, "zb_h1 with vpp=1"),
    ({"pipeline_schedule": "interleaved_1f1b", "virtual_pipeline_model_parallel_size": 3},
     "interleaved_1f1b with vpp=3"),
])
def test_other_schedules_refused(kw: dict, shown: str) -> None:
    with pytest.raises(ConfigError) as err:
        _parallel(pipeline_model_parallel_size=4, **kw)
    text = str(err.value)
    assert "\n" not in text and shown in text and "TrainSchedule" in text


@pytest.mark.parametrize("kw", [{}, {"pipeline_schedule": "1f1b"}, {"pipeline_schedule": "1F1B"}])
def test_train_schedule_accepted(kw: dict) -> None:
    assert _parallel(pipeline_model_parallel_size=4, **kw).pp == 4


def test_other_engines_and_one_stage_untouched() -> None:
    # Megatron's and FSDP's runs keep their schedules; one DeepSpeed stage has no pipeline
    assert ParallelConfig(pipeline_model_parallel_size=4, pipeline_schedule="gpipe").pp == 4
    assert ParallelConfig(data_parallel_impl="fsdp2", zero_stage=3, pipeline_model_parallel_size=4,
                          virtual_pipeline_model_parallel_size=2).vpp == 2
    assert _parallel(virtual_pipeline_model_parallel_size=1).pp == 1
