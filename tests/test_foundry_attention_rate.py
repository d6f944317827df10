"""benchmarks/foundry_attention_rate.py: the attention rate an llm-foundry row's measured time
implies (a diagnostic; the runs used MPT's ``attn_impl: triton``, mosaicml/llm-foundry@5e85bd62
scripts/train/benchmarking/submit_benchmarks.py L144 ``--attn_impl`` default 'triton', written
into the model's attn_config at L305; the public file's cells say flash2)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import load_script

from trainsim.validate import BUNDLED_DIR, validate_file

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "foundry_attention_rate.py"
LONG = "foundry-mpt7b-a100_80gb-s65536-g8"
SHORT = "foundry-mpt70b-a100_80gb-s2048-g64"


@pytest.fixture(scope="module")
def script():
    return load_script(SCRIPT)


@pytest.fixture(scope="module")
def rows():
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh) if r["id"] in (LONG, SHORT)}


def test_rate_one_is_the_scoreboard_and_the_patch_is_undone(script, rows, tmp_path):
    """At rate 1 the row is priced exactly as ``trainsim validate`` prices it; after the
    context the compute model is the original again."""
    row = rows[LONG]
    path = tmp_path / "one.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    board = validate_file(path)[1][0].predicted
    assert script.predict(row, 1.0, tmp_path) == pytest.approx(board, rel=1e-12)
    assert validate_file(path)[1][0].predicted == pytest.approx(board, rel=1e-12)


def test_attention_rate_moves_only_attention(script, rows, tmp_path):
    """Doubling the attention rate takes the 64k-token row (attention most of its time) far
    below its priced time, the 2k-token 70B row (a few per cent attention) barely."""
    long_row, short_row = rows[LONG], rows[SHORT]
    long1, long2 = (script.predict(long_row, r, tmp_path) for r in (1.0, 2.0))
    short1, short2 = (script.predict(short_row, r, tmp_path) for r in (1.0, 2.0))
    assert long2 < 0.75 * long1
    assert 0.95 * short1 < short2 < short1


def test_implied_rate_reproduces_the_measured_time(script, rows, tmp_path):
    """The implied rate prices the row at its measured time; the file's flash2 is too fast
    for the 64k row, so its implied rate is below FlashAttention-2's (1)."""
    row = rows[LONG]
    rate = script.implied_rate(row, tmp_path)
    assert rate is not None and rate < 1.0
    assert script.predict(row, rate, tmp_path) == pytest.approx(
        float(row["measured_iteration_s"]), rel=1e-6)
