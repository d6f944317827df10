"""``--plot`` of simulate, sweep and validate: the figure is written in the format its suffix
names, its points are the very values the command prints, and a path that cannot be written is
refused before any work, in one error line naming --plot."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
import yaml
from helpers import BASE, TINY_MODEL, cli, one_error_line

import trainsim
from trainsim.cli_guard import PLOT_SUFFIXES
from trainsim.report.plots import _parts_of, result_figure
from trainsim.search import Vary, sweep
from trainsim.validate import BUNDLED_DIR, validate_file
from trainsim.validate.kernels import TIME_UNITS
from trainsim.validate.plot import panels, per_file_path, validation_figure

GiB = 2**30
PNG = b"\x89PNG\r\n\x1a\n"
TRAINING = """id,framework,model,hidden_size,num_layers,num_attention_heads,vocab_size,gpu,num_gpus,\
gpus_per_node,tp,pp,cp,ep,sequence_parallel,global_batch_size,micro_batch_size,seq_length,dtype,\
measured_iteration_s,measured_peak_memory_gib
a,megatron-lm,,1024,4,8,32000,h100-sxm-80gb,8,8,1,1,1,1,0,16,2,1024,bf16,0.007,3.5
b,torchtitan,,1024,4,8,32000,h100-sxm-80gb,8,8,2,1,1,1,1,16,1,1024,bf16,0.03,
bad,megatron-lm,bogus-model,,,,,h100-sxm-80gb,8,8,1,1,1,1,0,64,2,4096,bf16,5.0,
"""
"""Two tiny training rows of two frameworks (one with a measured memory) and one that fails."""


def points(ax) -> set[tuple[float, float]]:
    """Every scatter point drawn on ``ax``."""
    from matplotlib.collections import PathCollection

    return {(float(x), float(y)) for c in ax.collections if isinstance(c, PathCollection)
            for x, y in c.get_offsets()}


def close(got: set[tuple[float, float]], want: set[tuple[float, float]]) -> bool:
    return len(got) == len(want) and all(
        any(math.isclose(a, c, rel_tol=1e-12) and math.isclose(b, d, rel_tol=1e-12)
            for c, d in want) for a, b in got)


@pytest.fixture
def run_yaml(tmp_path) -> Path:
    (tmp_path / "run.yaml").write_text(BASE)
    return tmp_path / "run.yaml"


# ---------------------------------------------------------------------------- simulate

def test_simulate_figure_draws_the_breakdown_and_the_memory_of_each_stage():
    """The time bars are the breakdown's parts and sum to the iteration time; each stage's
    memory stack reaches its device figure (allocated + cache + context); HBM is drawn."""
    raw = yaml.safe_load(BASE)
    raw["parallel"] = {"pp": 2}
    r = trainsim.simulate(trainsim.run_config_from_dict(raw))
    fig = result_figure(r)
    ax_t, ax_m = fig.axes[:2]
    widths = [p.get_width() for p in ax_t.patches]
    assert widths == [v for v in _parts_of(r) if v > 0 or v == _parts_of(r)[0]]
    assert math.isclose(sum(widths), r.iteration_time_s, rel_tol=1e-9)
    assert len(r.memory) == 2
    for i, m in enumerate(r.memory):
        tops = sum(p.get_height() for p in ax_m.patches if round(p.get_x() + p.get_width() / 2) == i)
        assert math.isclose(tops, m.device / GiB, rel_tol=1e-9)
    assert any(math.isclose(line.get_ydata()[0], r.config.cluster.gpu.hbm_bytes / GiB)
               for line in ax_m.lines)


@pytest.mark.parametrize("name, magic", [("sim.png", PNG), ("sim.svg", b"<?xml"),
                                         ("sim.pdf", b"%PDF")])
def test_simulate_plot_writes_the_format_its_suffix_names(run_yaml, name, magic):
    r = cli("simulate", str(run_yaml), "--plot", str(run_yaml.parent / name))
    assert r.exit_code == 0, r.output
    data = (run_yaml.parent / name).read_bytes()
    assert data.startswith(magic) and len(data) > 10_000
    assert f"plot written to {run_yaml.parent / name}" in r.stdout.replace("\n", "")


# ---------------------------------------------------------------------------- sweep

def tiny_raw() -> dict:
    return {"model": dict(TINY_MODEL), "parallel": {"tp": 1},
            "training": {"global_batch_size": 32, "seq_length": 2048},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}


def test_sweep_figure_plots_the_rows_it_prints():
    """Four panels (time, tokens/s/GPU, MFU %, peak GiB) against the first varied field, a
    line per value of the second, whose points are the rows' values."""
    r = sweep(tiny_raw(), [Vary.parse("parallel.tp=1,2,4,8"),
                           Vary.parse("training.micro_batch_size=1,2")])
    rows = r.rows()
    fig = r.figure()
    axes = fig.axes
    assert [ax.get_ylabel() for ax in axes] == ["iteration time (s)", "tokens/s per GPU",
                                                "MFU (%)", "peak memory per GPU (GiB)"]
    assert axes[0].get_xscale() == "log"  # 1, 2, 4, 8: doublings
    for mbs in (1, 2):
        mine = [row for row in rows if row["training.micro_batch_size"] == mbs]
        for ax, key, scale in zip(axes, ("iteration_time_s", "tokens_per_s_per_gpu", "mfu",
                                         "peak_memory_gib"), (1, 1, 100, 1)):
            line = next(ln for ln in ax.lines
                        if ln.get_label() == f"training.micro_batch_size={mbs}")
            assert list(line.get_xdata()) == [row["parallel.tp"] for row in mine]
            assert list(line.get_ydata()) == [scale * row[key] for row in mine]


