"""The usercatalog and service surfaces of benchmarks/fuzz55.py (2026-11-28, robust55): a
failure profile, a GPU file and a reliability section a user writes, with one key dropped,
mistyped or odd (a mistyped key never answers what the key left out answers), and the
service's number options against the CLI's rule for each flag."""
from __future__ import annotations

import copy
import json
import math
import random
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from fuzz54 import _cli
from fuzz_checks import BASES, REFUSED, Case

CATALOG = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "catalog"


# ------------------------------------------------------------------------------ usercatalog

MISTYPE = [str.upper, lambda k: k + " ", lambda k: k.replace("_", "-"), lambda k: k[:-1],
           lambda k: k + "s", lambda k: " " + k]
ODD_VALUES = [0, -1, 1e400, math.nan, "x", [1], {"a": 1}, "", None, True, "\uff11\uff12", 2**64,
              1e-300, "12 "]


def _walk(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path of a nested mapping (mappings only)."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield (*path, k)
            yield from _walk(v, (*path, k))


def _edit(data: Any, path: tuple[Any, ...], how: str, rng: random.Random) -> str:
    """Drop, mistype or set the key at ``path`` of ``data`` in place; what was done."""
    parent = data
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    if how == "drop":
        del parent[key]
        return f"drop {'.'.join(map(str, path))}"
    if how == "mistype":
        new = rng.choice(MISTYPE)(str(key))
        if new == key or new in parent:
            new = str(key) + "_x"
        parent[new] = parent.pop(key)
        return f"{'.'.join(map(str, path))} as {new!r}"
    value = rng.choice(ODD_VALUES)
    parent[key] = value
    return f"{'.'.join(map(str, path))}={value!r}"


FREE_FORM = ("name", "description", "source", "published", "aliases", "modes")
"""Keys whose own names are free text (a cause's name, a published figure's label): a
mistyped one is another name, not a mistake the reader can tell."""


def _mistyped(args: list[str], dropped: list[str], path: tuple[Any, ...],
              files: tuple[list[Path], list[Path]]) -> str | None:
    """:func:`_cli` on ``args``; where answered, not the answer of ``dropped`` (the same input
    with the key left out instead of mistyped; ``files``: each one's files, which an answer
    may name): a mistyped key read as if left out."""
    from fuzz51 import _invoke

    bad = _cli(args, True)
    if bad is not None:
        return bad
    mistyped = _invoke(args)
    if mistyped.exit_code != 0 or path[-1] in FREE_FORM or \
            (len(path) > 1 and path[-2] in FREE_FORM):
        return None
    left_out = _invoke(dropped)

    def named(out: str, paths: list[Path]) -> str:
        for f in paths:
            out = out.replace(str(f), "FILE").replace(f.name, "FILE").replace(f.stem, "FILE")
        return out

    if left_out.exit_code == 0 and named(left_out.stdout, files[1]) == \
            named(mistyped.stdout, files[0]):
        return "a mistyped key read as if left out (its default used in silence)"
    return None


def _input(d: Path, what: str, k: int, data: Any, run: Path) -> tuple[list[str], list[Path]]:
    """The command line of a usercatalog input (``data``: the profile, GPU file or
    reliability section written for it) and the files it wrote."""
    if what == "profile":
        f = d / f"p{k}" / "mine.yaml"
        f.parent.mkdir(exist_ok=True)
        f.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        return ["goodput", str(run), "--failures", str(f), "--tokens", "1e9", "--trials", "5",
                "--format", "json"], [f]
    cfg = copy.deepcopy(BASES["dense"])
    r = d / f"r{k}" / "run.json"
    r.parent.mkdir(exist_ok=True)
    if what == "gpu":
        f = r.parent / "my_gpu.yaml"
        f.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
        cfg["cluster"]["gpu"] = str(f)
        r.write_text(json.dumps(cfg), encoding="utf-8")
        return ["simulate", str(r), "--format", "json"], [r, f]
    cfg["reliability"] = data
    r.write_text(json.dumps(cfg), encoding="utf-8")
    return ["goodput", str(r), "--tokens", "1e9", "--trials", "5", "--format", "json"], [r]


def usercatalog_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        d = Path(tempfile.mkdtemp(dir=workdir))
        run = d / "run.json"
        run.write_text(json.dumps(BASES["dense"]), encoding="utf-8")
        profiles = sorted((CATALOG / "failures").glob("*.yaml"))
        gpu_file = CATALOG / "gpus" / "h100-sxm-80gb.yaml"
        reliability = {"checkpoint": {"mode": "async", "interval_s": 3600,
                                      "storage_write_bw_Bps": 1e10},
                       "recovery": {"restart_s": 120}}
        for k in range(600):
            what = rng.choice(["profile", "profile", "gpu", "reliability"])
            how = rng.choice(["drop", "mistype", "value"])
            src = rng.choice(profiles) if what == "profile" else gpu_file
            data = copy.deepcopy(reliability) if what == "reliability" else \
                yaml.safe_load(src.read_text(encoding="utf-8"))
            path = rng.choice(list(_walk(data)))
            left_out = copy.deepcopy(data)
            done = _edit(data, path, how, rng)
            label = f"{src.stem if what == 'profile' else what}: {done}"
            args, files = _input(d, what, 2 * k, data, run)
            if how != "mistype":
                yield label, (lambda a=args: _cli(a, True))
                continue
            _edit(left_out, path, "drop", rng)
            dropped, dropped_files = _input(d, what, 2 * k + 1, left_out, run)
            yield label, (lambda a=args, b=dropped, p=path, f=(files, dropped_files):
                          _mistyped(a, b, p, f))
    return cases


# ------------------------------------------------------------------------------ service

SERVICE_NUMBERS = {"plan": ["days", "price", "pue", "grid", "gpu_idle_fraction",
                            "node_overhead", "nic_gbps"],
                   "search": ["nic_gbps", "pareto_slowdown"], "goodput": ["days"]}
"""The number options of each job kind (``service.requests._float``; the CLI's finite floats)."""
NOT_NUMBERS = [True, False, "\uff12", "\u0662", "1_0", "nan", "inf", "", [2], {"a": 2}, "2x",
               "0x2", "\u00b2"]
"""Values no CLI flag reads as a number: a bool, other scripts' digits, a mistyped underscore,
NaN / inf, a list, a mapping, text."""
IN_RANGE = {"gpu_idle_fraction": 0.5, "pue": 1.5, "days": 1e6}
"""A number within each option's CLI range (2 for the rest; a plan's deadline that is met)."""


def numbers(option: str) -> list[Any]:
    """One in-range number (``IN_RANGE``) in the forms the CLI reads (its flags' text: ASCII,
    a sign, spaces, an exponent) and as JSON numbers."""
    v = IN_RANGE.get(option, 2)
    return [v, float(v), str(v), f" {v} ", f"{v:e}", f"+{v}"]


BEYOND = {"days": [0, -1], "price": [-1, 1e7], "pue": [0.5, 11, 1000], "grid": [-1, 1e5],
          "gpu_idle_fraction": [-0.1, 1.5], "node_overhead": [-1, 11, 100],
          "nic_gbps": [0, -1], "pareto_slowdown": [0.5]}
"""Numbers beyond each option's CLI range (trainsim plan / search / goodput --help)."""
SERVICE_BASE = {"plan": {"model": "llama3-8b", "tokens": "1e9", "days": 1, "max_gpus": 16,
                         "seq": 512, "global_batch": 16},
                "search": {"model": "llama3-8b", "gpus": 8, "global_batch": 16, "seq": 512},
                "goodput": {"tokens": "1e9", "trials": 5}}


def _service(kind: str, option: str, value: Any, number: bool) -> str | None:
    """What the service's check (``service.jobs.problem``) says of a job with ``option`` at
    ``value``: refused in one line where ``value`` is no number, never refused by that
    option where it is one (the CLI's rule for its flag)."""
    from trainsim.service.jobs import problem
    from trainsim.service.settings import Settings

    options = {**SERVICE_BASE[kind], option: value}
    got = problem(kind, BASES["dense"] if kind == "goodput" else {}, options,
                  Settings(workers=0))
    if got is not None and (not got[2].strip() or "\n" in got[2].strip()):
        return f"a refusal of {len(got[2].splitlines())} lines"
    if number:
        if got is not None and got[1] == f"options.{option}":
            return f"options.{option}={value!r} refused though the CLI reads it: {got[2][:80]}"
        return None
    if got is None:
        return f"options.{option}={value!r} read as a number (the CLI refuses it)" \
            if value not in BEYOND[option] else \
            f"options.{option}={value!r} beyond the CLI flag's range, answered"
    REFUSED[0] += 1
    return None


def service_cases() -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for kind, options in SERVICE_NUMBERS.items():
            for option in options:
                for value in NOT_NUMBERS + numbers(option) + BEYOND[option]:
                    number = value in numbers(option) and not isinstance(value, bool)
                    yield f"{kind} options.{option}={value!r}", (
                        lambda k=kind, o=option, v=value, n=number: _service(k, o, v, n))
    return cases
