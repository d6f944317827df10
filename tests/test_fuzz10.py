"""Tenth input sweep (24th session, fuzz10): the classes ``benchmarks/fuzz_sweep10.py`` found,
each refused in one line naming the field (or read as a file's value would be)."""

from __future__ import annotations

import dataclasses
import importlib.util
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


QWEN3_NEXT = {"model_type": "qwen3_next", "hidden_size": 2048, "intermediate_size": 5120,
              "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
              "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48,
              "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
              "vocab_size": 151936, "full_attention_interval": 4, "linear_num_key_heads": 16,
              "linear_conv_kernel_dim": 4, "rms_norm_eps": 1e-6, "rope_theta": 1e7,
              "hidden_act": "silu"}


@pytest.mark.parametrize("change, refused", [
    ({}, True),  # the hub's Qwen3-Next-80B-A3B config.json: an interval, no layer_types
    ({"full_attention_interval": None}, True),  # the widths alone: transformers' default 4
    ({"full_attention_interval": None, "linear_num_key_heads": None,
      "linear_conv_kernel_dim": None}, True),  # the model type alone: its class's default 4
    # every layer full attention: still output-gated attention, refused since fuzz31
    ({"full_attention_interval": 1}, False),
    ({"layer_types": ["full_attention"] * 48}, False),
])
def test_qwen3_next_linear_attention_without_layer_types_is_refused(tmp_path, change, refused):
    """A Qwen3-Next config.json without ``layer_types`` read as 48 softmax-attention layers
    (transformers makes 36 of them Gated DeltaNet linear attention)."""
    import json

    from trainsim.catalog import model_from_hf_config
    cfg = {**QWEN3_NEXT, **change}
    cfg = {k: v for k, v in cfg.items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    if refused:
        with pytest.raises(ConfigError, match="linear-attention layers"):
            model_from_hf_config(path)
    else:
        with pytest.raises(ConfigError, match="gates each attention output"):
            model_from_hf_config(path)


def test_a_large_yaml_is_refused_at_once_not_parsed_for_minutes(tmp_path):
    """PyYAML parses ~30-60 KiB/s of dense YAML here: a 1 MiB flow list took 32 s and the
    16 MiB file limit allowed ~9 minutes."""
    import time
    path = tmp_path / "big.yaml"
    path.write_text("x-big: [" + ",".join(["1"] * 400_000) + "]\n")
    start = time.perf_counter()
    line = _one_error_line(_cli(["simulate", str(path)]))
    assert "KiB" in line and "JSON" in line and time.perf_counter() - start < 5


def test_a_work_limit_in_other_scripts_digits_is_refused(monkeypatch):
    """TRAINSIM_MAX_TASKS='١٠' read as 10 (float() reads Arabic-Indic digits), as a config
    value would not be."""
    from trainsim.limits import WorkLimitError, limit
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", "\u0661\u0660")
    with pytest.raises(WorkLimitError, match="must be a number"):
        limit("TRAINSIM_MAX_TASKS")


@pytest.mark.parametrize("url, words", [
    ("foo://x", "is not sqlite:///FILE or postgresql"),  # was NoSuchModuleError
    ("SQLITE:///x.db", "is not sqlite:///FILE"),
    ("sqlite:x", "is not sqlite:///FILE"),  # was ArgumentError
    ("sqlite://", "is not sqlite:///FILE"),  # was TypeError (max_overflow)
    ("sqlite:///:memory:", "names no file"),  # was TypeError (max_overflow)
    ("mysql://u:pw@h/x", "'mysql://u:***@h/x'"),  # was ModuleNotFoundError; no password shown
    ("FOLDER", "cannot open the job store: unable to open database file"),  # OperationalError
    ("NOT_A_DB", "cannot open the job store: file is not a database"),  # DatabaseError
])
def test_a_job_store_url_that_cannot_be_opened_is_one_error_line(tmp_path, url, words):
    pytest.importorskip("sqlalchemy")
    junk = tmp_path / "junk.txt"
    junk.write_text("not a database\n")
    url = url.replace("FOLDER", f"sqlite:///{tmp_path}").replace("NOT_A_DB", f"sqlite:///{junk}")
    line = _one_error_line(_cli(["token", "list", "--db", url]))
    assert words in line


def test_a_token_name_with_a_line_break_is_refused(tmp_path):
    """'a\\nb' was stored and split ``token list``'s row in two."""
    pytest.importorskip("sqlalchemy")
    line = _one_error_line(_cli(["token", "create", "a\nb", "--db",
                                 f"sqlite:///{tmp_path / 'jobs.db'}"]))
    assert "not printable" in line


@pytest.mark.parametrize("args, words", [
    (["--workers", "100000"], "not in the range"),  # started 100,000 processes
    (["--checkers", "1000000"], "not in the range"),
    (["--host", "bad host", "--port", "0"], "--host 'bad host'"),  # uvicorn's ERROR, exit 3
    (["--host", "192.0.2.1", "--port", "0"], "cannot listen on 192.0.2.1:0"),
    (["--search-executor", "ray", "--port", "0"], "needs Ray"),  # every search job failed
])
def test_serve_refuses_what_it_cannot_run_before_starting_workers(args, words):
    pytest.importorskip("uvicorn")
    if "ray" in args and importlib.util.find_spec("ray"):
        pytest.skip("Ray is installed here")
    line = _one_error_line(_cli(["serve", "--workers", "0", "--checkers", "0", *args]))
    assert words in line


@pytest.mark.parametrize("where, name, value", [
    ("gpu", "hbm_bw_Bps", 1e-300),  # ValueError in summary.critical_stage (times past floats)
    ("gpu", "nvlink_bw_Bps", 1e-300),  # 'protocol auto cannot run algorithm auto'
    ("cluster", "nic_bw_Bps", 0.5),
])
def test_a_rate_below_one_per_second_is_refused_naming_it(base, where, name, value):
    with pytest.raises(ConfigError, match=f"{name}={value:g} is below 1 per second"):
        if where == "gpu":
            dataclasses.replace(base.cluster.gpu, **{name: value})
        else:
            dataclasses.replace(base.cluster, **{name: value})


def test_an_empty_text_in_an_optional_list_reads_as_none(base):
    """recompute_modules='' (a file's empty value: None) was a TypeError in the list check."""
    p = dataclasses.replace(base.parallel, recompute="selective", recompute_modules="")
    assert p.recompute_modules is None
