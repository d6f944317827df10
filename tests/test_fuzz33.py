"""fuzz33: the input robustness round generated from the command tree
(benchmarks/fuzz_cli33.py): a NUL in any argument, a --days window past a float's seconds, a
sweep --out that cannot be a directory, transformers' own warnings and leftover temporary
configs of ``capture``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "llama3-8b-h100.yaml")


@pytest.mark.parametrize("args", [
    ["simulate", "run\x00.yaml"],  # os.stat raised ValueError: embedded null byte
    ["simulate", EXAMPLE, "--plot", "fig\x00.png"],  # click.Path's own os.stat
    ["validate", "rows\x00.csv"],
    ["token", "create", "a\x00b", "--db", "sqlite:////nonexistent/x.db"],
])
def test_a_nul_in_any_argument_is_one_error_line(args):
    line = one_error_line(cli(*args), warnings=False)
    assert "NUL character" in line and "\\x00" in line


@pytest.mark.parametrize("out", ["/dev/null", "file", "file/sub", ""])
def test_sweep_out_that_cannot_be_a_directory_refused_before_the_sweep(tmp_path, out):
    # it ran the whole sweep, then mkdir failed: "/dev/null: File exists", "Not a directory"
    (tmp_path / "file").write_text("x")
    path = out if out.startswith("/") or not out else str(tmp_path / out)
    line = one_error_line(cli("sweep", EXAMPLE, "--vary", "parallel.tp=1,2", "--out", path))
    assert "--out" in line and ("not a directory" in line or "is a file" in line
                                or "empty name" in line)


def test_goodput_days_past_a_float_of_seconds_refused():
    from trainsim.catalog import run_config_from_dict
    from trainsim.reliability.goodput import goodput
    cfg = run_config_from_dict({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm-80gb",
                                                                  "num_gpus": 8}})
    # 1e308 days is inf seconds: the JSON answer held "window_days": Infinity
    with pytest.raises(ConfigError, match=r"days=1e\+308 is more seconds") as err:
        goodput(cfg, tokens=1e9, days=1e308, iteration_time_s=1.0, trials=5)
    assert "\n" not in str(err.value)


@pytest.mark.slow  # 6 s
def test_the_campaign_file_battery_of_simulate_is_handled(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import fuzz_checks
        from fuzz_cli33 import _bases, file_cases
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    import random
    bases = {k: v for k, v in _bases(tmp_path).items() if k == ("simulate",)}
    outcomes = {label: fuzz_checks.outcome(thunk)
                for label, thunk in file_cases(random.Random(0), tmp_path, bases)
                if "CONFIG" in label}
    assert len(outcomes) >= 25 and not {k: v for k, v in outcomes.items() if v}


@pytest.mark.slow
def test_capture_of_a_gpt2_style_config_keeps_transformers_warnings_off_stderr(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    run = tmp_path / "tiny.yaml"
    run.write_text("model: {hidden_size: 256, num_layers: 2, num_attention_heads: 4, "
                   "vocab_size: 1024}\ntraining: {global_batch_size: 8, seq_length: 64}\n"
                   "cluster: {gpu: h100-sxm-80gb, num_gpus: 8}\n")
    # a process of its own: transformers' log handler holds the stderr of its import
    r = subprocess.run([sys.executable, "-m", "trainsim", "capture", str(run), "--seq", "64",
                        "--format", "json"], check=False, capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    # bos_token_id 50256 beyond a vocabulary of 1024, loss_type=None: transformers' lines
    assert "[transformers]" not in r.stderr and "bos_token_id" not in r.stderr


@pytest.mark.slow
def test_the_written_hugging_face_config_is_removed_at_exit():
    code = ("from trainsim.catalog import model\n"
            "from trainsim.capture.inputs import _write_temp_hf\n"
            "print(_write_temp_hf(model('llama3-8b')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    path = Path(out.stdout.strip())
    assert path.name == "config.json" and not path.parent.exists()
