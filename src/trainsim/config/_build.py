"""Build frozen dataclasses from plain dicts, rejecting unknown keys with a suggestion."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import numbers
import re
import types
import typing
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from trainsim.config.number_text import (  # noqa: F401 - re-exported, as before the split
    MAX_INT,
    OUT_OF_RANGE,
    SI_MULTIPLES,
    SI_SUFFIXED,
    _number,
    ascii_float,
    beyond_max_int,
    digit_groups,
    si_float,
    whole_number,
    whole_value,
)
from trainsim.errors import ConfigError

T = TypeVar("T")

class DeprecatedName(FutureWarning):
    """A config used a deprecated field name; the CLI prints it as one ``warning:`` line."""


def _shown(value: Any) -> str:
    """A value as an error shows it: short, and its kind when it is not a scalar."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_DP = "the data-parallel size is derived: cluster.num_gpus / (tp*pp*cp)"
SYNONYMS: dict[str, dict[str, str]] = {
    "parallel": {"dp": _DP, "data_parallel_size": _DP, "data_parallel_shard_degree": _DP,
                 "dp_size": _DP, "sp": "sequence_parallel", "tp_size": "tp",
                 "tensor_parallel_size": "tp", "tensor_parallel_degree": "tp",
                 "pipeline_parallel_size": "pp", "pipeline_parallel_degree": "pp",
                 "context_parallel_degree": "cp", "ep_size": "ep", "expert_parallel_size": "ep",
                 "expert_parallel_degree": "ep", "zero": "zero_stage"},
    "training": {"batch_size": "global_batch_size", "gbs": "global_batch_size",
                 "global_batch": "global_batch_size", "mbs": "micro_batch_size",
                 "micro_batch": "micro_batch_size", "seq_len": "seq_length",
                 "sequence_length": "seq_length", "precision": "dtype", "tokens": "train_tokens"},
    "model": {"heads": "num_attention_heads", "num_heads": "num_attention_heads",
              "n_heads": "num_attention_heads", "n_head": "num_attention_heads",
              "num_key_value_heads": "num_kv_heads", "n_kv_heads": "num_kv_heads",
              "layers": "num_layers", "n_layers": "num_layers", "n_layer": "num_layers",
              "num_hidden_layers": "num_layers", "hidden": "hidden_size", "dim": "hidden_size",
              "d_model": "hidden_size", "intermediate_size": "ffn_hidden_size",
              "ffn_dim": "ffn_hidden_size", "vocab": "vocab_size"},
    "cluster": {"gpus": "num_gpus", "world_size": "num_gpus", "gpu_count": "num_gpus",
                "n_gpus": "num_gpus", "gpu_type": "gpu", "gpu_name": "gpu", "accelerator": "gpu",
                "device": "gpu", "node_type": "node",
                "nodes": "give cluster.num_gpus, nodes x gpus_per_node",
                "num_nodes": "give cluster.num_gpus, nodes x gpus_per_node"},
}
"""Names other frameworks (Megatron's, torchtitan's, DeepSpeed's, Hugging Face's) or habit give
a field -> trainsim's field, or why there is none; an unknown-field error says it."""
SHORT_NAMES = {"parallel": ("tp", "pp", "cp", "ep", "etp", "vpp",
                            "num_distributed_optimizer_instances",
                            "data_parallel_replicate_degree")}
"""The short names a section also takes (``config.parallel.ALIASES``), offered as suggestions."""


def type_name(value: Any) -> str:
    """The name of ``value``'s type as an error shows it: the built-in type it is, so a number
    kept with the text it was written as (``config.safe_load.Written``, a float) reads 'float',
    not the class that keeps its text (fuzz34: "got a Written")."""
    return next((c.__name__ for c in type(value).__mro__ if c.__module__ == "builtins"),
                type(value).__name__)


