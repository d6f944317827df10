"""Leads of the 24th session's sweeps (fixes), each failing before: a ``--vary`` list's repeated
values were each simulated; a config.json's expert count was taken from whichever expert key
came first, a foreign family's key included; ``full_attention_interval`` refused families
whose transformers config has no such field; ``search --dispatcher`` on a dense model was
silently ignored while ``--ep``/``--etp`` were refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import BASE, cli

from trainsim.catalog import model_from_hf_config
from trainsim.errors import ConfigError
from trainsim.search.whatif import Vary


def _error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# ---------------------------------------------------------------------------- sweep --vary


def test_repeated_vary_values_are_kept_once_in_first_order():
    v = Vary.parse("parallel.tp=2,1,2,4,1,2")
    assert v.values == (2, 1, 4) and v.repeated == 3
    assert v.note() == "--vary parallel.tp: 3 repeated values dropped"
    assert Vary.parse("parallel.tp=1,2").note() is None


def test_repeats_are_the_same_value_of_the_same_type():
    """2 and 2.0 stay two points (a field may take one and refuse the other); names are
    compared as written."""
    assert Vary.parse("training.global_batch_size=2,2.0").values == (2, 2.0)
    assert Vary.parse("cluster.gpu=h100-sxm-80gb,H100-SXM-80GB,h100-sxm-80gb").repeated == 1


def test_sweep_cli_simulates_a_repeated_value_once(tmp_path):
    (tmp_path / "run.yaml").write_text(BASE)
    values = ",".join(["1"] * 500 + ["2", "1"])
    r = cli("sweep", "run.yaml", "--vary", f"parallel.tp={values}", "--format", "json",
            cwd=tmp_path)
    assert r.exit_code == 0, r.output
    assert [row["parallel.tp"] for row in json.loads(r.stdout)] == [1, 2]
    assert r.stderr.strip() == "--vary parallel.tp: 500 repeated values dropped"


# ---------------------------------------------------------------------------- search --dispatcher


def test_search_refuses_a_dispatcher_for_a_dense_model(tmp_path):
    (tmp_path / "m.yaml").write_text(BASE.splitlines()[0] + "\n")
    line = _error_line(cli("search", "m.yaml", "--gpus", "8", "--global-batch", "16", "--seq",
                           "512", "--workers", "1", "--dispatcher", "alltoall", cwd=tmp_path))
    assert line.startswith("error: --dispatcher: ") and "dense" in line
