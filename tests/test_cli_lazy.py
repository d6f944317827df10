"""The commands that live with their packages are imported only when read (speed39, issue 21
item 3: ``trainsim validate`` and ``simulate`` started by importing the capture, profile,
goodput, search and service commands): ``cli.LAZY_COMMANDS`` through
``cli_guard._LazyCommands``. Each lazy entry must name the command its module defines, and
every way of reading the group's commands must see all of them. That importing ``trainsim.cli``
imports none of their modules is checked in the fresh interpreter of
``test_speed41_imports.test_the_validate_start_imports_none_of_the_lazy_modules``."""

from __future__ import annotations

import importlib

import click
from click.testing import CliRunner

from trainsim.cli import LAZY_COMMANDS, main
from trainsim.cli_guard import GuardedGroup, _LazyCommands


def test_each_lazy_entry_is_the_command_its_module_defines_under_that_name():
    for name, module, attribute in LAZY_COMMANDS:
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        assert command.name == name  # the name click gave it is the one registered
        assert main.get_command(click.Context(main), name) is command


def test_every_read_of_the_commands_sees_them_all():
    names = {"simulate", "validate", "collective", "catalog", *(n for n, _, _ in LAZY_COMMANDS)}
    group = GuardedGroup("g")
    group.add_command(click.Command("eager"))
    for name, module, attribute in LAZY_COMMANDS[:2]:
        group.lazy_command(name, module, attribute)
    assert isinstance(group.commands, _LazyCommands)
    assert len(group.commands) == 3 and "capture" in group.commands  # nothing imported yet
    assert group.commands.lazy  # still lazy: neither len nor `in` imports
    assert list(group.commands) == ["eager", "capture", "export"]  # registration order
    assert not group.commands.lazy
    assert set(main.commands) == names and set(main.list_commands(click.Context(main))) == names
    # a lazily loaded command is guarded as an eager one (cli_guard._guard_blank)
    assert getattr(main.commands["search"].callback, "_blank_guarded", False)


def test_help_lists_every_command_and_a_lazy_one_runs():
    runner = CliRunner()
    listed = runner.invoke(main, ["--help"]).output
    for name, _, _ in LAZY_COMMANDS:
        assert f"  {name} " in listed
    r = runner.invoke(main, ["goodput", "--help"])
    assert r.exit_code == 0 and "goodput" in r.output
