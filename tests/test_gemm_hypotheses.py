"""benchmarks/gemm_hypotheses.py: every hypothesis leaves the shipped model as it found it,
and the harness hypothesis reaches vidur's Kineto rows only."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.compute import roofline, split_k
from trainsim.validate import kernels as vk

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def hyp():
    return load_script(ROOT / "benchmarks" / "gemm_hypotheses.py")


def _state():
    return (roofline.RooflineModel.gemm_efficiency, roofline.GEMM_TILE_OVERHEAD_K,
            roofline.SMALL_TILE_RATE, roofline.SPLIT_K_MAX_WAVES, roofline.COLD_CALL_S,
            split_k.SPLIT_K_FIXUP, vk.COLD_CALL, vk.UNTIMED_GAPS)


def test_every_hypothesis_restores_the_shipped_model(hyp):
    before = _state()
    for name, make in hyp.HYPOTHESES.items():
        with make():
            if name != "shipped":
                assert _state() != before, name
        assert _state() == before, name


def test_the_harness_term_reaches_the_kineto_rows_only(hyp):
    with open(hyp.PUBLISHED, newline="") as fh:
        rows = list(csv.DictReader(fh))
    hit = [r["id"] for r in rows if hyp.KINETO.search(f"{r['source']} {r['note']}")]
    assert hit and all(i.startswith("vidur-") for i in hit)
    assert not any(vk.COLD_CALL.search(f"{r['source']} {r['note']}") for r in rows
                   if r["id"] in set(hit))
