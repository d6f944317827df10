"""Input robustness, 2026-11-29 (57th session, robust57): what the commands print, whole
numbers written as floats, names, empty sections, the service's job lifecycle and kernel
databases a user brings.

- ``printed``: ``simulate``, ``sweep``, ``search``, ``plan`` and ``goodput`` in each of their
  ``--format``s (table, json, csv) on runs whose figures are huge or tiny (a data loading of
  1e300 s, 1e30 tokens, a deadline of 1e-6 or 1e12 days). Oracle: the table prints no number
  as a wall of 20 digits or more (robust56 lead 1: a 301-digit cell), the JSON parses and is
  finite, the CSV's rows are as long as its header and hold no inf / nan; or one line;
- ``intfloats``: every count a user writes (a config's counts, ``--set``, the commands' count
  options and lists, the service's count options, a format v2 row's count cells) as a whole
  number written as a float (``8.0``, ``'8.0'``, ``8e0``) and as a fraction (``8.5``). Oracle:
  the whole number answers as the integer does (the same JSON), everywhere a config's
  ``cluster.num_gpus: 8.0`` is 8; a fraction is refused in one line naming what was written;
- ``names``: unicode, markup-like and very long text in every name a user writes (the model's,
  the run's, a GPU file's, a failure profile's, a format v2 row's id). Oracle: a table printed
  (rich markup in it shown as written, not read), the JSON holding the name as written; or one
  line naming the field;
- ``emptysections``: each optional section and sub-mapping of a run config (``parallel``,
  ``training``, ``reliability`` and its parts, ``cluster.gpu_overrides``) given empty:
  ``{}``, null, blank text, ``[]``. Oracle: ``{}`` / null / blank answer as the section left
  out (the same JSON); anything else is one line naming the section;
- ``lifecycle``: the service's jobs (FastAPI's TestClient, no workers) through random
  sequences of submit, re-submit, get, result, trace, plot, cancel (twice), list, another
  token's id, ids that are no job's, and bursts of concurrent submits against
  ``max_active_jobs``. Oracle: the documented statuses (202 / 200 / 404 / 409 / 422 / 429),
  errors in one line, a cancel idempotent, a list that holds exactly the token's jobs, and
  never more active jobs than the limit;
- ``profiledb``: ``cluster.compute_db`` naming a kernel database (the bundled H100 one) cut
  short, of another or an unknown GPU, its dtypes relabelled, a field dropped or odd, in
  another encoding. Oracle: a finite answer or one line naming the database.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``); a
hang is 30 CPU s and any input over 10 CPU s is its own class.

    PYTHONPATH=src python benchmarks/fuzz57.py [--only printed,intfloats,names,emptysections,
        lifecycle,profiledb] [--count N] [--seed S] [--every] [--progress] [--refusals]
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz57_service import emptysections_cases, lifecycle_cases, names_cases, profiledb_cases
from fuzz_checks import BASES, REFUSED, Case

fuzz_checks.TIME_LIMIT_S = 300
ROOT = Path(__file__).resolve().parent.parent
DIGIT_WALL = re.compile(r"\d[\d,]{19,}")
"""A number printed as 20 or more digits (with their separators): no figure a reader compares."""


def _run(args: list[str]) -> tuple[Any, list[str]]:
    from fuzz51 import _errors, _invoke

    r = _invoke(args)
    return r, _errors(r)


def json_answer(out: str, unreadable: str = "an answer that is no JSON") -> str | None:
    """None for JSON whose every number is finite, else the finding."""
    try:
        got = json.loads(out)
    except ValueError:
        return unreadable
    return None if fuzz_checks.finite(got) else "a non-finite figure in the JSON"


def one_line(r: Any, lines: list[str], *words: str) -> str | None:
    """None for a refusal in one line naming each of ``words`` (counted), else the finding."""
    if "Traceback" in r.output:
        return "a traceback"
    if len(lines) != 1:
        return f"exit {r.exit_code} with {len(lines)} error lines"
    missing = [w for w in words if w not in lines[0]]
    if missing:  # the class: the words missed and the refusal's start, numbers and paths blurred
        start = re.sub(r"\d+", "N", re.sub(r"/\S+", "PATH", lines[0]))[:60]
        return f"a refusal not naming {re.sub(r'[0-9]+', 'N', missing[0])!r}: {start}"
    REFUSED[0] += 1
    return None


def write(d: Path, name: str, data: Any) -> str:
    path = d / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------------------ printed

ODD_CONFIG = [("training", "data_prep_s_per_sample", 1e300), ("training", "data_prep_s_per_sample",
                                                              1e15),
              ("training", "data_prep_s_per_sample", 1e-300), ("training", "train_tokens", 1e30),
              ("training", "train_tokens", 1e20), ("training", "data_read_bw_Bps", 1.0),
              ("cluster", "price_per_gpu_hour", 1e6), ("cluster", "price_per_gpu_hour", 1e-9),
              ("training", "train_tokens", 1e12)]
FORMATS = {"simulate": ["table", "json"], "sweep": ["table", "json", "csv"],
           "search": ["table", "json", "csv"], "plan": ["table", "json"],
           "goodput": ["table", "json"]}
SEARCH = ["--workers", "1", "--max-micro-batch", "1", "--recompute", "none", "--overlap", "off",
          "--tp", "1", "--pp", "1"]


def printed_check(args: list[str], fmt: str) -> str | None:
    r, lines = _run(args)
    if r.exit_code != 0:
        return one_line(r, lines)
    out = r.stdout
    if fmt == "table":
        wall = DIGIT_WALL.search(out)
        return "a number printed as 20 digits or more" if wall else None
    if fmt == "json":
        return json_answer(out, "invalid JSON")
    rows = list(csv.reader(io.StringIO(out)))
    if not rows or any(len(row) != len(rows[0]) for row in rows):
        return "CSV rows of another length than the header"
    if any(c.strip().lower() in ("inf", "-inf", "nan", "infinity") for row in rows for c in row):
        return "inf / nan in the CSV"
    return None


def printed_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        d = Path(workdir)
        model = write(d, "p_model.json", {"model": BASES["dense"]["model"]})
        for k in range(150):
            command = rng.choice(sorted(FORMATS))
            fmt = rng.choice(FORMATS[command])
            raw = copy.deepcopy(BASES[rng.choice(["dense", "moe"])])
            label = command
            if command in ("simulate", "sweep", "search"):
                for sec, key, value in rng.sample(ODD_CONFIG, rng.choice([1, 2])):
                    raw[sec][key] = value
                    label += f" {sec}.{key}={value:g}"
            path = write(d, f"p{k}.json", raw)
            if command == "simulate":
                args = ["simulate", path]
            elif command == "sweep":
                args = ["sweep", path, "--vary", "training.micro_batch_size=1,2"]
            elif command == "search":
                args = ["search", path, "--gpus", "8", "--global-batch", "16", "--seq", "512",
                        "--top", "2", *SEARCH]
            elif command == "plan":
                tokens = rng.choice(["1e30", "1e20", "1e12", "1e9"])
                days = rng.choice(["1e-6", "1e-3", "30", "1e6", "1e12"])
                args = ["plan", model, "--tokens", tokens, "--days", days, "--max-gpus", "8",
                        "--seq", "512", "--global-batch", "16", *SEARCH]
                if rng.random() < 0.3:
                    args += ["--price", rng.choice(["0", "1e6", "1e-9"])]
                label += " " + " ".join(args[3:7] + args[-2:])
            else:
                what = rng.choice(["--tokens", "--days"])
                value = rng.choice(["1e20", "1e16", "1e12"] if what == "--tokens" else
                                   ["1e-3", "1", "1e5"])
                args = ["goodput", path, what, value, "--trials", "3"]
                if rng.random() < 0.4:
                    raw["reliability"] = {"checkpoint": {rng.choice(
                        ["host_copy_bw_Bps", "storage_write_bw_Bps"]): rng.choice([1e3, 1e6])}}
                    write(d, f"p{k}.json", raw)
                    label += f" {raw['reliability']}"
                label += f" {what} {value}"
            args += ["--format", fmt]
            yield f"{label} --format {fmt}", (lambda a=args, f=fmt: printed_check(a, f))
    return cases


# ------------------------------------------------------------------------------ intfloats

CONFIG_COUNTS = [("model", "num_layers", 4), ("model", "hidden_size", 256),
                 ("model", "num_attention_heads", 4), ("model", "vocab_size", 1024),
                 ("parallel", "tp", 2), ("parallel", "pp", 2), ("parallel", "ep", 2),
                 ("training", "global_batch_size", 16), ("training", "seq_length", 512),
                 ("training", "micro_batch_size", 1), ("cluster", "num_gpus", 8),
                 ("cluster", "gpus_per_node", 8), ("model", "num_experts", 8),
                 ("model", "moe_router_topk", 2)]
"""Counts of the MoE base, at their values there."""
SPELLINGS = [lambda n: float(n), lambda n: f"{n}.0", lambda n: f"{n}e0", lambda n: f" {n}.00 ",
             lambda n: f"{n}.5", lambda n: n + 0.5]
"""A whole number written as a float (the first four) and a fraction (the last two)."""
OPTIONS = {("search", "--gpus"): "8", ("search", "--top"): "2",
           ("search", "--global-batch"): "16", ("search", "--seq"): "512",
           ("search", "--tp"): "1,2", ("search", "--max-micro-batch"): "1",
           ("plan", "--max-gpus"): "8", ("goodput", "--trials"): "3",
           ("goodput", "--gpus"): "8", ("goodput", "--seed"): "1", ("sweep", "--steps"): "2",
           ("collective", "--gpus"): "8", ("collective", "--gpus-per-node"): "8"}
SERVICE_INTS = {"search": ["top", "max_micro_batch", "global_batch", "seq"],
                "plan": ["max_gpus", "seq", "max_micro_batch"], "goodput": ["trials", "seed"],
                "sweep": ["steps"]}
ROW_COUNTS = ["num_gpus", "gpus_per_node", "tp", "pp", "global_batch_size", "seq_length",
              "num_layers", "hidden_size"]


def _whole(text: str) -> bool:
    return float(text) == int(float(text))


def _same_config(raw: dict[str, Any], spelt: dict[str, Any], field: str, whole: bool
                 ) -> str | None:
    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import TrainsimError
    from trainsim.simulator import simulate

    want = simulate(run_config_from_dict(copy.deepcopy(raw))).to_dict()
    try:
        got = simulate(run_config_from_dict(copy.deepcopy(spelt))).to_dict()
    except TrainsimError as exc:
        if whole:
            return f"{field}: a whole number written as a float refused"
        REFUSED[0] += 1
        return None if field.split(".")[-1] in str(exc) else f"a fraction refused not naming {field}"
    if not whole:
        return f"a fraction taken: {field}"
    return None if got == want else f"a whole number written as a float answered otherwise: {field}"


def _same_cli(args: list[str], spelt: list[str], option: str, whole: bool) -> str | None:
    r, _ = _run(args)
    s, lines = _run(spelt)
    if not whole:
        if s.exit_code == 0:
            return f"a fraction taken: {option}"
        return one_line(s, lines, option)
    if s.exit_code != r.exit_code:
        return f"{option}: a whole number written as a float {'refused' if s.exit_code else 'taken'}" \
               f" where the integer is {'refused' if r.exit_code else 'taken'}"
    if r.exit_code == 0:
        a, b = json.loads(r.stdout), json.loads(s.stdout)
        for x in (a, b):
            if isinstance(x, dict):  # a search's timings differ run to run
                x.pop("stats", None)
                x.pop("elapsed_s", None)
        if a != b:
            return f"{option}: a whole number written as a float answered otherwise"
    return None


def _same_job(kind: str, options: dict[str, Any], key: str, value: Any, whole: bool
              ) -> str | None:
    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    settings = Settings(workers=0, checkers=0)
    config = {} if kind in ("search", "plan") else BASES["dense"]
    want = problem(kind, config, options, settings)
    got = problem(kind, config, {**options, key: value}, settings)
    if not whole:
        if got is None:
            return f"a fraction taken: options.{key}"
        REFUSED[0] += 1
        return None if f"options.{key}" in got[2] else f"options.{key} refused not naming it"
    if (got is None) != (want is None):
        return f"options.{key}: a whole number written as a float or text " \
               f"{'refused' if got else 'taken'}"
    return None


def intfloats_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        from fuzz53 import _pair_check
        from fuzz54 import public_rows

        d = Path(workdir)
        base = BASES["moe"]
        path = write(d, "i_moe.json", base)
        dense = write(d, "i_dense.json", BASES["dense"])
        model = write(d, "i_model.json", {"model": BASES["dense"]["model"]})
        for sec, key, n in CONFIG_COUNTS:
            for spell in SPELLINGS:
                value = spell(n)
                raw = copy.deepcopy(base)
                raw[sec][key] = value
                whole = _whole(str(value))
                yield f"config {sec}.{key}={value!r}", (
                    lambda s=raw, f=f"{sec}.{key}", w=whole: _same_config(base, s, f, w))
            value = rng.choice(SPELLINGS)(n)
            plain = ["simulate", path, "--format", "json", "--set", f"{sec}.{key}={n}"]
            spelt = plain[:-1] + [f"{sec}.{key}={value}"]
            whole = _whole(str(value))
            yield f"simulate --set {sec}.{key}={value}", (
                lambda a=plain, b=spelt, o=f"{sec}.{key}", w=whole: _same_cli(a, b, o, w))
        common = {"search": [model, "--gpus", "8", "--global-batch", "16", "--seq", "512",
                             "--top", "2", "--format", "json", *SEARCH[:-4]],
                  "plan": [model, "--tokens", "1e9", "--days", "30", "--max-gpus", "8", "--seq",
                           "512", "--global-batch", "16", "--format", "json", *SEARCH[:-4]],
                  "goodput": [dense, "--tokens", "1e9", "--trials", "3", "--format", "json"],
                  "sweep": [dense, "--vary", "parallel.tp=1:2", "--steps", "2", "--format",
                            "json"],
                  "collective": ["--op", "all_reduce", "--gpus", "8", "--sizes", "1M", "--format",
                                 "json"]}
        for (command, option), value in OPTIONS.items():
            for spell in SPELLINGS:
                written = ",".join(str(spell(int(v))).strip() for v in value.split(","))
                args = [command, *common[command]]
                args = args + [option, value] if option not in args else args
                spelt = list(args)
                spelt[spelt.index(option) + 1] = written
                whole = _whole(written.split(",")[0])
                yield f"{command} {option} {written}", (
                    lambda a=args, b=spelt, o=option, w=whole: _same_cli(a, b, o, w))
        from fuzz56 import BASE_OPTIONS

        for kind, keys in SERVICE_INTS.items():
            for key in keys:
                n = BASE_OPTIONS[kind].get(key, {"seed": 1, "steps": 2, "top": 2}.get(key, 1))
                n = int(n)
                for spell in SPELLINGS[:2] + [str] + SPELLINGS[4:]:
                    value = spell(n)
                    whole = not isinstance(value, float) or value == int(value)
                    whole = whole and _whole(str(value))
                    yield f"service {kind} options.{key}={value!r}", (
                        lambda k=kind, o=BASE_OPTIONS[kind], key=key, v=value, w=whole:
                        _same_job(k, o, key, v, w))
        rows, columns = public_rows()
        one = _pair_check(rows, columns, workdir)
        small = [k for k, r in enumerate(rows) if r["num_gpus"].isdigit()
                 and int(r["num_gpus"]) <= 64]
        for _ in range(40):
            i, j = rng.sample(small, 2)
            col = rng.choice([c for c in ROW_COUNTS if rows[i][c].strip().isdigit()])
            cell = rng.choice([f"{rows[i][col]}.0", f"{rows[i][col]}e0"])
            yield f"row {rows[i]['id']} {col}={cell}", (
                lambda i=i, j=j, c={col: cell}: _row_whole(one, i, j, c, rows, columns, workdir))
    return cases


def _row_whole(one: Callable, i: int, j: int, cells: dict[str, str], rows: list[dict[str, str]],
               columns: list[str], workdir: str) -> str | None:
    """A v2 row's count written as a float predicts as the integer does (fuzz52's pair oracle,
    then the row's own prediction against the clean one)."""
    from fuzz52 import _validate

    bad = one(i, j, cells)
    if bad:
        return bad
    d = Path(workdir)
    pair = [dict(rows[i]), rows[j]]

    def predicted(chosen: list[dict[str, str]]) -> Any:
        with open(d / "whole.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(chosen)
        return {r["id"]: (r.get("predicted"), r.get("error"))
                for r in _validate(d / "whole.csv")["rows"]}[rows[i]["id"]]

    clean = predicted(pair)
    pair[0].update(cells)
    got = predicted(pair)
    return None if got == clean else \
        f"a row's whole count written as a float predicted otherwise: {got[1] or got[0]}"[:160]


# ------------------------------------------------------------------------------ main

def surfaces(workdir: str, rng: random.Random) -> dict[str, Callable[[], Iterator[Case]]]:
    return {"printed": printed_cases(workdir, rng), "intfloats": intfloats_cases(workdir, rng),
            "names": names_cases(workdir, rng), "emptysections": emptysections_cases(workdir),
            "lifecycle": lifecycle_cases(workdir, rng), "profiledb": profiledb_cases(workdir)}


def main(argv: list[str] | None = None) -> int:
    return fuzz_checks.seeded_round(57, argv, surfaces)


__all__ = ["DIGIT_WALL", "intfloats_cases", "one_line", "printed_check", "surfaces"]

if __name__ == "__main__":
    fuzz_checks.run_round(main)
