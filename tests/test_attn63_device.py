"""benchmarks/device_checks63_attn63.py without a GPU: its plan and its FLOP count."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def dc63():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("device_checks63_attn63",
                                                  BENCH / "device_checks63_attn63.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_lists_its_section(dc63, capsys):
    assert dc63.main(["--dry-run"]) == 0
    assert "sdpa_records" in capsys.readouterr().out


def test_causal_flops_are_the_grids(dc63):
    # device_checks54.attn_grid: 2 b s^2 h (d_qk + d_v) / 2, the backward 2.5x
    assert dc63.causal_flops(4096, 32, False) == 2 * 4096 ** 2 * 32 * 256 * 0.5
    assert dc63.causal_flops(4096, 32, True) == 2.5 * dc63.causal_flops(4096, 32, False)


def test_its_rows_name_a_library_the_validator_reads_as_sdpa():
    from trainsim.validate.vocab import ATTENTION_IMPL

    assert ATTENTION_IMPL["sdpa_flash"] == "sdpa"
    assert ATTENTION_IMPL["flash2"] == "flash2"
