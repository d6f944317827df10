"""Reading user files safely: bounded size, plain-data YAML/JSON, bounded nesting and numbers.

Every file a user hands trainsim (run configs, GPU specs, failure profiles, Hugging Face
``config.json``, measured-kernel databases) goes through here, so that bad input is a
:class:`ConfigError` naming the file, never a traceback or a hang:

- at most ``MAX_FILE_BYTES`` are read (``/dev/zero`` or a multi-GB file stops there), and
  YAML is parsed up to ``MAX_YAML_BYTES`` (PyYAML would take minutes over 16 MiB);
- YAML is plain data: mappings, lists, strings, numbers, booleans, null. A date reads as
  its text as written (``framework_version: 2024-07-15``, a version written as a date;
  never a ``datetime``, which a number field then refuses as text); ``!!binary``, ``!!set``,
  ``!!omap`` and ``!!python/...`` tags are refused (a set is not JSON);
- aliases are expanded at most to ``MAX_NODES`` values in total (a "billion laughs" alias
  bomb is a few hundred bytes of YAML) and nesting is at most ``MAX_DEPTH`` deep;
- integers have at most ``MAX_INT_DIGITS`` digits (Python refuses to parse more than 4,300
  and no trainsim field needs more than a few).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import select
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from trainsim.config._build import digit_groups
from trainsim.errors import ConfigError

MAX_FILE_BYTES = 16 * 2**20
"""Largest input file read (16 MiB; a measured-kernel database is a few hundred KiB)."""
MAX_YAML_BYTES = 256 * 2**10
"""Largest YAML text parsed (256 KiB, ten times the largest framework profile, 25 KB): PyYAML
reads ~30-60 KiB a second of dense YAML on a loaded 2-core machine, so a 16 MiB document
would take minutes; JSON (the kernel databases) is read by the C parser up to MAX_FILE_BYTES."""
MAX_NODES = 250_000
"""Values in one file after alias expansion."""
MAX_DEPTH = 64
"""Nesting depth of mappings and lists."""
MAX_INT_DIGITS = 30
"""Digits of an integer literal (2**64 has 20)."""


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader without timestamps, binary, sets and ordered maps, and without
    duplicate keys (PyYAML keeps the last silently: ``tp: 2`` then ``tp: 8`` ran tp 8)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or \
                        not isinstance(key_node, yaml.ScalarNode):
                    continue  # a merge (<<) may be overridden; other keys are refused later
                key, line = self.construct_object(key_node), key_node.start_mark.line + 1
                if key in seen:
                    raise ConfigError(f"line {line}: key {key!r} is given twice (also on line "
                                      f"{seen[key]}); give each field once")
                seen[key] = line
        return super().construct_mapping(node, deep)

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """YAML's merge key (yaml.org/type/merge.html), the same under every PyYAML: a key given
        in the mapping overrides the merged ones, and of a list of merged maps the earlier wins.
        PyYAML 6.0.4 tells merged keys apart by the id of their text, so two inline maps that
        both give ``micro_batch_size`` let the later one win (6.0.3 let the earlier)."""
        merged: list[list[tuple[yaml.Node, yaml.Node]]] = []
        given: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.tag == "tag:yaml.org,2002:value":
                    key_node.tag = "tag:yaml.org,2002:str"
                given.append((key_node, value_node))
                continue
            maps = value_node.value if isinstance(value_node, yaml.SequenceNode) \
                else [value_node]
            for sub in maps:
                if not isinstance(sub, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"expected a mapping or list of mappings for merging, but found {sub.id}",
                        sub.start_mark)
                self.flatten_mapping(sub)
                merged.append(sub.value)
        # constructed in order, a later pair replacing an earlier one: the last merged map first
        node.value = [pair for pairs in reversed(merged) for pair in pairs] + given


_CParser = getattr(getattr(yaml, "cyaml", None), "CParser", None)
"""libyaml's parser where PyYAML was built with it (``yaml.__with_libyaml__``), else None."""


