"""benchmarks/blind.py --named: the rows predicted with another framework's mechanisms, pooled
over every file by (true framework, profile that predicted them), with what the fallback adds
to the named error (its cost), the costliest pair first."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

from trainsim.validate.common import RowResult

ROOT = Path(__file__).resolve().parents[1]
blind = load_script(ROOT / "benchmarks" / "blind.py")


def _res(rid: str, predicted: float | None, used: str | None = None) -> RowResult:
    return RowResult(id=rid, measured=10.0, predicted=predicted,
                     chosen={"framework": used} if used else {})


def test_pairs_pool_files_and_rank_by_what_the_fallback_adds():
    truth = {"a/r1": "fw1", "a/r2": "fw1", "b/r1": "fw1", "b/r2": "fw2", "b/r3": "fw2",
             "b/r4": "fw3"}
    pairs = [
        # fw1 as stack-x, two files: blind +20 % / -10 % / +30 %, named 5 % / 10 % / 0 %
        ("a", _res("r1", 10.5), _res("r1", 12.0, "stack-x")),
        ("a", _res("r2", 9.0), _res("r2", 9.0, "stack-x")),
        ("b", _res("r1", 10.0), _res("r1", 13.0, "stack-x")),
        # fw2 as stack-y: blind 8 %, named 41 %: the fallback does better than the name
        ("b", _res("r2", 14.1), _res("r2", 10.8, "stack-y")),
        # fw2 predicted with its own profile: not a fallback row
        ("b", _res("r3", 11.0), _res("r3", 20.0, "fw2")),
        # a failed blind row is counted apart
        ("b", _res("r4", 10.0), _res("r4", None)),
    ]
    lines = blind.pair_lines(pairs, truth)
    assert len(lines) == 4
    # four rows pooled: blind 20, 10, 30, 8 %; named 5, 10, 0, 41 %
    assert "all files: 4, blind MAPE 17.0%, named MAPE 14.0%, cost +12.0" in lines[0]
    first, second, failed = lines[1:]
    assert "fw1" in first and "stack-x" in first and "n=   3" in first
    assert "blind  20.0%" in first and "( +13.3%)" in first and "named   5.0%" in first
    assert "cost    +45.0" in first
    assert "fw2" in second and "stack-y" in second and "n=   1" in second
    assert "cost    -33.0" in second
    assert "fw3" in failed and "failed either way: 1" in failed
    assert not any("as fw2" in line for line in lines)


def test_a_file_validated_named_and_blind(capsys):
    """Nemotron-4 15B (Megatron-LM 2023-12) blind is read as Megatron-core at 0.4: its three
    rows pool into one pair, whose named MAPE is the named file's."""
    path = ROOT / "benchmarks" / "training_nemotron4.csv"
    assert blind.main(["--files", str(path), "--summary", "--named", "--workers", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    pair = [line for line in out if "as megatron-core" in line]
    assert len(pair) == 1 and "megatron-lm" in pair[0] and "n=   3" in pair[0]
    assert "named" in pair[0] and "cost" in pair[0]
