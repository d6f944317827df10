"""Tenth input sweep (24th session, fuzz10): the classes ``benchmarks/fuzz_sweep10.py`` found,
each refused in one line naming the field (or read as a file's value would be)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from trainsim import ConfigError, load_run_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "llama3-8b-h100.yaml"


@pytest.fixture(scope="module")
def base():
    return load_run_config(str(EXAMPLE))


@pytest.mark.parametrize("section, name, value, words", [
    ("parallel", "recompute_modules", 3, "parallel.recompute_modules must be a list"),
    ("parallel", "recompute_modules", 0.5, "parallel.recompute_modules must be a list"),
    ("training", "cuda_graph_scope", 1, "training.cuda_graph_scope must be a list"),
    ("cluster", "gpu", "h100", r"cluster.gpu must be a GPUSpec, got str .*catalog.gpu"),
    ("cluster", "gpu", None, "cluster.gpu must be a GPUSpec"),
    ("cluster", "extra", 1, "cluster.extra must be a mapping"),
    ("cluster", "torus_dims", ("a",), r"cluster.torus_dims\[0\] must be an integer"),
    ("parallel", "cp_te_ring", ("bogus",), r"parallel.cp_te_ring\[0\]='bogus' is not one of"),
    ("parallel", "flex_two_ranks", ("x",), r"parallel.flex_two_ranks\[0\]='x' is not one of"),
])
def test_api_config_with_a_container_field_of_the_wrong_kind_is_one_config_error(
        base, section, name, value, words):
    """A config built in code with a number where a list goes, a preset's name where a GPUSpec
    goes (before: TypeError/AttributeError inside the simulation) or an unknown name in a
    profile-set list (before: silently ignored) is one ConfigError naming the field."""
    with pytest.raises(ConfigError, match=words) as info:
        dataclasses.replace(getattr(base, section), **{name: value})
    assert "\n" not in str(info.value)


def test_api_lists_are_read_as_a_file_reads_them(base):
    """A list or a comma-separated text where a tuple goes is the tuple a file would give."""
    t = dataclasses.replace(base.training, cuda_graphs=True, cuda_graph_scope="attn, mlp")
    assert t.cuda_graph_scope == ("attn", "mlp")
    p = dataclasses.replace(base.parallel, recompute="selective", recompute_modules=["mlp"])
    assert p.recompute_modules == ("mlp",)
    assert dataclasses.replace(base.parallel, cp_te_ring=["cudnn"]).cp_te_ring == ("cudnn",)
    assert dataclasses.replace(base.training, cuda_graph_scope=None).cuda_graph_scope == ()


def _cli(args: list[str]):
    from click.testing import CliRunner

    from trainsim.cli import main
    return CliRunner().invoke(main, args)


def _one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.mark.parametrize("command", ["simulate", "validate", "goodput"])
def test_an_empty_file_name_is_refused_not_read_as_the_folder_or_the_bundled_files(command):
    """``simulate ''`` read Path('') = '.' ("cannot read config .: Is a directory");
    ``validate ''`` ran every bundled file (minutes) as if no file were given."""
    assert "file name is empty" in _one_error_line(_cli([command, ""]))


@pytest.fixture
def fifo(tmp_path, monkeypatch):
    import os

    from trainsim.config import safe_load
    monkeypatch.setattr(safe_load, "PIPE_WAIT_S", 0.2)
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", ["simulate", "validate"])
def test_a_named_pipe_nothing_writes_to_is_one_error_line_not_a_hang(fifo, command):
    """Opening a FIFO without a writer blocked forever (simulate, validate, a config.json)."""
    assert "is a pipe that nothing wrote to" in _one_error_line(_cli([command, str(fifo)]))


def test_validate_reads_a_pipe_once(fifo, monkeypatch):
    """``validate <(cat rows.csv)``: the kernel-database and layers sniffers read the pipe's
    first bytes, and the CSV reader then found it empty ("not a training file")."""
    import threading

    from trainsim.config import safe_load
    monkeypatch.setattr(safe_load, "PIPE_WAIT_S", 30)
    rows = (ROOT / "src" / "trainsim" / "data" / "validation" / "collectives_public.csv")

    def write():
        with open(fifo, "w") as f:
            f.write(rows.read_text())

    writer = threading.Thread(target=write)
    writer.start()
    result = _cli(["validate", str(fifo), "--workers", "1", "--format", "json"])
    writer.join()
    assert result.exit_code == 0, result.output
    import json
    assert json.loads(result.output)["summary"]["n"] == 6
