"""A named pipeline schedule with ZeRO-3 / FSDP that ``simulate`` refuses once it runs
(``pipeline.sharded_schedule_problem``) is refused by the service's check before the job is
queued, in the CLI's words (robust60 Lead 1: the service queued it and failed it later)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from trainsim.cli import main
from trainsim.service import Settings
from trainsim.service.jobs import problem

RUN = {"model": {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4,
                 "vocab_size": 1024},
       "parallel": {"pp": 2, "zero_stage": 3},
       "training": {"global_batch_size": 16, "micro_batch_size": 1, "seq_length": 512},
       "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}}


def _run(schedule: str, framework: str | None = None) -> dict:
    raw = json.loads(json.dumps(RUN))
    raw["parallel"]["pipeline_schedule"] = schedule
    if framework:
        raw["training"]["framework"] = framework
    return raw


def _cli(raw: dict, tmp_path) -> tuple[int, list[str]]:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(raw))
    r = CliRunner().invoke(main, ["simulate", str(path), "--format", "json"])
    return r.exit_code, [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]


@pytest.mark.parametrize("schedule,framework", [("zb_h1", None), ("dualpipe", "torchtitan")])
def test_the_service_refuses_before_queueing_in_the_clis_words(schedule, framework, tmp_path):
    raw = _run(schedule, framework)
    code, cli = _cli(raw, tmp_path)
    job = problem("simulate", raw, {}, Settings(workers=0, checkers=0))
    assert code == 2 and len(cli) == 1 and job is not None
    assert job[2] == cli[0].removeprefix("error: ")
    assert f"pipeline_schedule={schedule} with ZeRO-3/FSDP" in job[2]


@pytest.mark.parametrize("schedule,framework", [("zb_h1", "torchtitan"), ("1f1b", None),
                                                ("gpipe", None)])
def test_what_simulate_runs_the_service_accepts(schedule, framework, tmp_path):
    raw = _run(schedule, framework)
    assert problem("simulate", raw, {}, Settings(workers=0, checkers=0)) is None
    code, cli = _cli(raw, tmp_path)
    assert code == 0 and not cli