def test_sweep_of_names_is_categorical_and_names_failed_points():
    """Names (recompute modes, GPUs) are categories in the order given; a point that failed
    leaves its category empty and is counted under the title."""
    r = sweep(tiny_raw(), [Vary.parse("cluster.gpu=h100-sxm-80gb,bogus,a100-sxm-80gb")])
    fig = r.figure()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["h100-sxm-80gb", "bogus",
                                                            "a100-sxm-80gb"]
    (line,) = ax.lines
    assert list(line.get_xdata()) == [0.0, 2.0]
    assert list(line.get_ydata()) == [row["iteration_time_s"] for row in r.rows()
                                      if row["iteration_time_s"] is not None]
    assert "1 of 3 points failed" in fig._suptitle.get_text()


def test_sweep_plot_command(run_yaml):
    out = run_yaml.parent / "sweep.pdf"
    r = cli("sweep", str(run_yaml), "--vary", "parallel.tp=1,2", "--plot", str(out))
    assert r.exit_code == 0, r.output
    assert out.read_bytes().startswith(b"%PDF")


# ---------------------------------------------------------------------------- validate

@pytest.fixture
def training_csv(tmp_path) -> Path:
    (tmp_path / "tiny_training.csv").write_text(TRAINING)
    return tmp_path / "tiny_training.csv"


def test_training_figure_is_the_rows_predicted_against_measured(training_csv):
    """Iteration time and (for rows that measured it) peak memory, each row once, coloured
    by framework; the failed row is named in the title."""
    kind, results = validate_file(training_csv)
    fig = validation_figure(kind, results, "t")
    ax_t, ax_m = fig.axes[:2]
    assert ax_t.get_xscale() == ax_t.get_yscale() == "log"
    assert close(points(ax_t), {(r.measured, r.predicted) for r in results if r.predicted})
    assert close(points(ax_m), {(r.measured_memory_gib, r.predicted_memory_gib)
                                for r in results if r.id == "a"})
    from matplotlib.collections import PathCollection

    groups = {c.get_label() for c in ax_t.collections if isinstance(c, PathCollection)}
    assert groups == {"megatron-lm", "torchtitan"}
    assert "failed (1" in fig._suptitle.get_text() and ": bad" in fig._suptitle.get_text()
    assert "measured iteration time (s)" == ax_t.get_xlabel()


