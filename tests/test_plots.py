"""Plots render headless (Agg canvas) into real, non-trivial PNG and HTML files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import make_base

import trainsim
from trainsim.report.plots import (
    SweepSeries,
    plot_breakdown,
    plot_memory,
    plot_search,
    plot_sweep,
    plot_timeline,
    write_sweep_html,
)
from trainsim.search import SearchSpace, search

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PNG = b"\x89PNG\r\n\x1a\n"


def is_png(path: Path, min_bytes: int = 15_000) -> bool:
    data = path.read_bytes()
    return data[:8] == PNG and len(data) >= min_bytes


@pytest.fixture(scope="module")
def result():
    cfg = trainsim.load_run_config(EXAMPLES / "llama3-8b-h100.yaml",
                                   ["parallel.pp=4", "parallel.tp=2", "training.micro_batch_size=2"])
    return trainsim.simulate(cfg, keep_timeline=True)


def test_breakdown_bars(result, tmp_path):
    other = trainsim.simulate(trainsim.load_run_config(EXAMPLES / "llama3-8b-h100.yaml"))
    assert is_png(plot_breakdown([result, other], tmp_path / "b.png", labels=["pp4", "pp1"]))


def test_pipeline_timeline(result, tmp_path):
    assert is_png(plot_timeline(result, tmp_path / "t.png"))
    with pytest.raises(ValueError, match="keep_timeline"):
        plot_timeline(trainsim.simulate(result.config), tmp_path / "x.png")


def test_memory_stack_per_stage(result, tmp_path):
    assert is_png(plot_memory(result, tmp_path / "m.png"))


def test_search_scatter(tmp_path):
    r = search(make_base(gpus=8, batch=16), [8], SearchSpace(recompute=("none", "full"),
                                                             max_micro_batch=2))
    assert is_png(plot_search(r.evaluated, tmp_path / "s.png", r.pareto, r.best))


def test_sweep_png_and_html(tmp_path):
    series = [SweepSeries("hbm 2000", (300, 900, 1800), (3.0, 2.5, 2.3), (0.40, 0.45, 0.50)),
              SweepSeries("hbm 5000", (300, 900, 1800), (2.8, 2.3, 2.1), (0.42, 0.49, 0.55))]
    assert is_png(plot_sweep(series, "cluster.nvlink_gbps", tmp_path / "s.png"))
    html = write_sweep_html(series, "cluster.nvlink_gbps", tmp_path / "s.html",
                            rows=[{"nvlink": 300, "time": 3.0}]).read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" in html and "http" not in \
        html.replace('xmlns="http://www.w3.org/2000/svg"', "")  # self-contained: no links
    assert html.count("<svg") == 2 and html.count("<circle") == 12 and html.count("<title>") >= 12
    for cx, cy in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', html):
        assert 0 <= float(cx) <= 520 and 0 <= float(cy) <= 320  # every point inside its chart