def value_kind(value: Any) -> str:
    """How an error names a value of the wrong kind: 'a list', 'the text 'fast'', 'nothing'
    (not Python's 'NoneType'). A number kept with its written text
    (``config.safe_load.Written``) is a number, not 'a Written'."""
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "nothing" if value is None else f"a {type_name(value)}"


def section_of(value: Any, where: str) -> dict[str, Any]:
    """A config section or sub-mapping as written (``parallel``, ``reliability.checkpoint``,
    ``cluster.gpu_overrides``): a mapping; null or blank text is the section given empty (as a
    blank optional field is None: robust54); anything else is refused naming it. robust57:
    ``x or {}`` took ``reliability: []`` and ``gpu_overrides: []`` as empty, refused
    ``training: ''`` and ``reliability.straggler: null`` ("got NoneType")."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if not isinstance(value, dict):
        leaf = where.split(".")[-1]
        raise ConfigError(f"{where} must be a mapping of fields (e.g. {leaf}: {{...}}), got "
                          f"{value_kind(value)}")
    return value


def suggest(name: str, choices: typing.Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest choice (the same name in other letter case first,
    then the shortest prefix match), or ''. fuzz46: ``TP`` found no ``tp`` (difflib compares
    case)."""
    choices = list(choices)
    same = [c for c in choices if str(c).lower() == str(name).lower()]
    prefixed = same or sorted([c for c in choices if c.startswith(name)] if len(name) >= 2
                              else [], key=len)  # the least added: 'b20' is b200-sxm-180gb
    close = prefixed or difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""


def as_written(exc: ConfigError, written: dict[str, str], replace: bool = False) -> ConfigError:
    """``exc`` naming each field as the user wrote it; ``written`` maps a canonical name to the
    user's (``tensor_model_parallel_size`` -> ``parallel.tp``). The message keeps the canonical
    name (Megatron's) and ends with ``(parallel.tp is tensor_model_parallel_size)``, or with
    ``replace`` the user's name takes its place. Whole names only: pipeline_model_parallel_size
    inside virtual_pipeline_model_parallel_size is left alone. Returned for ``raise``."""
    text = str(exc)
    notes = []
    for full, short in written.items():
        pattern = rf"(?<![A-Za-z0-9_]){re.escape(full)}(?![A-Za-z0-9_])"
        if not re.search(pattern, text) or short in text:
            continue
        if replace:
            text = re.sub(pattern, short, text)
        else:
            notes.append(f"{short} is {full}")
    if notes:
        text += f" ({'; '.join(notes)})"
    if text != str(exc):
        exc.args = (text, *exc.args[1:])
    return exc


DTYPE_SYNONYMS = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
                  "float": "fp32", "e4m3": "fp8", "e5m2": "fp8", "float8_e4m3fn": "fp8",
                  "float8_e5m2": "fp8"}
"""A dtype in torch's names (``torch.bfloat16``, Hugging Face's ``torch_dtype``) or an fp8
format's -> the short name the configs and the validation README use (fp8 covers both OCP fp8
formats). Read wherever a field's values are dtypes: a config's ``training.dtype``, a
validation row's ``dtype`` and ``grad_reduce_dtype``, a kernel row's ``dtype``."""
_DTYPE_NAMES = frozenset(DTYPE_SYNONYMS.values())