def test_validate_plot_draws_the_rows_the_json_prints(training_csv, monkeypatch):
    """One code path: the rows handed to the figure are the rows the JSON prints; stdout stays
    the JSON alone and the table's last line stays the summary."""
    import trainsim.validate.plot as plot_module

    seen = []
    real = plot_module.plot_validation
    monkeypatch.setattr(plot_module, "plot_validation",
                        lambda kind, results, path, title=None:
                        seen.append(results) or real(kind, results, path, title))
    png = training_csv.parent / "v.png"
    r = cli("validate", str(training_csv), "--workers", "1", "--format", "json", "--plot", str(png))
    assert r.exit_code == 0, r.output
    printed = json.loads(r.stdout)["rows"]
    assert [x.to_dict() for x in seen[0]] == printed
    assert png.read_bytes()[:8] == PNG and "plot written to" in r.stderr
    r = cli("validate", str(training_csv), "--workers", "1", "--plot", str(png))
    assert r.stdout.strip().splitlines()[-1].startswith("3 rows, MAPE")


def _subset(tmp_path: Path, name: str, keep) -> Path:
    text = (BUNDLED_DIR / name).read_text()
    kept = keep(list(csv.DictReader(io.StringIO(text))))
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(dict.fromkeys(k for r in kept for k in r)),
                       restval="", lineterminator="\n")
    w.writeheader()
    w.writerows(kept)
    (tmp_path / name).write_text(out.getvalue())
    return tmp_path / name


def test_kernels_figure_has_times_and_rates_apart(tmp_path):
    """A kernels file's times (in ms, both sides scaled alike) and TFLOP/s are two panels; a
    marker per kernel kind."""
    path = _subset(tmp_path, "kernels_published.csv", lambda rows: (
        [r for r in rows if r["measured_unit"] == "TFLOP/s"][:4]
        + [r for r in rows if r["measured_unit"] in TIME_UNITS][:4]))
    kind, results = validate_file(path)
    fig = validation_figure(kind, results)
    ax_ms, ax_rate = fig.axes[:2]
    assert close(points(ax_ms), {(r.measured * TIME_UNITS[r.extra["unit"]] * 1e3,
                                  r.predicted * TIME_UNITS[r.extra["unit"]] * 1e3)
                                 for r in results if r.extra["unit"] in TIME_UNITS})
    assert close(points(ax_rate), {(r.measured, r.predicted) for r in results
                                   if r.extra["unit"] == "TFLOP/s"})
    assert ax_ms.get_xlabel() == "measured kernel time (ms)"
    assert ax_rate.get_xlabel() == "measured kernel throughput (TFLOP/s)"


def test_collectives_figure_draws_excluded_rows_hollow(tmp_path):
    """Bus bandwidth by collective; a comparable = no row is drawn hollow and counted apart
    in the panel's title, as in the summary."""
    def keep(rows):
        rows = rows[:4]
        rows[0] = {**rows[0], "id": "apart", "comparable": "no", "note": "launch floor"}
        return rows

    path = _subset(tmp_path, "collectives_public.csv", keep)
    kind, results = validate_file(path)
    fig = validation_figure(kind, results)
    ax = fig.axes[0]
    assert close(points(ax), {(r.measured, r.predicted) for r in results})
    hollow = [c for c in ax.collections if c.get_label().endswith("(excluded)")]
    assert len(hollow) == 1 and hollow[0].get_facecolors().size == 0
    assert "3 rows" in ax.get_title() and "(+1 excluded)" in ax.get_title()
    assert ax.get_xlabel() == "measured bus bandwidth (GB/s)"


