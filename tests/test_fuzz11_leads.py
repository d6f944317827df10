"""The leads the eleventh sweep left (RESULTS.md "25th session, fuzz11"), each refused in one
line naming the option: a goodput run of fewer tokens than one global batch or of so many that
its trial-rounds are over the limit (refused when submitted, not when run), a token name longer
than the store keeps, a message size that is no whole number of bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli, one_error_line

ROOT = Path(__file__).resolve().parents[1]
GOODPUT = ROOT / "examples" / "goodput-gpt3-175b-1k.yaml"  # global batch 1536 x 2048 tokens


@pytest.mark.parametrize("tokens", ["1e-9", "1", "3M"])
def test_goodput_of_fewer_tokens_than_one_global_batch_is_refused(tokens):
    # before: accepted, 0.00 days
    line = one_error_line(cli("goodput", str(GOODPUT), "--tokens", tokens), warnings=False)
    assert "--tokens" in line and "fewer tokens than one global batch (3,145,728" in line


def test_goodput_of_one_global_batch_runs():
    r = cli("goodput", str(GOODPUT), "--tokens", "3145728", "--trials", "10",
            "--format", "json")
    assert r.exit_code == 0, r.output


def test_train_tokens_under_one_batch_are_named_by_their_field():
    line = one_error_line(cli("goodput", str(GOODPUT), "--set", "training.train_tokens=5"),
                          warnings=False)
    assert "training.train_tokens=5 is fewer tokens than one global batch" in line


GOODPUT_RUN = {"model": "gpt3-175b", "parallel": {"tp": 8, "pp": 8},
               "training": {"global_batch_size": 1536, "seq_length": 2048},
               "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 1024}}


@pytest.mark.parametrize("options, words", [
    ({"tokens": "1e308"}, "goodput trial-rounds"), ({"tokens": 1e308}, "goodput trial-rounds"),
    ({"tokens": "1e-9"}, "fewer tokens than one global batch")])
def test_goodput_tokens_its_run_would_refuse_are_refused_when_submitted(options, words):
    # before: 1e308 accepted (202); the worker's run then failed on the trial-round limit,
    # which needs the simulated iteration time (a lower bound of it refuses before queuing)
    pytest.importorskip("sqlalchemy")
    from trainsim.service import Settings, jobs
    settings = Settings(db_url="sqlite:///unused.db", workers=0, checkers=0)
    status, field, message = jobs.problem("goodput", GOODPUT_RUN, options, settings)
    assert (status, field) == (422, "options.tokens"), message
    assert message.startswith("options.tokens=") and words in message and "\n" not in message
    assert "--" not in message  # the request's names, not the command's flags
    assert jobs.problem("goodput", GOODPUT_RUN, {"tokens": "300B"}, settings) is None


def test_a_token_name_longer_than_the_store_keeps_is_refused(tmp_path):
    # before: a 100,000-character name was accepted and cut to 200 characters in the store
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    line = one_error_line(cli("token", "create", "x" * 100_000, "--db", db), warnings=False)
    assert "100,000 characters: at most 200" in line
    assert cli("token", "create", "x" * 200, "--db", db).exit_code == 0


@pytest.mark.parametrize("sizes, bad", [("8.5:16", "8.5"), ("8:16.5", "16.5"),
                                        ("0.3K", "0.3K")])
def test_a_size_that_is_no_whole_number_of_bytes_is_refused(sizes, bad):
    # before: '8.5' read as 8 bytes, as nccl-tests' sscanf would
    line = one_error_line(cli("collective", "--sizes", sizes), warnings=False)
    assert f"--sizes '{sizes}'" in line and f"bad size '{bad}'" in line
    assert "not a whole number of bytes" in line
    assert cli("collective", "--sizes", "1.5K:2K").exit_code == 0  # 1536 bytes