class _FastLoader(*((_CParser,) if _CParser is not None else ()), _Loader):  # type: ignore[misc]
    """:class:`_Loader`'s constructors and resolver on libyaml's C parser (PyYAML's
    ``CSafeLoader`` is built the same way: the C parser composes the node tree that
    ``yaml.composer`` would, ~10x faster, and resolves its tags through the same Python
    ``Resolver``). Used for trainsim's own catalog files only (:func:`load_file` ``fast``),
    and any refusal is said again by :class:`_Loader` (:func:`_yaml_load`), so that what a
    file holds and how a bad one is refused are the pure-Python reader's."""

    def __init__(self, stream: str) -> None:
        if _CParser is None:  # PyYAML without libyaml: never instantiated (_yaml_load)
            raise TypeError("libyaml is not available")
        _CParser.__init__(self, stream)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)


def _yaml_load(text: str, fast: bool) -> Any:
    """``text`` read by :class:`_Loader`; with ``fast`` by :class:`_FastLoader` first where
    libyaml is there, and by :class:`_Loader` again where that fails (its error, as ever)."""
    if fast and _CParser is not None:
        try:
            return yaml.load(text, Loader=_FastLoader)  # safe: SafeConstructor's constructors
        except Exception:  # noqa: BLE001, S110 - the pure reader below says what is wrong
            pass
    return yaml.load(text, Loader=_Loader)  # safe: _Loader is a SafeLoader subclass


def _refuse(message: str):
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        value = node.value if isinstance(node.value, str) else ""
        raise ConfigError(f"line {node.start_mark.line + 1}: " + message.format(value=value))
    return construct


class Written(float):
    """A number read from a file or a command line that keeps the text it was written as
    (``text``). It computes as the float; ``str`` and ``repr`` give the text, so a field of
    text (``framework_version: 0.10``, Megatron-core 0.10) reads as written, not as the float's
    shortest form ('0.1', another release). JSON output writes the float (``json`` calls
    ``float.__repr__``)."""

    text: str

    def __new__(cls, value: float, text: str | None = None) -> Written:  # noqa: PYI034
        number = super().__new__(cls, value)
        number.text = repr(float(value)) if text is None else text
        return number

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _represent_written(dumper: yaml.SafeDumper, data: Written) -> yaml.Node:
    """A :class:`Written` number dumped as the text it was written as (``0.10``), a float."""
    return dumper.represent_scalar("tag:yaml.org,2002:float", data.text)


for _dumper in (yaml.SafeDumper, yaml.Dumper):  # yaml.safe_dump raised RepresenterError
    _dumper.add_representer(Written, _represent_written)


def written_float(value: float, text: str) -> float:
    """``value``, as a :class:`Written` when its shortest form is not ``text`` (``0.10``,
    ``24.10``, ``1e3``), else as the plain float."""
    text = text.strip()
    return value if repr(value) == text else Written(value, text)


def _yaml_1_1(node: yaml.Node, what: str) -> None:
    """Refuse the YAML 1.1 number forms that read as another number than they look:
    ``1:30`` is base 60 (90; ``2:16:32`` is 8192), ``010`` is octal (8) and ``0b10`` binary (2).
    YAML 1.2's core schema and JSON read none of them as these numbers; PyYAML (YAML 1.1) reads
    each silently. (Hexadecimal ``0x10`` reads as the 16 it shows, in YAML 1.2 too.)"""
    text = str(node.value).strip().lstrip("+-")
    line = node.start_mark.line + 1
    if ":" in text:
        raise ConfigError(f"line {line}: {node.value!r} reads as a base-60 {what} in YAML 1.1 "
                          f"({_base60(node.value)}); write the number, or quote it for text")
    digits = text.replace("_", "")
    if what == "integer" and digits[:2].lower() == "0b":
        sign = "-" if str(node.value).strip().startswith("-") else ""
        raise ConfigError(f"line {line}: {node.value!r} reads as the binary number "
                          f"{sign}{int(digits, 0)} in YAML 1.1 (YAML 1.2 and JSON read it as "
                          "text); write the number, or quote it for text")
    if what == "integer" and len(digits) > 1 and digits[0] == "0" and digits.isdigit():
        sign = "-" if str(node.value).strip().startswith("-") else ""
        raise ConfigError(f"line {line}: {node.value!r} reads as the octal number "
                          f"{sign}{int(digits, 8)} in YAML 1.1; write it without the leading 0, "
                          "or quote it for text")
    try:  # after the forms above, whose messages say what YAML 1.1 reads ('0_10' is 8)
        digit_groups(text)
    except ConfigError as exc:
        raise ConfigError(f"line {line}: {exc}") from None