def test_layers_figure_is_fwd_bwd_time_and_saved_activations(tmp_path):
    lines = (BUNDLED_DIR / "layers_h100_measured.jsonl").read_text().splitlines()[:3]
    (tmp_path / "layers.jsonl").write_text("\n".join(lines) + "\n")
    kind, results = validate_file(tmp_path / "layers.jsonl")
    ps = panels(kind, results)
    assert [p.quantity for p in ps] == ["fwd+bwd time of one layer",
                                        "activations saved for backward"]
    fig = validation_figure(kind, results)
    assert close(points(fig.axes[0]), {(1e3 * r.measured, 1e3 * r.predicted) for r in results})
    assert close(points(fig.axes[1]), {(r.measured_memory_gib, r.predicted_memory_gib)
                                       for r in results})


def test_validate_without_a_file_writes_a_figure_per_bundled_file(tmp_path, monkeypatch,
                                                                  training_csv):
    import trainsim.validate as validate_module

    layers = tmp_path / "layers.jsonl"
    layers.write_text((BUNDLED_DIR / "layers_h100_measured.jsonl").read_text()
                      .splitlines()[0] + "\n")
    monkeypatch.setattr(validate_module, "bundled_files", lambda: [layers, training_csv])
    r = cli("validate", "--workers", "1", "--plot", str(tmp_path / "all.svg"))
    assert r.exit_code == 0, r.output
    for name in ("all-layers.svg", "all-tiny_training.svg"):
        assert (tmp_path / name).read_text().lstrip().startswith("<?xml")
    assert per_file_path("out/v.png", "x/training_public.csv") == Path(
        "out/v-training_public.png")


# ---------------------------------------------------------------------------- service

def test_service_jobs_carry_the_plot_of_their_command(training_csv):
    """simulate, sweep and validate jobs with options.plot hold the PNG the CLI writes beside
    the same JSON; a validate job over every bundled file is refused (one figure a job)."""
    from trainsim.service import Settings, jobs
    from trainsim.service.requests import RequestError

    settings = Settings(db_url="sqlite://", workers=0)
    config = yaml.safe_load(BASE)
    for kind, options in (("simulate", {"plot": True}),
                          ("sweep", {"vary": ["parallel.tp=1,2"], "plot": True})):
        with_plot = jobs.run(kind, config, options, settings)
        assert with_plot.plot[:8] == PNG
        assert with_plot.result == jobs.run(kind, config, {**options, "plot": False},
                                            settings).result
    out = jobs.run("validate", {}, {"csv": training_csv.read_text(), "plot": True}, settings)
    assert out.plot[:8] == PNG and len(json.loads(out.result)["rows"]) == 3
    with pytest.raises(RequestError, match="options.plot"):
        jobs.check("validate", {}, {"plot": True}, settings)


# ---------------------------------------------------------------------------- refusals

COMMANDS = {
    "simulate": ["simulate", "run.yaml"],
    "validate": ["validate", "rows.csv"],
    "sweep": ["sweep", "run.yaml", "--vary", "parallel.tp=1,2"],
    "search": ["search", "llama3-8b", "--gpus", "8", "--global-batch", "16", "--seq", "4096"],
    "goodput": ["goodput", "run.yaml", "--tokens", "1B", "--trials", "5"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("bad, why", [("missing/dir/p.png", "no directory"),
                                      ("p.txt", "no figure format"),
                                      (".", "is a directory")])
def test_a_plot_path_that_cannot_be_written_is_refused_first(tmp_path, command, bad, why):
    (tmp_path / "run.yaml").write_text(BASE)
    (tmp_path / "rows.csv").write_text(TRAINING)
    line = one_error_line(cli(*COMMANDS[command], "--plot", bad, cwd=tmp_path))
    assert "--plot" in line and why in line
    assert not any(tmp_path.glob("p.*")) and not (tmp_path / "missing").exists()


def test_plot_suffixes_are_formats_matplotlib_writes():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    known = FigureCanvasAgg(Figure()).get_supported_filetypes()
    assert {s[1:] for s in PLOT_SUFFIXES} <= set(known)
