"""README.md's commands name real subcommands, options, choices and files: each ``trainsim ...``
line of its code blocks and each inline ``trainsim ...`` span, checked against the click
commands themselves (their ``--help``), so a renamed option or subcommand fails here."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import click
from click.testing import CliRunner

from trainsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

OPENING = ('pip install -e . && trainsim simulate examples/llama3-8b-h100.yaml',
           'pip install -e ".[test]" && python -m pytest -q -n 2')


def _commands() -> list[str]:
    """The ``trainsim`` invocations README.md shows: in ```bash blocks (continuation lines
    joined, comments and ``&&`` prefixes cut) and in inline code spans."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].split("&&")[-1].strip()
            if line.startswith("trainsim "):
                found.append(line)
    # inline spans, less the placeholder one (`trainsim COMMAND --help`)
    found += [s for s in re.findall(r"`(trainsim [^`]+)`", README) if not s.split()[1].isupper()]
    return found


def _resolve(words: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """The (sub)command ``words`` name, the path to it, and the words after it."""
    cmd: click.Command = main
    path: list[str] = []
    while isinstance(cmd, click.Group) and words and not words[0].startswith("-"):
        sub = cmd.get_command(click.Context(cmd), words[0])
        assert sub is not None, f"no subcommand {' '.join([*path, words[0]])!r}"
        cmd, path, words = sub, [*path, words[0]], words[1:]
    return cmd, path, words


def test_readme_opens_with_the_two_commands():
    """The first code block is the install-and-simulate line and the install-and-test line."""
    first = re.search(r"```bash\n(.*?)```", README, re.DOTALL).group(1).splitlines()
    assert tuple(first) == OPENING
    assert (ROOT / "examples/llama3-8b-h100.yaml").is_file()
    # CI runs that same test command, word for word
    assert OPENING[1].split(" && ")[1] in (ROOT / ".ci/run").read_text()


def test_every_readme_command_is_real():
    """Each subcommand README shows exists, each ``--option`` it passes is in that
    subcommand's ``--help``, a choice-valued option's value is one of its choices, and a
    path-like argument (examples/, src/, benchmarks/) is a file in the repository."""
    commands = _commands()
    assert len(commands) >= 20, commands
    runner = CliRunner()
    helps: dict[str, str] = {}
    for line in commands:
        words = shlex.split(line)[1:]
        cmd, path, rest = _resolve(words)
        key = " ".join(path)
        if key not in helps:
            out = runner.invoke(main, [*path, "--help"])
            assert out.exit_code == 0, (line, out.output)
            helps[key] = out.output
        params = {o: p for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        for i, w in enumerate(rest):
            if w.startswith("--"):
                opt = w.split("=", 1)[0]
                assert opt in params and opt in helps[key], f"{line}: {opt} not an option of {key}"
                p = params[opt]
                if isinstance(p.type, click.Choice) and not p.is_flag and i + 1 < len(rest):
                    assert rest[i + 1] in p.type.choices, f"{line}: {rest[i + 1]} not in {opt}"
            elif re.match(r"(examples|src|benchmarks)/", w):
                assert (ROOT / w).exists(), f"{line}: no file {w}"
        for a in cmd.params:
            if isinstance(a, click.Argument) and isinstance(a.type, click.Choice):
                given = [w for w in rest if not w.startswith("-")][:1]
                assert not given or given[0] in a.type.choices, f"{line}: {given}"


def test_readme_set_and_vary_fields_load():
    """Each ``--set`` and ``--vary`` field README passes to ``simulate`` or ``sweep`` is a
    config field the loader takes, on the config file that line names."""
    import trainsim

    checked = 0
    for line in _commands():
        words = shlex.split(line)[1:]
        if words[0] not in ("simulate", "sweep") or len(words) < 2:
            continue
        pairs = [(a, b) for a, b in itertools.pairwise(words[1:]) if a in ("--set", "--vary")]
        if not pairs:
            continue
        sets = [v if o == "--set" else v.split(",")[0].split(":")[0] for o, v in pairs]
        trainsim.load_run_config(ROOT / words[1], sets)
        checked += 1
    assert checked >= 3