def _base60(text: str) -> str:
    """The value YAML 1.1 gives a base-60 number such as 1:30 (90)."""
    sign = -1 if str(text).strip().startswith("-") else 1
    total = 0.0
    for part in str(text).strip().lstrip("+-").replace("_", "").split(":"):
        total = total * 60 + float(part)
    return f"{sign * total:g}"


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    digits = sum(ch.isdigit() for ch in str(node.value))
    if digits > MAX_INT_DIGITS:
        raise ConfigError(f"line {node.start_mark.line + 1}: an integer of {digits} digits is "
                          f"out of range (at most {MAX_INT_DIGITS})")
    _yaml_1_1(node, "integer")
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _construct_float(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    _yaml_1_1(node, "number")
    value = yaml.SafeLoader.construct_yaml_float(loader, node)
    return written_float(value, str(node.value)) if isinstance(value, float) else value


def _construct_date(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    """A YAML 1.1 date as the text it was written as: Megatron-LM and DeepSpeed versions are
    dates (``validation/README.md``: "its version or date"; ``catalog.framework_versions``
    reads ``2024-07-15``), and ``2024-07`` (no day, no date to YAML) was already text. fuzz17:
    ``framework_version: 2024-07-15`` was refused as a date while ``2024-07`` was read."""
    return str(node.value)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_date)
for _tag in ("binary", "set", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse(
        f"a !!{_tag} value is not plain data; use a number, text, list or mapping"))
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def shown_path(path: str | Path) -> str:
    """A file name as an error line shows it: escaped (``'a\\nb'``) when it holds a line break
    or another character that is not printable, so the message stays one line."""
    text = str(path)
    return text if text.isprintable() else ascii(text)


PIPE_WAIT_S = 10
"""Seconds a pipe given as a file may take to send its first bytes (a named pipe that no
process opens for writing would otherwise stop trainsim for good)."""


def read_text(path: str | Path, what: str = "config") -> str:
    """The UTF-8 text of ``path``, at most MAX_FILE_BYTES of it."""
    raw = read_bytes(path, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{what} {shown_path(Path(path))} is not UTF-8 text") from None


def read_bytes(path: str | Path, what: str = "config") -> bytes:
    """The bytes of ``path``, at most MAX_FILE_BYTES of them (a pipe waited on at most
    PIPE_WAIT_S for its first bytes)."""
    if not str(path).strip():
        raise ConfigError(f"the {what} file name is empty; give a file")
    path = Path(path)
    name = shown_path(path)
    try:
        # O_NONBLOCK for the open alone: a named pipe no process writes to would block the
        # open forever; a pipe waits at most PIPE_WAIT_S for its first bytes, then is read to
        # its end as a file is (``<(cat run.yaml)``)
        # (Windows has neither O_NONBLOCK nor poll on files: a plain open there)
        nonblocking = getattr(os, "O_NONBLOCK", 0) if hasattr(select, "poll") else 0
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | nonblocking)
        with os.fdopen(fd, "rb") as f:
            silent = False
            if nonblocking:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    poll = select.poll()
                    poll.register(fd, select.POLLIN)
                    silent = not poll.poll(int(PIPE_WAIT_S * 1000))
                os.set_blocking(fd, True)
            raw = b"" if silent else f.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise ConfigError(f"cannot read {what} {name}: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None
    if silent:
        raise ConfigError(f"{what} {name} is a pipe that nothing wrote to in {PIPE_WAIT_S} s")
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"{what} {name} is larger than {MAX_FILE_BYTES // 2**20} MiB; "
                          "trainsim reads configs and databases up to that size")
    return raw


@contextlib.contextmanager
def as_regular_file(path: str, what: str) -> Iterator[str]:
    """``path`` itself, or where it is a pipe (``<(cat rows.csv)``, a named pipe) a regular
    copy of what it holds, named alike in a temporary folder: a reader that looks at a file's
    first bytes before reading it whole would otherwise consume what it then reads."""
    if not os.path.exists(path) or os.path.isfile(path) or os.path.isdir(path):
        yield path
        return
    text = read_text(path, what)
    with tempfile.TemporaryDirectory(prefix="trainsim-") as tmp:
        copy = os.path.join(tmp, os.path.basename(path) or "input")
        with open(copy, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        yield copy


def write_output(path: str | Path, data: str | bytes) -> None:
    """Write a file the user named (a trace, a plot, a workload); an OSError names the file:
    a full disk or /dev/full fails at the flush with 'No space left on device' and no name."""
    path = Path(path)
    try:
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    except OSError as exc:
        if exc.filename:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def _json_int(text: str) -> int:
    if sum(ch.isdigit() for ch in text) > MAX_INT_DIGITS:
        raise ConfigError(f"an integer of {len(text)} digits is out of range "
                          f"(at most {MAX_INT_DIGITS})")
    return int(text)


def _json_float(text: str) -> float:
    return written_float(float(text), text)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ConfigError(f"key {key!r} is given twice in one object; give each field once")
        out[key] = value
    return out


class NonFiniteNumber(ConfigError):
    """JSON text holding Python's ``Infinity`` / ``NaN`` literals, which ``json.dump`` writes
    (a hub config.json may: nvidia/Nemotron-H-8B-Base-8K's ``time_step_limit``)."""


def _json_constant(name: str) -> Any:
    raise NonFiniteNumber(f"{name} is not a JSON number; give a finite number")


def nonfinite_at(data: Any, path: str = "") -> str | None:
    """Where the first non-finite number of plain ``data`` sits (``time_step_limit[1]``), or
    None: what :func:`parse` read with ``python_literals``."""
    if isinstance(data, float) and not math.isfinite(data):
        return path or "the value"
    items = data.items() if isinstance(data, dict) else enumerate(data) \
        if isinstance(data, list) else ()
    for key, value in items:
        found = nonfinite_at(value, f"{path}.{key}" if isinstance(key, str) and path
                             else key if isinstance(key, str) else f"{path}[{key}]")
        if found:
            return found
    return None


_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def dumps(data: Any, sort_keys: bool = False) -> str:
    """JSON text of plain ``data`` in which a :class:`Written` number is written as its text
    (``0.10``, not ``0.1``) when that text is a JSON number, so :func:`loads` reads back the
    value written (``json.dumps`` writes a float subclass with ``float.__repr__``)."""
    if isinstance(data, Written) and _JSON_NUMBER.fullmatch(data.text):
        return data.text
    if isinstance(data, dict):
        items = sorted(data.items()) if sort_keys else data.items()
        return "{" + ", ".join(f"{json.dumps(str(k))}: {dumps(v, sort_keys)}"
                               for k, v in items) + "}"
    if isinstance(data, (list, tuple)):
        return "[" + ", ".join(dumps(v, sort_keys) for v in data) + "]"
    return json.dumps(data)


def loads(text: str, source: str = "JSON") -> Any:
    """Plain data from JSON ``text``, numbers read as written (:func:`parse`)."""
    return parse(text, source, "json")


def _yaml_problem(exc: Exception) -> str:
    """What is wrong and where, on one line: PyYAML's first line says only what it was doing
    ('while scanning for the next token'); its problem and mark say what and where."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        context = f" ({exc.context})" if exc.context else ""
        return f"{where}{exc.problem}{context}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class InvalidSyntax(ConfigError):
    """Text that is not valid YAML / JSON at all (not a number form :func:`parse` refuses)."""


def parse(text: str, source: str, fmt: str = "yaml", fast: bool = False,
          python_literals: bool = False) -> Any:
    """Plain data (dict/list/str/int/float/bool/None) from YAML or JSON ``text``.

    ``source`` names the input in errors (a path, or ``--set parallel.tp``); ``fast``: YAML
    parsed by libyaml where it is there (:class:`_FastLoader`, the same data);
    ``python_literals``: JSON's ``Infinity`` / ``NaN`` read as floats (else refused)."""
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark (Notepad): json refuses it
    try:
        if fmt == "json":
            data = json.loads(text, parse_int=_json_int, parse_float=_json_float,
                              parse_constant=float if python_literals else _json_constant,
                              object_pairs_hook=_json_object)
        else:
            if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
                raise ConfigError(f"YAML of {len(text.encode('utf-8', 'surrogatepass')):,} "
                                  f"bytes is more than trainsim reads ({MAX_YAML_BYTES // 2**10}"
                                  " KiB); write large data as JSON (a .json file)")
            data = _yaml_load(text, fast)
    except NonFiniteNumber as exc:
        raise NonFiniteNumber(f"{source}: {exc}") from None
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply (at most {MAX_DEPTH} levels)") from None
    except (yaml.YAMLError, json.JSONDecodeError, ValueError) as exc:
        what = "JSON" if fmt == "json" else "YAML"
        raise InvalidSyntax(f"{source} is not valid {what}: {_yaml_problem(exc)}") from None
    return plain(data, source)


def plain(data: Any, source: str) -> Any:
    """A fresh copy of ``data`` as a tree (aliases expanded), within the size and depth bounds;
    mapping keys must be text."""
    budget = [MAX_NODES]

    def walk(value: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise ConfigError(f"{source}: more than {MAX_NODES:,} values once its YAML aliases "
                              "are expanded; write the data out or use fewer aliases")
        if depth > MAX_DEPTH:
            raise ConfigError(f"{source}: nested too deeply (at most {MAX_DEPTH} levels)")
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ConfigError(f"{source}: mapping key {key!r} is not text; field names "
                                      "are words such as tp or num_gpus")
                out[key] = walk(item, depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            return [walk(item, depth + 1) for item in value]
        if value is None or isinstance(value, (str, bool, int, float)):
            return value
        raise ConfigError(f"{source}: a {type(value).__name__} value is not plain data")

    return walk(data, 0)


def load_file(path: str | Path, what: str = "config", fast: bool = False) -> Any:
    """Plain data from a YAML or JSON file (JSON when the name ends in .json); ``fast``:
    YAML parsed by libyaml where it is there (trainsim's own catalog files, :func:`parse`)."""
    if not str(path).strip():  # Path('') is '.', the folder
        raise ConfigError(f"the {what} file name is empty; give a file")
    path = Path(path)
    fmt = "json" if path.suffix.lower() == ".json" else "yaml"
    return parse(read_text(path, what), str(path), fmt, fast)


def parse_value(text: str, source: str) -> Any:
    """A command-line value (``--set a.b=VALUE``): YAML's reading of it (4 -> int, true ->
    bool, [1, 2] -> list) when that is plain data; text that is not YAML ('a: b: c') is the
    text itself, which the field's type check then judges. A number form the YAML loader
    refuses (``0b11``, ``010``, ``1:30``) is refused here too, with the same error, not kept
    as the text (``--set training.framework_version=0b11`` ran another release's profile)."""
    try:
        return parse(text, source)
    except InvalidSyntax:
        return text
    except ConfigError as exc:  # one value on one line: the YAML reader's "line 1: " says nothing
        said, head = str(exc), f"{source}: line 1: "
        if said.startswith(head):
            raise ConfigError(f"{source}: {said[len(head):]}") from None
        raise
