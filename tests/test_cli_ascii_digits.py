"""Numbers typed on the command line read ASCII digits only, as a config file and a CSV cell
do (fuzz8, 21st session): Python's ``int``/``float`` read full-width '\uff12' and Arabic-Indic
'\u0662' as 2, so click's INT/FLOAT options, search's integer lists, ``plan --tokens``,
``collective --sizes`` and ``sweep --vary`` ranges took them silently."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from trainsim.cli import _size, main
from trainsim.errors import ConfigError, TrainsimError
from trainsim.search.cli_inputs import parse_ints
from trainsim.search.whatif import Vary, parse_number

FULL_2 = "\uff12"
ARABIC_2 = "\u0662"


def _run(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(main, args)
    return r.exit_code, r.output


@pytest.mark.parametrize("args", [
    ["collective", "--gpus", FULL_2],
    ["collective", "--gpus-per-node", ARABIC_2],
    ["collective", "--nic-gbit-s", FULL_2 + "00"],
    ["collective", "--sizes", FULL_2 + ":1M"],
    ["plan", "llama3-8b", "--tokens", ARABIC_2 + "T", "--days", "10"],
    ["plan", "llama3-8b", "--tokens", "1T", "--days", FULL_2],
    ["search", "llama3-8b", "--gpus", "8", "--global-batch", "64", "--seq", "4096",
     "--tp", FULL_2],
    ["sweep", "examples/llama3-8b-h100.yaml", "--vary", f"parallel.tp={ARABIC_2}:8"],
    ["goodput", "examples/goodput-gpt3-175b-1k.yaml", "--seed", FULL_2],
])
def test_other_scripts_digits_on_the_command_line_are_refused_in_one_line(args):
    code, out = _run(args)
    assert code == 2, out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), out
    assert "Traceback" not in out


def test_the_shared_parsers_refuse_other_digits_and_read_ascii_ones():
    with pytest.raises(ConfigError):
        parse_ints(f"1,{FULL_2}", "tp")
    assert parse_ints(" 1, 2;4 ", "tp") == (1, 2, 4)
    with pytest.raises(ConfigError):
        parse_number(ARABIC_2 + "T", "--tokens")
    assert parse_number("15T", "--tokens") == 15e12
    with pytest.raises(TrainsimError):
        _size(FULL_2 + "K")
    assert _size("8K") == 8192 and _size("1M") == 2**20
    with pytest.raises(ConfigError):
        Vary.parse(f"parallel.tp=1:{ARABIC_2}")
    assert Vary.parse("parallel.tp=1:8:4").values == (1, 3, 6, 8)


def test_ascii_numbers_are_still_taken_by_click_options():
    from trainsim.cli_guard import POSITIVE, POSITIVE_INT
    assert POSITIVE_INT.convert(" 8 ", None, None) == 8
    assert POSITIVE.convert("400", None, None) == 400.0
    code, out = _run(["collective", "--gpus", "8", "--sizes", "8:1K"])
    assert code == 0, out
