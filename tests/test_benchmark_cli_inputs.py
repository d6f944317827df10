"""The benchmark scripts' CLIs answer a wrong input file with argparse's one usage line (exit
2), not a traceback: ``memory_rows.py``'s csv and ``--json``; ``collectives_report.py``'s
positional file, which it reads (it was ignored: the bundled file was always read)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _script(name: str):
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _usage_error(main, argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage:") and "Traceback" not in err
    return err


def test_memory_rows_refuses_a_missing_or_wrong_file_in_one_line(tmp_path, capsys):
    main = _script("memory_rows").main
    held = str(BENCH / "training_heldout.csv")
    err = _usage_error(main, [held, "--json", str(tmp_path / "none.json")], capsys)
    assert "error: --json" in err and "No such file" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": 3}')
    assert "not a 'trainsim validate" in _usage_error(main, [held, "--json", str(bad)], capsys)
    assert "No such file" in _usage_error(main, [str(tmp_path / "none.csv")], capsys)


def test_collectives_report_reads_or_refuses_its_file(tmp_path, capsys):
    main = _script("collectives_report").main
    assert "No such file" in _usage_error(main, [str(tmp_path / "none.csv")], capsys)
    other = str(BENCH / "training_heldout.csv")
    assert "not a collectives validation file" in _usage_error(main, [other], capsys)
    # the file named is the one read: its rows only
    src = (BENCH / "collectives_published.csv").read_text().splitlines()
    few = tmp_path / "few.csv"
    few.write_text("\n".join(src[:4]) + "\n")
    assert main([str(few)]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("all ") and "n=  3" in line for line in out.splitlines())


def test_a_file_not_in_utf_8_is_one_usage_line_in_both_scripts(tmp_path, capsys):
    # a binary or Latin-1 file raised UnicodeDecodeError through csv.DictReader (a traceback)
    raw = tmp_path / "latin1.csv"
    raw.write_bytes(b"id,message_bytes\n\xff\xfe,1\n")
    for name in ("memory_rows", "collectives_report"):
        assert "can't decode" in _usage_error(_script(name).main, [str(raw)], capsys)


def test_collectives_report_refuses_a_file_its_validator_refuses(tmp_path, capsys):
    # an id and message_bytes but no measured column: validate_file's ConfigError escaped
    few = tmp_path / "few.csv"
    few.write_text("id,message_bytes\na,100\n")
    err = _usage_error(_script("collectives_report").main, [str(few)], capsys)
    assert "needs measured_busbw_GBps" in err