def _coerce(value: Any, tp: Any, where: str, free_text: bool = False) -> Any:
    """``value`` as type ``tp``; ``free_text``: a str field of free text (``FREE_TEXT``)."""
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        allowed = get_args(tp)
        if isinstance(value, str):
            value = value.strip().lower().removeprefix("torch.")
            if value in DTYPE_SYNONYMS and set(allowed) <= _DTYPE_NAMES:
                value = DTYPE_SYNONYMS[value]
        if value not in allowed:
            hint = suggest(value, [str(a) for a in allowed]) if isinstance(value, str) else ""
            raise ConfigError(f"{where}={_shown(value)} is not one of {list(allowed)}{hint}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if (value is None or isinstance(value, str) and value.strip() == "") and \
                type(None) in get_args(tp):
            return None
        return _coerce(value, args[0], where, free_text)
    if origin in (tuple, list):
        inner = get_args(tp)[0] if get_args(tp) else Any
        if isinstance(value, str):
            value = [v for v in value.replace(";", ",").split(",") if v.strip()]
        if value is None:  # an empty value (``--set x=``, YAML ``x:``): the empty list
            value = []
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where} must be a list, got {_shown(value)}")
        for i, v in enumerate(value):
            if v is None:
                raise ConfigError(f"{where}[{i}] is null, and null is not one of its values; "
                                  "leave it out")
        return tuple(_coerce(v, inner, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a mapping, got {_shown(value)}")
        key_tp, value_tp = get_args(tp) or (Any, Any)
        return {_coerce(k, key_tp, where): _coerce(v, value_tp, f"{where}.{k}")
                for k, v in value.items()}
    if tp is bool:
        return switch(value, where)
    if isinstance(value, str) and tp in (int, float):
        digit_groups(value.strip(), where)  # '1_0' named as mistyped, not "not a number"
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(f"{where} must be an integer, got {_shown(value)}")
        if isinstance(value, str):
            value = value.strip()
        try:
            f = ascii_float(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{where} must be an integer, got {_shown(value)}") from None
        if not math.isfinite(f) or f != int(f):
            raise ConfigError(f"{where} must be an integer, got {_shown(value)}")
        n = whole_value(value)  # digit text exactly: '9007199254740993' is not 2**53
        if n is None or abs(n) > MAX_INT:
            raise ConfigError(f"{where}={_shown(value)} {OUT_OF_RANGE}")
        return n
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(f"{where} must be a number, got {_shown(value)}")
        try:
            f = ascii_float(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{where} must be a number, got {_shown(value)}") from None
        if not math.isfinite(f):
            raise ConfigError(f"{where} must be a finite number, got {_shown(value)}")
        return f
    if tp is str:
        if isinstance(value, (dict, list, tuple)):
            raise ConfigError(f"{where} must be text, got {_shown(value)}")
        return _text(str(value), where, free_text)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        return build(tp, value, where)
    return value


FREE_TEXT = "free_text"
"""The ``dataclasses.field`` metadata key of a str field that holds free text (a GPU file's
``source``): it may span lines (YAML's ``source: >`` ends it with a line break, ``source: |``
keeps several) and hold tabs. Any other str field is a name, one line of printable text."""

_FREE_TEXT_BREAKS = "\n\t"
"""The characters that are not printable that free text may hold; printed escaped
(``errors.escaped``), as every text trainsim prints."""


def _text(text: str, where: str, free_text: bool) -> str:
    """``text``, refused (one line naming it) where it holds a character that is not printable
    (``str.isprintable``, the test ``errors.escaped`` makes): a terminal escape (ESC, C1), a
    line or paragraph separator (U+2028/9), a bidirectional override (U+202E shows
    'evil\u202egnp.exe' as 'evilexe.png'), NUL. Free text may hold line breaks and tabs."""
    if text.isprintable():
        return text
    bad = next((c for c in text if not c.isprintable()
                and not (free_text and c in _FREE_TEXT_BREAKS)), None)
    if bad is None:
        return text
    what = ("free text may hold line breaks and tabs, no other character that is not "
            "printable" if free_text else "a name is one line of printable text")
    raise ConfigError(f"{where}={_shown(text)} holds the character {bad!r} "
                      f"(U+{ord(bad):04X}), which is not printable; {what}")


SWITCH_WORDS = {"true": True, "false": False, "1": True, "0": False,
                "yes": True, "no": False, "on": True, "off": False}
"""The words a switch (a bool field, a config.json flag) takes as text, any case: YAML 1.1's
booleans (yes/no/on/off: PyYAML reads them unquoted), JSON's, and a 0/1 column."""


def switch(value: Any, where: str) -> bool:
    """A switch's value: a bool, the number 0 or 1 (also as text: '1.0', a 0/1 column that
    pandas wrote as floats), or a ``SWITCH_WORDS`` word. ``bool('false')`` would be True."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in SWITCH_WORDS:
            return SWITCH_WORDS[word]
        if _number(word) in (0, 1):
            return _number(word) == 1
    raise ConfigError(f"{where} must be true/false, got {_shown(value)}")


@functools.cache
def _schema(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field]]:
    """(type hints, init fields) of a dataclass, resolved once per class: resolving the
    string annotations (``typing.get_type_hints``) costs more than building the instance."""
    return get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls) if f.init}


@functools.cache
def _si_suffixed(cls: type, name: str) -> bool:
    """Whether field ``name`` of dataclass ``cls`` reads text with an ``SI_MULTIPLES`` suffix."""
    return bool(_schema(cls)[1][name].metadata.get(SI_SUFFIXED))


@functools.cache
def _scalar_checks(cls: type) -> tuple[tuple[str, str, tuple, bool], ...]:
    """(field, kind, allowed choices, may be None) of each scalar field of dataclass ``cls``:
    what ``check_fields`` checks on an instance built directly (not through ``build``)."""
    hints, fields = _schema(cls)
    out = []
    for name in fields:
        tp, optional = hints[name], False
        if get_origin(tp) in (typing.Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            optional = type(None) in get_args(tp)
            if len(args) != 1:
                continue
            tp = args[0]
        if get_origin(tp) is Literal:
            out.append((name, "literal", get_args(tp), optional))
        elif tp in (int, float, bool, str):
            out.append((name, tp.__name__, (), optional))
    return tuple(out)


@functools.cache
def _container_checks(cls: type) -> tuple[tuple[str, Any, type, Any], ...]:
    """(field, type hint, the type a built value has, its elements' or values' type, or the
    set of names they may be) of each list, mapping or nested-config field of dataclass
    ``cls``: what ``check_fields`` checks beside the scalars."""
    hints, fields = _schema(cls)
    out = []
    for name in fields:
        tp = hints[name]
        if get_origin(tp) in (typing.Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else None
        kind = {tuple: tuple, list: tuple, dict: dict}.get(get_origin(tp))
        if kind is None and dataclasses.is_dataclass(tp):
            kind = tp
        if kind is not None:
            inner = get_args(tp)[0 if kind is tuple else -1] \
                if kind in (tuple, dict) and get_args(tp) else None
            if get_origin(inner) is Literal:  # the names allowed
                inner = frozenset(get_args(inner))
            out.append((name, hints[name], kind, inner))
    return tuple(out)


def _check_containers(obj: Any, where: str) -> None:
    """Each list or mapping field of ``obj`` read as a file's value is (``_coerce``: a list of
    the element type, a comma-separated text split), a nested config of its class: an API
    caller's ``recompute_modules=3`` or ``gpu='h100'`` is one ConfigError naming the field, not
    a TypeError deep in the simulation."""
    for name, hint, kind, inner in _container_checks(type(obj)):
        value = getattr(obj, name)
        if value is None and get_origin(hint) in (typing.Union, types.UnionType):
            continue
        if kind is tuple and type(value) is tuple and all(
                v in inner if type(inner) is frozenset else type(v) is inner for v in value) \
                or kind is dict and type(value) is dict \
                and all(type(k) is str and type(v) is inner for k, v in value.items()):
            continue  # the common case, cheaply (configs are rebuilt often by the tuners)
        if kind is tuple and inner is str and isinstance(value, (tuple, list, str)):
            # the outer list only: a name that is not text is refused by the field's own check,
            # which lists the names it knows (recompute_modules, cuda_graph_scope)
            typed = _coerce(value, hint, f"{where}.{name}") if isinstance(value, str) \
                else tuple(value)  # '' in an optional list is None, as a file's empty value
            if typed != value or type(typed) is not type(value):
                object.__setattr__(obj, name, typed)
        elif kind in (tuple, dict):
            typed = _coerce(value, hint, f"{where}.{name}")
            if typed != value or type(typed) is not type(value):
                object.__setattr__(obj, name, typed)
        elif not isinstance(value, kind):
            hint_name = f" (a preset by its name: trainsim.catalog.{name}({value!r}))" \
                if isinstance(value, str) and name in ("gpu", "model") else ""
            raise ConfigError(f"{where}.{name} must be a {kind.__name__}, got "
                              f"{type_name(value)}{hint_name}")


def check_fields(obj: Any, where: str) -> None:
    """A ConfigError naming the first field of dataclass ``obj`` whose value is of the
    wrong kind (a string where a number goes, a name outside its choices, None where a value
    is required, a number where a list goes): the Python API builds configs directly,
    bypassing ``build``'s coercion. An optional field's blank text is None, as in a file."""
    _check_containers(obj, where)
    for name, kind, allowed, optional in _scalar_checks(type(obj)):
        value = getattr(obj, name)
        tp = type(value)
        if tp is int and kind == "int" and -MAX_INT <= value <= MAX_INT or \
                tp is float and kind == "float" and -math.inf < value < math.inf or \
                tp is str and kind == "str" and not (optional and value.isspace()) and value \
                or tp is bool and kind == "bool":
            continue  # the common cases, cheaply (configs are rebuilt often by the tuners)
        if kind == "literal" and value is not None and value in allowed:
            continue  # what the literal branch below decides, without its number test
        if value is None:
            if optional:
                continue
            raise ConfigError(f"{where}.{name} is required, got None")
        if optional and tp is str and not value.strip():
            # robust54: blank text in an optional field is None, as a file's empty value (a
            # CSV's empty cell, ``--set x=``, YAML ``x: ''``) is in ``_coerce``: one rule for
            # every entry point (``train_tokens=''`` was refused, ``framework=''`` kept as '')
            object.__setattr__(obj, name, None)
            continue
        # what ``_coerce`` accepts from a file, and the type it would have made of it
        number = isinstance(value, numbers.Real) and not isinstance(value, bool) and \
            math.isfinite(value)
        if kind == "literal":
            ok, typed = value in allowed, value
        elif kind == "int":
            ok = number and value == int(value) and abs(value) <= MAX_INT
            typed = int(value) if ok else value
        elif kind == "float" and isinstance(value, str) and _si_suffixed(type(obj), name):
            # robust53: the typed edge reads a count's text as a file, --set and the service do
            typed = _si_value(value, f"{where}.{name}")
            ok = isinstance(typed, float) and math.isfinite(typed)
        elif kind == "float":
            ok, typed = number, float(value) if number else value
        elif kind == "bool":
            ok = isinstance(value, bool) or number and value in (0, 1)
            typed = bool(value) if ok else value
        else:
            ok, typed = isinstance(value, str), value
        if not ok:
            what = f"one of {list(allowed)}" if kind == "literal" else \
                {"int": "a whole number", "float": "a finite number", "bool": "true/false",
                 "str": "text"}[kind]
            raise ConfigError(f"{where}.{name}={_shown(value)} must be {what}")
        if type(typed) is not tp:  # 2.0 in an int field is 2, as a file's value would be
            object.__setattr__(obj, name, typed)


def unknown_field(cls: type, key: Any, where: str) -> ConfigError:
    """The error for ``where.key``, a key that is no field of dataclass ``cls``: the field it
    is another name for (``SYNONYMS``), else the closest field. Returned for ``raise``."""
    fields = _schema(cls)[1]
    known = SYNONYMS.get(where, {}).get(str(key).lower())
    hint = (f" ({known})" if known and " " in known else
            f" (did you mean '{known}'?)" if known else
            suggest(str(key), [*fields, *SHORT_NAMES.get(where, ())]))
    return ConfigError(f"unknown field {where}.{key}{hint}")


def _si_value(text: str, where: str) -> float | str:
    """A ``SI_SUFFIXED`` field's text as its number; an empty text is left for the field's own
    rule (an optional field's None)."""
    if not text.strip():
        return text
    text = digit_groups(text.strip(), where)  # its own line: '1_0T' looks mistyped
    try:
        return si_float(text)
    except ValueError:
        raise ConfigError(f"{where} must be a number (suffixes K, M, B/G, T, P allowed: 15T), "
                          f"got {_shown(text)}") from None


def build(cls: type[T], data: Any, where: str) -> T:
    """Instantiate dataclass ``cls`` from ``data``; ``where`` prefixes field names in errors."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping of fields, got {value_kind(data)}")
    hints, fields = _schema(cls)
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            raise unknown_field(cls, key, where)
        if isinstance(value, str) and fields[key].metadata.get(SI_SUFFIXED):
            value = _si_value(value, f"{where}.{key}")
        kwargs[key] = _coerce(value, hints[key], f"{where}.{key}",
                              bool(fields[key].metadata.get(FREE_TEXT)))
    try:
        return cls(**kwargs)
    except TypeError as exc:  # missing required fields
        missing = [n for n, f in fields.items() if n not in kwargs
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        raise ConfigError(f"{where} is missing required field(s): {', '.join(missing)}") from exc


def to_dict(obj: Any) -> Any:
    """Plain-data view of a (nested) dataclass, for JSON output."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def fields_state(obj: Any) -> dict[str, Any]:
    """A frozen config's pickled state: its fields alone, without what its
    cached values (``config.cached``) keep beside them in ``__dict__`` (the short names,
    layouts: read again where unpickled; a copy is then what its fields say, and as small).
    Unpickling writes the state into ``__dict__`` as before (no ``__setstate__``), and
    ``dataclasses.replace`` builds from the fields, so neither reads this."""
    names = type(obj).__dataclass_fields__
    return {k: v for k, v in obj.__dict__.items() if k in names}


def require_positive(where: str, **values: float | None) -> None:
    """Each value, where given, above 0 and finite; a whole-number field's refusal says so
    (robust52: ``moe_latent_size=0`` was told "a positive finite number" for a count)."""
    for name, v in values.items():
        if v is not None and not 0 < v < math.inf:  # also rejects NaN
            if isinstance(v, int) and not isinstance(v, bool):
                raise ConfigError(f"{where}.{name}={v} must be a positive whole number (1, 2, "
                                  "...)")
            raise ConfigError(f"{where}.{name}={v} must be a positive finite number")


MIN_RATE = 1.0
"""Least bytes/s or FLOP/s a GPU or link may be given: below 1 per second an iteration's
times run past the largest float (gpu.hbm_bw_Bps=1e-300 ended in a ValueError deep in the
summary; nvlink 1e-300 read as 'protocol auto cannot run algorithm auto'), and no hardware is
that slow (a 9,600-baud modem moves 1,200 B/s)."""


def require_rate(where: str, **values: float | None) -> None:
    """Each rate, where given, at least MIN_RATE (a positive rate is checked before)."""
    for name, v in values.items():
        if v is not None and 0 < v < MIN_RATE:
            raise ConfigError(f"{where}.{name}={v:g} is below {MIN_RATE:g} per second; give the "
                              "rate in bytes/s or FLOP/s (no hardware is that slow)")


def require_fraction(where: str, **values: float | None) -> None:
    """Each value, where given, in (0, 1]: a fraction of a peak or of a rate."""
    for name, v in values.items():
        if v is not None and not 0 < v <= 1:
            raise ConfigError(f"{where}.{name}={v} must be in (0, 1] (a fraction of the peak)")


def require_nonnegative(where: str, **values: float | None) -> None:
    for name, v in values.items():
        if v is not None and not 0 <= v < math.inf:
            raise ConfigError(f"{where}.{name}={v} must be >= 0 and finite")
